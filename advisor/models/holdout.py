"""A model judged on workloads it never saw: leave one workload out, predict its fixes.

The measured fixes of ``advisor.models.check`` become training rows (:mod:`advisor.models.replays`);
judging a model trained on them with the same measurements would be judging it on its own
training data. So every workload is left out in turn: a model is trained on the calibration
and the other workloads' replays, predicts the left-out workload's fixes, and their interval
is calibrated on the other workloads' scores (jackknife+ in its conformalized form: each score
itself comes from a model that never saw its own workload). Used by ``bench/models.py``.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from advisor.models import conformal, replays, train
from advisor.models.check import Comparison
from advisor.models.rows import collect


def leave_workload_out(comparisons: list[Comparison], data: list[str]) -> list[Comparison]:
    """`comparisons` (measured, with phases) predicted by models that never saw their workload,
    trained on `data` (calibration directories) and the other workloads' replays."""
    rows = replays.table(comparisons)
    if not rows:
        return []
    with tempfile.TemporaryDirectory(prefix="ioadvisor-holdout-") as tmp:
        path = Path(tmp) / replays.REPLAYS_FILE
        replays.write(path, rows)
        # the calibration alone: replays a data directory ships were measured on these workloads
        collected = collect(data, with_replays=False)
        replays.collect(path, collected)
    ts = collected.training_set()
    nbytes = np.asarray(collected.bytes)
    fixes = collected.replayed
    if len({f.workload for f in fixes}) < 2:
        return []  # an interval is calibrated on other workloads: there are none
    predicted: dict[int, tuple[float, float]] = {}  # fix index -> (log10 ratio, log10 half-width)
    beyond: dict[int, bool] = {}  # fix index -> a phase outside the model's training ranges
    scores = np.full(len(fixes), math.nan)
    for workload in sorted({f.workload for f in fixes}):
        model = train.fit(ts.subset(ts.groups != replays.REPLAY_GROUP + workload))
        bands = model.predict_log(_columns(ts, model.features))
        for i, f in enumerate(fixes):
            if f.workload == workload:
                before = replays.predicted_band(f.baseline, nbytes, bands)
                after = replays.predicted_band(f.fixed, nbytes, bands)
                predicted[i] = conformal.speedup_band(before, after)
                scores[i] = conformal.score(math.log10(f.speedup), before, after)
                beyond[i] = any(train.outside(model, collected.rows[r]) for r in f.baseline + f.fixed)
    return [_judged(comparisons, f, predicted[i], beyond[i], conformal.quantile(scores[[
        j for j, g in enumerate(fixes) if g.workload != f.workload]])) for i, f in enumerate(fixes)]


def _columns(ts: train.TrainingSet, names: list[str]) -> np.ndarray:
    return ts.x[:, [ts.features.index(n) for n in names]]


def _judged(comparisons: list[Comparison], fix: replays.ReplayedFix, pred: tuple[float, float],
            extrapolated: bool, widen: float) -> Comparison:
    import json

    (c,) = [c for c in comparisons
            if c.job == fix.case and json.dumps(c.fix, sort_keys=True, separators=(",", ":")) == fix.fix]
    ratio, half = pred
    half = max(half + widen, 0.0)
    return replace(c, predicted=float(f"{10 ** ratio:.4g}"), extrapolated=extrapolated,
                   interval=[float(f"{10 ** (ratio - half):.4g}"), float(f"{10 ** (ratio + half):.4g}")])
