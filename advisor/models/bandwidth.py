"""Expected I/O bandwidth of a whole job from the fleet's own history (used by `ioadvisor fleet`).

Trained on a site's history (the fleet dataset: :func:`advisor.models.sources.darshan.job_features`
per job, target log10 of bytes per second of per-process I/O time), it says what a job
*like this one* usually gets on this machine; a job far below that is worth a look even
when no rule fires (a slow OST, a busy file system, a bad node). Judging a job with a model
that saw it would hide exactly those jobs, so :func:`out_of_fold` predicts each job with a
model trained on the other folds (logs with the same content stay in one fold).

The fitting, cross-validation and model files are the shared machinery of
:mod:`advisor.models.train` and :mod:`advisor.models.store`; this module only adapts the
fleet's rows to it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from advisor.errors import InputError
from advisor.models import features as feats
from advisor.models import store, train

MIN_JOBS = train.MIN_ROWS
"""Fewer usable jobs than this make no history to compare with."""
MIN_BYTES = 1 << 20  # jobs that moved less than this say nothing about bandwidth
MIN_IO_TIME_S = 1e-3

BandwidthModel = train.Model


def matrix(feature_rows: list[dict[str, float]], names: list[str] | None = None) -> np.ndarray:
    """Stored feature dicts -> a float matrix (NaN where absent); rows of another feature
    version are refused (their names mean something else)."""
    for row in feature_rows:
        version = (row or {}).get("features_version")
        if row and version != feats.FEATURES_VERSION:
            raise InputError("history", f"jobs were analysed with model features version {version}, this "
                             f"ioadvisor computes version {feats.FEATURES_VERSION}: re-run `ioadvisor fleet run`")
    return feats.matrix(feature_rows, names or feats.names())


def usable(bytes_moved: np.ndarray, io_time_s: np.ndarray) -> np.ndarray:
    """Jobs whose bandwidth means something (enough bytes, measurable time)."""
    return (bytes_moved >= MIN_BYTES) & (io_time_s >= MIN_IO_TIME_S)


def _training_set(x: np.ndarray, log_mib_s: np.ndarray, groups: np.ndarray | None = None,
                  names: list[str] | None = None) -> train.TrainingSet:
    if len(x) < MIN_JOBS:
        raise InputError("history", f"{len(x)} usable jobs; at least {MIN_JOBS} are needed to "
                         "learn what this machine usually delivers")
    groups = np.arange(len(x)) if groups is None else groups
    return train.TrainingSet(x, np.asarray(log_mib_s, float), names or feats.names(), groups,
                             {"fleet history": len(x)})


def fit(x: np.ndarray, log_mib_s: np.ndarray, names: list[str] | None = None) -> BandwidthModel:
    """A model on every given job (what `fleet expect --model` saves for later jobs)."""
    model = train.fit(_training_set(x, log_mib_s, names=names))
    model.meta.update(kind="fleet", target="log10 MiB/s of a whole job (per-process I/O time)",
                      trained_on=[f"fleet history: {len(x)} jobs"])
    return model


def out_of_fold(x: np.ndarray, log_mib_s: np.ndarray, groups: np.ndarray, folds: int = 5) -> np.ndarray:
    """log10 MiB/s predicted for each job by a model that never saw it (nor a copy of it)."""
    return train.out_of_fold(_training_set(x, log_mib_s, groups), folds)


def save(model: BandwidthModel, path: str | Path) -> None:
    """Write the model as an ioadvisor model file (skops + metadata, see advisor.models.store)."""
    store.save(model, path)


def load(path: str | Path) -> BandwidthModel:
    return store.load(path)
