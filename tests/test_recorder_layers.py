"""Recorder traces of MPI-IO and HDF5 jobs read through their layers as Darshan would count them
(tests/data/recorder: traces of IOR runs recorded for these tests, README there)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.api import diagnose_profile
from advisor.config import SiteConfig
from advisor.facts import FactContext
from advisor.ingest.recorder import load
from advisor.profile import DXT_READ, DXT_WRITE
from tests.recorder_traces import recorder_dir

TRACES = Path(__file__).resolve().parent / "data" / "recorder"


def test_collective_hdf5_writes_carry_the_bytes_written_below_not_the_rmw_reads() -> None:
    """ior -a HDF5 -c -t 4k -b 64k: 16 H5Dwrite and 16 H5Dread of 4 KiB per rank. Each collective
    write on HDF5's derived view is an MPI_File_write_at_all of MPI_TYPE_UNKNOWN whose POSIX calls
    are a pread then a pwrite of the block (ROMIO's read-modify-write): the write moved the pwrite's
    bytes only, as Darshan's MPI_Type_size of the call would say (the reads doubled them before)."""
    profile = load(TRACES / "hdf5-coll-4k")
    h5d, mpiio, posix = (profile.records[m].counters for m in ("H5D", "MPI-IO", "POSIX"))
    assert h5d["H5D_BYTES_WRITTEN"].tolist() == [64 << 10] * 4
    assert h5d["H5D_BYTES_READ"].tolist() == [64 << 10] * 4
    assert h5d["H5D_ACCESS1_ACCESS"].tolist() == [4096] * 4
    assert h5d["H5D_ACCESS1_COUNT"].tolist() == [32] * 4
    # MPI-IO wrote what POSIX wrote below it (HDF5's metadata writes included), not what it read
    assert np.array_equal(mpiio["MPIIO_BYTES_WRITTEN"], posix["POSIX_BYTES_WRITTEN"])
    # the read-modify-write reads are POSIX's alone: 16 blocks of 4 KiB per rank more than MPI-IO read
    assert (posix["POSIX_BYTES_READ"] - mpiio["MPIIO_BYTES_READ"] >= 64 << 10).all()


def test_misaligned_requests_are_counted_against_an_assumed_alignment(corpus: Path) -> None:
    """ior -t 1000000: Darshan counts requests off the file system's block (4 KiB on ext4, 1 MiB on
    Lustre); a trace names no file system, so the reader counts them against 4 KiB, Darshan's own
    fallback, and the facts resting on it say the alignment was assumed. 4 KiB requests stay aligned."""
    profile = load(TRACES / "posix-misaligned-1e6")
    posix = profile.records["POSIX"].counters
    assert posix["POSIX_FILE_ALIGNMENT"].tolist() == [4096] * 4
    # offsets k * 1,000,000: on a 4 KiB boundary only at 0 (rank 0's first write and first read)
    assert posix["POSIX_FILE_NOT_ALIGNED"].tolist() == [30, 32, 32, 32]
    ctx = FactContext(profile, SiteConfig())
    assert ctx.get("file_misaligned_share") == pytest.approx(126 / 128)
    assert any("file alignment of 4 KiB" in a.value for a in ctx.assumptions("file_misaligned_share"))
    # what Darshan's log of the same command says (generated/i_misaligned_1000000): each 1,000,000-byte
    # request touches one 4 KiB block more, 0.4 % of its time, so no finding this small run would show
    # costs it more than a few hundred microseconds
    assert ctx.get("misaligned_cost_s") < 1e-3
    # the corpus's 4 KiB run: every request on the boundary, nothing misaligned
    small = load(recorder_dir(corpus) / "R1_posix_small_shared" / "trace")
    assert small.records["POSIX"].counters["POSIX_FILE_NOT_ALIGNED"].sum() == 0
    assert "IO020" not in {f.code for f in diagnose_profile(small).findings}


def test_accesses_on_a_derived_view_are_placed_where_their_posix_calls_start() -> None:
    """HDF5 sets a view of displacement 2048 (the dataset's start) and a derived filetype selecting
    each rank's rows, then writes at offset 0 of it: the byte offset is the filetype's, which the
    trace does not hold. Darshan's DXT asks MPI_File_get_byte_offset; the reader takes where the
    POSIX calls below start. Before, every rank's every access sat at byte 2048 (a replay wrote 6 KiB
    of a 256 KiB file)."""
    profile = load(TRACES / "hdf5-coll-4k")
    mpiio, posix = profile.dxt["DXT_MPIIO"], profile.dxt["DXT_POSIX"]
    for rank in range(4):
        data = (mpiio.rank == rank) & (mpiio.length == 4096)
        expected = rank * (64 << 10) + 2048 + 4096 * np.arange(16)
        assert np.array_equal(np.sort(mpiio.offset[data & (mpiio.op == DXT_WRITE)]), expected)
        assert np.array_equal(np.sort(mpiio.offset[data & (mpiio.op == DXT_READ)]), expected)
        # the pwrite each collective write made is at the same place
        written = (posix.rank == rank) & (posix.op == DXT_WRITE) & (posix.length == 4096)
        assert np.array_equal(np.sort(posix.offset[written]), expected)


def test_romio_byte_range_locks_are_not_metadata_time() -> None:
    """Under each collective write ROMIO locks the block it reads and rewrites (fcntl F_SETLKW, then
    F_SETLK to unlock): 32 fcntl per rank, 60 % of ranks 1-3's POSIX time outside reads and writes.
    Darshan times no fcntl (that time stays in the MPI-IO call above); counted as the file's metadata
    it would turn lock waits into a metadata finding. The reference: recorder2text's lines of the
    opens, closes, lseeks and unlink on the file, summed per rank."""
    profile = load(TRACES / "hdf5-coll-4k")
    posix = profile.records["POSIX"]
    meta = dict(zip(posix.ranks.tolist(), posix.fcounters["POSIX_F_META_TIME"].tolist()))
    assert meta == pytest.approx({0: 0.0244570, 1: 0.0000918, 2: 0.0000971, 3: 0.0000797}, abs=2e-6)
    assert profile.extras["recorder"]["calls"]["POSIX"]["fcntl"] == 128
    assert profile.extras["recorder"]["kinds"]["fcntl"] == "lock"


def test_seeks_from_the_end_of_a_file_the_trace_never_sized() -> None:
    """A job reading the last 4 KiB of a 1 MiB file it did not write, then 4 KiB more 8 KiB back:
    Recorder keeps lseek's arguments (-4096 from the end, -8192 from here), not the positions it
    returned, and nothing in the trace says the file's size. The smallest size that no seek lands
    before byte 0 with (8 KiB) keeps the reads' distance: 4096, then 0, a backward read as in the
    real run (1,044,480 then 1,040,384). Before, the trace was refused ("implausible DXT_POSIX offset
    -4096"): every Python program under Recorder seeks 22 bytes before the end of its script."""
    profile = load(TRACES / "python-seek-end")
    trace = profile.dxt["DXT_POSIX"]
    assert trace.offset.tolist() == [4096, 0] and trace.length.tolist() == [4096, 4096]
    posix = profile.records["POSIX"].counters
    assert (posix["POSIX_SEQ_READS"].tolist(), posix["POSIX_CONSEC_READS"].tolist()) == ([1], [0])


def _without_depths(src: Path, dst: Path) -> Path:
    """A copy of a trace as RECORDER_LOG_LEVEL=0 writes it: every call signature's depth byte 0
    (Recorder keeps the byte in the key, lib/recorder-logger.c write_record)."""
    import shutil
    import struct

    shutil.copytree(src, dst)
    for cst in dst.glob("*.cst"):
        raw = bytearray(cst.read_bytes())
        (n,), at = struct.unpack_from("<i", raw), 4
        for _ in range(n):
            key_len = struct.unpack_from("<i", raw, at + 8)[0]
            raw[at + 16 + 9] = 0  # the key: tid (8 bytes), function id, depth, ...
            at += 16 + key_len
        cst.write_bytes(bytes(raw))
    return dst


@pytest.mark.parametrize("trace", ["hdf5-coll-4k", "hdf5-ckpt-collmeta"])
def test_a_trace_without_call_depths_nests_its_calls_by_their_times(trace: str, tmp_path: Path) -> None:
    """RECORDER_LOG_LEVEL=0 records every call at depth 0. Read as such, HDF5's and MPI-IO's calls had
    nothing below them: H5Dwrite's and the derived-view MPI-IO calls' bytes unknown, and MPI007 said
    POSIX moved far more than MPI-IO asked for (a collective HDF5 job recorded so on this VM). Nested
    by their times (a lower layer's call inside a call that is still open), the profile is the one
    the depths give."""
    from advisor.ingest.recorder import depths_from_times
    from advisor.ingest.recorder.format import RecorderTrace

    flat = _without_depths(TRACES / trace, tmp_path / trace)
    t = RecorderTrace(flat)
    assert not t.rank(0).level.any()
    recorded = RecorderTrace(TRACES / trace)
    for rank in range(recorded.meta.ranks):
        calls = recorded.rank(rank)
        assert np.array_equal(depths_from_times([calls], recorded.meta.layers, recorded.meta.time_resolution),
                              calls.level)
    want, got = load(TRACES / trace), load(flat)
    for module in ("H5D", "H5F", "MPI-IO", "POSIX"):
        for name, column in want.records[module].counters.items():
            assert np.array_equal(got.records[module].counters[name], column), (module, name)
    codes = {f.code for f in diagnose_profile(got).findings}
    assert codes == {f.code for f in diagnose_profile(want).findings} and "MPI007" not in codes
