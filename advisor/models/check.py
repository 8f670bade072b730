"""Check a model against the replayer: predicted vs measured speedup of each fix of a job.

The same baseline plan (ranks and scale) is predicted by the model and replayed on the
target before and after every fix the diagnosis proposes; the relative error of the
predicted speedup is |predicted - measured| / measured. Used by ``bench/models.py`` and
the tests; a site can run it on its own logs to see whether its model can be trusted.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, fields, replace
from pathlib import Path

from advisor.models.predict import max_ranks, predict_fixes
from advisor.models.train import Model


@dataclass
class Comparison:
    """One fix of one job: what the model predicted and what the replayer measured."""

    job: str
    fix: dict
    codes: list[str]
    predicted: float | None
    interval: list[float] | None
    measured: float | None
    measured_ci95: list[float] | None
    verdict: str
    extrapolated: bool
    reason: str = ""  # the verification's sentence (or why the model could not predict)
    np: int | None = None  # ranks of the plan predicted and replayed
    phases: dict | None = None  # "baseline"/"fixed" -> the phases replayed (advisor.models.replays)

    @property
    def error(self) -> float | None:
        """|predicted - measured| / measured, or None when either side is missing."""
        if not self.predicted or not self.measured:
            return None
        return abs(self.predicted - self.measured) / self.measured

    @property
    def inside(self) -> bool | None:
        """Whether the measured speedup lies in the predicted interval (None: a side is missing)."""
        if self.error is None or not self.interval:
            return None
        return self.interval[0] <= self.measured <= self.interval[1]

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, doc: dict) -> Comparison:
        return cls(**{f.name: doc.get(f.name) for f in fields(cls)})


def compare(model: Model, profile, target: Path, repeat: int | None = None, np_: int | None = None,
            label: str = "", settings=None) -> list[Comparison]:
    """Predict and replay every distinct fix of the job's diagnosis on `target` (`repeat`: that
    many rounds; None: the sequential test of `settings`, the site's ``[replay]`` by default)."""
    from advisor import pipeline
    from advisor.config import load_config
    from advisor.fixes import proposed_fixes
    from advisor.verify import measure, replay_plan

    config = load_config()
    # the findings alone (no model stage): the model under test predicts their fixes below
    diagnosis = pipeline.run([profile], pipeline.Stages(), config).results[0].diagnosis
    proposed = proposed_fixes(diagnosis.findings)
    fixes = {key: fix for key, (fix, _) in proposed.items()}
    codes = {key: found for key, (_, found) in proposed.items()}
    if not fixes:
        return []
    ranks = np_ or min(max(profile.job.nprocs, 1), max_ranks(model))
    base = replay_plan(profile, np=ranks)
    predicted = predict_fixes(model, profile, list(fixes.values()), np_=ranks)
    # one fix failing to replay is that fix's not-verifiable verdict (advisor.verify)
    measured = measure(profile, list(fixes.values()), target, repeat=repeat, base=base,
                       settings=settings or config.section("replay"))
    out = []
    fstype = measured.context.get("fstype", "")
    for (key, fix), v, replayed in zip(fixes.items(), measured.verifications, measured.replays):
        p = predicted[key]
        phases = replayed_phases(base, fix, replayed, fstype) if replayed and v.measured else None
        out.append(Comparison(label or profile.source.path, fix, codes[key], p.speedup,
                              p.interval, v.speedup if v.measured else None, v.ci95, v.verdict,
                              p.extrapolated, _reason(v.reason, p.reason), base.nranks, phases))
    return out


def replayed_phases(base, fix: dict, replayed: tuple[dict, dict], fstype: str) -> dict:
    """"baseline"/"fixed" -> every phase that moved data: its features, bytes and measured seconds."""
    from advisor.models.replays import phase_rows
    from replay.transforms import apply_fix

    baseline, fixed = replayed
    return {"baseline": phase_rows(base, baseline, fstype), "fixed": phase_rows(apply_fix(base, fix), fixed, fstype)}


def repredict(model: Model, profile, measured: list[Comparison]) -> list[Comparison]:
    """The same measured fixes of one job predicted by another model (same ranks): a model is
    judged against measurements already made, without replaying again."""
    from advisor.fixes import fix_key

    if not measured:
        return []
    ranks = measured[0].np or min(max(profile.job.nprocs, 1), max_ranks(model))
    predicted = predict_fixes(model, profile, [c.fix for c in measured], np_=ranks)
    out = []
    for c in measured:
        p = predicted[fix_key(c.fix)]
        out.append(replace(c, predicted=p.speedup, interval=p.interval, extrapolated=p.extrapolated,
                           reason=_reason(c.reason.split(DECLINED)[0], p.reason)))
    return out


DECLINED = "; no prediction: "


def _reason(measured: str, declined: str) -> str:
    """The verification's sentence, and why the model gave no number when it gave none."""
    if not declined:
        return measured
    return f"{measured}{DECLINED}{declined}" if measured else f"no prediction: {declined}"


def median_error(comparisons: list[Comparison]) -> float:
    """Median of the relative errors of the comparisons that have both sides (NaN if none)."""
    errors = [c.error for c in comparisons if c.error is not None]
    return statistics.median(errors) if errors else math.nan


def inside_share(comparisons: list[Comparison]) -> tuple[int, int]:
    """(measured speedups inside the predicted interval, comparisons with both sides)."""
    judged = [c.inside for c in comparisons if c.inside is not None]
    return sum(judged), len(judged)
