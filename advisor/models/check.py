"""Check a model against the replayer: predicted vs measured speedup of each fix of a job.

The same baseline plan (ranks and scale) is predicted by the model and replayed on the
target before and after every fix the diagnosis proposes; the relative error of the
predicted speedup is |predicted - measured| / measured. Used by ``bench/models.py`` and
the tests; a site can run it on its own logs to see whether its model can be trusted.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from advisor.models.predict import predict_fixes
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
    reason: str = ""

    @property
    def error(self) -> float | None:
        """|predicted - measured| / measured, or None when either side is missing."""
        if not self.predicted or not self.measured:
            return None
        return abs(self.predicted - self.measured) / self.measured


def compare(model: Model, profile, target: Path, repeat: int = 3, np_: int | None = None,
            label: str = "") -> list[Comparison]:
    """Predict and replay every distinct fix of the job's diagnosis on `target`."""
    from advisor import pipeline
    from advisor.config import load_config
    from advisor.fixes import fix_key, proposed_fixes
    from advisor.models.predict import max_ranks
    from advisor.verify import replay_plan

    # the findings alone (no model stage): the model under test predicts their fixes below
    diagnosis = pipeline.run([profile], pipeline.Stages(), load_config()).results[0].diagnosis
    proposed = proposed_fixes(diagnosis.findings)
    fixes = {key: fix for key, (fix, _) in proposed.items()}
    codes = {key: found for key, (_, found) in proposed.items()}
    if not fixes:
        return []
    ranks = np_ or min(max(profile.job.nprocs, 1), max_ranks(model))
    base = replay_plan(profile, np=ranks)
    predicted = predict_fixes(model, profile, list(fixes.values()), np_=ranks)
    out = []
    for v in _replayed(profile, list(fixes.values()), target, repeat, base):
        key = fix_key(v["fix"])
        p = predicted[key]
        out.append(Comparison(label or profile.source.path, v["fix"], codes[key], p.speedup,
                              p.interval, v.get("speedup"), v.get("ci95"), v["verdict"],
                              p.extrapolated, v.get("reason") or p.reason))
    return out


def _replayed(profile, fixes: list[dict], target: Path, repeat: int, base) -> list[dict]:
    """The replayer's verification of every fix: all in one MPI job, or, when that job fails,
    each fix in its own (a fix that crashes the replayer is reported, not fatal)."""
    from advisor.errors import AdvisorError
    from advisor.verify import measure

    try:
        return measure(profile, fixes, target, repeat=repeat, base=base)["verifications"]
    except AdvisorError:
        if len(fixes) == 1:
            raise
    out = []
    for fix in fixes:
        try:
            out += measure(profile, [fix], target, repeat=repeat, base=base)["verifications"]
        except AdvisorError as exc:
            out.append({"fix": fix, "verdict": "not-verifiable", "speedup": None, "ci95": None,
                        "reason": f"replay failed: {exc}"})
    return out


def median_error(comparisons: list[Comparison]) -> float:
    """Median of the relative errors of the comparisons that have both sides (NaN if none)."""
    errors = [c.error for c in comparisons if c.error is not None]
    return statistics.median(errors) if errors else math.nan
