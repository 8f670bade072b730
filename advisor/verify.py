"""Check the fixes of a diagnosis by replaying the job on a real mount, as recorded and fixed.

The recorded workload (baseline) and each fix run in rounds in one MPI job on a scratch
directory under the target: auto-ranged samples (a sample lasts at least ``[replay]
min_sample_s``), the page cache kept out before every pass, and a sequential paired test
that stops each fix once its verdict is certain (:mod:`replay.sampling`,
:mod:`replay.stats`). Every fix gets a :class:`~advisor.verification.Verification`; a fix
that cannot be replayed (no room, no layout control here, its replay failed) gets
``not-verifiable`` with the reason, and the other fixes go on.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.config import ReplayConfig
from advisor.errors import AdvisorError, InputError
from advisor.findings import Diagnosis
from advisor.fixes import fix_key, proposed_fixes
from advisor.profile import JobProfile
from advisor.replay_history import History, workload_key
from advisor.replay_plan import build_plan
from advisor.units import GiB, MiB
from advisor.verification import Side, Verification, sentence
from replay import drift, safety, stats
from replay.launch import LaunchError, LaunchOptions, run_plans
from replay.layout import LayoutError, Unsupported
from replay.layout import wishes as layout_wishes
from replay.plan import Plan
from replay.sampling import STOP_DECIDED, RaceRule
from replay.reshape import fold
from replay.transforms import apply_fix

VERIFY_MAX_BYTES = 256 * MiB  # automatic scale of one pass
VERIFY_MAX_OPS = 200_000


class ReplayError(AdvisorError):
    """A replay that could not run (unsafe target, MPI failure), in one line."""


@dataclass
class Variant:
    label: str
    fix: dict[str, Any] | None
    plan: Plan | None = None
    reason: str = ""  # why it cannot be measured
    passes: int = 0  # passes per sample, when an earlier measurement of the same plan knows it


@dataclass
class Measurement:
    """A replay of the baseline and fixes: one Verification per fix, and the baseline's runs."""

    fixes: list[dict[str, Any]] = field(default_factory=list)  # as asked, in order
    verifications: list[Verification] = field(default_factory=list)  # one per fix, same order
    baseline: dict[str, Any] | None = None  # the executor's baseline variant (runs, record)
    context: dict[str, Any] = field(default_factory=dict)  # target, fstype, scale, np, ...
    scratch_kept: str | None = None
    plan: dict[str, Any] = field(default_factory=dict)
    launcher: str | None = None
    replays: list[tuple[dict[str, Any], dict[str, Any]] | None] = field(default_factory=list)
    """Per fix, the executor's (baseline, fixed) variants it was measured from (their runs hold
    the time of every phase), None when it was not replayed."""


def default_np(plan_ranks: int) -> int:
    """Replay ranks when not given: the job's ranks, at most the CPUs (or Slurm tasks) here."""
    slots = int(os.environ.get("SLURM_NTASKS", "0") or 0) or len(os.sched_getaffinity(0))
    return max(1, min(plan_ranks, slots))


def verify_findings(profile: JobProfile, diagnosis: Diagnosis, target: Path, repeat: int | None = None,
                    np: int | None = None, scale: float | None = None, *,
                    settings: ReplayConfig | None = None, **options: Any) -> None:
    """Set ``finding.verification`` of every finding with a fix (in place). A replay that
    cannot run at all (target refused, MPI failure) makes every fix not verifiable, with
    the reason: the diagnosis itself goes on."""
    fixes = {key: fix for key, (fix, _) in proposed_fixes(diagnosis.findings).items()}
    if not fixes:
        return
    try:
        done = measure(profile, list(fixes.values()), target, repeat=repeat, np=np, scale=scale,
                       settings=settings, **options)
        by_key = {fix_key(fix): v for fix, v in zip(fixes.values(), done.verifications)}
    except InputError as exc:  # a target refused, or no workload to replay (a node snapshot)
        by_key = {key: Verification.not_verifiable(exc.reason, target=str(target)) for key in fixes}
    except AdvisorError as exc:
        by_key = {key: Verification.not_verifiable(str(exc), target=str(target)) for key in fixes}
    for finding in diagnosis.findings:
        if finding.fix:
            finding.verification = by_key[fix_key(finding.fix)]


def replay_plan(profile: JobProfile, *, np: int | None = None, scale: float | None = None,
                think_time: bool = False, source: str = "auto") -> Plan:
    """The baseline plan of a verification: automatic scale kept small (passes are repeated
    instead), ranks folded onto this node's CPUs unless `np` says otherwise."""
    base = build_plan(profile, source=source, scale=scale, think_time=think_time,
                      max_bytes=VERIFY_MAX_BYTES, max_ops=VERIFY_MAX_OPS)
    nranks = np or default_np(base.nranks)
    if nranks < base.nranks:
        base = fold(base, nranks)
    return base


def measure(profile: JobProfile, fixes: list[dict[str, Any]], target: Path, *, repeat: int | None = None,
            np: int | None = None, scale: float | None = None, odirect: bool = False,
            think_time: bool = False, keep: bool = False, source: str = "auto",
            base: Plan | None = None, settings: ReplayConfig | None = None,
            on_progress: Callable[[str], None] | None = None, reference: Plan | None = None,
            passes: list[int] | None = None, race: RaceRule | None = None) -> Measurement:
    """Replay the baseline and each fix (`repeat`: exactly that many rounds and one look; None:
    the sequential test of ``settings``). Without fixes the baseline alone runs. `reference`: a
    plan replayed on the baseline's side instead of `base` (the fixes still apply to `base`):
    a search races its candidates against its leader rather than against the job. `passes`:
    the passes per sample an earlier measurement found for the baseline's side, then for each
    fix (0 where not known): those variants get no warm-up pass (a search's later rungs). `race`:
    with `repeat`, a search's decisions between rounds (:class:`replay.sampling.RaceRule`;
    ``settings.budget_s`` bounds a leader's extension)."""
    settings = settings or ReplayConfig()
    try:
        target_path = safety.check_target(target, allow_mount_root=settings.allow_mount_root)
    except safety.SafetyError as exc:
        raise InputError(str(target), str(exc).split(": ", 1)[-1]) from None
    fstype = safety.fstype_of(target_path)
    base = base or replay_plan(profile, np=np, scale=scale, think_time=think_time, source=source)
    context = {"target": str(target_path), "fstype": fstype, "scale": base.meta.get("scale", 1.0),
               "np": base.nranks, "nprocs_source": base.meta.get("nprocs_source"),
               "source": base.meta.get("source")}
    room = safety.free_bytes(target_path) - safety.SPACE_MARGIN
    if base.planned_bytes() > room:
        raise ReplayError(_no_room(target_path, base.planned_bytes(), room))
    variants = [_variant(i, fix, base, target_path, room) for i, fix in enumerate(fixes)]
    known = list(passes or [])[:len(fixes) + 1]
    for v, k in zip(variants, known[1:]):
        v.passes = k
    runnable = [v for v in variants if v.plan is not None]
    history = History.of(target_path, settings.history, settings.history_dir)
    past, workload = history.runs(), base.summary()
    launch = _Launch(reference or base, target_path, repeat, settings, odirect=odirect, think_time=think_time,
                     keep=keep, prior=drift.prior(settings.reproducibility, past).sd, on_progress=on_progress,
                     passes=known[0] if known else 0, race=race if repeat else None)
    outcomes = launch.each(runnable) if runnable or not fixes else {}
    first = next(iter(outcomes.values()), None) if outcomes else None
    out = Measurement(fixes=list(fixes), context=dict(context), plan=workload,
                      baseline=first["runs"]["baseline"] if isinstance(first, dict) else None,
                      scratch_kept=launch.kept, launcher=launch.launcher)
    out.context.update(cache_policy=first["cache_policy"] if isinstance(first, dict) else None,
                       repeat=first["rounds"] if isinstance(first, dict) else 0)
    keys = [workload_key(workload, fix_key(v.fix or {})) for v in variants]
    out.verifications = [_verification(v, outcomes.get(v.label), context, launch.policy, past=past, key=key)
                         for v, key in zip(variants, keys)]
    out.replays = [_replayed(v, outcomes.get(v.label)) for v in variants]
    history.add([history_entry(key, pair, v) for key, pair, v in zip(keys, out.replays, out.verifications)
                 if pair is not None])
    if not fixes and not isinstance(first, dict):
        raise ReplayError(f"replay on {target_path} failed: {first or 'no result'}")
    return out


def apply_fixes(base: Plan, fix: dict[str, Any] | list[dict[str, Any]]) -> Plan:
    """The plan with one fix, or with a combination of fixes (a list, applied in its order)."""
    for one in fix if isinstance(fix, list) else [fix]:
        base = apply_fix(base, one)
    return base


def _variant(i: int, fix: dict[str, Any] | list[dict[str, Any]], base: Plan, target: Path, room: int) -> Variant:
    names = "+".join(str(f.get("transform", "?")) for f in (fix if isinstance(fix, list) else [fix]))
    v = Variant(label=f"fix{i}-{names}", fix=fix)
    try:
        plan = layout_wishes.prepare(apply_fixes(base, fix), target)  # layouts as the target can set them
    except ValueError as exc:
        v.reason = f"the fix does not apply to this workload: {exc}"
        return v
    except Unsupported as exc:
        v.reason = str(exc)
        return v
    except LayoutError as exc:
        v.reason = f"its layouts cannot be set on {target}: {exc}"
        return v
    if plan.planned_bytes() > room:
        v.reason = _no_room(None, plan.planned_bytes(), room)
        return v
    v.plan = plan
    return v


def _no_room(target: Path | None, planned: int, room: int) -> str:
    where = f"{target}: " if target else ""
    return (f"{where}no room on the target: one pass needs {safety.human(planned)}, "
            f"{safety.human(max(room, 0))} free beyond the {safety.human(safety.SPACE_MARGIN)} margin")


def policy_of(settings: ReplayConfig, repeat: int | None = None) -> stats.Policy:
    """The sequential test of `settings` (`repeat`: exactly that many pairs and one look)."""
    knobs = {"margin": settings.margin, "reproducibility": settings.reproducibility}
    return stats.Policy.fixed(repeat, **knobs) if repeat else stats.Policy(
        precision=settings.precision, min_pairs=settings.min_pairs, max_pairs=settings.max_pairs, **knobs)


class _Launch:
    """The MPI job(s) of one measurement: all fixes in one job, or, when that job fails, each
    fix in a job of its own with the baseline, so that one fix's failure stays its own."""

    def __init__(self, base: Plan, target: Path, repeat: int | None, settings: ReplayConfig, **flags: Any):
        self.base, self.target, self.flags = base, target, flags
        self.settings, self.repeat = settings, repeat
        self.policy = policy_of(settings, repeat)
        self.kept: str | None = None
        self.launcher: str | None = None

    def each(self, variants: list[Variant]) -> dict[str, dict[str, Any] | str]:
        """label -> the job's outcome for that variant, or the line saying why it failed."""
        try:
            outcome = self._run(variants, self.settings.budget_s)
            return {v.label: outcome for v in variants} or {"baseline": outcome}
        except ReplayError as exc:
            if len(variants) < 2:
                return {v.label: str(exc) for v in variants} or {"baseline": str(exc)}
        share = self.settings.budget_s / len(variants)
        out: dict[str, dict[str, Any] | str] = {}
        for v in variants:
            try:
                out[v.label] = self._run([v], share)
            except ReplayError as exc:
                out[v.label] = str(exc)
        return out

    def _run(self, variants: list[Variant], budget_s: float) -> dict[str, Any]:
        cache = "drop" if self.settings.drop_caches and safety.can_drop_caches() else "evict"
        adaptive, race = self.repeat is None, self.flags["race"]
        opts = LaunchOptions(np=self.base.nranks, repeat=self.repeat or self.settings.min_pairs, cache=cache,
                             odirect=self.flags["odirect"], think_time=self.flags["think_time"],
                             min_sample_s=self.settings.min_sample_s,
                             policy=replace(self.policy, reproducibility=self.flags["prior"]) if adaptive else None,
                             budget_s=budget_s if adaptive or race else math.inf, race=race,
                             budget_bytes=self.settings.budget_gib * GiB if adaptive else math.inf,
                             on_progress=self.flags["on_progress"],
                             passes=[self.flags["passes"], *(v.passes for v in variants)])
        try:
            with safety.Scratch(self.target, keep=self.flags["keep"],
                                allow_mount_root=self.settings.allow_mount_root) as scratch:
                dirs = [self.base.save(scratch.path / "plan-baseline")]
                dirs += [v.plan.save(scratch.path / f"plan-{v.label}") for v in variants]
                result = run_plans(scratch, dirs, ["baseline"] + [v.label for v in variants], opts)
                self.kept = str(scratch.path) if self.flags["keep"] else None
        except safety.SafetyError as exc:
            raise ReplayError(str(exc)) from None
        except LaunchError as exc:
            raise ReplayError(f"replay on {self.target} failed: {exc}") from None
        self.launcher = result["launcher"]
        layout_wishes.annotate([v.get("layouts") for v in result["variants"]], self.target)  # the pools' OSDs
        return {**result, "runs": {v["label"]: v for v in result["variants"]}}


def _verification(v: Variant, outcome: dict[str, Any] | str | None, context: dict[str, Any],
                  policy: stats.Policy, *, past: dict[str, list[tuple[float, float]]] | None = None,
                  key: str = "") -> Verification:
    """The verdict of one fix. `past`: the target's earlier runs per fix key (the history);
    `key`: this fix's. The interval's run-to-run spread is the largest of the site's constant
    (or the target's history), this fix's runs and this measurement's blocks (replay.drift)."""
    if v.plan is None or not isinstance(outcome, dict):
        why = v.reason or f"its replay failed: {outcome or 'no result'}"
        return Verification.not_verifiable(why, **context)
    return verification_from(outcome, v.label, context, policy, past=past, key=key)


def verification_from(outcome: dict[str, Any], label: str, context: dict[str, Any], policy: stats.Policy, *,
                      past: dict[str, list[tuple[float, float]]] | None = None, key: str = "") -> Verification:
    """The verdict of the variant `label` of an executor's `outcome` (its samples against the
    baseline's, round by round) under the sequential test `policy`."""
    base, fixed = outcome["runs"]["baseline"], outcome["runs"][label]
    layouts = {"baseline": base.get("layouts"), "fixed": fixed["layouts"]} if fixed.get("layouts") else None
    if layouts and (missed := layout_wishes.shortfall(fixed["layouts"])):
        # a layout fix is measured only if the files got the layout: what they got, read back
        return Verification.not_verifiable(missed, layouts=layouts, cache_policy=outcome["cache_policy"], **context)
    d = stats.log_ratios(_times(base), _times(fixed))
    spread = drift.between_runs(policy.reproducibility, d, past or {}, key)
    policy = replace(policy, reproducibility=spread.sd)
    test = stats.sequential(d, policy, final=True)
    load = outcome.get("load") or {}
    moved = drift.load_effect(d, _pair_loads(base, fixed), load.get("cores"), policy.margin)
    if moved:  # one verdict would be wrong for part of the measurement: none is given
        test = replace(test, verdict=stats.INCONCLUSIVE, more_pairs=None, settled=False)
    busy = drift.cpu_contention(base["runs"], fixed["runs"], policy)
    if busy:
        test = drift.with_contention(test, busy)
    why_none = "; ".join(x.text() for x in (moved, busy) if x and test.verdict == stats.INCONCLUSIVE)
    more_s = _round(_more_seconds(test, base, fixed))
    stopped = fixed.get("stopped_why") or outcome["stop_reason"]
    # the sentence is written from the rounded numbers the JSON keeps, so that both say the same
    # speedup (2.2849 would read 2.28x in words and 2.285 -> 2.29x from the JSON)
    speedup, ci95 = _round(test.speedup), [_round(x) for x in test.ci] if all(map(math.isfinite, test.ci)) else None
    reason = sentence(test.verdict, speedup, ci95, test.pairs, policy.margin,
                      test.more_pairs, more_s, _stop_in_words(stopped, test.decided or bool(why_none)),
                      reproducibility=policy.reproducibility, load_moved=why_none)
    return Verification(
        verdict=test.verdict, reason=reason, speedup=speedup, ci95=ci95,
        pairs=test.pairs, repeat=test.pairs, margin=policy.margin, reproducibility=_round(spread.sd),
        reproducibility_source=spread.source, more_pairs=test.more_pairs,
        more_s=more_s, stop_reason=stopped, baseline=_side(base), fixed=_side(fixed),
        min_sample_s=outcome.get("min_sample_s"), cache_policy=outcome["cache_policy"], layouts=layouts,
        load=outcome.get("load"), cpu_contention=busy.as_dict() if busy else None,
        **context)


def _stop_in_words(stopped: str, explained: bool) -> str:
    """Why the rounds ended, for an inconclusive sentence: not when the verdict or a load effect
    explains it, and not "decided" (the executor's in-run test settled a fix more pairs would not
    decide; the sentence says that in words, and "inconclusive ... (decided)" reads as a contradiction)."""
    return "" if explained or stopped == STOP_DECIDED else stopped


def _pair_loads(base: dict[str, Any], fixed: dict[str, Any]) -> list[float]:
    """The load average of each pair (the mean of its two samples'; nan where not recorded)."""
    def load(run: dict[str, Any]) -> float:
        x = run.get("load")
        return float(x) if isinstance(x, (int, float)) else math.nan

    return [(load(a) + load(b)) / 2 for a, b in zip(base["runs"], fixed["runs"])]


def history_entry(key: str, replayed: tuple[dict[str, Any], dict[str, Any]], v: Verification) -> dict[str, Any]:
    """One run of one fix for the target's history (replay.drift reads mean and se)."""
    mean, se = drift.mean_se(stats.log_ratios(*(_times(side) for side in replayed)))
    load = v.load or {}
    return {"fix": key, "mean": mean, "se": se, "pairs": v.pairs, "verdict": v.verdict,
            "load": [load.get("min"), load.get("max")], "cores": load.get("cores")}


def _replayed(v: Variant, outcome: dict[str, Any] | str | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    if v.plan is None or not isinstance(outcome, dict) or v.label not in outcome["runs"]:
        return None
    return outcome["runs"]["baseline"], outcome["runs"][v.label]


def _more_seconds(test: stats.Decision, base: dict[str, Any], fixed: dict[str, Any]) -> float | None:
    """About how long the pairs an inconclusive test asks for would take (samples only)."""
    if not test.more_pairs:
        return None
    per_pair = sum(stats.median([r["sample_s"] for r in side["runs"]]) for side in (base, fixed))
    return (test.more_pairs - test.pairs) * per_pair


def _times(variant: dict[str, Any]) -> list[float]:
    return [r["time_s"] for r in variant["runs"]]


def _side(variant: dict[str, Any]) -> Side:
    times = _times(variant)
    med = stats.median(times)
    first = variant["runs"][0]
    moved = first["bytes_read"] + first["bytes_written"]
    spread = stats.relative_spread(times)
    return Side(median_s=_round(med), bandwidth_mib_s=_round(moved / MiB / med if med > 0 else 0.0),
                runs_s=[_round(t) for t in times], passes=int(variant["runs"][-1]["passes"]),
                spread=_round(spread) if math.isfinite(spread) else None, bytes=moved,
                data_ops=first["data_ops"], cpu_wait_share=_round(drift.wait_share(variant["runs"])))


def _round(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.4g}")
