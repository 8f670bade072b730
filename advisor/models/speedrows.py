"""The speedup model's rows, inputs and regressor (:mod:`advisor.models.speedup` predicts and judges with them).

A measured fix is one row: what the workload's plan is (``b_`` the descriptors of
:data:`advisor.models.pairs.DESCRIPTORS`), what the fix changes of it (``d_``: after minus before),
and the load the node ran under; the target is log10 of the speedup verification measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from advisor.models.pairs import DESCRIPTORS, descriptors

LOAD = "load_per_cpu"
INPUTS = [f"b_{d}" for d in DESCRIPTORS] + [f"d_{d}" for d in DESCRIPTORS] + [LOAD]
"""The workload's descriptors (b_), the fix's change of them (d_), and the load the node ran under."""
QUIET = 1.0
"""The load per CPU a prediction is made for: the replay's own ranks on every CPU, nothing else.
The load is a condition of the node, not of the workload: a fix whose calls cost CPU (small
requests, MPI exchanges) gains differently on a busy node, so the model learns from the load each
fix was measured under and predicts for a quiet node; below the quietest measurement, as there.
It is never a reason to decline (:func:`advisor.models.speedup.outside`)."""


def inputs(before: dict[str, float], after: dict[str, float], load_per_cpu: float = QUIET) -> dict[str, float]:
    """The model's inputs of one fix: the plan before, the change the fix makes, the node's load."""
    out = {f"b_{k}": before.get(k, math.nan) for k in DESCRIPTORS}
    out[LOAD] = load_per_cpu
    for k in DESCRIPTORS:
        b, a = before.get(k, math.nan), after.get(k, math.nan)
        out[f"d_{k}"] = (a - b) if math.isfinite(a) and math.isfinite(b) else math.nan
    return out


@dataclass
class Rows:
    """Measured fixes as a matrix: inputs, log10 speedup, family, transform."""

    x: np.ndarray
    y: np.ndarray
    family: np.ndarray
    transform: np.ndarray
    workload: np.ndarray
    origins: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, keep: np.ndarray) -> Rows:
        return Rows(self.x[keep], self.y[keep], self.family[keep], self.transform[keep], self.workload[keep],
                    dict(self.origins))

    @classmethod
    def of(cls, rows: list[dict]) -> Rows:
        x = np.array([[inputs(descriptors(r, "b"), descriptors(r, "a"), load_of(r))[n] for n in INPUTS] for r in rows],
                     float).reshape(len(rows), len(INPUTS))
        return cls(x, np.log10([float(r["speedup"]) for r in rows]), np.array([r["family"] for r in rows]),
                   np.array([r["transform"] for r in rows]), np.array([r["workload"] for r in rows]))


def load_of(row: dict) -> float:
    """The load per CPU a fix was measured under (NaN when the row does not say)."""
    try:
        return float(row["load1"]) / float(row["cpus"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return math.nan


def regressor():
    """The one regressor of log10 speedup (fixed with the held-out protocol, never tuned on it)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(max_iter=150, learning_rate=0.05, max_leaf_nodes=7,
                                         min_samples_leaf=5, l2_regularization=1.0, random_state=0)


def fit(rows: Rows):
    from advisor.models.train import one_thread

    with one_thread():
        return regressor().fit(rows.x, rows.y)


def predict(estimator, x: np.ndarray) -> np.ndarray:
    from advisor.models.train import one_thread

    with one_thread():
        return estimator.predict(np.atleast_2d(x))


def ranges(rows: Rows) -> dict:
    """What the model measured: each input's [min, max], and the transforms."""
    out = {}
    for j, name in enumerate(INPUTS):
        col = rows.x[:, j]
        seen = col[np.isfinite(col)]
        out[name] = [float(seen.min()), float(seen.max())] if len(seen) else []
    return {"inputs": out, "transforms": sorted(set(rows.transform.tolist()))}
