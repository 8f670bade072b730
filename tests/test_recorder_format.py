"""The Recorder 2.5 decoder against recorder2text on the shared traces, and damaged traces."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from advisor.ingest.recorder.format import RecorderTrace, TraceError
from tests.recorder_traces import FLASH_RANKS, flash_trace, recorder_dir, reference_text  # noqa: F401

ONE_TS_PER_RANK = ("R1_posix_small_shared", "R3_posix_fpp_good", "R4_mdtest")


@pytest.mark.parametrize("name", ONE_TS_PER_RANK)
def test_every_rank_decodes_as_recorder2text(corpus: Path, name: str) -> None:
    trace = RecorderTrace(recorder_dir(corpus) / name / "trace")
    assert trace.meta.ranks == 4 and not trace.meta.interprocess
    for rank in range(trace.meta.ranks):
        assert trace.text(trace.rank(rank)) == reference_text(corpus, name, rank)


def test_flash_ranks_0_to_3_decode_as_recorder2text(corpus: Path, flash_trace: Path) -> None:  # noqa: F811
    trace = RecorderTrace(flash_trace)
    assert trace.meta.ranks == 1024
    for rank in FLASH_RANKS:
        calls = trace.rank(rank)
        assert trace.text(calls) == reference_text(corpus, "flash", rank)
    # HDF5 calls nest MPI-IO calls that nest POSIX calls: depth and layer both decoded.
    layers = trace.meta.layers[calls.func]
    assert {(0, 3), (1, 1), (2, 0)} <= set(zip(calls.level.tolist(), layers.tolist()))


def test_interprocess_compression(corpus: Path) -> None:
    """One merged 0.cst: rank 0 matches; recorder2text gives ranks 1-3 rank 0's timestamps
    (its reader opens ``{cst->rank}.ts`` and the merged table says rank 0), so their calls
    match and their times match only when decoded with rank 0's .ts as the C reader does."""
    name = "R1_posix_small_shared_interprocess"
    trace = RecorderTrace(recorder_dir(corpus) / name / "trace")
    assert trace.meta.interprocess
    assert trace.text(trace.rank(0)) == reference_text(corpus, name, 0)
    rank0 = trace.deltas(0)
    for rank in range(1, 4):
        own = trace.rank(rank)
        reference = reference_text(corpus, name, rank)
        assert [line.split(" ", 2)[2] for line in trace.text(own)] == \
               [line.split(" ", 2)[2] for line in reference]
        assert trace.text(trace.rank(rank, deltas=rank0[:2 * len(own)])) == reference
        assert own.tstart[0] != trace.rank(0).tstart[0]  # its own clock, not rank 0's


def _copy(corpus: Path, name: str, tmp_path: Path) -> Path:
    folder = tmp_path / name
    shutil.copytree(recorder_dir(corpus) / name / "trace", folder)
    for f in folder.iterdir():
        f.chmod(0o644)
    return folder


def test_truncated_grammar_is_named(corpus: Path, tmp_path: Path) -> None:
    folder = _copy(corpus, "R3_posix_fpp_good", tmp_path)
    cfg = folder / "2.cfg"
    cfg.write_bytes(cfg.read_bytes()[:400])
    trace = RecorderTrace(folder)
    trace.rank(1)
    with pytest.raises(TraceError, match=r"2\.cfg: grammar truncated"):
        trace.rank(2)


def test_empty_merged_signatures_like_lammps(corpus: Path, tmp_path: Path) -> None:
    folder = _copy(corpus, "R1_posix_small_shared_interprocess", tmp_path)
    (folder / "0.cst").write_bytes(b"")
    with pytest.raises(TraceError, match=r"0\.cst: empty call-signature table"):
        RecorderTrace(folder).rank(0)


def test_short_timestamps_and_other_versions(corpus: Path, tmp_path: Path) -> None:
    folder = _copy(corpus, "R3_posix_fpp_good", tmp_path)
    ts = folder / "0.ts"
    ts.write_bytes(ts.read_bytes()[:-8])
    with pytest.raises(TraceError, match=r"0\.ts: 113 timestamps for 114 calls"):
        RecorderTrace(folder).rank(0)
    (folder / "VERSION").write_text("2.3.2")
    with pytest.raises(TraceError, match=r"version '2\.3\.2' unsupported"):
        RecorderTrace(folder)
    (folder / "recorder.mt").unlink()
    (folder / "VERSION").write_text("2.5.0")
    with pytest.raises(TraceError, match="not a readable Recorder trace"):
        RecorderTrace(folder)


def test_the_later_gotcha_layout_of_2_5_0_is_named_not_read_as_compressed(tmp_path: Path) -> None:
    """Recorder's GOTCHA line also writes VERSION 2.5.0, with another RecorderMetadata (include/
    recorder-logger.h at uiuc-hpc/Recorder gotcha a62d702); read with ours, its 1e-7 resolution's high
    word was 'compressed timestamps (algorithm 1048238066)'."""
    import struct

    from tests.recorder_build import FUNCTIONS, write_trace
    folder = write_trace(tmp_path / "t", [[("open", 0, ("/scratch/a", "0", "0"), 0.001, 0.002)]])
    head = struct.pack("<i6B6xddi4B", 1, 1, 1, 1, 1, 0, 1, 1.7e9, 1e-7, 1 << 20, 1, 0, 0, 0)
    (folder / "recorder.mt").write_bytes(head + "".join(f"{f}\n" for f in FUNCTIONS).encode())
    with pytest.raises(TraceError, match=r"layout of Recorder's later 2\.5\.0 \(GOTCHA"):
        RecorderTrace(folder)


@pytest.mark.parametrize("position, value, reason", [
    (3, -1, r"1\.cfg: grammar rules are recursive"),  # the start rule's first symbol: itself
    (3, -999, r"1\.cfg: grammar references missing rule -999"),
    (4, 2**31 - 1, r"1\.cfg: grammar expands to over \d+ calls, far more than its timestamps"),
    (4, -1, r"1\.cfg: grammar holds negative repetitions"),
])
def test_damaged_grammars_are_named(corpus: Path, tmp_path: Path, position: int, value: int, reason: str) -> None:
    """A grammar that loops, names a missing rule, or repeats a call 2^31 times is refused by name
    before any memory is claimed for it."""
    folder = _copy(corpus, "R3_posix_fpp_good", tmp_path)
    cfg = folder / "1.cfg"
    symbols = np.frombuffer(cfg.read_bytes(), "<i4").copy()  # rule count, -1, its length, value, reps
    assert symbols[1] == -1
    symbols[position] = value
    cfg.write_bytes(symbols.tobytes())
    with pytest.raises(TraceError, match=reason):
        RecorderTrace(folder).rank(1)
