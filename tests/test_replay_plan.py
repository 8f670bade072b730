"""Replay plans and transforms, without running anything: sources, storage, fixes, reshaping."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from advisor.api import load
from advisor.cli import cli
from advisor.profile import DXT_WRITE
from advisor.replay_plan import build_plan
from replay import transforms
from replay.plan import (CLOSE, COMM_WORLD, FSYNC, MPIIO_COLL, READ, RECV, SEND, WRITE, Plan,
                         size_bins)
from replay.reshape import fold, neighbour_reads, scale

REPO = Path(__file__).resolve().parents[1]
MiB = 1 << 20


@pytest.fixture(scope="module")
def gen(corpus) -> Path:
    return corpus / "generated"


@pytest.fixture(scope="module")
def small(gen):
    return load(gen / "b_small_io_shared_4k" / "case.darshan")


@pytest.fixture(scope="module")
def small_plan(small):
    return build_plan(small, source="dxt", scale=1.0)


def per_file(plan: Plan, code: int) -> np.ndarray:
    m = plan.data_mask() & (plan.ops["op"] == code)
    return np.bincount(plan.ops["file"][m], weights=plan.ops["length"][m], minlength=plan.nfiles)


def test_dxt_plan_is_the_trace_rank_by_rank(small, small_plan):
    trace = small.dxt["DXT_POSIX"]
    for rank in range(4):
        mine = trace.rank == rank
        ops = small_plan.rank_ops(rank)
        data = np.isin(ops["op"], (READ, WRITE))
        assert np.array_equal(ops["offset"][data], trace.offset[mine])
        assert np.array_equal(ops["length"][data], trace.length[mine])
        assert np.array_equal(ops["op"][data] == WRITE, trace.op[mine] == DXT_WRITE)
    s = small_plan.summary()
    assert s["ops"] == {"open": 8, "read": 16384, "write": 16384, "close": 8}
    assert s["phases"] == 2 and s["shared_files"] == 1 and s["prefill_bytes"] == 0


def test_plan_round_trips_through_npy_without_pickle(small_plan, tmp_path):
    small_plan.save(tmp_path / "p")
    names = {p.name for p in (tmp_path / "p").iterdir()}
    assert "plan.json" in names and all(n.endswith((".npy", ".json")) for n in names)
    for p in (tmp_path / "p").glob("*.npy"):
        np.load(p, allow_pickle=False)  # raises if anything needed pickle
    back = Plan.load(tmp_path / "p")
    assert all(np.array_equal(back.ops[k], small_plan.ops[k]) for k in small_plan.ops)
    assert back.summary() == small_plan.summary()


def test_trace_paths_never_enter_the_plan(gen, tmp_path):
    prof = load(gen / "b_small_io_shared_4k" / "case.darshan")
    prof.names = {rid: "../../etc/passwd" for rid in prof.names}
    plan = build_plan(prof, source="dxt", scale=1.0)
    plan.save(tmp_path / "p")
    blob = b"".join(p.read_bytes() for p in (tmp_path / "p").iterdir())
    assert b"passwd" not in blob and b"scratch" not in blob


def test_counters_plan_matches_counters(gen):
    prof = load(gen / "n_fsync_per_write_Y_4k" / "case.darshan")
    plan = build_plan(prof, source="counters", scale=1.0)
    s = plan.summary()
    assert s["ops"] == {"open": 8, "read": 1024, "write": 1024, "fsync": 2048, "close": 8}
    assert s["bytes_written"] == 4194304 and s["bytes_read"] == 4194304
    # fsyncs follow writes, two after each (2048 fsyncs for 1024 writes)
    ops = plan.rank_ops(1)
    after_write = ops["op"][1:][ops["op"][:-1] == WRITE]
    assert np.all(after_write == FSYNC)


def test_counters_plan_keeps_sizes_and_sequentiality(gen):
    prof = load(gen / "c_random_shared_64k" / "case.darshan")
    plan = build_plan(prof, source="counters", scale=1.0)
    w = plan.ops["op"] == WRITE
    assert np.all(plan.ops["length"][w] == 65536)
    for rank in range(4):
        ops = plan.rank_ops(rank)
        off = ops["offset"][ops["op"] == WRITE]
        assert 0.3 < np.mean(np.diff(off) < 0) < 0.7  # about half the writes jump back, as counted
        assert len(np.unique(off)) == len(off)  # a permutation of the rank's region


def test_ior_plan_is_the_ior_pattern(gen):
    prof = load(gen / "h3_segments_s16" / "ior.txt")
    plan = build_plan(prof, source="ior", scale=1.0)
    ops = plan.rank_ops(2)
    off = ops["offset"][ops["op"] == WRITE]
    block, tasks = 4 * MiB, 4
    expected = np.array([s * tasks * block + 2 * block + x * 256 * 1024 for s in range(16) for x in range(16)])
    assert np.array_equal(off, expected)
    assert plan.summary()["ops"]["write"] == 1024


IO500_HARD = ("ior-logs/public/IO500__submission-data/DKRZ/Mistral/lustre02/2019/submission-109/"
              "dkrz-l2/results/ior_hard_write.txt")  # 1200 tasks, MPI-IO, 47008-byte transfers


def test_ior_scale_shrinks_segments_and_folds_ranks(corpus):
    plan = build_plan(load(corpus / IO500_HARD), source="ior", scale=1e-4, np=2)
    assert plan.nranks == 2 and plan.meta["np"] == 2 and plan.meta["nprocs_source"] == 1200
    full = 1200 * 12000 * 47008
    assert plan.summary()["bytes_written"] == 1200 * 1 * 47008  # 12000 segments -> 1
    assert plan.meta["scale"] == pytest.approx(plan.summary()["bytes_written"] / full)


def test_coalesce_merges_contiguous_requests(small_plan):
    fixed = transforms.apply_fix(small_plan, {"transform": "coalesce", "transfer_size": 4 * MiB})
    assert np.array_equal(per_file(fixed, WRITE), per_file(small_plan, WRITE))
    assert fixed.summary()["ops"]["write"] == 16  # 16 MiB per rank in 4 MiB transfers
    assert fixed.meta["transforms"][-1] == {"transform": "coalesce", "transfer_size": 4 * MiB}


def test_fsync_at_close(gen):
    plan = build_plan(load(gen / "n_fsync_per_write_Y_4k" / "case.darshan"), source="dxt", scale=1.0)
    fixed = transforms.apply_fix(plan, {"transform": "fsync", "mode": "at-close"})
    ops = fixed.ops
    fs = np.flatnonzero(ops["op"] == FSYNC)
    assert len(fs) == 4  # one per rank, in the write session only
    assert np.all(ops["op"][fs + 1] == CLOSE)


def test_sequential_sorts_each_run(gen):
    plan = build_plan(load(gen / "c_random_shared_64k" / "case.darshan"), source="dxt", scale=1.0)
    fixed = transforms.sequential(plan)
    for rank in range(4):
        ops = fixed.rank_ops(rank)
        w = ops["offset"][ops["op"] == WRITE]
        assert np.all(np.diff(w) > 0)


def test_align_moves_extents_to_boundaries_and_keeps_bytes(gen):
    plan = build_plan(load(gen / "i_misaligned_1000000" / "case.darshan"), source="dxt", scale=1.0)
    fixed = transforms.apply_fix(plan, {"transform": "align", "boundary": MiB})
    w = fixed.ops["op"] == WRITE
    assert np.all(fixed.ops["offset"][w] % MiB == 0)
    assert per_file(fixed, WRITE).sum() == per_file(plan, WRITE).sum()
    ends = {}
    for r in range(4):  # extents of ranks stay disjoint
        ops = fixed.rank_ops(r)
        m = ops["op"] == WRITE
        ends[r] = (ops["offset"][m].min(), (ops["offset"][m] + ops["length"][m]).max())
    spans = sorted(ends.values())
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def test_layout_fpp_and_back(small_plan, gen):
    fpp = transforms.layout(small_plan, "fpp")
    files = np.unique(fpp.ops["file"][fpp.data_mask()])
    assert len(files) == 4 and fpp.summary()["shared_files"] == 0
    assert per_file(fpp, WRITE).sum() == per_file(small_plan, WRITE).sum()
    good = build_plan(load(gen / "a_good_fpp_posix_1m" / "case.darshan"), source="dxt", scale=1.0)
    shared = transforms.layout(good, "shared")
    assert len(np.unique(shared.ops["file"][shared.data_mask()])) == 1
    assert shared.summary()["shared_files"] == 1


def test_collective_makes_matched_collective_calls(small_plan):
    fixed = transforms.apply_fix(small_plan, {"transform": "collective", "cb_nodes": 2})
    fixed.validate()
    data = fixed.data_mask()
    assert np.all(fixed.ops["api"][data] == MPIIO_COLL)
    assert fixed.hints["cb_nodes"] == "2" and fixed.files["comm"][0] == COMM_WORLD
    calls = fixed.ops["batch"][data]
    assert len(np.unique(calls)) == 8  # one call per rank and phase (16 MiB < batch size)
    assert per_file(fixed, READ).sum() == per_file(small_plan, READ).sum()


def test_aggregate_ships_writes_to_aggregators(small_plan):
    fixed = transforms.apply_fix(small_plan, {"transform": "aggregate", "aggregators": 2})
    ops = fixed.ops
    writers = np.unique(ops["rank"][(ops["op"] == WRITE)])
    assert writers.tolist() == [0, 2]
    assert np.count_nonzero(ops["op"] == SEND) == np.count_nonzero(ops["op"] == RECV) == 8192
    assert per_file(fixed, WRITE).sum() == per_file(small_plan, WRITE).sum()


def test_stripe_is_a_layout_wish(small_plan):
    fixed = transforms.apply_fix(small_plan, {"transform": "stripe", "count": 8, "size": 4 * MiB})
    assert fixed.files["stripe_count"][0] == 8 and fixed.files["stripe_size"][0] == 4 * MiB
    assert np.array_equal(fixed.ops["offset"], small_plan.ops["offset"])


@pytest.mark.parametrize("fix, message", [
    ({"transform": "defrag"}, "unknown fix transform"),
    ({"transform": "coalesce", "size": 4}, "unknown parameter"),
    ({"transform": "coalesce", "transfer_size": "big"}, "must be int"),
    ({"transform": "layout", "mode": "sideways"}, "unknown mode"),
])
def test_bad_fix_dicts_are_refused(small_plan, fix, message):
    with pytest.raises(ValueError, match=message):
        transforms.apply_fix(small_plan, fix)


def test_fold_and_scale_keep_the_workload_proportional(small_plan, gen):
    folded = fold(small_plan, 2)
    assert folded.nranks == 2 and folded.meta["folded_from"] == 4
    assert per_file(folded, WRITE).sum() == per_file(small_plan, WRITE).sum()
    quarter = scale(small_plan, 0.25)
    assert per_file(quarter, WRITE).sum() == per_file(small_plan, WRITE).sum() // 4
    coll = build_plan(load(gen / "e_mpiio_collective_256k" / "case.darshan"), source="dxt", scale=1.0)
    odd = fold(coll, 3)  # 4 ranks on 3: folded ranks share their collective calls
    odd.validate()
    assert not any("independent" in n for n in odd.meta["notes"])
    c = odd.ops["api"] == MPIIO_COLL
    data = c & np.isin(odd.ops["op"], (READ, WRITE))
    for rank in range(3):  # as many collective calls as one original rank made: 256 + 256
        assert len(np.unique(odd.ops["batch"][data & (odd.ops["rank"] == rank)])) == 512
    assert per_file(odd, WRITE).sum() == per_file(coll, WRITE).sum()


def test_neighbour_reads_move_reads_to_the_next_node(small_plan):
    moved = neighbour_reads(small_plan, 2)
    for rank in range(4):
        src = small_plan.rank_ops((rank - 2) % 4)
        got = moved.rank_ops(rank)
        assert np.array_equal(got["offset"][got["op"] == READ], src["offset"][src["op"] == READ])


def test_size_bins_are_darshans():
    assert size_bins(np.array([0, 100, 101, 1024, 1025, MiB, MiB + 1])).tolist() == [0, 0, 1, 1, 2, 4, 5]


def test_plan_only_cli_prints_the_summary_as_json(gen):
    res = CliRunner().invoke(cli, ["replay", str(gen / "b_small_io_shared_4k" / "case.darshan"),
                                   "--plan-only", "--json", "-", "--scale", "0.5", "--np", "2"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["schema"] == "ioadvisor/replay/v1"
    assert doc["plan"]["scale"] == 0.5 and doc["plan"]["np"] == 2 and doc["plan"]["nprocs_source"] == 4
    assert doc["plan"]["ops"]["write"] == 8192


def test_replay_package_stays_light(tmp_path, small_plan):
    """Importing replay and running the executor must not pull in the advisor's heavy parts."""
    small = fold(scale(small_plan, 0.01), 1)
    code = f"""
import sys, json
from replay.safety import Scratch
with Scratch({str(tmp_path)!r}) as s:
    from replay.plan import Plan
    import replay.transforms, replay.reshape, replay.stats, replay.launch
    from replay import executor
    sys.argv = ["executor", "--plan", {str(tmp_path / "plan")!r}, "--scratch", str(s.path),
                "--out", str(s.path / "r.json"), "--expect-size", "1"]
    assert executor.main(sys.argv[1:]) == 0
bad = [m for m in ("sklearn", "jinja2", "darshan", "pandas", "advisor", "advisor.engine") if m in sys.modules]
print(json.dumps(bad))
"""
    small.save(tmp_path / "plan")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
