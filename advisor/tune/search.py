"""`ioadvisor tune`: race each fix's settings by replaying the job on the target, within a budget.

Every rung is one verification replay (:func:`advisor.verify.measure`: the replayer's safety
rules, auto-ranged samples, the page cache kept out, paired rounds) of the recorded job and a few
candidates; :mod:`advisor.tune.race` decides what the next rung measures. At the end each measured
candidate gets the verdict a verification would give its pooled pairs (the same sequential paired
test, interval and sentence), joins the target's history and the site's model data, and the state
file in the target lets an interrupted search resume where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from advisor.config import ModelConfig, ReplayConfig
from advisor.errors import InputError
from advisor.fileio import write_atomic
from advisor.fixes import fix_key
from advisor.profile import JobProfile
from advisor.replay_history import History, workload_key
from advisor.tune import race as racing
from advisor.tune import space
from advisor.tune.chain import chain_interval
from advisor.tune.race import Entry, Race
from advisor.tune.space import Candidate
from advisor.verification import Verification, sentence
from advisor.verify import apply_fixes, history_entry, measure, policy_of, replay_plan, verification_from
from replay import drift, safety, stats
from replay.sampling import RaceRule
from replay.layout import wishes as layout_wishes

STATE_PREFIX = "ioadvisor-tune-"
LABEL = "candidate"


@dataclass
class Options:
    budget_s: float = 600.0
    np: int | None = None
    scale: float | None = None
    source: str = "auto"
    odirect: bool = False
    think_time: bool = False
    fresh: bool = False  # ignore a state file of an earlier search


def tune(profile: JobProfile, proposed: list[tuple], target: Path,
         settings: ReplayConfig, model_config: ModelConfig, options: Options,
         on_progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Search the settings of the `proposed` fixes [(fix, codes[, pinned]), ...]; the result document."""
    target = usable_target(target, settings)
    base = replay_plan(profile, np=options.np, scale=options.scale, think_time=options.think_time,
                       source=options.source)
    cands = space.build(proposed, base.nranks)
    space.prepare(cands, base, target)
    state = target / f"{STATE_PREFIX}{_identity(profile, base, cands)}.json"
    doc = _load(state) if not options.fresh else None
    if doc is None:
        predictions = predict(model_config, base, cands, safety.fstype_of(target))
        entries = {c.key: Entry.of(c) for c in cands}
        for key, (speedup, interval, reason) in predictions.items():
            entries[key].predicted, entries[key].predicted_interval, entries[key].predicted_reason = \
                speedup, interval, reason
        doc = {"race": Race(entries, starting_order(entries), base.nranks, max_pairs=settings.max_pairs).to_dict(),
               "replay_s": 0.0,
               "context": {}, "stop_reason": ""}
    if doc["stop_reason"] == "time budget":  # resumed, perhaps with a larger budget
        doc["stop_reason"] = ""
    the_race = Race.from_dict(doc["race"])
    rungs = _Rungs(profile, base, target, settings, options, doc, on_progress)
    while not doc["stop_reason"]:
        todo = the_race.next_rung()
        if not todo:
            doc["stop_reason"] = the_race.done()
        elif not rungs.affordable(len(todo), the_race.rounds):  # a best's settling pairs: the search was over
            doc["stop_reason"] = the_race.done() if the_race.settling else "time budget"
        else:
            reference = the_race.entries[the_race.ref].fixes if the_race.ref else None
            the_race.record(rungs.run(todo, the_race.rounds, reference, the_race.rule(todo)))
            the_race.judge()
        doc["race"] = the_race.to_dict()
        write_atomic(state, json.dumps(doc))
    best = the_race.finish()
    verdicts = _verdicts(the_race, base, target, settings, doc)
    from advisor.models.learn import record_measured

    measured = [(e.fixes[0] if len(e.fixes) == 1 else e.fixes, verdicts[e.key]) for e in the_race.entries.values()
                if e.key in verdicts and e.pairs]  # measured beside the job: chained estimates are not data
    learned = record_measured(profile.source.path, base, measured, model_config)
    from advisor.tune.result import document

    return document(the_race, best, verdicts, doc, state=state, learned=learned, budget_s=options.budget_s)


def usable_target(target: Path, settings: ReplayConfig) -> Path:
    """The target, resolved, if the replayer's safety rules allow writing there; else InputError."""
    try:
        return safety.check_target(target, allow_mount_root=settings.allow_mount_root)
    except safety.SafetyError as exc:
        raise InputError(str(target), str(exc).split(": ", 1)[-1]) from None


def starting_order(entries: dict[str, Entry]) -> list[str]:
    """The keys of the candidates that can run: predicted fastest first, unpredicted after."""
    usable = [e for e in entries.values() if e.status == racing.UNTRIED]
    return [e.key for e in sorted(usable, key=lambda e: (e.predicted is None, -(e.predicted or 0.0)))]


def predict(config: ModelConfig, base, cands: list[space.Candidate],
            fstype: str) -> dict[str, tuple[float | None, list[float] | None, str]]:
    """key -> (speedup, 80 % interval, why none) by the speedup model learned from measured fixes
    (the site's model, else the shipped one)."""
    from advisor.models import predict as models
    from advisor.models import speedup as learned
    from advisor.models.pairs import plan_features, transform_name

    model = models.load(config.path or "default")
    if model.speedup is None:
        return {c.key: (None, None, "the model has no measured fixes") for c in cands}
    meta = model.meta.get("speedup_model") or {}
    before = plan_features(base, fstype)
    out = {}
    for c in cands:
        if c.unusable or c.same_as:
            continue
        got = learned.predict_fix(model.speedup, meta, before, plan_features(apply_fixes(base, c.fixes), fstype),
                                  transform_name(c.fixes))
        out[c.key] = (None, None, "; ".join(got[:2])) if isinstance(got, list) else \
            (round(got[0], 3), [round(got[1], 3), round(got[2], 3)], "")
    return out


class _Rungs:
    """The replays of the search: one measurement per rung, its wall time counted."""

    def __init__(self, profile, base, target, settings, options, doc, on_progress):
        self.profile, self.base, self.target, self.options, self.doc = profile, base, target, options, doc
        self.settings = replace(settings, history=False)  # each candidate's pooled run is recorded once
        self.on_progress = on_progress

    def affordable(self, n: int, rounds: int) -> bool:
        """Whether one more rung of `n` candidates and `rounds` rounds fits the budget (the first
        always runs)."""
        last = self.doc.get("last_rung")
        if not last:
            return True
        per_sample = last["wall_s"] / (last["variants"] * last.get("rounds", racing.ROUNDS))
        return self.doc["replay_s"] + per_sample * (n + 1) * rounds <= self.options.budget_s

    def run(self, todo: list[Entry], rounds: int, reference: list[dict] | None = None,
            rule: RaceRule | None = None) -> dict[str, tuple[list[dict], list[dict]]]:
        """One rung: `todo` beside the job as recorded, or beside the `reference` configuration;
        `rule`: the race's decisions between its rounds (a leader's extension within the budget left)."""
        started = time.monotonic()
        ref_plan = layout_wishes.prepare(apply_fixes(self.base, reference), self.target) if reference else None
        known = self.doc.setdefault("passes", {})  # key ('' the job) -> passes per sample in an earlier rung
        ref_key = Candidate(reference, "").key if reference else ""
        m = measure(self.profile, [e.fixes for e in todo], self.target, repeat=rounds, np=self.options.np,
                    odirect=self.options.odirect, think_time=self.options.think_time, base=self.base,
                    settings=replace(self.settings, budget_s=max(1.0, self.options.budget_s - self.doc["replay_s"])),
                    on_progress=self.on_progress, reference=ref_plan, race=rule,
                    passes=[known.get(ref_key, 0), *(known.get(e.key, 0) for e in todo)])
        wall = time.monotonic() - started
        self.doc["replay_s"] += wall
        self.doc["last_rung"] = {"wall_s": wall, "variants": len(todo) + 1, "rounds": rounds}
        self.doc.setdefault("rung_log", []).append(_rung_log(m, wall, rounds, reference is not None))
        context = {k: v for k, v in m.context.items() if k not in ("repeat",)}
        self.doc["context"] = self.doc["context"] or context
        out = {}
        for e, v, pair in zip(todo, m.verifications, m.replays):
            if pair is None or v.verdict == racing.NOT_VERIFIABLE:
                e.status, e.why = racing.NOT_VERIFIABLE, v.reason
                continue
            base, fixed = pair
            known[ref_key], known[e.key] = base.get("passes") or 0, fixed.get("passes") or 0
            out[e.key] = (_kept(base["runs"]), _kept(fixed["runs"]))
            e_layouts = {"baseline": base.get("layouts"), "fixed": fixed.get("layouts")}
            self.doc.setdefault("layouts", {}).setdefault(e.key, e_layouts)
            self.doc.setdefault("loads", []).append(v.load)
        return out

def _rung_log(m, wall: float, rounds: int, against_leader: bool) -> dict[str, Any]:
    """Where one rung's wall time went: the reference's and the candidates' samples and warm-up
    passes; the rest is the launch and the untimed work between passes (prefill, cache, cleanup)."""
    sides = [p for p in m.replays if p is not None]
    ref = sides[0][0] if sides else {}
    cands = [f for _, f in sides]

    def spent(variants) -> tuple[float, float]:
        return (sum(float(v.get("warmup_s") or 0.0) for v in variants),
                sum(float(r.get("sample_s") or 0.0) for v in variants for r in v.get("runs", [])))

    (ref_warm, ref_samples), (cand_warm, cand_samples) = spent([ref] if ref else []), spent(cands)
    return {"wall_s": round(wall, 2), "rounds": rounds, "candidates": len(cands),
            "rounds_run": [len(ref.get("runs", [])), *(len(f.get("runs", [])) for f in cands)],
            "reference": "leader" if against_leader else "job",
            "reference_samples_s": round(ref_samples, 2), "reference_warmup_s": round(ref_warm, 2),
            "candidate_samples_s": round(cand_samples, 2), "candidate_warmup_s": round(cand_warm, 2),
            "other_s": round(wall - ref_samples - ref_warm - cand_samples - cand_warm, 2)}


def _kept(runs: list[dict]) -> list[dict]:
    """A sample as the verdict needs it (its phases are left out of the state file)."""
    return [{k: r.get(k) for k in ("time_s", "sample_s", "passes", "bytes_read", "bytes_written", "data_ops", "load")}
            for r in runs]


def _verdicts(the_race: Race, base, target: Path, settings: ReplayConfig, doc: dict) -> dict[str, Verification]:
    """key -> the verdict of each measured candidate against the recorded job: of its pooled pairs
    beside the job, as a verification of that fix would give it (each joins the target's history
    once); for one measured only beside another candidate, that candidate's verdict chained with
    the ratio between them (:func:`chained`)."""
    history = History.of(target, settings.history, settings.history_dir)
    past, workload = history.runs(), base.summary()
    policy = policy_of(settings)
    policy = replace(policy, reproducibility=drift.prior(settings.reproducibility, past).sd)
    out, entries = {}, []
    for e in the_race.entries.values():
        direct = [x for x in e.rungs if not x.get("ref")]
        if e.pairs < 1:
            continue
        key = workload_key(workload, fix_key(e.fixes[0] if len(e.fixes) == 1 else e.fixes))
        layouts = (doc.get("layouts") or {}).get(e.key) or {}
        sides = {"baseline": {"runs": [r for x in direct for r in x["base"]], "layouts": layouts.get("baseline")},
                 LABEL: {"runs": [r for x in direct for r in x["fixed"]], "layouts": layouts.get("fixed"),
                         "stopped_why": e.status}}
        outcome = {"runs": sides, "cache_policy": doc["context"].get("cache_policy"), "load": _load_span(doc),
                   "stop_reason": e.status, "min_sample_s": settings.min_sample_s}
        context = {k: doc["context"].get(k) for k in ("target", "fstype", "scale", "np", "nprocs_source", "source")}
        out[e.key] = v = verification_from(outcome, LABEL, context, policy, past=past, key=key)
        entries.append(history_entry(key, (sides["baseline"], sides[LABEL]), v))
    history.add(entries)
    for _ in range(len(the_race.entries)):  # chains resolve one link per pass
        todo = [e for e in the_race.entries.values() if e.measured and e.key not in out]
        done = {e.key: v for e in todo if (v := chained(the_race, e, out, policy.margin)) is not None}
        if not done:
            break
        out.update(done)
    return out


def chained(the_race: Race, e: Entry, known: dict[str, Verification], margin: float) -> Verification | None:
    """The speedup of `e` against the job through the reference it ran beside most: that
    reference's (measured) speedup times the ratio between them. The two come from different
    rounds, independent samples, so their log-scale 95 % half-widths add in quadrature; the
    verdict is the interval's against the margin. None while the reference has no verdict."""
    groups = {ref: xs for ref, xs in e.against().items() if ref and len(xs) >= 2}
    if not groups:
        return None
    ref, xs = max(groups.items(), key=lambda kv: len(kv[1]))
    rv = known.get(ref)
    if rv is None or not rv.measured or not rv.ci95:
        return None
    n, mean = len(xs), float(np.mean(xs))
    logs = chain_interval(math.log(rv.speedup), (math.log(rv.ci95[1]) - math.log(rv.ci95[0])) / 2, xs)
    speedup, lo, hi = (float(f"{math.exp(x):.4g}") for x in logs)
    top, bottom = 1 + margin, 1 / (1 + margin)
    verdict = (stats.IMPROVED if lo > top else stats.REGRESSED if hi < bottom
               else stats.EQUIVALENT if bottom <= lo and hi <= top else stats.INCONCLUSIVE)
    lead = the_race.entries[ref]
    reason = (sentence(verdict, speedup, [lo, hi], n, margin) +
              f"; chained: {math.exp(mean):.2f}x {lead.label()} in {n} rounds beside it, times its {rv.speedup}x")
    return replace(rv, verdict=verdict, reason=reason, speedup=speedup, ci95=[lo, hi], pairs=0, repeat=0,
                   more_pairs=None, more_s=None, stop_reason="chained", fixed=None, layouts=None,
                   cpu_contention=None)


def _load_span(doc: dict) -> dict | None:
    loads = [x for x in doc.get("loads", []) if isinstance(x, dict) and x.get("min") is not None]
    if not loads:
        return None
    return {"start": loads[0].get("start"), "end": loads[-1].get("end"), "min": min(x["min"] for x in loads),
            "max": max(x["max"] for x in loads), "cores": loads[0].get("cores")}


def _identity(profile: JobProfile, base, cands: list[space.Candidate]) -> str:
    """What a state file belongs to: the log, the plan replayed and the space searched."""
    path = Path(profile.source.path)
    stat = path.stat() if path.exists() else None
    text = json.dumps([str(path.resolve()), stat.st_size if stat else 0, base.summary(), [c.key for c in cands],
                       racing.ROUNDS], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _load(state: Path) -> dict | None:
    """An earlier search's state (None when there is none, or it cannot be read: start afresh)."""
    try:
        doc = json.loads(state.read_text())
        Race.from_dict(doc["race"])
        return doc if isinstance(doc.get("replay_s"), (int, float)) and not math.isnan(doc["replay_s"]) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
