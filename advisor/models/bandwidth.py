"""Expected I/O bandwidth of a job from what it asked of the file system (its counters).

A gradient-boosted regressor on log10(MiB/s) over :mod:`advisor.models.features`.
Trained on a site's own history (the fleet dataset), it says what a job *like this
one* usually gets on this machine; a job far below that is worth a look even when
no rule fires (a slow OST, a busy file system, a bad node). Judging a job with a
model that saw it would hide exactly those jobs, so :func:`out_of_fold` predicts
each job with a model trained on the other folds (logs with the same content stay
in one fold).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from advisor.errors import InputError
from advisor.models.features import FEATURES, FEATURES_VERSION

MIN_JOBS = 20
"""Fewer usable jobs than this make no history to compare with."""
MIN_BYTES = 1 << 20  # jobs that moved less than this say nothing about bandwidth
MIN_IO_TIME_S = 1e-3


@dataclass
class BandwidthModel:
    """A fitted regressor and what it was fitted on."""

    estimator: object
    features: list[str]
    features_version: int = FEATURES_VERSION
    n_jobs: int = 0
    cv_median_factor: float = math.nan  # typical miss of out-of-fold predictions (x or /)
    meta: dict = field(default_factory=dict)

    def predict_mib_s(self, x: np.ndarray) -> np.ndarray:
        return np.power(10.0, self.estimator.predict(x))


def matrix(feature_rows: list[dict[str, float]], names: list[str] | None = None) -> np.ndarray:
    """Feature dicts -> a float matrix in the order of `names` (NaN where absent)."""
    names = names or list(FEATURES)
    out = np.full((len(feature_rows), len(names)), np.nan)
    for i, row in enumerate(feature_rows):
        for j, name in enumerate(names):
            value = row.get(name) if row else None
            if value is not None:
                out[i, j] = value
    return out


def usable(bytes_moved: np.ndarray, io_time_s: np.ndarray) -> np.ndarray:
    """Jobs whose bandwidth means something (enough bytes, measurable time)."""
    return (bytes_moved >= MIN_BYTES) & (io_time_s >= MIN_IO_TIME_S)


class _Regressor:
    """Gradient boosting on the columns that vary in the training jobs.

    Constant or all-NaN columns carry no information and trip the binning of
    HistGradientBoostingRegressor, so they are dropped (and remembered) at fit time.
    """

    def __init__(self, n: int):
        from sklearn.ensemble import HistGradientBoostingRegressor

        self.columns: np.ndarray | None = None
        self.model = HistGradientBoostingRegressor(max_iter=200, learning_rate=0.08, max_leaf_nodes=15,
                                                   min_samples_leaf=max(3, min(20, n // 15)), random_state=0)

    def fit(self, x: np.ndarray, y: np.ndarray) -> "_Regressor":
        self.columns = np.flatnonzero([len(np.unique(col[~np.isnan(col)])) > 1 for col in x.T])
        with _one_thread():
            self.model.fit(x[:, self.columns], y)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        with _one_thread():
            return self.model.predict(x[:, self.columns])


def _one_thread():
    """OpenMP spinning on a shared 2-core node made a 1 s fit take minutes: stay on one thread
    (the fleet's Dask workers already use the cores)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _estimator(n: int) -> _Regressor:
    return _Regressor(n)


def fit(x: np.ndarray, log_mib_s: np.ndarray, names: list[str] | None = None) -> BandwidthModel:
    """A model on every given job (what `--model` saves for later jobs)."""
    if len(x) < MIN_JOBS:
        raise InputError("history", f"{len(x)} usable jobs; at least {MIN_JOBS} are needed to "
                         "learn what this machine usually delivers")
    est = _estimator(len(x)).fit(x, log_mib_s)
    return BandwidthModel(est, names or list(FEATURES), n_jobs=len(x))


def out_of_fold(x: np.ndarray, log_mib_s: np.ndarray, groups: np.ndarray, folds: int = 5) -> np.ndarray:
    """log10 MiB/s predicted for each job by a model that never saw it (nor a copy of it)."""
    from sklearn.model_selection import GroupKFold

    if len(x) < MIN_JOBS:
        raise InputError("history", f"{len(x)} usable jobs; at least {MIN_JOBS} are needed")
    folds = min(folds, len(np.unique(groups)))
    pred = np.empty(len(x))
    for train, test in GroupKFold(n_splits=folds).split(x, log_mib_s, groups):
        pred[test] = _estimator(len(train)).fit(x[train], log_mib_s[train]).predict(x[test])
    return pred


def save(model: BandwidthModel, path: str | Path) -> None:
    """Write the model with skops (a safe format: loading runs no pickled code)."""
    import skops.io as sio

    sio.dump({"estimator": model.estimator.model, "columns": [int(c) for c in model.estimator.columns],
              "features": model.features,
              "features_version": model.features_version, "n_jobs": model.n_jobs,
              "cv_median_factor": model.cv_median_factor, "kind": "bandwidth"}, str(path))


def load(path: str | Path) -> BandwidthModel:
    import skops.io as sio

    try:
        untrusted = sio.get_untrusted_types(file=str(path))
        doc = sio.load(str(path), trusted=[t for t in untrusted if t.startswith("sklearn.")])
    except Exception as exc:  # a wrong or damaged file
        raise InputError(str(path), f"not an ioadvisor bandwidth model: {exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "bandwidth":
        raise InputError(str(path), "not an ioadvisor bandwidth model")
    regressor = _Regressor(0)
    regressor.model, regressor.columns = doc["estimator"], np.array(doc["columns"], dtype=int)
    return BandwidthModel(regressor, list(doc["features"]), int(doc["features_version"]),
                          int(doc["n_jobs"]), float(doc["cv_median_factor"]))
