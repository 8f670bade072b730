"""Learning log-bandwidth from pattern features: the fit, its cross-validated error, what it uses.

One gradient-boosted regressor (scikit-learn's ``HistGradientBoostingRegressor``) of
log10(MiB/s) predicts the median; two more with the pinball loss give an interval.
Physics fixes some directions (:data:`advisor.models.features.MONOTONE`: larger calls
never slow a pattern down, more fsyncs never speed it up) and the fits are constrained
to them. The error is measured by k-fold cross-validation with the rows of one pattern
(or one log) kept in one fold, and each feature's weight by permutation importance.
Used by ``ioadvisor train`` and by the fleet's expected-bandwidth model alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from advisor.errors import InputError
from advisor.models.features import FEATURES_VERSION, monotonic_cst

MIN_ROWS = 20
"""Fewer rows than this make no model."""
INTERVAL = (0.1, 0.9)  # quantiles of the predicted interval (an 80 % interval)


@dataclass
class TrainingSet:
    """Rows of features and their measured log10 bandwidth (MiB/s)."""

    x: np.ndarray
    y: np.ndarray
    features: list[str]
    groups: np.ndarray  # rows of one pattern or one log share a group (kept in one CV fold)
    origins: dict[str, int] = field(default_factory=dict)  # "calibration DATA": rows, ...
    weights: np.ndarray | None = None  # each row's weight in the fit (None: all alike)

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def subset(self, keep: np.ndarray) -> TrainingSet:
        """The rows where `keep` is true."""
        return TrainingSet(self.x[keep], self.y[keep], list(self.features), self.groups[keep], dict(self.origins),
                           None if self.weights is None else self.weights[keep])

    def learnable(self) -> TrainingSet:
        """Only the features with at least one value (a feature the data never had teaches nothing)."""
        keep = [j for j in range(self.x.shape[1]) if np.isfinite(self.x[:, j]).any()]
        return TrainingSet(self.x[:, keep], self.y, [self.features[j] for j in keep], self.groups,
                           dict(self.origins), self.weights)


@dataclass
class Model:
    """Fitted regressors (median and interval) with everything needed to judge their answers."""

    estimator: object
    features: list[str]
    lower: object | None = None
    upper: object | None = None
    meta: dict = field(default_factory=dict)  # see advisor.models.store: ranges, cv, identity, ...
    features_version: int = FEATURES_VERSION
    speedup: object | None = None  # log10 speedup of a fix from measured fixes (advisor.models.speedup)

    def predict_log(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """log10 MiB/s: (median, lower, upper) per row; the interval is at least the median."""
        with one_thread():
            mid = self.estimator.predict(x)
            lo = self.lower.predict(x) if self.lower is not None else mid
            hi = self.upper.predict(x) if self.upper is not None else mid
        return mid, np.minimum(lo, mid), np.maximum(hi, mid)

    @property
    def cv_median_factor(self) -> float:
        """Typical miss of out-of-fold predictions, as a factor (x or /)."""
        return float(self.meta.get("cv", {}).get("median_factor", math.nan))

    @cv_median_factor.setter
    def cv_median_factor(self, value: float) -> None:
        self.meta.setdefault("cv", {})["median_factor"] = float(value)


def estimator(n: int, features: list[str], quantile: float | None = None):
    """One regressor sized for `n` rows (small calibrations need small leaves)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    kwargs = {"loss": "quantile", "quantile": quantile} if quantile is not None else {}
    return HistGradientBoostingRegressor(max_iter=120, learning_rate=0.1, max_leaf_nodes=15,
                                         min_samples_leaf=max(3, min(20, n // 15)),
                                         monotonic_cst=monotonic_cst(features), random_state=0, **kwargs)


def one_thread():
    """Fit and predict on one thread: OpenMP threads spinning on a shared, busy node are far
    slower than one (and these data sets are small)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _check(ts: TrainingSet) -> None:
    if len(ts) < MIN_ROWS:
        raise InputError("training data", f"{len(ts)} usable rows; at least {MIN_ROWS} are needed")


def fit(ts: TrainingSet, intervals: bool = True) -> Model:
    """Median (and interval) regressors on every row, with training ranges in the metadata."""
    _check(ts)
    with one_thread():
        return _fit(ts.learnable(), ts, intervals)


def _fit(seen: TrainingSet, ts: TrainingSet, intervals: bool) -> Model:
    w = seen.weights
    model = Model(estimator(len(ts), seen.features).fit(seen.x, seen.y, sample_weight=w), list(seen.features))
    if intervals:
        lo, hi = INTERVAL
        model.lower = estimator(len(ts), seen.features, lo).fit(seen.x, seen.y, sample_weight=w)
        model.upper = estimator(len(ts), seen.features, hi).fit(seen.x, seen.y, sample_weight=w)
    model.meta.update(rows=len(ts), origins=dict(ts.origins), ranges=ranges(ts),
                      interval=list(INTERVAL) if intervals else None)
    return model


def out_of_fold(ts: TrainingSet, folds: int = 5) -> np.ndarray:
    """log10 MiB/s predicted for each row by a model that saw none of its group."""
    return _out_of_fold(ts, folds, (None,))[0]


def out_of_fold_bands(ts: TrainingSet, folds: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(median, lower, upper) log10 MiB/s predicted for each row by the three regressors of a
    model that saw none of its group (the interval at least the median, as :meth:`Model.predict_log`)."""
    mid, lo, hi = _out_of_fold(ts, folds, (None, *INTERVAL))
    return mid, np.minimum(lo, mid), np.maximum(hi, mid)


def _out_of_fold(ts: TrainingSet, folds: int, quantiles: tuple) -> list[np.ndarray]:
    from sklearn.model_selection import GroupKFold

    _check(ts)
    ts = ts.learnable()
    folds = max(2, min(folds, len(np.unique(ts.groups))))
    preds = [np.empty(len(ts)) for _ in quantiles]
    with one_thread():
        for train, test in GroupKFold(n_splits=folds).split(ts.x, ts.y, ts.groups):
            # a feature with no value in this fold's training rows breaks the binning: leave it out
            keep = np.isfinite(ts.x[train]).any(axis=0)
            names = [f for f, k in zip(ts.features, keep) if k]
            w = None if ts.weights is None else ts.weights[train]
            for pred, q in zip(preds, quantiles):
                pred[test] = (estimator(len(train), names, q).fit(ts.x[train][:, keep], ts.y[train], sample_weight=w)
                              .predict(ts.x[test][:, keep]))
    return preds


def cv_scores(ts: TrainingSet, folds: int = 5, pred: np.ndarray | None = None) -> dict:
    """k-fold cross-validated error: median absolute percentage error of the bandwidth, R^2 of
    log-bandwidth, the typical miss as a factor; computed on out-of-fold predictions (`pred`
    when already made)."""
    pred = out_of_fold(ts, folds) if pred is None else pred
    rel = np.abs(np.power(10.0, pred - ts.y) - 1.0)
    ss_res = float(np.sum((ts.y - pred) ** 2))
    ss_tot = float(np.sum((ts.y - ts.y.mean()) ** 2))
    return {"folds": int(max(2, min(folds, len(np.unique(ts.groups))))), "rows": len(ts),
            "mdape": float(np.median(rel)), "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else math.nan,
            "median_factor": float(10 ** np.median(np.abs(pred - ts.y)))}


def importances(model: Model, ts: TrainingSet, repeats: int = 5) -> list[dict]:
    """Permutation importance of each feature (drop of R^2 when it is shuffled), largest first."""
    from sklearn.inspection import permutation_importance

    x = ts.x[:, [ts.features.index(n) for n in model.features]]
    with one_thread():
        result = permutation_importance(model.estimator, x, ts.y, n_repeats=repeats, random_state=0)
    out = [{"feature": name, "mean": float(m), "std": float(s)}
           for name, m, s in zip(model.features, result.importances_mean, result.importances_std)]
    return sorted(out, key=lambda r: -r["mean"])


def ranges(ts: TrainingSet) -> dict[str, list]:
    """Per feature: [min, max] of the finite training values ([] when never seen)."""
    out = {}
    for j, name in enumerate(ts.features):
        col = ts.x[:, j]
        seen = col[np.isfinite(col)]
        out[name] = [float(seen.min()), float(seen.max())] if len(seen) else []
    return out


def outside(model: Model, row: dict[str, float], margin: float = 0.02) -> list[str]:
    """The features of `row` outside the model's training ranges (beyond `margin` of the range,
    at least 0.01, so 0.9999 against a seen 0.9998 is not news), said in words."""
    out = []
    for name, span in (model.meta.get("ranges") or {}).items():
        value = row.get(name, math.nan)
        if value is None or not math.isfinite(value):
            continue
        if not span:
            out.append(f"{name} = {value:.3g} (the training data never had it)")
            continue
        slack = max(margin * (span[1] - span[0]), 0.01)
        if value < span[0] - slack or value > span[1] + slack:
            out.append(f"{name} = {value:.3g} outside {span[0]:.3g}..{span[1]:.3g}")
    return out
