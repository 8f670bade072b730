"""Every darshan-parser / darshan-dxt-parser dump of the shared corpus: a profile or one clear line.

Also cut each small dump at a few places and flip bytes in it: the reader must
answer with a profile or an InputError, never another exception.
"""

from __future__ import annotations

import gzip
import random

import pytest

from advisor.errors import InputError
from advisor.ingest import detect, load_profile
from tests.conftest import CORPUS

# Dumps that darshan-parser / darshan-dxt-parser cut short themselves (partial module,
# printed without --show-incomplete): the reader must say so.
REFUSED = {"generated/g2_mdtest_n2000_default_mem_partial/darshan-parser.txt",
           "generated/r_stonewall_D1_wearout/darshan-dxt-parser.txt"}


def _dumps() -> list[str]:
    if not CORPUS.is_dir():
        return ["<corpus missing>"]
    found = [p for p in CORPUS.rglob("*") if p.is_file() and "parser" in p.name
             and (p.name.endswith(".txt") or p.name.endswith(".txt.gz")) and p.parent.name != "s_big_dxt_1k"]
    return sorted(str(p.relative_to(CORPUS)) for p in found)


def _small(limit: int = 400_000) -> list[str]:
    return [d for d in _dumps() if d.startswith("<") or (CORPUS / d).stat().st_size < limit]


@pytest.mark.parametrize("rel", _dumps())  # s_big_dxt_1k: test_big_dxt_dump
def test_every_corpus_dump_loads_or_says_why(corpus, rel):
    path = corpus / rel
    assert detect(path).name in ("darshan-parser", "darshan-dxt-parser")
    if rel in REFUSED:
        with pytest.raises(InputError, match="--show-incomplete"):
            load_profile(path)
        return
    profile = load_profile(path)
    assert profile.job.jobid and profile.job.nprocs > 0
    assert profile.records or profile.dxt or profile.source.notes


def _variants(data: bytes, seed: str) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    out = [(f"cut@{f}", data[: int(len(data) * f)]) for f in (0.1, 0.5, 0.93)]
    for k in range(3):
        flipped = bytearray(data)
        for _ in range(8):
            i = rng.randrange(len(flipped))
            flipped[i] = rng.choice(b"\t\n#-0123456789x \xff")
        out.append((f"flip{k}", bytes(flipped)))
    return out


@pytest.mark.parametrize("rel", _small())
def test_damaged_dumps_never_raise_anything_else(corpus, tmp_path, rel):
    raw = (corpus / rel).read_bytes()
    data = gzip.decompress(raw) if rel.endswith(".gz") else raw
    for name, variant in _variants(data, rel):
        path = tmp_path / f"{name}.txt"
        path.write_bytes(variant)
        try:
            load_profile(path)
        except InputError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc)


def test_big_dxt_dump(corpus):
    """About a million segments: loads (the time is measured in bench/, not asserted here)."""
    profile = load_profile(corpus / "generated/s_big_dxt_1k/darshan-dxt-parser.txt.gz")
    assert load_profile(corpus / "generated/s_big_dxt_1k/darshan-parser.txt").records["POSIX"]
    trace = profile.dxt["DXT_POSIX"]
    assert len(trace) == 1048576 and trace.readable
    assert int(trace.length.sum()) == 1048576 * 1024
    assert trace.rank.dtype.itemsize == 4 and trace.op.dtype.itemsize == 1
