"""HDF5 and PnetCDF findings at the layer the application calls, on real logs: IOR's HDF5
backend without and with -c (generated/f, f2), MACSio's parallel HDF5 (pydarshan's example log),
IOR's PnetCDF backend (darshan-logs ior_pnetcdf_hdf5)."""

from __future__ import annotations

import pytest

from advisor.config import SiteConfig
from advisor.engine import diagnose
from advisor.facts import FactContext
from advisor.ingest.darshan_log import load

INDEPENDENT = "generated/f_hdf5_independent_256k/case.darshan"
COLLECTIVE = "generated/f2_hdf5_collective_256k/case.darshan"
MACSIO = ("darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/"
          "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan")
PNETCDF = ("darshan-logs/darshan_logs/ior_pnetcdf_hdf5/"
           "shane_ior-PNETCDF_id438100-438100_11-9-41525-10280033558448664385_1.darshan")


def _found(corpus, path: str) -> dict:
    return {f.code: f for f in diagnose(load(corpus / path), SiteConfig()).findings}


def test_independent_hdf5_transfers_are_said_in_hdf5_terms_and_mpiio_stays_silent(corpus):
    found = _found(corpus, INDEPENDENT)
    hdf = found["HDF001"]
    # 256 H5Dwrite + 256 H5Dread of one dataset, H5D_USE_MPIIO_COLLECTIVE 0, H5F_USE_MPIIO 1
    assert hdf.evidence["hdf5_indep_ops"] == 512 and hdf.evidence["hdf5_indep_share"] == 1.0
    assert hdf.files == ["/scratch/f_hdf5_independent_256k/testfile.h5"]
    assert "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE)" in " ".join(hdf.recommendation.commands)
    assert hdf.cost_s == pytest.approx(max(hdf.evidence["mpiio_indep_contention_s"],
                                           hdf.evidence["mpiio_indep_small_write_cost_s"]
                                           + hdf.evidence["mpiio_indep_small_read_cost_s"]))
    assert not {"MPI003", "MPI004"} & set(found)  # the same 263 independent MPI-IO writes, said once
    assert "H5Pset_alignment" in " ".join(found["IO020"].recommendation.commands)  # an HDF5 file is misaligned


def test_collective_hdf5_transfers_are_not_flagged(corpus):
    ctx = FactContext(load(corpus / COLLECTIVE), SiteConfig())
    assert ctx.get("hdf5_uses_mpiio") and ctx.get("hdf5_indep_ops") == 0 and ctx.get("hdf5_dataset_ops") == 512
    assert not {"HDF001", "HDF002"} & set(_found(corpus, COLLECTIVE))


def test_macsio_metadata_time_and_its_independent_metadata_writes(corpus):
    """MACSio, 16 ranks, collective dataset writes: H5F_F_META_TIME 13.68 s over the ranks, and the
    7,695 independent MPI-IO writes below are HDF5's metadata (H5D_FILE_REC_ID is 0 in this log:
    the dataset names its file)."""
    found = _found(corpus, MACSIO)
    meta = found["HDF002"]
    assert meta.evidence["hdf5_meta_time_s"] == pytest.approx((13.6829 + 0.0019) / 16, rel=1e-3)
    assert 0.30 < meta.evidence["hdf5_meta_share"] < 0.35
    assert meta.evidence["hdf5_meta_indep_writes"] == 7695 and "7,695 independent MPI-IO writes" in meta.message
    assert "H5Pset_coll_metadata_write" in " ".join(meta.recommendation.commands)
    assert meta.files == ["/tmp/test/macsio_hdf5_000.h5"]
    assert "MPI003" not in found and "HDF001" not in found


def test_pnetcdf_independent_data_mode(corpus):
    found = _found(corpus, PNETCDF)
    pnc = found["PNC001"]
    assert pnc.evidence["pnetcdf_indep_ops"] == 32 and pnc.evidence["pnetcdf_nb_ops"] == 0
    assert pnc.files == ["/home/shane/software/ior/build/testFile"]
    assert "ncmpi_wait_all" in " ".join(pnc.recommendation.commands)
    assert not {"MPI003", "MPI004"} & set(found)


# No corpus log selects points or re-enters define mode (every HDF5 log selects regular
# hyperslabs, neither PnetCDF log calls ncmpi_redef): the rules' firing cases are hand-built.

def test_point_selections_fire_hdf003_costed_as_small_requests():
    from advisor.facts.requests import coalescing_saving
    from tests.profiles import SHARED, facts, job, module

    datasets = module("H5D", [(2, SHARED, {"H5D_POINT_SELECTS": 5000, "H5D_REGULAR_HYPERSLAB_SELECTS": 1000,
                                           "H5D_WRITES": 6000, "H5D_BYTES_WRITTEN": 6000 * 8,
                                           "H5D_FILE_REC_ID": 1, "H5D_F_WRITE_TIME": 48.0})])
    profile = job(datasets, nprocs=4, runtime_s=100.0, names={1: "/scratch/out.h5", 2: "/scratch/out.h5:/particles"})
    ctx = facts(profile)
    assert ctx.get("hdf5_scattered_share") == pytest.approx(5 / 6)
    assert ctx.get("hdf5_scattered_cost_s") == pytest.approx(48.0 * 5 / 6 / 4 * coalescing_saving(ctx, 8))
    (finding,) = [f for f in diagnose(profile, SiteConfig()).findings if f.code == "HDF003"]
    assert finding.files == ["/scratch/out.h5"] and "H5Sselect_hyperslab" in " ".join(finding.recommendation.commands)
    regular = job(module("H5D", [(2, SHARED, {"H5D_REGULAR_HYPERSLAB_SELECTS": 6000, "H5D_WRITES": 6000,
                                              "H5D_F_WRITE_TIME": 48.0})]), nprocs=4)
    assert "HDF003" not in {f.code for f in diagnose(regular, SiteConfig()).findings}


def test_define_mode_reentries_fire_pnc002():
    from tests.profiles import SHARED, facts, job, module

    files = module("PNETCDF_FILE", [(1, SHARED, {"PNETCDF_FILE_REDEFS": 400, "PNETCDF_FILE_CREATES": 4,
                                                 "PNETCDF_FILE_F_META_TIME": 40.4})])
    profile = job(files, nprocs=4, runtime_s=100.0)
    ctx = facts(profile)
    assert ctx.get("pnetcdf_redefs") == 100  # per rank: the reduced record sums the 4 ranks' calls
    assert ctx.get("pnetcdf_redef_cost_s") == pytest.approx(40.4 * 400 / 404 / 4)
    (finding,) = [f for f in diagnose(profile, SiteConfig()).findings if f.code == "PNC002"]
    assert finding.files == ["/scratch/f1"] and "ncmpi__enddef" in " ".join(finding.recommendation.commands)


def test_small_library_calls_fire_hdf004_and_pnc003_costed_as_small_requests():
    from advisor.facts.requests import coalescing_saving
    from tests.profiles import SHARED, facts, job, module

    h5d = module("H5D", [(2, SHARED, {"H5D_WRITES": 4000, "H5D_BYTES_WRITTEN": 4000 * 4096,
                                      "H5D_SIZE_WRITE_AGG_1K_10K": 4000, "H5D_F_WRITE_TIME": 40.0})])
    var = module("PNETCDF_VAR", [(3, SHARED, {"PNETCDF_VAR_COLL_WRITES": 3000, "PNETCDF_VAR_NB_WRITES": 1000,
                                              "PNETCDF_VAR_BYTES_WRITTEN": 4000 * 8192,
                                              "PNETCDF_VAR_SIZE_WRITE_AGG_1K_10K": 4000,
                                              "PNETCDF_VAR_F_WRITE_TIME": 40.0})])
    profile = job(h5d, var, nprocs=4, runtime_s=100.0)
    ctx = facts(profile)
    assert ctx.get("hdf5_small_calls") == 4000 and ctx.get("hdf5_small_mean_size") == 4096
    assert ctx.get("hdf5_small_cost_s") == pytest.approx(40.0 / 4 * coalescing_saving(ctx, 4096))
    assert ctx.get("pnetcdf_small_share") == 1.0 and ctx.get("pnetcdf_nb_share") == 0.25
    found = {f.code: f for f in diagnose(profile, SiteConfig()).findings}
    assert "ncmpi_wait_all" in " ".join(found["PNC003"].recommendation.commands)
    assert "H5Dwrite_multi" in " ".join(found["HDF004"].recommendation.commands)
    nonblocking = job(module("PNETCDF_VAR", [(3, SHARED, {"PNETCDF_VAR_NB_WRITES": 4000,
                                                          "PNETCDF_VAR_SIZE_WRITE_AGG_1K_10K": 4000,
                                                          "PNETCDF_VAR_F_WRITE_TIME": 40.0})]), nprocs=4)
    assert "PNC003" not in {f.code for f in diagnose(nonblocking, SiteConfig()).findings}


def test_chunks_that_straddle_stripes_fire_hdf005():
    from advisor.facts.access import MISALIGNED_PENALTY
    from advisor.profile import LustreComponent, LustreLayout
    from tests.profiles import SHARED, facts, job, module

    def profile(chunk_rows: int):
        h5d = module("H5D", [(2, SHARED, {"H5D_CHUNK_SIZE_D1": chunk_rows, "H5D_CHUNK_SIZE_D2": 100,
                                          "H5D_DATATYPE_SIZE": 8, "H5D_FILE_REC_ID": 1, "H5D_WRITES": 400,
                                          "H5D_F_WRITE_TIME": 40.0})])
        p = job(h5d, nprocs=4, runtime_s=100.0, names={1: "/lus/out.h5", 2: "/lus/out.h5:/t"})
        p.lustre = {1: LustreLayout(1, [LustreComponent(stripe_size=1 << 20, stripe_count=4)])}
        return p

    ctx = facts(profile(100))  # 100 x 100 x 8 = 80,000 bytes on 1 MiB stripes
    assert ctx.get("hdf5_chunk_bytes") == 80_000 and ctx.get("hdf5_chunk_stripe_size") == 1 << 20
    assert ctx.get("hdf5_chunk_misfit_cost_s") == pytest.approx(40.0 / 4 * MISALIGNED_PENALTY)
    (finding,) = [f for f in diagnose(profile(100), SiteConfig()).findings if f.code == "HDF005"]
    assert finding.files == ["/lus/out.h5"]
    assert "H5Pset_alignment(fapl, 1048576, 1048576);" in finding.recommendation.commands
    # 1,024 x 128 x 8 bytes = 1 MiB: one chunk per stripe
    fitting = profile(1024)
    fitting.records["H5D"].counters["H5D_CHUNK_SIZE_D2"][:] = 128
    assert "HDF005" not in {f.code for f in diagnose(fitting, SiteConfig()).findings}


IOR_HDF5_EXAMPLE = "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/ior_hdf5_example.darshan"


@pytest.mark.parametrize("log, says, not_says", [
    # ior -a HDF5 with the default (independent) transfer property list, 12 H5Dwrite/H5Dread calls
    (IOR_HDF5_EXAMPLE, "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);  H5D", "MPI_File_"),
    # ior -a NCMPI in independent data mode
    (PNETCDF, "_vara_double_all(ncid", "MPI_File_"),
    # ior -a MPIIO, independent: the application calls MPI-IO itself
    ("generated/d_mpiio_independent_256k/case.darshan", "_at_all(fh, offset", "H5Pset_dxpl_mpio"),
])
def test_going_collective_is_said_in_the_library_the_application_calls(corpus, log, says, not_says):
    """A job that calls HDF5 or PnetCDF makes its I/O collective in that library's calls (a transfer
    property list, the _all calls), not by calling MPI_File_write_at_all, which it never calls itself."""
    d = diagnose(load(corpus / log), SiteConfig())
    going = [f for f in d.findings if f.fix and f.fix["transform"] == "collective"]
    assert going, [f.code for f in d.findings]
    for f in going:
        commands = " ".join(f.recommendation.commands)
        assert says in commands and not_says not in commands, (f.code, commands)
        assert not_says not in f.recommendation.text, (f.code, f.recommendation.text)


def test_small_collective_pnetcdf_calls_are_fewer_collective_calls_not_merged_requests():
    """Blocking ncmpi_put_vara_*_all calls of 8 KiB (4,000, collective MPI-IO below): PNC003 proposed
    coalescing the POSIX requests, which collective buffering's aggregators already merge, beside
    MPI008's fewer, larger collective calls. Its fix is now MPI008's, as HDF004's is for HDF5, and MPI008
    is silent where it fires (one finding for one traffic); in independent data mode merging the requests
    stays its fix. (No corpus log makes 1,000 small
    PnetCDF calls: hand-built, as the test above.)"""
    from tests.profiles import SHARED, facts, job, module

    def run(mode: str):
        var = module("PNETCDF_VAR", [(30, SHARED, {
            "PNETCDF_VAR_FILE_REC_ID": 3, f"PNETCDF_VAR_{mode}_WRITES": 4000, "PNETCDF_VAR_BYTES_WRITTEN": 4000 * 8192,
            "PNETCDF_VAR_SIZE_WRITE_AGG_1K_10K": 4000, "PNETCDF_VAR_F_WRITE_TIME": 40.0})])
        mpi = module("MPI-IO", [(3, SHARED, {f"MPIIO_{mode}_WRITES": 4000, "MPIIO_BYTES_WRITTEN": 4000 * 8192,
                                             "MPIIO_F_WRITE_TIME": 36.0})])
        posix = module("POSIX", [(3, SHARED, {"POSIX_WRITES": 500, "POSIX_BYTES_WRITTEN": 4000 * 8192,
                                              "POSIX_F_WRITE_TIME": 4.0})])
        profile = job(var, mpi, posix, nprocs=4, runtime_s=100.0)
        return facts(profile), {f.code: f for f in diagnose(profile, SiteConfig()).findings}

    ctx, found = run("COLL")
    assert ctx.get("pnetcdf_calls_collective") is True
    # the same calls, one finding: MPI008 (their time above POSIX) is inside PNC003's cost and fix
    assert found["PNC003"].fix["transform"] == "mpiio_calls" and "MPI008" not in found
    assert "collective already" in found["PNC003"].recommendation.text
    ctx, found = run("INDEP")
    assert ctx.get("pnetcdf_calls_collective") is False and found["PNC003"].fix["transform"] == "coalesce"
