"""MPI-IO per-call overhead (MPI008) and its fix, fewer larger calls (transform mpiio_calls),
replayed at the MPI-IO layer.

The finding is checked on a real run made here: 2 ranks of the project's MPI (mpich wheel,
mpi4py) write one shared file with 4 KiB ``MPI_File_write_at_all`` calls (IOR -a MPIIO -c -t 4k
layout). No Darshan runtime exists here, so tests/mpiio_run.py measures what Darshan's MPI-IO and
POSIX modules would count (the MPI-IO calls timed one by one; the same pieces written with pwrite
for the POSIX layer below) and builds the JobProfile from it; its docstring says why the POSIX
layer is measured apart. The replay then issues the calls as MPI-IO collective calls, and
`--verify` measures the merged calls against them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from advisor.api import diagnose_profile, load
from advisor.config import ReplayConfig
from advisor.replay_plan import build_plan
from advisor.verify import verify_findings
from replay.plan import MPIIO, MPIIO_COLL
from replay.transforms import apply_fix
from tests import mpiio_run
from tests.profiles import SHARED, facts, job, module

NP = 2
KiB = 1 << 10
CALLS = 4096  # per rank: enough calls that their overhead stands above the 50 ms timing-noise floor
COLLECTIVE_256K = "generated/e_mpiio_collective_256k/case.darshan"


def test_small_collective_calls_are_found_and_larger_calls_verified_faster(tmp_path):
    measured = mpiio_run.run(tmp_path, NP, 4 * KiB, CALLS)
    profile = mpiio_run.profile(measured, str(tmp_path / "shared"))
    diagnosis = diagnose_profile(profile)
    finding = next(f for f in diagnosis.findings if f.code == "MPI008")
    assert finding.severity in ("warn", "high") and finding.category == "small-io"
    assert finding.evidence["mpiio_coll_call_size"] == 4 * KiB
    assert finding.evidence["mpiio_coll_calls_per_rank"] == CALLS
    assert 0 < finding.cost_s <= finding.evidence["mpiio_coll_above_posix_s"]
    assert finding.fix == {"transform": "mpiio_calls", "call_bytes": 4 << 20}  # 4 MiB calls

    verify_findings(profile, replace(diagnosis, findings=[finding]), tmp_path, None, NP, None,
                    settings=ReplayConfig(precision=0.5))
    v = finding.verification
    assert v.verdict == "improved", v
    assert v.ci95[0] > 1.0 + v.margin and v.fixed.median_s < v.baseline.median_s
    assert v.baseline.data_ops == NP * CALLS and v.fixed.data_ops == NP * CALLS * 4 * KiB // (4 << 20)
    assert v.baseline.bytes == v.fixed.bytes == NP * CALLS * 4 * KiB  # the same bytes in 4 MiB calls
    assert not any(tmp_path.iterdir()), "the replay left files behind"


def test_time_above_posix_is_what_the_ranks_did_not_wait_for_below_on_the_collective_share():
    calls, size = 4000, 4 * KiB  # 4 ranks: 1,000 writes each, half of them collective
    mpiio = module("MPI-IO", [(1, SHARED, {"MPIIO_COLL_WRITES": calls // 2, "MPIIO_INDEP_WRITES": calls // 2,
                                           "MPIIO_BYTES_WRITTEN": calls * size, "MPIIO_F_WRITE_TIME": 8.0})])
    posix = module("POSIX", [(1, SHARED, {"POSIX_WRITES": calls, "POSIX_BYTES_WRITTEN": calls * size,
                                          "POSIX_F_WRITE_TIME": 0.4, "POSIX_F_SLOWEST_RANK_TIME": 0.3})])
    ctx = facts(job(mpiio, posix, nprocs=4, runtime_s=10.0))
    # 2 s per process in MPI-IO, the slowest rank 0.3 s below it: 1.7 s above, half of it collective
    assert ctx.get("mpiio_coll_above_posix_s") == pytest.approx(0.85)
    assert ctx.get("mpiio_coll_calls_per_rank") == 500 and ctx.get("mpiio_coll_call_size") == size
    assert ctx.get("mpiio_coll_calls_after") == 1  # 2 MiB per rank fits one 4 MiB call
    assert ctx.get("mpiio_call_overhead_cost_s") == pytest.approx(0.85 * 499 / 500)
    assert ctx.get("mpiio_suggested_call_bytes") == 500 * size


def test_collective_calls_of_a_real_log_replay_as_collective_calls_and_merge_matched(corpus):
    profile = load(corpus / COLLECTIVE_256K)
    for source, ranks in (("dxt", None), ("counters", None), ("dxt", 2)):  # 2: folded, calls batched
        plan = build_plan(profile, source=source, scale=0.25, np=ranks)
        data = plan.data_mask() & np.isin(plan.ops["api"], (MPIIO, MPIIO_COLL))  # not OMPIO's side files
        coll = data & (plan.ops["api"] == MPIIO_COLL)
        assert coll.sum() == data.sum() > 0, source  # MPIIO_COLL_* calls stay collective calls
        before = len(np.unique(np.where(plan.ops["batch"] >= 0, plan.ops["batch"], -1 - np.arange(plan.nops))[coll]))
        fixed = apply_fix(plan, {"transform": "mpiio_calls", "call_bytes": 4 << 20})
        fixed.validate()  # every rank makes the same collective calls
        fdata = fixed.data_mask() & np.isin(fixed.ops["api"], (MPIIO, MPIIO_COLL))
        assert (fixed.ops["api"][fdata] == MPIIO_COLL).all()
        assert int(fixed.ops["length"][fdata].sum()) == int(plan.ops["length"][data].sum())
        after = len(np.unique(np.where(fixed.ops["batch"] >= 0, fixed.ops["batch"], -1 - np.arange(fixed.nops))[fdata]))
        assert after * 4 <= before, (source, before, after)  # 256 KiB calls merged into 4 MiB ones
