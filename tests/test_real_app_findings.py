"""Findings on real applications the rules were not tuned on, read against their counters (review7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.api import diagnose_profile, load
from advisor.config import SiteConfig
from advisor.engine import diagnose
from advisor.facts import FactContext
from advisor.ingest.darshan_log import load as load_log
from tests.recorder_traces import flash_trace  # noqa: F401

PARTIAL_DXT = "darshan-logs/darshan_logs/partial_data_dxt/partial_data_dxt.darshan"


def test_a_million_reads_of_byte_0_are_rereads_not_random_or_small_reads_to_merge(corpus):
    """mpi-io-test -b 1 -i 1000000: 1,000,000 POSIX reads of 1 byte, POSIX_MAX_BYTE_READ 0 (the file's
    extent is 1 byte), no sequential read. They go nowhere else (no seek: not random) and no larger request
    can merge them (there is one byte to read): the time they take is rereading, IO030, whose fix is to
    read once and keep it (MPI_Bcast is no fix for a single process)."""
    profile = load_log(corpus / PARTIAL_DXT)
    ctx = FactContext(profile, SiteConfig())
    assert ctx.get("first_pass_read_share") == pytest.approx(1e-6)
    assert ctx.get("random_read_count") == 1
    found = {f.code: f for f in diagnose(profile, SiteConfig()).findings}
    assert "IO002" not in found and "IO010" not in found
    io030 = found["IO030"]
    assert io030.evidence["redundant_read_factor"] == pytest.approx(1e6)
    assert io030.cost_s == pytest.approx(0.24895, rel=1e-3)  # the POSIX read time, all but 1 byte of it
    assert io030.severity == "warn" and not any("MPI_Bcast" in c for c in io030.recommendation.commands)


def test_flash_metadata_time_is_found_though_its_data_calls_took_longer(flash_trace: Path) -> None:  # noqa: F811
    """FLASH (Recorder, 1,024 ranks, 54 s): 10.6 s per process in H5Fcreate/flush/close and H5Dcreate/open/close
    (66 H5Fflush per rank, no collective metadata property in the trace), 24.99 % of an HDF5 time its small
    collective H5Dwrite calls dominate. 7.6 s of it are the flushes and the metadata I/O below HDF5's other
    calls, what a metadata fix removes (the rest: MPI_File_open/close and HDF5's waits for other ranks):
    14 % of the run, high, with the collective-metadata advice."""
    d = diagnose_profile(load(flash_trace, timeout_s=900))
    (hdf002,) = [f for f in d.findings if f.code == "HDF002"]
    assert hdf002.evidence["hdf5_meta_share"] < 0.25
    assert hdf002.evidence["hdf5_meta_time_s"] == pytest.approx(10.65, abs=0.05)
    assert hdf002.cost_s == pytest.approx(7.57, abs=0.05) and hdf002.severity == "high"
    assert hdf002.evidence["hdf5_flushes"] >= 66 * 1024
    assert "H5Pset_coll_metadata_write" in " ".join(hdf002.recommendation.commands)


def test_opens_of_named_pipes_that_wait_for_their_writer_are_not_metadata_load(corpus):
    """pydarshan's dxt.darshan: a COMPSs worker (1 process, 24.5 min) whose 9 named pipes (pipe_*) each hold
    939-1,462 s of POSIX_F_META_TIME in 2-3 opens (each open returns when the other end opens the pipe; the
    threads' waits overlap: 3.1 h summed). MD001 and MD002 said 24.5 min of metadata, high, and 'open fewer
    files'; the file system worked for the other 200 files' opens (seconds)."""
    profile = load_log(corpus / "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/dxt.darshan")
    ctx = FactContext(profile, SiteConfig())
    assert ctx.get("meta_time_s") == pytest.approx(1469.0, rel=1e-3)
    assert ctx.get("meta_wait_time_s") > 1400 and ctx.get("meta_work_time_s") < 60
    found = {f.code: f for f in diagnose(profile, SiteConfig()).findings}
    assert "MD001" not in found
    assert found["MD002"].cost_s < 60 and found["MD002"].severity != "high"


def test_one_slow_aggregator_among_many_is_not_told_to_use_fewer(corpus):
    """skew-autobench-ior (2,048 ranks, 512 GiB read with 131,072 collective reads): rank 1024 spent 337 s in
    POSIX reads of 9.1 GiB, the file's bytes over that give ~56 aggregators averaging 165 s. The slow aggregator
    is the finding; setting cb_nodes to the fallback 8 would give each aggregator 7x the bytes."""
    profile = load_log(corpus / "darshan-logs/darshan_logs/skew_io/skew-autobench-ior.darshan")
    (imb,) = [f for f in diagnose(profile, SiteConfig()).findings if f.code == "IMB003"]
    assert imb.evidence["shared_imbalance_among"] == "aggregators" and imb.evidence["shared_imbalance_count"] == 56
    assert imb.fix is None and not any("cb_nodes" in c for c in imb.recommendation.commands)


def test_large_requests_off_the_stripe_lose_the_one_stripe_more_they_touch(corpus):
    """pydarshan's sample.darshan (2,048 ranks, 117 s): 16,402 POSIX writes of 128 MiB (the aggregators' file
    domains), all off the 1 MiB boundary: each touches 129 stripes for 128, 0.8 % of its time; IO020 costed a
    flat 30 % of the write time (14.7 s per process, warn)."""
    profile = load_log(corpus / "darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input/sample.darshan")
    (io020,) = [f for f in diagnose(profile, SiteConfig()).findings if f.code == "IO020"]
    assert io020.evidence["file_alignment"] == 1 << 20 and io020.evidence["common_access_size"] == 128 << 20
    assert io020.cost_s < 0.5 and io020.severity == "info"


def test_hdf5_metadata_writes_get_hdf5_metadata_advice_not_the_collective_transfers_already_set(corpus):
    """MACSio (HDF5 over MPI-IO, 16 ranks): every H5Dwrite is collective (H5D_USE_MPIIO_COLLECTIVE 1); 7,695 of
    the 7,812 small shared POSIX writes are independent MPI-IO writes to those files, HDF5's metadata. IO001,
    IO003 and IMB003 told it to set a collective transfer property list (or call MPI_File_write_at_all), which it
    already does; the advice that fits is HDF5's collective metadata writes in larger blocks."""
    profile = load_log(corpus / ("darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/"
                                 "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan"))
    found = {f.code: f for f in diagnose(profile, SiteConfig()).findings}
    for code in ("IO001", "IO003", "IMB003"):
        said = " ".join([found[code].recommendation.text, *found[code].recommendation.commands])
        assert "H5Pset_dxpl_mpio" not in said and "MPI_File_write_at_all" not in said, code
    assert found["IMB003"].fix is None  # the imbalance is not a transfer mode to change
    # IO003's replayed fix writes those pieces collectively: what collective metadata writes do
    assert "H5Pset_coll_metadata_write" in " ".join(found["IO003"].recommendation.commands)
    assert found["IO003"].evidence["hdf5_meta_indep_writes"] == 7695


def test_a_process_without_mpi_is_not_told_to_use_mpi_io(corpus):
    """A Python workflow worker (1 process, no MPI module): 95,039 POSIX reads of 8.3 KiB in 12 files of ~67 MB.
    IO002 told it to 'use MPI-IO collective reads (MPI_File_read_all)' with an MPI_File_read_at_all command."""
    profile = load_log(corpus / ("darshan-logs/_branch_snyder_add-nonmpi-workflow/darshan_logs/nonmpi_workflow/"
                                 "worker_0.darshan"))
    assert profile.job.nprocs == 1 and "MPI-IO" not in profile.modules
    for finding in diagnose(profile, SiteConfig()).findings:
        said = " ".join([finding.recommendation.text, *finding.recommendation.commands])
        assert "MPI_File" not in said and "MPI-IO" not in said, finding.code
    assert "IO002" in {f.code for f in diagnose(profile, SiteConfig()).findings}
