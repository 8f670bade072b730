"""The application's own traffic (advisor.facts.app_layer): counted at the topmost layer that saw each
data file, so that the libraries' traffic below and Python's imports are not the application's."""

from __future__ import annotations

from advisor.api import diagnose_profile, load
from advisor.facts import FactContext
from advisor.facts._darshan import is_data_path

E3SM = "darshan-logs/darshan_logs/e3sm_io_heatmaps_and_dxt/e3sm_io_heatmap_only.darshan"
H5PY = "darshan-logs/darshan_logs/hdf5_diagonal_write_only/hdf5_diagonal_write_half_flush_dxt.darshan"
READ_AB = ("darshan-repo-logs/darshan-util/pydarshan/darshan/examples/darshan-graph/"
           "pq_app_readAB_writeC_id71326_7-31-5658-2037904274838284930_55623.darshan")


def facts(path) -> FactContext:
    return FactContext(load(path))


def test_romio_reads_of_a_write_only_output_are_not_the_applications(corpus):
    """E3SM-IO: POSIX made 314,219 reads (306,538 of them 0-100 bytes, ROMIO's read-modify-write) beside
    its writes, half of the POSIX requests; the application's MPI-IO calls are 7 % reads."""
    ctx = facts(corpus / E3SM)
    assert ctx.get("app_layers") == "MPI-IO"
    assert ctx.get("app_bytes_written") == 77443304344  # MPIIO_BYTES_WRITTEN, not POSIX's 283.7 GiB
    assert ctx.get("read_share_ops") > 0.5 and ctx.get("app_read_share_ops") < 0.1
    (io040,) = [f for f in diagnose_profile(load(corpus / E3SM)).findings if f.code == "IO040"]
    assert io040.message.startswith("The job is write-intensive") and "counted at MPI-IO" in io040.message


def test_python_imports_do_not_make_a_writer_read_intensive(corpus):
    """h5py writing 10 bytes: POSIX read 2.6 MB of .pyc files and shared libraries (99 % of its bytes)."""
    ctx = facts(corpus / H5PY)
    assert ctx.get("read_share_bytes") > 0.9
    assert ctx.get("app_bytes_read") == 0 and ctx.get("app_bytes_written") == 10  # H5D_BYTES_WRITTEN
    assert ctx.get("app_layers") == "HDF5"


def test_a_file_written_through_mpiio_counts_at_mpiio(corpus):
    """readAB_writeC reads A and B with POSIX and writes C with MPI-IO, which POSIX never saw written."""
    ctx = facts(corpus / READ_AB)
    assert ctx.get("app_layers") == "MPI-IO + POSIX"  # STDIO: only the standard streams
    assert 0.1 < ctx.get("app_read_share_bytes") < 0.9 < ctx.get("read_share_bytes")


def test_open_mpi_helper_files_are_not_data(corpus):
    """OMPIO's shared-file-pointer backing file and lock probes (f2: HDF5 over collective MPI-IO) made
    IMB003 propose collective I/O to a collective job: the .sm file was the one shared file not moved
    collectively."""
    assert not is_data_path("/scratch/ompi/ompi.vm.0/pid.13350/1/testfile.h5_cid-6-13354.sm")
    assert not is_data_path("/yellow/users/treddy/mpi_io_rough_work/test.out.locktest.0")
    assert is_data_path("/scratch/run/out.locktest") and is_data_path("/scratch/run/plasma.sm")
    d = diagnose_profile(load(corpus / "generated/f2_hdf5_collective_256k/json-run.darshan"))
    assert not [f for f in d.findings if any(p.endswith((".sm", ".locktest.0")) for p in f.files)]
    assert not [f for f in d.findings if f.fix and f.fix["transform"] == "collective"]
    # its IMB003 (hints for the one aggregator) is gone too: its one aggregator is no imbalance (review12,
    # tests/test_facts_aggregation.py)
