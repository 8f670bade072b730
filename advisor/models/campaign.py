"""The designed measurement campaign of fix speedups: families of workloads x every fix transform.

Each *family* is one kind of I/O pattern (small sequential requests, random offsets, frequent
fsyncs, unaligned requests, independent MPI-IO, large requests, cold reads), built as
calibration patterns (:func:`advisor.models.calibrate.plan_for`), varied over its own levels
(request size, shared file or file per process, ranks), each paired with the fix transforms a
diagnosis proposes for it and with fixes that should not help (so the model learns ~1x too).
Every workload is measured by :func:`advisor.verify.measure`, the very protocol ``--verify``
uses, and every measured fix becomes a row of :mod:`advisor.models.pairs`, appended as it comes.

Families are what the held-out validation leaves out whole (``bench/models.py``).
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

from advisor.models.design import Point
from advisor.units import KiB, MiB

COALESCE = {"transform": "coalesce", "transfer_size": 4 * MiB}
COALESCE_1M = {"transform": "coalesce", "transfer_size": 1 * MiB}
COLLECTIVE_1 = {"transform": "collective", "cb_nodes": 1}
COLLECTIVE_2 = {"transform": "collective", "cb_nodes": 2}
AGGREGATE_1 = {"transform": "aggregate", "aggregators": 1}
FSYNC = {"transform": "fsync", "mode": "at-close"}
ALIGN_1M = {"transform": "align", "boundary": 1 * MiB}
ALIGN_PAGE = {"transform": "align", "boundary": 4 * KiB}
SEQUENTIAL = {"transform": "sequential"}
TO_FPP = {"transform": "layout", "mode": "fpp"}
TO_SHARED = {"transform": "layout", "mode": "shared"}


def _p(op="write-read", transfer=4 * KiB, layout="shared", nprocs=2, api="posix", fsync="none",
       order="sequential", aligned=True, volume="small") -> Point:
    return Point(op, transfer, layout, nprocs, api, fsync, order, aligned, volume)


def _layout_fix(p: Point) -> dict:
    return TO_FPP if p.layout == "shared" else TO_SHARED


def _shared_only(p: Point, *fixes: dict) -> list[dict]:
    return list(fixes) if p.layout == "shared" and p.nprocs > 1 else []


def _small(p: Point) -> list[dict]:
    return [COALESCE, _layout_fix(p), *_shared_only(p, COLLECTIVE_1, AGGREGATE_1)]


def _random(p: Point) -> list[dict]:
    return [SEQUENTIAL, COALESCE, *_shared_only(p, COLLECTIVE_1)]


def _fsync(p: Point) -> list[dict]:
    return [FSYNC, COALESCE, *_shared_only(p, AGGREGATE_1)]


def _unaligned(p: Point) -> list[dict]:
    return [ALIGN_1M if p.transfer >= 256 * KiB else ALIGN_PAGE, COALESCE, *_shared_only(p, COLLECTIVE_1)]


def _mpiio(p: Point) -> list[dict]:
    return [COLLECTIVE_1, COLLECTIVE_2, COALESCE]


def _large(p: Point) -> list[dict]:
    return [COALESCE, SEQUENTIAL, _layout_fix(p), *_shared_only(p, COLLECTIVE_1)]


def _read(p: Point) -> list[dict]:
    return [COALESCE_1M, SEQUENTIAL if p.order == "random" else _layout_fix(p),
            *_shared_only(p, COLLECTIVE_1)]


def _write_only(p: Point) -> list[dict]:
    synced = [FSYNC] if p.fsync != "none" else []
    return [COALESCE, *synced, *(_shared_only(p, COLLECTIVE_1, AGGREGATE_1) if not synced else [_layout_fix(p)])]


def _single(p: Point) -> list[dict]:
    fixes = [COALESCE, SEQUENTIAL if p.order == "random" else (ALIGN_PAGE if not p.aligned else TO_FPP)]
    return fixes + ([FSYNC] if p.fsync != "none" else [])


def _collective(p: Point) -> list[dict]:
    return [COLLECTIVE_1, COLLECTIVE_2, COALESCE]


FAMILIES: dict[str, tuple[list[Point], object]] = {
    "small-sequential": ([_p(transfer=t, layout=lay) for t, lay in itertools.product(
        (1 * KiB, 4 * KiB, 16 * KiB, 64 * KiB), ("shared", "fpp"))], _small),
    "random": ([_p(transfer=t, layout=lay, order="random") for t, lay in itertools.product(
        (4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB), ("shared", "fpp"))], _random),
    "fsync": ([_p(transfer=t, layout=lay, fsync=fs) for t, lay, fs in (
        (4 * KiB, "shared", "per-write"), (4 * KiB, "fpp", "twice-per-write"), (64 * KiB, "shared", "every-4"),
        (64 * KiB, "fpp", "per-write"), (1 * MiB, "shared", "per-write"), (16 * KiB, "fpp", "every-16"),
        (16 * KiB, "shared", "twice-per-write"), (256 * KiB, "fpp", "every-4"))], _fsync),
    "unaligned": ([_p(transfer=t, layout=lay, aligned=False) for t, lay in itertools.product(
        (4 * KiB, 64 * KiB, 256 * KiB, 1 * MiB), ("shared", "fpp"))], _unaligned),
    "mpiio-independent": ([_p(transfer=t, api="mpiio", op=op) for t, op in (
        (4 * KiB, "write-read"), (16 * KiB, "write-read"), (64 * KiB, "write-read"), (256 * KiB, "write-read"),
        (1 * MiB, "write-read"), (4 * KiB, "read"), (64 * KiB, "read"), (1 * KiB, "write-read"))], _mpiio),
    "large": ([_p(transfer=t, layout=lay, volume=v) for t, lay, v in (
        (1 * MiB, "shared", "large"), (1 * MiB, "fpp", "large"), (4 * MiB, "shared", "large"),
        (16 * MiB, "fpp", "large"), (256 * KiB, "shared", "large"), (512 * KiB, "fpp", "small"),
        (2 * MiB, "shared", "small"), (8 * MiB, "fpp", "small"))], _large),
    "cold-read": ([_p(op="read", transfer=t, layout=lay, order=o) for t, lay, o in (
        (1 * KiB, "shared", "sequential"), (4 * KiB, "fpp", "sequential"), (16 * KiB, "shared", "random"),
        (64 * KiB, "fpp", "random"), (4 * KiB, "shared", "random"), (256 * KiB, "shared", "sequential"),
        (1 * MiB, "fpp", "random"), (64 * KiB, "shared", "sequential"))], _read),
    "write-only": ([_p(transfer=t, layout=lay, nprocs=n, fsync=fs) for t, lay, n, fs in (
        (4 * KiB, "shared", 2, "none"), (64 * KiB, "fpp", 2, "none"), (1 * MiB, "shared", 2, "none"),
        (16 * KiB, "shared", 1, "none"), (4 * KiB, "fpp", 2, "per-write"), (256 * KiB, "shared", 1, "every-4"),
        (1 * KiB, "shared", 1, "none"), (16 * KiB, "fpp", 2, "every-16"))], _write_only),
    "single-rank": ([_p(transfer=t, nprocs=1, order=o, aligned=a, fsync=fs) for t, o, a, fs in (
        (1 * KiB, "sequential", True, "none"), (4 * KiB, "random", True, "none"),
        (64 * KiB, "sequential", False, "none"),
        (16 * KiB, "sequential", True, "per-write"), (256 * KiB, "random", True, "none"),
        (4 * KiB, "sequential", False, "none"), (1 * MiB, "sequential", True, "every-4"),
        (16 * KiB, "random", False, "none"))], _single),
    "collective": ([_p(transfer=t, api=api, op=op) for t, api, op in (
        (4 * KiB, "collective", "write-read"), (64 * KiB, "collective", "write-read"),
        (1 * MiB, "collective", "write-read"), (16 * KiB, "collective", "read"),
        (4 * KiB, "collective-view", "write-read"), (64 * KiB, "collective-view", "write-read"),
        (256 * KiB, "collective-view", "read"), (1 * KiB, "collective-view", "write-read"))], _collective),
}
"""Family -> (its workloads, the fixes measured on each)."""
WRITE_ONLY = {"write-only"}  # families whose workloads only write (the read phase of the pattern left out)


def order() -> list[tuple[str, Point]]:
    """Every (family, workload), families interleaved so that a campaign cut short covers them all."""
    lists = [[(name, p) for p in points] for name, (points, _) in FAMILIES.items()]
    return [item for group in itertools.zip_longest(*lists) for item in group if item]


def workload_name(family: str, point: Point) -> str:
    return point.key + (":write-only" if family in WRITE_ONLY else "")


def workload_plan(family: str, point: Point, fstype: str):
    """The plan of one workload of a family (a calibration pattern; writes only in WRITE_ONLY)."""
    from advisor.models.calibrate import plan_for
    from replay.edit import take
    from replay.plan import READ

    plan = plan_for(point, fstype)
    if family in WRITE_ONLY:
        plan = plan.replace(ops=take(plan.ops, plan.ops["op"] != READ))
    return plan


def run(target: Path, out: Path, budget_s: float, per_workload_s: float = 40.0) -> int:
    """Measure the campaign's workloads on `target`, appending rows to `out` (resumes: workloads
    already in `out` are skipped); stops after `budget_s`. Returns the rows written."""
    from advisor.config import ReplayConfig
    from advisor.errors import AdvisorError
    from advisor.models import pairs
    from advisor.verify import measure
    from replay import safety

    fstype = safety.fstype_of(safety.check_target(target))
    done = {r["workload"] for r in pairs.read(out)} if out.exists() else set()
    settings = ReplayConfig(budget_s=per_workload_s)
    started, written = time.monotonic(), 0
    for family, point in order():
        if workload_name(family, point) in done:
            continue
        if time.monotonic() - started > budget_s:
            break
        fixes = FAMILIES[family][1](point)
        base = workload_plan(family, point, fstype)
        t0, load0 = time.monotonic(), os.getloadavg()[0]
        try:
            m = measure(None, fixes, target, base=base, settings=settings)
        except AdvisorError as exc:
            print(f"{family} {point.key}: {exc}", file=sys.stderr, flush=True)
            continue
        from replay.transforms import apply_fix

        before = pairs.plan_features(base, fstype)
        name, load = workload_name(family, point), (load0 + os.getloadavg()[0]) / 2
        rows = [pairs.row(family, name, fix, before, pairs.plan_features(apply_fix(base, fix), fstype), v, load)
                for fix, v in zip(fixes, m.verifications) if v.measured]
        pairs.append(out, rows)
        written += len(rows)
        said = ", ".join(f"{r['transform']} {float(r['speedup']):.2f}x" for r in rows)
        print(f"{family} {name}: {said} ({time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f})",
              file=sys.stderr, flush=True)
    return written


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="measure the campaign of fix speedups")
    ap.add_argument("--target", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget", type=float, default=40.0, help="minutes")
    ap.add_argument("--per-workload", type=float, default=40.0, help="seconds of one workload's test")
    args = ap.parse_args()
    print(run(args.target, args.out, args.budget * 60, args.per_workload), "rows")
