"""Advice fits what the job already does, and says what its input could not check (review9).

Cases of the corpus that shaped no rule (bench/review9_expectations.md, written before the tool's
output was read): a fix the job already applies is not proposed, and a setting the input does not
record (MPI-IO hints, HDF5 property lists) is proposed only with the sentence saying so."""

from __future__ import annotations

import pytest

from advisor import api
from advisor.findings import Finding
from tests.conftest import CORPUS, DATA
from tests.helpers import require

LOGS = CORPUS / "darshan-logs" / "darshan_logs"


def _finding(path, code: str) -> Finding:
    require(path.exists(), f"input {path} not found")
    found = [f for f in api.diagnose_path(path).findings if f.code == code]
    assert found, f"{code} did not fire on {path.name}"
    return found[0]


def test_no_collective_for_ranks_already_writing_large_aligned_blocks():
    """mpi-io-test: 4 ranks, one 16 MiB independent write each on the 1 MiB alignment, 0 % bytes
    imbalance, 75 % time imbalance: collective buffering would make the same requests."""
    f = _finding(LOGS / "apmpi_apxc" / "mpi-io-test.darshan", "IMB003")
    assert f.fix is None
    assert f.evidence["shared_imbalance_requests_large"] is True
    assert not any("_all(" in c for c in f.recommendation.commands)
    assert "already writes large requests" in f.recommendation.text


def test_collective_still_proposed_where_requests_are_small():
    """IOR -s 16 -t 256k on a shared file: the ranks' requests are small, collective buffering would
    merge them, a change the job does not make."""
    f = _finding(CORPUS / "generated" / "h3_segments_s16" / "case.darshan", "IMB003")
    assert f.evidence["shared_imbalance_requests_large"] is False
    assert f.fix is not None and f.fix["transform"] == "collective"


@pytest.mark.parametrize("log", ["hdf5_file_opens_only.darshan", "hdf5_diagonal_write_bytes_range_dxt.darshan"])
def test_no_collective_metadata_without_the_mpiio_driver(log):
    """h5py without MPI-IO (H5F_USE_MPIIO 0): collective metadata cannot apply; the property calls it
    does propose are said to be unchecked (Darshan records no property list)."""
    f = _finding(LOGS / "hdf5_diagonal_write_only" / log, "HDF002")
    assert f.evidence["hdf5_uses_mpiio"] is False
    assert not any("coll_metadata" in c for c in f.recommendation.commands)
    assert "collective" not in f.recommendation.text.lower()
    assert "Darshan records no HDF5 property list" in f.recommendation.text


def test_hints_passed_are_named_where_the_log_cannot_say_which():
    """skew-autobench-ior: IOR hands MPI-IO an info object at each of its 2,048 opens (MPIIO_HINTS);
    the aggregation hints IMB003 names may already be among them."""
    f = _finding(LOGS / "skew_io" / "skew-autobench-ior.darshan", "IMB003")
    assert "cb_nodes" in f.recommendation.text
    assert "info object (2,048 times, MPIIO_HINTS)" in f.recommendation.text
    assert "not checked" in f.recommendation.text


def test_a_trace_that_shows_the_properties_is_not_told_to_set_them():
    """A Recorder trace of an HDF5 checkpoint that calls H5Pset_all_coll_metadata_ops and
    H5Pset_coll_metadata_write: neither is proposed; H5Pset_libver_bounds, which Recorder 2.5 does
    not trace, is proposed with the sentence saying it was not checked."""
    f = _finding(DATA / "recorder" / "hdf5-ckpt-collmeta", "HDF002")
    assert f.evidence["hdf5_coll_metadata_set"] is True
    assert not any("coll_metadata" in c for c in f.recommendation.commands)
    assert "Darshan" not in f.recommendation.text
    assert "Recorder 2.5 does not trace H5Pset_libver_bounds" in f.recommendation.text


def test_no_file_view_advice_to_a_job_that_sets_views():
    """E3SM-IO: PnetCDF sets a file view for each of its 110,592 collective calls (MPIIO_VIEWS):
    MPI007 does not tell it to describe its pattern with one; its hints (PnetCDF passes an info at
    each open) are proposed with the sentence saying Darshan cannot tell which it already sets."""
    f = _finding(LOGS / "e3sm_io_heatmaps_and_dxt" / "e3sm_io_heatmap_only.darshan", "MPI007")
    assert f.evidence["mpiio_views_set"] == 110592
    assert not any("MPI_File_set_view" in c for c in f.recommendation.commands)
    assert "already sets file views (110,592 MPI_File_set_view calls, PnetCDF's)" in f.recommendation.text
    assert "MPIIO_HINTS" in f.recommendation.text
