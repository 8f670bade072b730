"""MPI-IO interface facts: collective vs independent counts and shares, independent time, the
aggregators collective buffering used (from DXT) and how many to ask for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.facts import Missing
from advisor.facts.interfaces import FALLBACK_CB_NODES
from advisor.ingest.darshan_log import load
from advisor.profile import DXT_WRITE, DxtTrace
from tests.profiles import SHARED, facts, job, module

DATA = Path(__file__).parent / "data"
MiB = 1 << 20


def _mpiio(indep_writes: int, coll_writes: int, write_time: float = 8.0):
    return module("MPI-IO", [(1, SHARED, {"MPIIO_INDEP_WRITES": indep_writes, "MPIIO_COLL_WRITES": coll_writes,
                                          "MPIIO_BYTES_WRITTEN": (indep_writes + coll_writes) * MiB,
                                          "MPIIO_F_WRITE_TIME": write_time})])


def test_collective_and_independent_counts_and_shares():
    ctx = facts(job(_mpiio(30, 10), nprocs=4))
    assert (ctx.get("mpiio_indep_writes"), ctx.get("mpiio_coll_writes")) == (30, 10)
    assert ctx.get("mpiio_indep_write_share") == pytest.approx(0.75)
    assert ctx.get("mpiio_indep_read_share") == 0.0  # no reads at all
    # the shared file's time, weighted by its independent share, per process
    assert ctx.get("mpiio_indep_time_s") == pytest.approx(8.0 * 0.75 / 4)


def _with_trace(ranks_hosts: dict[int, str]):
    """Collective writes to file 1, and the POSIX segments only the aggregator ranks issued."""
    ranks = np.array(sorted(ranks_hosts), np.int64)
    n = len(ranks)
    trace = DxtTrace("DXT_POSIX", rank=ranks, record_id=np.full(n, 1, np.uint64), op=np.full(n, DXT_WRITE),
                     offset=np.arange(n, dtype=np.int64) * MiB, length=np.full(n, MiB, np.int64),
                     start=np.zeros(n), end=np.full(n, 0.1), hostnames=dict(ranks_hosts))
    profile = job(_mpiio(0, 16), nprocs=16)
    profile.dxt["DXT_POSIX"] = trace
    return profile


def test_aggregators_are_the_ranks_doing_posix_io_on_collective_files():
    ctx = facts(_with_trace({0: "n1", 4: "n1", 8: "n2", 12: "n2"}))
    assert ctx.get("cb_nodes") == 4 and ctx.get("aggregator_nodes") == 2
    assert ctx.get("compute_nodes") == 2
    assert ctx.get("suggested_cb_nodes") == 2  # one per compute node, ROMIO's default


def test_without_host_names_the_suggestion_falls_back():
    profile = job(_mpiio(0, 16), nprocs=64)
    ctx = facts(profile)
    with pytest.raises(Missing, match="no DXT host names"):
        ctx.get("compute_nodes")
    assert ctx.get("suggested_cb_nodes") == FALLBACK_CB_NODES
    assert facts(job(_mpiio(0, 16), nprocs=2)).get("suggested_cb_nodes") == 2  # never more than the ranks


def test_real_mpiio_log_counts_match_its_counters():
    profile = load(DATA / "mpi-io-test-x86_64-3.5.0.darshan")
    ctx, rec = facts(profile), profile.records["MPI-IO"]
    for kind in ("INDEP", "COLL", "NB"):
        for op in ("READS", "WRITES"):
            assert ctx.get(f"mpiio_{kind.lower()}_{op.lower()}") == int(rec.get(f"MPIIO_{kind}_{op}").sum())
    indep, coll = int(rec.get("MPIIO_INDEP_WRITES").sum()), int(rec.get("MPIIO_COLL_WRITES").sum())
    assert ctx.get("mpiio_indep_write_share") == pytest.approx(indep / (indep + coll) if indep + coll else 0.0)


def _independent(pieces: list[tuple[int, int, int]]):
    """Independent MPI-IO writes to shared file 1 whose POSIX requests are `pieces` (rank, offset, length)."""
    profile = job(_mpiio(len(pieces), 0), nprocs=4)
    rank, offset, length = (np.array(c, np.int64) for c in zip(*pieces))
    n = len(pieces)
    profile.dxt["DXT_POSIX"] = DxtTrace("DXT_POSIX", rank=rank, record_id=np.full(n, 1, np.uint64),
                                        op=np.full(n, DXT_WRITE), offset=offset, length=length,
                                        start=np.arange(n) * 1e-3, end=np.arange(n) * 1e-3 + 5e-4)
    return facts(profile)


def test_ranks_writing_their_own_stripes_do_not_contend():
    own = _independent([(r, r * 4 * MiB + i * MiB // 4, MiB // 4) for r in range(4) for i in range(16)])
    assert own.get("mpiio_indep_stripe_sharing") == 0.0 and own.get("mpiio_indep_contention_s") == 0.0


def test_ranks_interleaving_pieces_of_one_stripe_contend():
    mixed = _independent([(r, i * MiB + r * MiB // 4, MiB // 4) for i in range(4) for r in range(4)])
    assert mixed.get("mpiio_indep_stripe_sharing") == 1.0
    assert mixed.get("mpiio_indep_contention_s") == pytest.approx(0.5 * mixed.get("mpiio_indep_time_s"))
    # no LUSTRE layout and no site default: the 1 MiB stripe is said to be assumed
    assert [a.key for a in mixed.assumptions("mpiio_indep_stripe_sharing")] == ["[system] default_stripe_size"]


def test_without_dxt_stripes_are_assumed_shared():
    ctx = facts(job(_mpiio(30, 0), nprocs=4))
    assert ctx.get("mpiio_indep_contention_s") == pytest.approx(0.5 * ctx.get("mpiio_indep_time_s"))
    assert [a.how for a in ctx.assumptions("mpiio_indep_contention_s")] == ["run with DXT"]


def test_unreduced_shared_file_counts_its_independent_time_and_time_above_posix(corpus):
    """mpi-io-test on NFS (Open MPI's OMPIO, 32 ranks, 16 MiB independent writes and reads): Darshan kept one
    MPI-IO record per rank of the shared test.out. Its independent MPI-IO time (7.1 s per process) was 0 when
    only reduced records (rank -1) counted as shared; 5.3 s per process of the writes are MPI-IO's own time
    above the POSIX writes (reads 8 ms), the cost MPI003 states. Collective IOR has no independent file."""
    from advisor.facts import FactContext

    log = corpus / ("darshan-logs/darshan_logs/mpi_io_test_with_dxt/"
                    "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan")
    ctx = FactContext(load(log))
    assert ctx.get("mpiio_indep_time_s") > 7
    assert 5 < ctx.get("mpiio_indep_write_above_posix_s") < 5.5 and ctx.get("mpiio_indep_read_above_posix_s") < 0.1
    assert ctx.get("mpiio_indep_stripe_sharing") == 0.0  # each rank writes its own 16 MiB: no stripe shared
    assert ctx.get("mpiio_indep_fstypes") == "nfs"
    coll = FactContext(load(corpus / "generated/e_mpiio_collective_256k/case.darshan"))
    assert coll.get("mpiio_indep_write_above_posix_s") == 0.0 and coll.get("mpiio_indep_fstypes") == ""
