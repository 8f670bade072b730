"""bzip2-compressed Darshan logs (read through a zlib copy of their regions), on a real
production log checked against the darshan-parser dump of a bzip2-enabled darshan-util."""

from __future__ import annotations

import bz2
import math
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest

from advisor import metrics
from advisor.api import load
from advisor.errors import InputError
from advisor.ingest import darshan_log
from advisor.ingest.darshan_header import BZIP2, COMP_TYPE_AT, NO_COMPRESSION, ZLIB, comp_type, regions
from advisor.ingest.parser_dump import load_dump
from tests.test_dump_equivalence import assert_same_profile, assert_same_records

CASE = Path("darshan-production/polaris-cug25/case-study-2")
LOG = CASE / "1977553-17460120447186390966.darshan"
RELEASES = Path("darshan-logs/darshan_logs/release_logs")
# One log per header layout and log format, both byte orders, and DXT + HEATMAP.
ZLIB_LOGS = [RELEASES / f"mpi-io-test-{v}.darshan" for v in
             ("ppc64-3.0.1", "ppc64-3.1.8", "x86_64-3.0.0", "x86_64-3.1.2", "x86_64-3.2.0",
              "x86_64-3.2.1", "x86_64-3.4.0", "x86_64-3.5.0")]
ZLIB_LOGS.append(Path("darshan-logs/darshan_logs/runtime_and_dxt_heatmaps_diagonal_write_only/"
                      "runtime_and_dxt_heatmaps_diagonal_write_only.darshan"))


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def region_of(log: Path, name: str):
    head = log.read_bytes()
    return next(r for r in regions(head[:2048], len(head), str(log))[1] if r.name == name)


def damaged(src: Path, dst: Path, region: str) -> Path:
    """A copy of `src` with bytes in the middle of `region` flipped (the bzip2 CRCs catch it)."""
    data = bytearray(src.read_bytes())
    r = region_of(src, region)
    for i in range(r.off + r.length // 2, r.off + r.length // 2 + 8):
        data[i] ^= 0xFF
    dst.write_bytes(data)
    return dst


def inflate_all(data: bytes) -> bytes:
    """The concatenated zlib streams of a region (the runtime appends one per rank to some)."""
    out = b""
    while data:
        stream = zlib.decompressobj()
        out += stream.decompress(data)
        assert stream.eof
        data = stream.unused_data
    return out


def two_bzip2_streams(raw: bytes) -> bytes:
    return bz2.compress(raw[:len(raw) // 2]) + bz2.compress(raw[len(raw) // 2:])


def as_bzip2(src: Path, dst: Path, comp: int = BZIP2, pack=two_bzip2_streams) -> Path:
    """`src` (a zlib log) with each region compressed by `pack` (default: bzip2, as two
    concatenated streams), its header saying `comp`."""
    data = src.read_bytes()
    lay, parts = regions(data[:2048], len(data), str(src))
    header, body = bytearray(data[:lay.size]), bytearray()
    header[COMP_TYPE_AT] = comp
    for r in parts:
        raw = inflate_all(data[r.off:r.off + r.length])
        packed = pack(raw) if r.length else b""
        if r.slot is not None:
            at = lay.maps_at + 16 * r.slot
            header[at:at + 16] = (lay.size + len(body)).to_bytes(8, "little" if lay.order == "<" else "big") \
                + len(packed).to_bytes(8, "little" if lay.order == "<" else "big")
        body += packed
    dst.write_bytes(bytes(header) + bytes(body))
    return dst


@pytest.fixture(scope="module")
def production(corpus):
    return load(corpus / LOG)


def test_production_log_is_bzip2_and_reads_as_its_reference_dump(corpus, production):
    assert comp_type((corpus / LOG).read_bytes()[:32]) == BZIP2
    dump = load_dump(corpus / CASE / "darshan-parser.txt")
    assert_same_profile(production, dump)
    assert production.job.nprocs == 8 and production.job.runtime_s == pytest.approx(29088.1321, abs=1e-3)
    assert {m: i.records for m, i in production.modules.items()} == {
        "POSIX": 34, "STDIO": 34, "APMPI": 0, "HEATMAP": 16}
    assert "bzip2" in production.source.parser


def test_production_log_per_module_bytes_operations_and_times_equal_the_dump(corpus, production):
    dump = load_dump(corpus / CASE / "darshan-parser.txt")
    ours, theirs = metrics.summarize(production).modules, metrics.summarize(dump).modules
    assert set(ours) == set(theirs) == {"POSIX", "STDIO"}
    for module, m in ours.items():
        d = theirs[module]
        for key in ("records", "files", "bytes_read", "bytes_written", "reads", "writes", "meta_ops"):
            assert getattr(m, key) == getattr(d, key), (module, key)
        for key in ("read_time", "write_time", "meta_time"):  # darshan-parser prints %f: 1e-6 s a record
            assert math.isclose(getattr(m, key), getattr(d, key), abs_tol=1e-6 * m.records), (module, key)
    assert ours["STDIO"].bytes_read == 582_070_951_586_751  # summed from the dump


def test_diagnose_and_show_run_on_the_production_log(corpus):
    done = cli("diagnose", corpus / LOG)
    assert done.returncode in (0, 1), done.stderr
    assert "IO040" in done.stdout and "Traceback" not in done.stderr
    done = cli("show", corpus / LOG)
    assert done.returncode == 0 and "STDIO" in done.stdout and "bzip2" in done.stdout


@pytest.mark.parametrize("region", ["STDIO module", "name map", "job"])
def test_damaged_bzip2_region_is_one_line_naming_it(corpus, tmp_path, region):
    bad = damaged(corpus / LOG, tmp_path / "damaged.darshan", region)
    done = cli("show", bad)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"ioadvisor: error: {bad}: the {region} region (")
    assert "does not decompress" in line and "damaged" in line


def test_truncated_bzip2_log_names_the_region_cut_off(corpus, tmp_path):
    data = (corpus / LOG).read_bytes()
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(data[:len(data) - 100])
    with pytest.raises(InputError, match="HEATMAP module region .* outside the log's 14745 bytes"):
        darshan_log.load(cut)


def test_unknown_compression_type_says_so(corpus, tmp_path):
    data = bytearray((corpus / LOG).read_bytes())
    data[COMP_TYPE_AT] = 7
    odd = tmp_path / "odd.darshan"
    odd.write_bytes(data)
    done = cli("show", odd)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line == f"ioadvisor: error: {odd}: unknown compression type 7 in the Darshan log header " \
                   "(Darshan writes 0 zlib, 1 bzip2, 2 none): the header is corrupt"


def test_decompression_bomb_is_refused_before_it_unpacks(corpus, tmp_path):
    data = (corpus / LOG).read_bytes()
    r = region_of(corpus / LOG, "HEATMAP module")
    assert r.off + r.length == len(data)  # the last region: replace it by 65 MiB of zeros
    bomb = bz2.compress(bytes(1 << 20), 9) * 65  # 65 concatenated streams of a MiB of zeros
    head = bytearray(data[:r.off])
    head[32 + 16 * (1 + 15) + 8:32 + 16 * (1 + 15) + 16] = len(bomb).to_bytes(8, "little")
    path = tmp_path / "bomb.darshan"
    path.write_bytes(bytes(head) + bomb)
    with pytest.raises(InputError, match="unpack to more than 64 MiB .* a decompression bomb"):
        darshan_log.load(path)


def test_the_copy_leaves_nothing_behind(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    darshan_log.load(corpus / LOG)
    with pytest.raises(InputError):
        darshan_log.load(damaged(corpus / LOG, tmp_path / "bad.darshan", "POSIX module"))
    assert [p.name for p in tmp_path.iterdir()] == ["bad.darshan"]


@pytest.mark.parametrize("log", ZLIB_LOGS, ids=lambda p: p.stem)
def test_every_header_layout_reads_the_same_bzip2_compressed(corpus, tmp_path, log):
    src = corpus / log
    assert comp_type(src.read_bytes()[:32]) == ZLIB
    copy = darshan_log.load(as_bzip2(src, tmp_path / src.name))
    original = darshan_log.load(src)
    assert copy.source.log_version == original.source.log_version
    assert copy.job == original.job
    assert_same_records(copy, original)
    assert set(copy.dxt) == set(original.dxt)
    for name, trace in original.dxt.items():
        assert len(copy.dxt[name]) == len(trace) and (copy.dxt[name].offset == trace.offset).all()


def test_uncompressed_log_is_read_past_libdarshan_utils_first_buffer(corpus, tmp_path):
    # libdarshan-util 3.5.0 reads an uncompressed region wrong past its first 1 MiB: this log's
    # 32,768 DXT segments (1.5 MiB) came back unreadable; its zlib copy reads them all.
    src = corpus / "generated" / "b_small_io_shared_4k" / "case.darshan"
    plain = darshan_log.load(as_bzip2(src, tmp_path / "plain.darshan", NO_COMPRESSION, bytes))
    original = darshan_log.load(src)
    assert_same_records(plain, original)
    trace = plain.dxt["DXT_POSIX"]
    assert trace.readable and len(trace) == len(original.dxt["DXT_POSIX"]) == 32768
    assert (trace.offset == original.dxt["DXT_POSIX"].offset).all()
    assert "uncompressed regions compressed as zlib" in plain.source.parser


def test_the_zlib_copy_holds_the_header_with_zlib_and_every_region_inflates(corpus):
    """darshan_recompress.rewrite_as_zlib: the header says zlib and each region of the copy is one zlib stream."""
    from advisor.ingest.darshan_recompress import rewrite_as_zlib

    with tempfile.TemporaryFile() as fh:
        rewrite_as_zlib(corpus / LOG, fh)
        fh.seek(0)
        copy = fh.read()
    assert comp_type(copy[:32]) == ZLIB and copy[COMP_TYPE_AT] == ZLIB
    _, parts = regions(copy[:4096], len(copy), "copy")
    assert parts and all(zlib.decompress(copy[p.off:p.off + p.length]) for p in parts if p.length)
