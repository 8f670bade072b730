"""MPI-IO aggregation: collective buffering is not imbalance, amplified bytes are, and
independent small requests to a shared file are a collective-I/O finding.

Real runs (the labelled traps T02 and T07, copied to tests/data/traps) and hand-built profiles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.config import SiteConfig
from advisor.engine import diagnose
from advisor.facts import FactContext
from advisor.ingest.darshan_log import load
from advisor.profile import SHARED_RANK, JobInfo, JobProfile, ModuleRecords, Provenance

TRAPS = Path(__file__).parent / "data" / "traps"
MiB = 1 << 20


def _findings(name: str) -> dict:
    return {f.code: f for f in diagnose(load(TRAPS / f"{name}.darshan"), SiteConfig()).findings}


def test_one_aggregator_doing_all_posix_io_is_not_imbalance_but_its_48x_rewrite_is_found():
    found = _findings("T02")
    assert not {"IMB001", "IMB002", "IMB003"} & set(found)  # the MPI-IO layer is balanced (18.04 vs 18.07 s)
    amp = found["MPI007"]
    assert amp.category == "redundant-io" and amp.files == ["/scratch/T02/testfile"]
    # POSIX_BYTES_WRITTEN 3238002688 and _READ 6408896512 for 64 MiB each through MPI-IO
    assert amp.evidence["amplified_write_factor"] == pytest.approx(3238002688 / (64 * MiB), rel=1e-6)
    assert amp.evidence["amplified_read_factor"] == pytest.approx(6408896512 / (64 * MiB), rel=1e-6)
    assert amp.evidence["amplified_collective"] is True and "read-modify-write" in amp.message
    # the extra bytes' share of rank 0's POSIX time (2.40 s write + 3.42 s read), not more
    assert 5.0 < amp.cost_s < 5.85
    assert "romio_ds_write" in " ".join(amp.recommendation.commands)
    assert "IO030" not in found and "IO031" not in found  # the same bytes, said once, with their cause


def test_independent_small_mpiio_writes_to_a_shared_file_are_a_no_collective_finding():
    found = _findings("T07")
    mpi003 = found["MPI003"]
    assert mpi003.category == "no-collective" and mpi003.severity in ("warn", "high")
    # what the 4,096 8 KiB POSIX writes below lose against 1 MiB requests, per process
    assert mpi003.cost_s == pytest.approx(mpi003.evidence["mpiio_indep_small_write_cost_s"], rel=1e-3)
    assert mpi003.cost_s > found["MPI004"].cost_s and "small ones reach the file system" in mpi003.message
    assert "MPI007" not in found  # ROMIO passed the requests 1:1: no amplification


def _profile(posix: dict, mpiio: dict, nprocs: int = 4) -> JobProfile:
    """One shared file (id 7) seen by MPI-IO and POSIX with the given counters."""
    def records(module: str, counters: dict) -> ModuleRecords:
        ints = {k: np.array([v], np.int64) for k, v in counters.items() if isinstance(v, int)}
        floats = {k: np.array([v], np.float64) for k, v in counters.items() if isinstance(v, float)}
        return ModuleRecords(module, np.array([7], np.uint64), np.array([SHARED_RANK]), ints, floats)

    return JobProfile(Provenance("hand", "darshan", "test"), JobInfo(nprocs=nprocs, runtime_s=100.0),
                      records={"POSIX": records("POSIX", posix), "MPI-IO": records("MPI-IO", mpiio)},
                      names={7: "/lus/out.dat"})


def test_amplification_cost_is_the_posix_time_on_the_extra_bytes_as_the_slowest_rank_carried_it():
    posix = {"POSIX_BYTES_WRITTEN": 1000 * MiB, "POSIX_BYTES_READ": 750 * MiB, "POSIX_WRITES": 10,
             "POSIX_READS": 10, "POSIX_F_WRITE_TIME": 8.0, "POSIX_F_READ_TIME": 4.0,
             "POSIX_F_SLOWEST_RANK_TIME": 6.0, "POSIX_F_FASTEST_RANK_TIME": 2.0}
    mpiio = {"MPIIO_BYTES_WRITTEN": 250 * MiB, "MPIIO_COLL_WRITES": 10, "MPIIO_F_WRITE_TIME": 40.0,
             "MPIIO_F_SLOWEST_RANK_TIME": 10.0, "MPIIO_F_FASTEST_RANK_TIME": 10.0}
    ctx = FactContext(_profile(posix, mpiio))
    assert ctx.get("amplified_write_factor") == 4.0 and ctx.get("amplification_factor") == 7.0
    assert ctx.get("amplified_extra_bytes") == 1500 * MiB
    # 8 s x 3/4 extra writes + 4 s x all reads (none asked for) = 10 summed s; slowest rank carried 6 of 12
    assert ctx.get("amplification_cost_s") == pytest.approx(5.0)
    assert ctx.get("amplified_collective") is True
    assert ctx.get("shared_time_imbalance") == 0.0  # judged at MPI-IO: 10 s = 10 s


def test_no_amplification_when_posix_moves_what_mpiio_asked_for():
    posix = {"POSIX_BYTES_WRITTEN": 256 * MiB, "POSIX_WRITES": 64, "POSIX_F_WRITE_TIME": 2.0,
             "POSIX_F_SLOWEST_RANK_TIME": 2.0, "POSIX_F_FASTEST_RANK_TIME": 0.0}
    mpiio = {"MPIIO_BYTES_WRITTEN": 256 * MiB, "MPIIO_INDEP_WRITES": 64, "MPIIO_F_WRITE_TIME": 2.5,
             "MPIIO_F_SLOWEST_RANK_TIME": 2.0, "MPIIO_F_FASTEST_RANK_TIME": 0.1}
    ctx = FactContext(_profile(posix, mpiio))
    assert ctx.value("amplification_factor") is None and "no file moved more" in ctx.reason("amplification_factor")
    # independent MPI-IO: ROMIO's POSIX requests are the ranks' own, so POSIX imbalance counts
    assert ctx.get("shared_time_imbalance") == pytest.approx(1.0)


def test_a_slow_aggregator_is_imbalance_among_the_aggregators_not_against_idle_ranks():
    posix = {"POSIX_BYTES_READ": 400 * MiB, "POSIX_READS": 400, "POSIX_F_READ_TIME": 16.0,
             "POSIX_SLOWEST_RANK_BYTES": 100 * MiB, "POSIX_FASTEST_RANK_BYTES": 0,
             "POSIX_F_SLOWEST_RANK_TIME": 10.0, "POSIX_F_FASTEST_RANK_TIME": 0.0}
    mpiio = {"MPIIO_BYTES_READ": 400 * MiB, "MPIIO_COLL_READS": 64, "MPIIO_F_READ_TIME": 640.0,
             "MPIIO_F_SLOWEST_RANK_TIME": 10.2, "MPIIO_F_FASTEST_RANK_TIME": 9.8}
    ctx = FactContext(_profile(posix, mpiio, nprocs=64))
    # 4 aggregators (400 MiB / 100 MiB, no DXT to count them): mean 4 s, the slowest 10 s
    assert ctx.get("shared_imbalance_among") == "aggregators" and ctx.get("shared_imbalance_count") == 4
    assert ctx.get("shared_imbalance_count_exact") is False
    assert ctx.get("shared_imbalance_cost_s") == pytest.approx(6.0)
    assert ctx.get("shared_time_imbalance") == pytest.approx(0.6)


@pytest.mark.parametrize("name", ["hdf5-collective-256k-run2.darshan", "dumps/f2_hdf5_collective_256k.parser.txt.gz"])
def test_ranks_writing_only_hdf5_metadata_are_not_aggregators(name):
    """IOR -a HDF5 -c on one node (review12): OMPIO's one aggregator moved 134 MB of the shared file, the
    other three ranks only HDF5's independent 40-byte metadata writes. With DXT the four ranks were counted
    as four aggregators, without it 134,227,424 bytes over the slowest rank's 134,220,472 rounded up to
    two: IMB003 warned of a slow aggregator and asked for cb_nodes=1, the job's own setting."""
    from advisor.facts._darshan import data_files
    from advisor.facts.aggregation import aggregator_count
    from advisor.ingest import load_profile

    profile = load_profile(Path(__file__).parent / "data" / name)
    ctx = FactContext(profile, SiteConfig())
    (h5,) = [f for f in data_files(ctx) if f.path.endswith("testfile.h5")]
    assert aggregator_count(ctx, h5.record_id, h5.by_module["POSIX"]) == (1, name.endswith(".darshan"))
    assert "IMB003" not in {f.code for f in diagnose(profile, SiteConfig()).findings}


def test_skew_autobench_keeps_its_imbalance_as_a_slow_aggregator(corpus):
    from tests.conftest import CORPUS
    from tests.helpers import require

    log = CORPUS / "darshan-logs/darshan_logs/skew_io/skew-autobench-ior.darshan"
    require(log.exists(), f"{log} not found")
    (imb,) = [f for f in diagnose(load(log), SiteConfig()).findings if f.code == "IMB003"]
    # POSIX_F_SLOWEST_RANK_TIME 337.2 s; 549.8 GB over the slowest rank's 9.8 GB: 56.1, 56 aggregators
    # (the nearest whole number of shares; 57 when rounded up) sharing POSIX_F_READ_TIME 9033.4 s +
    # POSIX_F_META_TIME 212.6 s
    assert imb.evidence["shared_imbalance_among"] == "aggregators" and imb.evidence["shared_imbalance_count"] == 56
    assert imb.cost_s == pytest.approx(337.158 - (9033.428 + 212.571) / 56, rel=1e-3)
    assert "aggregator" in imb.recommendation.text
    # no DXT: the aggregators were estimated (and the cb_nodes of its fix guessed), and the finding says so
    guesses = {a["value"].split(" on ")[0]: a["how"] for a in imb.assumptions}
    assert "DXT_ENABLE_IO_TRACE=1" in guesses["56 aggregators"]
    # said once per report in the assumed-values list, not in the message
    assert any("estimated as the file's bytes over the slowest rank's bytes" in a["value"] for a in imb.assumptions)


E3SM = "darshan-logs/darshan_logs/e3sm_io_heatmaps_and_dxt/e3sm_io_heatmap_only.darshan"


def test_e3sm_reads_of_files_it_only_writes_are_read_modify_write_costed_by_their_time(corpus):
    """E3SM-IO (PnetCDF, 512 ranks, 56 aggregators): 305,008 + 1,529 POSIX reads of the two
    output files, which MPI-IO never reads, all of 0 bytes: ROMIO's read-modify-write."""
    ctx = FactContext(load(corpus / E3SM), SiteConfig())
    assert ctx.get("romio_read_count") == 305_008 + 1_529
    assert ctx.get("romio_read_mean_size") == 0
    # POSIX_F_READ_TIME 11137.0 s + 53.8 s summed over the 56 aggregators: ~199.8 s each
    assert ctx.get("romio_read_time_s") == pytest.approx((11137.042 + 53.82) / 56, rel=1e-3)
    # plus the extra writes' share of the write time (41.8 s): the reads no longer cost nothing
    assert 235 < ctx.get("amplification_cost_s") < 245
    # the small-read counts keep only the application's own reads (of the input deck)
    assert ctx.get("small_read_count") == 7682 and ctx.get("read_ops") == 7682
    found = {f.code: f for f in diagnose(load(corpus / E3SM), SiteConfig()).findings}
    assert found["MPI007"].severity == "high" and "306,537 POSIX reads" in found["MPI007"].message
    assert not {"IO002", "IO004"} & set(found)


@pytest.mark.parametrize("case, below", [
    ("d_mpiio_independent_256k", True),  # ior -a MPIIO -t 256k: every small shared request is an MPI-IO call's
    ("b_small_io_shared_4k", False),  # ior -a POSIX: no MPI-IO at all
    ("e_mpiio_collective_256k", False),  # ior -a MPIIO -c: the small requests are below collective calls
])
def test_small_shared_requests_made_by_independent_mpiio_calls(corpus, case, below):
    """IO003/IO004 leave to MPI003/MPI004 the small shared requests that are the application's own
    independent MPI-IO calls passed on one by one: said once, where the application makes them."""
    log = load(corpus / "generated" / case / "case.darshan")
    ctx = FactContext(log, SiteConfig())
    assert ctx.get("small_shared_writes_below_independent") is below
    assert ctx.get("small_shared_reads_below_independent") is below
    codes = {f.code for f in diagnose(log, SiteConfig()).findings}
    if below:
        assert {"MPI003", "MPI004"} <= codes and not {"IO003", "IO004"} & codes
