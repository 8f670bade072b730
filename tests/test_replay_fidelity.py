"""Fidelity: replays of the generated corpus reproduce each file's bytes and operation counts.

The check reads the replay's own record (what the executor did, reduced over ranks)
and compares it with the source: exactly for DXT traces and IOR parameters, within
5 % for streams synthesized from counters. All plans of one rank count run in one
MPI job (as variants), so the whole corpus costs a few launches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.api import load
from advisor.cli import cli
from advisor.replay_plan import build_plan
from advisor.replay_plan.fidelity import FIELDS, compare
from replay import launch, safety

pytestmark = pytest.mark.xdist_group("replay-fidelity")  # one worker builds the module's replays once

# Every generated case with a Darshan log (m* aborted before writing one). The two big
# traces replay at a tenth: the plan keeps the first tenth of every rank's requests.
DARSHAN_CASES = {
    "a_good_fpp_posix_1m": 1.0, "b_small_io_shared_4k": 1.0, "c_random_shared_64k": 1.0,
    "d_mpiio_independent_256k": 1.0, "e_mpiio_collective_256k": 1.0, "f_hdf5_independent_256k": 1.0,
    "f2_hdf5_collective_256k": 1.0, "g_mdtest_files_n2000": 1.0, "g2_mdtest_n2000_default_mem_partial": 1.0,
    "h1_reorder_read_neighbor_C": 1.0, "h2_fsync_e": 1.0, "h3_segments_s16": 1.0, "h4_repetitions_i3": 1.0,
    "i_misaligned_1000000": 1.0, "j_imbalance_rank0_10x": 1.0, "j2_straggler_rank0_slow": 1.0,
    "k_fio_randwrite_4k": 1.0, "k2_python_small_writes": 1.0, "k3_dd_4k_writes": 1.0, "l_verbose_v": 1.0,
    "l2_verbose_vv": 1.0, "l3_verbose_vvv": 1.0, "n_fsync_per_write_Y_4k": 1.0, "o_small_io_odirect_4k": 1.0,
    "o2_good_fpp_odirect_1m": 1.0, "p_csv_summary_and_rank_details": 1.0, "r_stonewall_D1_wearout": 0.1,
    "s_big_dxt_1k": 0.1, "x_dxt_v2_devel_darshan": 1.0,
}
# Counter-synthesized streams of the bigger cases run at a quarter (the check scales its reference).
COUNTER_SCALE = {c: 0.25 for c in ("a_good_fpp_posix_1m", "c_random_shared_64k", "d_mpiio_independent_256k",
                                   "e_mpiio_collective_256k", "h3_segments_s16", "h4_repetitions_i3",
                                   "i_misaligned_1000000", "j_imbalance_rank0_10x", "o2_good_fpp_odirect_1m",
                                   "r_stonewall_D1_wearout", "s_big_dxt_1k", "x_dxt_v2_devel_darshan")}
IOR_SCALE = 0.25  # IOR scales by whole transfers: its stated scale is exact, so is the check
IOR_OUTPUTS = [
    "a_good_fpp_posix_1m/ior.json", "b_small_io_shared_4k/ior.txt", "c_random_shared_64k/ior.json",
    "d_mpiio_independent_256k/ior.txt", "e_mpiio_collective_256k/ior.json", "h1_reorder_read_neighbor_C/ior.txt",
    "h2_fsync_e/ior.json", "h3_segments_s16/ior.txt", "h4_repetitions_i3/ior.txt", "i_misaligned_1000000/ior.txt",
    "n_fsync_per_write_Y_4k/ior.txt", "o_small_io_odirect_4k/ior.json", "r_stonewall_D1_wearout/ior.json",
]


def replay_all(cases: dict[str, tuple], target: Path) -> dict[str, dict]:
    """Replay {label: (profile, plan)} once each; returns {label: variant result}."""
    by_ranks: dict[int, list[str]] = {}
    for label, (_, plan) in cases.items():
        by_ranks.setdefault(plan.nranks, []).append(label)
    out = {}
    for nranks, labels in sorted(by_ranks.items()):
        with safety.Scratch(target) as scratch:
            dirs = [cases[lb][1].save(scratch.path / f"plan{i}") for i, lb in enumerate(labels)]
            result = launch.run_plans(scratch, dirs, labels, launch.LaunchOptions(np=nranks, cache="none"))
        assert result["nranks"] == nranks  # the MPI job really had that many ranks
        out.update({v["label"]: v for v in result["variants"]})
    return out


def worst(profile, source: str, variant: dict, scale: float, fields=FIELDS) -> tuple[float, list]:
    rows = compare(profile, source, variant["record"], scale=scale)
    bad = [(r.name, r.expected, r.replayed) for r in rows if r.worst_error(fields) > 0]
    return max((r.worst_error(fields) for r in rows), default=0.0), bad


@pytest.fixture(scope="module")
def dxt_and_counter_replays(corpus, tmp_path_factory):
    gen = corpus / "generated"
    cases = {}
    for case, scale in DARSHAN_CASES.items():
        profile = load(gen / case / "case.darshan")
        if not case.startswith(("g", "x_")):  # no readable trace
            cases[f"dxt:{case}"] = (profile, build_plan(profile, source="dxt", scale=scale))
        cases[f"counters:{case}"] = (profile, build_plan(profile, source="counters",
                                                         scale=COUNTER_SCALE.get(case, 1.0)))
    return cases, replay_all(cases, tmp_path_factory.mktemp("fidelity"))


@pytest.mark.parametrize("case", [c for c in DARSHAN_CASES if not c.startswith(("g", "x_"))])
def test_dxt_replay_reproduces_every_file_exactly(dxt_and_counter_replays, case):
    cases, done = dxt_and_counter_replays
    profile, plan = cases[f"dxt:{case}"]
    scale = DARSHAN_CASES[case]
    # scaled plans keep ceil(n * scale) requests per rank, file and phase: allow that rounding
    tol = 0.0 if scale == 1 else 0.002
    err, bad = worst(profile, "dxt", done[f"dxt:{case}"], scale)
    assert err <= tol, bad
    if scale == 1:  # opens and fsyncs come from the counters: exact too (collective opens excepted)
        err, bad = worst(profile, "dxt", done[f"dxt:{case}"], scale, fields=("opens", "fsyncs"))
        assert err == 0, bad


@pytest.mark.parametrize("case", list(DARSHAN_CASES))
def test_counter_replay_is_within_five_percent(dxt_and_counter_replays, case):
    cases, done = dxt_and_counter_replays
    profile, _ = cases[f"counters:{case}"]
    err, bad = worst(profile, "counters", done[f"counters:{case}"], COUNTER_SCALE.get(case, 1.0),
                     fields=FIELDS + ("opens", "fsyncs"))
    assert err <= 0.05, bad


def test_replay_record_totals_match_the_logs_own_totals(dxt_and_counter_replays):
    """Independent of the reference code: the README's darshan totals for two cases."""
    _, done = dxt_and_counter_replays
    b = done["dxt:b_small_io_shared_4k"]["record"]["totals"]
    assert (b["writes"], b["reads"], b["bytes_written"], b["bytes_read"]) == (16384, 16384, 67108864, 67108864)
    n = done["dxt:n_fsync_per_write_Y_4k"]["record"]["totals"]
    assert (n["writes"], n["fsyncs"], n["opens"]) == (1024, 2048, 8)


def test_every_sample_says_how_long_its_ranks_waited_for_a_cpu(dxt_and_counter_replays):
    """The kernel's run_delay of the real ranks (replay.rank.cpu_wait_s): recorded for every
    sample, never negative, never more than the sample took (the verdict's busy-node check)."""
    _, done = dxt_and_counter_replays
    runs = [r for v in done.values() for r in v["runs"]]
    assert runs and all(r["cpu_wait_s"] is not None for r in runs)  # this kernel keeps schedstat
    assert all(0 <= r["cpu_wait_s"] <= r["time_s"] * 1.01 for r in runs)


def test_ior_replay_reproduces_the_ior_pattern_exactly(corpus, tmp_path):
    gen = corpus / "generated"
    cases = {}
    for name in IOR_OUTPUTS:
        profile = load(gen / name)
        cases[name] = (profile, build_plan(profile, source="ior", scale=IOR_SCALE))
    done = replay_all(cases, tmp_path)
    failures = {}
    for name, (profile, plan) in cases.items():
        err, bad = worst(profile, "ior", done[name], plan.meta["scale"])
        if err:
            failures[name] = bad
    assert not failures


def test_think_time_keeps_a_stragglers_idle_time(corpus, tmp_path):
    """j2: rank 0 sleeps 20 ms before each of its 16 writes; --think-time replays the gaps."""
    profile = load(corpus / "generated/j2_straggler_rank0_slow/case.darshan")
    plan = build_plan(profile, source="dxt", scale=1.0, think_time=True)
    assert plan.meta["think_time"] and plan.ops["gap"][plan.ops["rank"] == 0].sum() > 0.3
    busy = plan.replace(ops={**plan.ops, "gap": plan.ops["gap"] * 0})
    with safety.Scratch(tmp_path) as scratch:
        dirs = [plan.save(scratch.path / "a"), busy.save(scratch.path / "b")]
        result = launch.run_plans(scratch, dirs, ["gaps", "none"],
                                  launch.LaunchOptions(np=4, cache="none", think_time=True))
    write_phase = {v["label"]: v["runs"][0]["phases"][0] for v in result["variants"]}
    assert write_phase["gaps"]["max_s"] > 0.3 > write_phase["none"]["max_s"]
    assert write_phase["gaps"]["min_s"] < 0.3  # only rank 0 idles


def test_odirect_replays_aligned_requests_past_the_page_cache(corpus, tmp_path):
    profile = load(corpus / "generated/o_small_io_odirect_4k/case.darshan")
    plan = build_plan(profile, source="dxt", scale=0.25)
    with safety.Scratch(tmp_path) as scratch:
        result = launch.run_plans(scratch, [plan.save(scratch.path / "p")], ["o"],
                                  launch.LaunchOptions(np=plan.nranks, cache="none",
                                                       odirect=True))
    totals = result["variants"][0]["record"]["totals"]
    assert totals["direct_ops"] == totals["reads"] + totals["writes"] == 2048
    assert result["cache_policy"].startswith("o-direct")


def test_a_2048_rank_512_gib_job_replays_on_a_workstation(corpus, tmp_path):
    """skew-autobench-ior: 2,048 ranks read 512 GiB (MPI-IO collective) on a real system."""
    log = corpus / "darshan-logs/darshan_logs/skew_io/skew-autobench-ior.darshan"
    res = CliRunner().invoke(cli, ["replay", str(log), "--target", str(tmp_path), "--np", "2",
                                   "--repeat", "1", "--json", "-"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["np"] == 2 and doc["nprocs_source"] == 2048 and 0 < doc["scale"] < 0.001
    assert doc["plan"]["bytes_read"] <= 1.01 * (256 << 20)  # the automatic scale keeps a run small
    assert doc["fidelity"]["worst_error"] <= 0.05
    assert doc["baseline"]["record_totals"]["collective_calls"] > 0  # folded ranks share calls
    assert not any(tmp_path.iterdir())
