"""Does `ioadvisor tune` find the grid's best in a fraction of the grid's replay time?

    python bench/tune.py [--target DIR | --cephfs] [--cases name,...] [--min-sample-s 0.25]
                         [--max-pairs 10] [--budget-min 10] [--out results.jsonl]

For each case (a corpus log and the fixes whose settings are searched), on the local disk or on
the tests' four-OSD CephFS cluster (tests/system/cephfs.sh, --cephfs):

- **tune**: the search (advisor.tune.search.tune), its best and its replay time;
- **grid**: every configuration of the same space (advisor.tune.space: the settings of each fix
  and every pair of fixes combined, less those not replayable here or identical to another) in
  one verification replay, the sequential paired test deciding each (advisor.verify.measure:
  the same samples, cache policy and test the rungs use);

and prints them side by side. The targets (issue 26): tune's best within 5 % of the grid's best
by the grid's own measurement of both, or not distinguishable from it by the grid's intervals
(they overlap), using at most 25 % of the grid's replay time. Both arms use the same [replay]
settings (--min-sample-s, --max-pairs: kept small so that the grids fit a shared machine); the
load average during each arm is printed, since the machine is shared.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:] = [str(REPO)] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
CORPUS = REPO.parent / "shared" / "corpus" / "generated"

CASES = {  # name -> (log, fixes searched: codes or transforms; () = the diagnosis's warn/high fixes)
    "small-shared-4k": ("b_small_io_shared_4k/case.darshan", ()),
    "mpiio-indep-256k": ("d_mpiio_independent_256k/case.darshan", ()),
    "fsync-per-write": ("n_fsync_per_write_Y_4k/case.darshan", ()),
    "misaligned": ("i_misaligned_1000000/case.darshan", ("align", "coalesce")),
    "collective-hints": ("e_mpiio_collective_256k/case.darshan", ("IO002",)),
    "fpp-stripe": ("a_good_fpp_posix_1m/case.darshan", ("stripe",)),  # layouts: CephFS only
    "random-shared-64k": ("c_random_shared_64k/case.darshan", ()),  # reordering (sequential) among its fixes
    # aggregation and stripe count interact on a shared file (rank 0 writes 10x the others)
    "shared-aggregate-stripe": ("j_imbalance_rank0_10x/case.darshan", ("aggregate", "stripe")),
}
WITHIN = 0.05
SHARE = 0.25


def run_case(name: str, target: Path, settings, budget_s: float, scale: float | None) -> dict:
    from advisor import api
    from advisor.commands.tune import proposals
    from advisor.config import ModelConfig
    from advisor.tune import space
    from advisor.tune.search import Options, tune
    from advisor.verify import measure, replay_plan

    log, specs = CASES[name]
    profile = api.load(str(CORPUS / log))
    proposed = proposals(profile, specs)
    load0 = os.getloadavg()[0]
    found = tune(profile, proposed, target, settings, ModelConfig(learn_from_verify=False),
                 Options(budget_s=budget_s, scale=scale, fresh=True))
    load1 = os.getloadavg()[0]
    base = replay_plan(profile, scale=scale)
    cands = space.build(proposed, base.nranks)
    space.prepare(cands, base, target)
    grid = [c for c in cands if not c.unusable and not c.same_as]
    started = time.monotonic()
    m = measure(profile, [c.fixes for c in grid], target, base=base, settings=settings)
    grid_s = time.monotonic() - started
    load2 = os.getloadavg()[0]
    by_key = {c.key: v for c, v in zip(grid, m.verifications)}
    measured = {k: v for k, v in by_key.items() if v.measured}
    best_key = max(measured, key=lambda k: measured[k].speedup) if measured else None
    tb = found["best"]
    tkey = space.Candidate(tb["fixes"], "").key if tb else None
    return {"case": name, "fstype": m.context.get("fstype"), "space": len(grid),
            "grid_best": _row(best_key, by_key, grid), "grid_s": round(grid_s, 1),
            "tune_best": {**_row(tkey, by_key, grid), "tune_speedup": tb and tb["speedup"],
                          "tune_ci95": tb and tb["ci95"]},
            "tune_s": found["replay_s"], "tune_measured": found["measured"], "tune_stop": found["stop_reason"],
            "tune_rungs": _rung_log(found["state"]),
            "load": [round(load0, 1), round(load1, 1), round(load2, 1)]}


def _rung_log(state: str) -> list[dict]:
    """Where each rung's time went (the search's state file keeps it)."""
    try:
        return json.loads(Path(state).read_text()).get("rung_log", [])
    except (OSError, ValueError):
        return []


def _row(key, by_key, grid) -> dict:
    if key is None:
        return {"label": None}
    label = next(c.label() for c in grid if c.key == key)
    v = by_key.get(key)
    return {"label": label, "speedup": v.speedup if v else None, "ci95": v.ci95 if v else None,
            "verdict": v.verdict if v else None}


def judge(r: dict) -> tuple[bool, bool]:
    """(tune's best as good as the grid's, within 25 % of its time)."""
    g, t = r["grid_best"], r["tune_best"]
    if not g.get("speedup") or not t.get("speedup"):
        return False, r["tune_s"] <= SHARE * r["grid_s"]
    close = t["speedup"] >= (1 - WITHIN) * g["speedup"]
    overlap = bool(g["ci95"] and t["ci95"] and t["ci95"][1] >= g["ci95"][0])
    return close or overlap, r["tune_s"] <= SHARE * r["grid_s"]


def _x(v, ci=None) -> str:
    if not v:
        return "-"
    return f"{v:.2f}x" + (f" ({ci[0]:.2f}-{ci[1]:.2f})" if ci else "")


def print_row(r: dict) -> None:
    good, fast = judge(r)
    g, t = r["grid_best"], r["tune_best"]
    print(f"| {r['case']} | {r['fstype']} | {r['space']} | {g['label']} {_x(g.get('speedup'), g.get('ci95'))} | "
          f"{r['grid_s']:.0f} s | {t['label']} {_x(t.get('speedup'), t.get('ci95'))}; tune says "
          f"{_x(t.get('tune_speedup'), t.get('tune_ci95'))} | {r['tune_s']:.0f} s ({r['tune_s'] / r['grid_s']:.0%}), "
          f"{r['tune_measured']} measured | {'yes' if good else 'NO'} / {'yes' if fast else 'NO'} | "
          f"{'-'.join(map(str, r['load']))} |", flush=True)


def cephfs_target():
    """The tests' CephFS cluster, started as bench/verify_stability.py starts it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("verify_stability", REPO / "bench" / "verify_stability.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.cephfs_target()


def main() -> int:
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=Path, default=None)
    ap.add_argument("--cephfs", action="store_true", help="on a CephFS cluster started here (root)")
    ap.add_argument("--cases", default="", help="comma-separated names (default: all that apply)")
    ap.add_argument("--min-sample-s", type=float, default=0.25)
    ap.add_argument("--max-pairs", type=int, default=10)
    ap.add_argument("--budget-min", type=float, default=10.0, help="tune's budget")
    ap.add_argument("--scale", type=float, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from advisor.config import ReplayConfig

    settings = ReplayConfig(min_sample_s=args.min_sample_s, max_pairs=args.max_pairs, budget_s=900, history=False)
    names = [n for n in args.cases.split(",") if n] or [n for n in CASES if args.cephfs or "stripe" not in CASES[n][1]]
    print("| case | fs | space | grid's best (95 % CI) | grid | tune's best, by the grid (95 % CI) | tune | "
          "best / <=25 % | load |\n|---|---|---|---|---|---|---|---|---|", flush=True)
    with contextlib.ExitStack() as stack:
        if args.cephfs:
            target = stack.enter_context(cephfs_target())
        else:
            target = args.target or Path(stack.enter_context(__import__("tempfile").TemporaryDirectory()))
        for name in names:
            r = run_case(name, target, settings, args.budget_min * 60, args.scale)
            print_row(r)
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
