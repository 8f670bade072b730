"""Advice fits what the job already does, and says what its input could not check (review9).

Cases of the corpus that shaped no rule (bench/review9_expectations.md, written before the tool's
output was read): a fix the job already applies is not proposed, and a setting the input does not
record (MPI-IO hints, HDF5 property lists) is proposed only with the sentence saying so."""

from __future__ import annotations

import pytest

from advisor.facts.lustre import without_stripes
from advisor import api
from advisor.config import SiteConfig
from advisor.engine import render
from advisor.engine.rules import load_catalogue
from advisor.facts import FactContext
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


def test_hdf5_metadata_advice_names_only_the_reopens_and_flushes_the_job_makes():
    """review11: h5py writing one byte per rank opens each file once and never flushes; HDF002 told it to
    keep files open instead of reopening them and to drop H5Fflush from loops. Its half_flush sibling
    flushes (H5F_FLUSHES) and keeps that advice."""
    f = _finding(LOGS / "hdf5_diagonal_write_only" / "hdf5_diagonal_write_1_byte_dxt.darshan", "HDF002")
    assert f.evidence["hdf5_reopens"] == 0 and f.evidence["hdf5_flushes"] == 0
    assert "reopening" not in f.recommendation.text and "H5Fflush" not in f.recommendation.text
    assert f.recommendation.text.startswith("Let HDF5 write its metadata in larger blocks (the job opens each")
    flushed = _finding(LOGS / "hdf5_diagonal_write_only" / "hdf5_diagonal_write_half_flush_dxt.darshan", "HDF002")
    assert flushed.evidence["hdf5_flushes"] > 0 and "Drop H5Fflush from loops" in flushed.recommendation.text


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


# review10 (bench/review10_expectations.md): advice a layer or the file system makes moot, and hints
# the input cannot see

def _rendered(code: str, path) -> tuple[str, list[str]]:
    """A rule's advice rendered with a real input's facts, whether or not the rule fires there."""
    rule = load_catalogue().get(code)
    ctx = FactContext(api.load(path), SiteConfig())
    values = {**rule.thresholds, **{name: ctx.value(name) for name in rule.evidence}}
    commands = []
    for template in rule.recommendation["commands"]:
        try:
            commands.append(render.render(template, values))
        except TypeError:  # sized by a fact this input does not have (the rule does not fire here)
            continue
    return render.render(rule.recommendation["text"], values), [c for c in commands if c.strip()]


def test_no_file_view_call_for_fewer_calls_where_the_library_sets_views():
    """IOR -a HDF5 -c -t 4k (Recorder): HDF5 calls MPI_File_set_view 256 times; MPI008's advice
    (fewer, larger collective calls) keeps its HDF5 line and drops the MPI_File_set_view one. A job
    that sets no view (mpi-io-test) is still shown the view call."""
    text, commands = _rendered("MPI008", DATA / "recorder" / "hdf5-coll-4k")
    assert not any("MPI_File_set_view" in c for c in commands)
    assert "already sets file views, 256 MPI_File_set_view calls, HDF5's" in text
    assert any("H5Dwrite" in c for c in commands)
    _, plain = _rendered("MPI008", LOGS / "release_logs" / "mpi-io-test-ppc64-3.1.8.darshan")
    assert any("MPI_File_set_view" in c for c in plain)


def test_no_stripes_or_osts_on_a_file_system_without_them():
    """mpi-io-test on NFS (the log's mount table): IMB003 names the node and the servers, no OSTs;
    skew-autobench on overlay: no stripes to align file domains with, cb_nodes left to tune."""
    nfs = _finding(LOGS / "release_logs" / "mpi-io-test-ppc64-3.1.8.darshan", "IMB003")
    assert nfs.evidence["fs_without_stripes"] == "nfs"
    assert "OST" not in nfs.recommendation.text and "its node" in nfs.recommendation.text
    overlay = _finding(LOGS / "skew_io" / "skew-autobench-ior.darshan", "IMB003")
    assert overlay.evidence["fs_without_stripes"] == "overlay"
    assert "striping_unit" not in overlay.recommendation.text and "OST" not in overlay.recommendation.text
    assert "overlay has no stripes" in overlay.recommendation.text
    lustre = _finding(LOGS / "e3sm_io_heatmaps_and_dxt" / "e3sm_io_heatmap_only.darshan", "IMB003")
    assert lustre.evidence["fs_without_stripes"] == "" and "stripe count" in lustre.recommendation.text


def test_striped_file_systems_other_than_lustre_keep_their_stripes():
    """CephFS (kernel or ceph-fuse), BeeGFS and OrangeFS set stripes per file as Lustre does: advice
    about them is not moot there; a job with one file on such a file system keeps it."""
    assert without_stripes(["ext4"]) == "ext4" and without_stripes(["nfs", "xfs"]) == "nfs, xfs"
    for kinds in (["ceph"], ["fuse.ceph-fuse"], ["beegfs"], ["pvfs2"], ["beegfs", "ext4"], []):
        assert without_stripes(kinds) == "", kinds


def test_no_stripe_size_or_lfs_for_a_python_job_on_ext4():
    """20,000 unbuffered 100-byte writes on ext4: buffer them (Python's buffering=), with no stripe
    size to match and no `lfs mkdir` for the metadata."""
    case = CORPUS / "generated" / "k2_python_small_writes" / "case.darshan"
    io001 = _finding(case, "IO001")
    assert "stripe" not in io001.recommendation.text and "buffering=" in io001.recommendation.commands[0]
    md001 = _finding(case, "MD001")
    assert not any("lfs " in c for c in md001.recommendation.commands)


def test_hints_advice_says_an_environment_file_is_not_seen():
    """LANL's mpi-io-test (32 ranks, MPIIO_HINTS 0): MPI003 proposes romio_cb_write and cb_nodes; hints
    from a ROMIO_HINTS file never reach Darshan, so the advice says it could not check them. Where info
    objects were passed (skew-autobench), the count is not called hints: IOR's info is empty."""
    f = _finding(LOGS / "mpi_io_test_with_dxt" /
                 "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan", "MPI003")
    assert any("cb_nodes" in c for c in f.recommendation.commands)
    assert "ROMIO_HINTS file" in f.recommendation.text and "not checked" in f.recommendation.text
    skew = _finding(LOGS / "skew_io" / "skew-autobench-ior.darshan", "IMB003")
    assert "may hold no hints at all" in skew.recommendation.text
    # IOR -a POSIX -t 4k: a job without MPI-IO has no hints to have set; collective I/O would be new
    posix = _finding(CORPUS / "generated" / "b_small_io_shared_4k" / "case.darshan", "IO003")
    assert posix.fix["transform"] == "collective" and "not checked" not in posix.recommendation.text


def test_aggregation_hints_on_ext4_name_no_stripes():
    """IOR -a MPIIO -c -t 256k on ext4: the small POSIX reads are the aggregators' (IO002's hints
    branch), and T02's read-modify-write (MPI007): cb_buffer_size and striping_unit still align the
    file domains, but there are no stripes to count them in."""
    io002 = _finding(CORPUS / "generated" / "e_mpiio_collective_256k" / "case.darshan", "IO002")
    assert io002.fix["transform"] == "hints" and "striping_unit" in io002.recommendation.text
    assert "number of stripes" not in io002.recommendation.text
    mpi007 = _finding(DATA / "traps" / "T02.darshan", "MPI007")
    assert "ext4 has no stripes" in mpi007.recommendation.text
    assert "stripe size" not in mpi007.recommendation.text


def test_fsync_advice_names_the_call_the_library_makes():
    """An HDF5 checkpoint (Recorder, H5Fflush per step): its syncs are HDF5's H5Fflush, so MD010's advice
    names that call, not fsync(fd) the application never makes; IOR -a POSIX -Y keeps fsync."""
    text, commands = _rendered("MD010", DATA / "recorder" / "hdf5-ckpt-collmeta")
    assert "H5Fflush calls to take out of the loop" in text
    assert commands and all("fsync(fd)" not in c for c in commands) and "H5Fflush(file" in commands[0]
    posix = _finding(CORPUS / "generated" / "n_fsync_per_write_Y_4k" / "case.darshan", "MD010")
    assert "fsync(fd)" in posix.recommendation.commands[0] and "H5Fflush" not in posix.recommendation.text


def test_alignment_on_ext4_is_its_block_size_not_a_stripe():
    """IOR's 1,000,000-byte transfers on ext4: off the 4 KiB block Darshan recorded; the advice
    names that block size, not Lustre's stripe size."""
    f = _finding(CORPUS / "generated" / "i_misaligned_1000000" / "case.darshan", "IO020")
    assert f.evidence["fs_without_stripes"] == "ext4"
    assert "4 KiB, the block size of ext4" in f.recommendation.text and "stripe" not in f.recommendation.text


def test_no_striping_advice_for_reads_from_files_already_striped_wide():
    """review11: a DLIO training reader (Polaris, /grand reached through a symbolic link the mount table
    matches only to '/', overlay) reads 10.5 GiB from npz files whose LUSTRE records spread each over 160
    OSTs: IO040 had told it to tune 'read-ahead and striping for reads'. A job reading files of one stripe
    each (sample-goodost, file per process) keeps the striping."""
    dlio = LOGS / "dlio_logs" / "snyder_python3_id3116902-2110483_12-19-66980-15861026832475351160_1.darshan"
    f = _finding(dlio, "IO040")
    assert f.evidence["main_direction_striped_share"] > 0.99 and not f.evidence["fs_without_stripes"]
    assert "striping" not in f.recommendation.text
    good = _finding(CORPUS / "darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input/sample-goodost.darshan",
                    "IO040")
    assert good.evidence["main_direction_striped_share"] == 0 and "striping" in good.recommendation.text


def test_no_fix_that_aggregates_through_every_rank_the_job_has():
    """IOR -a MPIIO -t 256k by 4 ranks on one shared file (review12): MD001's second fix, aggregating
    through min(ranks, 8) = 4 ranks, leaves every rank doing its own I/O, as the job already does; it
    was listed among the fixes as "aggregate I/O through 4 ranks"."""
    diagnosis = api.diagnose_path(DATA / "mpiio-independent-256k-run2.darshan")
    md001 = next(f for f in diagnosis.findings if f.code == "MD001")
    assert md001.fix is None
    assert not any(f.fix and f.fix.get("transform") == "aggregate" for f in diagnosis.findings)
    # its metadata time went to the one file the ranks share: not told to aggregate into shared files
    assert md001.evidence["own_file_meta_share"] < 0.01
    assert "aggregate into shared files" not in md001.recommendation.text
    assert "already share" in md001.recommendation.text
