"""A counted rule whose cost, for this job, is a timing (`timed_costs` in the rule file) is weighed
against the timing noise of a per-process mean, not called "counted, not timed" (real logs)."""

from __future__ import annotations

import pytest

from tests.test_facts_hdf5_pnetcdf import PNETCDF, _found

MPI_IO_TEST = ("darshan-logs/darshan_logs/mpi_io_test_with_dxt/"
               "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan")


def test_time_above_posix_is_timed_and_far_above_the_noise_of_a_mean(corpus):
    """mpi-io-test on NFS: every one of the 32 ranks spent 2.7-7.6 s in MPI-IO above its POSIX writes
    (mean 5.3 s): a timing, certain because a mean over 32 ranks moves by ~0.2 s by chance (the
    slowest-rank noise, 2.9 s, would call it 'may be noise')."""
    mpi003 = _found(corpus, MPI_IO_TEST)["MPI003"]
    assert mpi003.cost_s == mpi003.evidence["mpiio_indep_write_above_posix_s"]
    reason = mpi003.confidence["reason"]
    assert "counted" not in reason and "mean over 32 ranks" in reason, reason
    assert mpi003.confidence["level"] == "high" and mpi003.confidence["ratio"] > 10
    assert mpi003.severity == "high"


def test_contention_of_a_13_ms_run_is_within_the_noise(corpus):
    """IOR's PnetCDF backend (4 ranks, 13 ms, ext4, no DXT): 32 independent variable calls; PNC001's cost is
    half their MPI-IO time (1.5 ms, stripes assumed shared), a timing far below the 50 ms floor: not high."""
    pnc001 = _found(corpus, PNETCDF)["PNC001"]
    assert pnc001.cost_s == pnc001.evidence["mpiio_indep_contention_s"]
    assert pnc001.confidence["level"] == "low" and pnc001.severity == "info"
    assert "counted" not in pnc001.confidence["reason"]


def test_independent_reads_are_not_costed_as_lock_contention(corpus):
    """imbalanced-io (496 ranks, no DXT): 2,505 independent MPI-IO reads. MPI004 costed half their time as
    contention for shared stripes (209 s per process), but readers share their locks; their time above POSIX
    (90 s per process, a timing) is the cost."""
    found = _found(corpus, "darshan-logs/darshan_logs/imbalanced_io/imbalanced-io.darshan")
    mpi004 = found["MPI004"]
    assert "mpiio_indep_contention_s" not in mpi004.evidence
    assert mpi004.cost_s == mpi004.evidence["mpiio_indep_read_above_posix_s"] == pytest.approx(90.25, abs=0.01)
    assert mpi004.confidence["level"] == "high" and "counted" not in mpi004.confidence["reason"]
