"""Inputs -> a checked model: rows, fit, cross-validated error, importances, identity, metadata."""

from __future__ import annotations

import numpy as np

from advisor.errors import InputError
from advisor.models import conformal, mount, replays, train
from advisor.models.rows import Collected, collect


def identity_of(collected: Collected) -> dict:
    """The mount the rows describe: the calibration's (all must agree), else the logs' file system."""
    idents = collected.identities
    if idents:
        first = idents[0]
        for other in idents[1:]:
            diff = mount.differences(first, other)
            if diff:
                raise InputError("training data", "calibrations of different mounts (" + "; ".join(diff)
                                 + "): train one model per mount")
        return dict(first)
    if collected.fstypes:
        return {"fstype": max(collected.fstypes, key=collected.fstypes.get)}
    return {}


def build_model(paths: list[str], folds: int = 5) -> tuple[train.Model, Collected]:
    """A fitted model (median + interval) of every row in `paths`, its metadata filled in."""
    collected = collect(paths)
    ts = collected.training_set()
    if len(ts) < train.MIN_ROWS:
        raise InputError(", ".join(paths), f"{len(ts)} usable rows; at least {train.MIN_ROWS} are needed "
                         "(calibrate longer, or add IOR/Darshan logs with measured bandwidth)")
    bands = train.out_of_fold_bands(ts, folds)
    cv = train.cv_scores(ts, folds, bands[0])
    model = train.fit(ts)
    model.meta.update(
        kind="calibration" if collected.identities else "history",
        identity=identity_of(collected), cv=cv, importances=train.importances(model, ts),
        trained_on=_trained_on(collected), calibrations=collected.calibrations,
        speedup_interval=_interval(collected, ts, bands),
        target="log10 MiB/s of a phase (slowest rank)")
    _speedup_model(model, collected)
    return model, collected


def _speedup_model(model: train.Model, collected: Collected) -> None:
    """The speedup of a fix, learned from the measured fixes among the data (advisor.models.speedup);
    they must have been measured on the file system the calibration describes."""
    from advisor.models import speedup

    fstype = (model.meta.get("identity") or {}).get("fstype", "")
    other = sorted({r["fstype"] for r in collected.pairs if r.get("fstype")} - {fstype, ""})
    if fstype and other:
        raise InputError("training data", f"measured fixes on {', '.join(other)} beside a calibration of "
                                          f"{fstype}: train one model per mount")
    built = speedup.build(collected.pairs, collected.other_mount)
    if built is not None:
        model.speedup, model.meta["speedup_model"] = built


def _interval(collected: Collected, ts: train.TrainingSet, bands: tuple) -> dict:
    """How the speedup band is calibrated: on measured fixes when the data has replays (the
    distribution predictions are made for), else on one-factor pairs of calibration patterns."""
    nbytes = np.asarray(collected.bytes)
    pairs = conformal.calibrate(ts.groups, nbytes, ts.y, bands)
    fixes = replays.calibrate(collected.replayed, nbytes, bands)
    if fixes:
        return {**fixes, "calibration_pairs": pairs}
    return pairs or {"widen_log10": 0.0, "method": "uncalibrated: no calibration patterns or replayed fixes"}


def _trained_on(collected: Collected) -> list[str]:
    return [f"{origin}: {n} rows" for origin, n in collected.origins.items()]
