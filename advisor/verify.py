"""Check the fixes of a diagnosis by replaying the job on a real mount, before and after.

For every distinct fix among the findings, the recorded workload (baseline) and the
workload with the fix applied run interleaved (A B C A B C ...) in one MPI job on a
scratch directory under the target; the page cache is dropped before every run
when permitted (else O_DIRECT or nothing, and the result says which). Each finding
with a fix gets ``finding.verification`` (the dict agreed in INTERFACES.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.findings import Diagnosis
from advisor.fixes import fix_key, proposed_fixes
from advisor.profile import JobProfile
from advisor.replay_plan import build_plan
from advisor.units import MiB
from replay import safety, stats
from replay.launch import LaunchError, LaunchOptions, run_plans
from replay.layout import LayoutError
from replay.layout import wishes as layout_wishes
from replay.plan import Plan
from replay.reshape import fold
from replay.transforms import apply_fix

VERIFY_MAX_BYTES = 256 * MiB  # automatic scale: every variant runs `repeat` times
VERIFY_MAX_OPS = 200_000


class ReplayError(AdvisorError):
    """A replay that could not run (unsafe target, MPI failure), in one line."""


@dataclass
class Variant:
    label: str
    fix: dict[str, Any] | None
    plan: Plan | None = None
    reason: str = ""  # why it cannot be measured


def default_np(plan_ranks: int) -> int:
    """Replay ranks when not given: the job's ranks, at most the CPUs (or Slurm tasks) here."""
    slots = int(os.environ.get("SLURM_NTASKS", "0") or 0) or len(os.sched_getaffinity(0))
    return max(1, min(plan_ranks, slots))


def verify_findings(profile: JobProfile, diagnosis: Diagnosis, target: Path, repeat: int = 5,
                    np: int | None = None, scale: float | None = None, *, odirect: bool = False,
                    think_time: bool = False, keep: bool = False, source: str = "auto") -> None:
    """Fill ``finding.verification`` for every finding with a fix (in place)."""
    fixes = {key: fix for key, (fix, _) in proposed_fixes(diagnosis.findings).items()}
    if not fixes:
        return
    try:
        base = replay_plan(profile, np=np, scale=scale, think_time=think_time, source=source)
    except InputError as exc:  # no workload to replay (a node snapshot): each fix says so
        for finding in diagnosis.findings:
            if finding.fix:
                finding.verification = {"verdict": stats.NOT_VERIFIABLE, "speedup": None, "ci95": None,
                                        "reason": f"not verifiable by a replay: {exc.reason}"}
        return
    result = measure(profile, list(fixes.values()), target, repeat=repeat, np=np, scale=scale,
                     odirect=odirect, think_time=think_time, keep=keep, source=source, base=base)
    by_key = {fix_key(v["fix"]): v for v in result["verifications"]}
    for finding in diagnosis.findings:
        if finding.fix:
            finding.verification = dict(by_key[fix_key(finding.fix)])
            finding.verification.pop("fix", None)


def replay_plan(profile: JobProfile, *, np: int | None = None, scale: float | None = None,
                think_time: bool = False, source: str = "auto") -> Plan:
    """The baseline plan of a verification: automatic scale kept small (several runs each),
    ranks folded onto this node's CPUs unless `np` says otherwise."""
    base = build_plan(profile, source=source, scale=scale, think_time=think_time,
                      max_bytes=VERIFY_MAX_BYTES, max_ops=VERIFY_MAX_OPS)
    nranks = np or default_np(base.nranks)
    if nranks < base.nranks:
        base = fold(base, nranks)
    return base


def measure(profile: JobProfile, fixes: list[dict[str, Any]], target: Path, *, repeat: int = 5,
            np: int | None = None, scale: float | None = None, odirect: bool = False,
            think_time: bool = False, keep: bool = False, source: str = "auto",
            base: Plan | None = None) -> dict[str, Any]:
    """Replay the baseline and each fix; one verification dict per fix (with its "fix").
    Without fixes the baseline alone is replayed (its runs and record in "baseline")."""
    try:
        target_path = safety.check_target(target)
    except safety.SafetyError as exc:
        raise InputError(str(target), str(exc).split(": ", 1)[-1]) from None
    fstype = safety.fstype_of(target_path)
    base = base or replay_plan(profile, np=np, scale=scale, think_time=think_time, source=source)
    variants = [_variant(i, fix, base, target_path) for i, fix in enumerate(fixes)]
    runnable = [v for v in variants if v.plan is not None]
    context = {"repeat": repeat, "target": str(target_path), "fstype": fstype,
               "scale": base.meta.get("scale", 1.0), "np": base.nranks,
               "nprocs_source": base.meta.get("nprocs_source"), "source": base.meta.get("source")}
    outcome = _run(base, runnable, target_path, repeat, odirect, think_time, keep) \
        if runnable or not fixes else None
    verifications = [_verification(v, outcome, context) for v in variants]
    return {"baseline": outcome["baseline"] if outcome else None, "verifications": verifications,
            "scratch_kept": outcome.get("scratch") if outcome else None, **context,
            "cache_policy": outcome["cache_policy"] if outcome else None, "plan": base.summary(),
            "launcher": outcome["launcher"] if outcome else None}


def _variant(i: int, fix: dict[str, Any], base: Plan, target: Path) -> Variant:
    v = Variant(label=f"fix{i}-{fix.get('transform', '?')}", fix=fix)
    try:
        v.plan = layout_wishes.prepare(apply_fix(base, fix), target)  # layouts as the target can set them
    except ValueError as exc:
        v.reason = f"not verifiable for this workload: {exc}"
    except LayoutError as exc:
        v.reason = str(exc) if str(exc).startswith("not verifiable") else f"not verifiable on {target}: {exc}"
    return v


def _run(base: Plan, variants: list[Variant], target: Path, repeat: int, odirect: bool,
         think_time: bool, keep: bool) -> dict[str, Any]:
    cache = "drop" if safety.can_drop_caches() else "neighbour"
    try:
        with safety.Scratch(target, keep=keep) as scratch:
            planned = max(p.planned_bytes() for p in [base] + [v.plan for v in variants])
            safety.check_space(scratch.path, planned)
            dirs = [base.save(scratch.path / "plan-baseline")]
            dirs += [v.plan.save(scratch.path / f"plan-{v.label}") for v in variants]
            labels = ["baseline"] + [v.label for v in variants]
            opts = LaunchOptions(np=base.nranks, repeat=repeat, cache=cache, odirect=odirect,
                                 think_time=think_time)
            result = run_plans(scratch, dirs, labels, opts)
            kept = str(scratch.path) if keep else None
    except safety.SafetyError as exc:
        raise ReplayError(str(exc)) from None
    except LaunchError as exc:
        raise ReplayError(f"replay on {target} failed: {exc}") from None
    runs = {v["label"]: v for v in result["variants"]}
    return {"baseline": runs["baseline"], "runs": runs, "cache_policy": result["cache_policy"],
            "scratch": kept, "launcher": result["launcher"]}


def _verification(v: Variant, outcome: dict[str, Any] | None, context: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {"fix": v.fix, **context}
    if v.plan is None or outcome is None:
        doc.update(verdict=stats.NOT_VERIFIABLE, speedup=None, ci95=None, reason=v.reason,
                   cache_policy=outcome["cache_policy"] if outcome else None)
        return doc
    base, fixed = outcome["baseline"], outcome["runs"][v.label]
    if fixed.get("layouts"):  # what the files got, read back: a layout fix is measured only if they got it
        doc["layouts"] = {"baseline": base.get("layouts"), "fixed": fixed["layouts"]}
        if missed := layout_wishes.shortfall(fixed["layouts"]):
            doc.update(verdict=stats.NOT_VERIFIABLE, speedup=None, ci95=None, reason=f"not verifiable: {missed}",
                       cache_policy=outcome["cache_policy"])
            return doc
    cmp = stats.compare(_times(base), _times(fixed))
    doc.update(verdict=cmp.verdict, speedup=_round(cmp.speedup), ci95=[_round(x) for x in cmp.ci95],
               baseline=_side(base), fixed=_side(fixed), cache_policy=outcome["cache_policy"],
               reason=cmp.reason or _reason(cmp))
    return doc


def _times(variant: dict[str, Any]) -> list[float]:
    return [r["time_s"] for r in variant["runs"]]


def _side(variant: dict[str, Any]) -> dict[str, Any]:
    times = _times(variant)
    med = stats.median(times)
    moved = variant["runs"][0]["bytes_read"] + variant["runs"][0]["bytes_written"]
    return {"median_s": _round(med), "bandwidth_mib_s": _round(moved / MiB / med if med > 0 else 0.0),
            "runs_s": [_round(t) for t in times], "bytes": moved,
            "data_ops": variant["runs"][0]["data_ops"]}


def _reason(cmp: stats.Comparison) -> str:
    lo, hi = cmp.ci95
    if cmp.verdict == stats.IMPROVED:
        return f"{cmp.speedup:.2f}x faster (95% CI {lo:.2f}-{hi:.2f})"
    if cmp.verdict == stats.REGRESSED:
        return f"{1 / cmp.speedup:.2f}x slower (95% CI of the speedup {lo:.2f}-{hi:.2f})"
    return f"no measurable difference (95% CI of the speedup {lo:.2f}-{hi:.2f} includes 1)"


def _round(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.4g}")
