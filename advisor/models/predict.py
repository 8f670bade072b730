"""A model in diagnosis: the predicted gain of each fix, and jobs far below expectation.

The model stage of :mod:`advisor.pipeline` (``ioadvisor diagnose --model``, the site's
``[model] path`` for every entry point):

- for every finding with a fix, the job's replay plan (the same one ``--verify`` runs) and
  the plan with the fix applied are both predicted phase by phase; the predicted speedup,
  its interval and the I/O time it would save go to ``finding.prediction`` and rank the
  fixes (findings stay ordered by severity and the time they cost);
- before the engine runs, the job's measured bandwidth is compared with what the model
  expects for its pattern on the model's file system (:mod:`advisor.models.expect`); the
  anomaly rules of the catalogue (ANM001) decide on a finding from that comparison in the
  engine's one pass (facts in :mod:`advisor.facts.model`), so thresholds and wording stay
  in ``rules/`` like every other rule;
- every prediction made outside the training ranges says so (``extrapolation``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from advisor.errors import AdvisorError, InputError
from advisor.expectation import JobExpectation
from advisor.findings import Diagnosis, Prediction
from advisor.models import store
from advisor.models.conformal import speedup_band
from advisor.models.features import Part, features, matrix
from advisor.models.train import Model, outside
from advisor.profile import JobProfile
from advisor.units import MiB

DEFAULT_MODEL = Path(__file__).parent / "default" / "model.skops"
OUTSIDE = "outside what this model measured"  # a fix declined: "no prediction: " + OUTSIDE + (which, how far)


def resolve(model_path: str | Path) -> Path:
    """``default`` names the model shipped with ioadvisor; anything else is a path."""
    return DEFAULT_MODEL if str(model_path) == "default" else Path(model_path)


@lru_cache(maxsize=4)
def _cached(path: str, mtime_ns: int, size: int) -> Model:
    return store.load(path)


def load(model_path: str | Path) -> Model:
    """The model at `model_path` (loaded once per process while the file is unchanged)."""
    path = resolve(model_path)
    try:
        st = path.stat()
    except OSError:
        raise InputError(str(model_path), "no such model file") from None
    return _cached(str(path), st.st_mtime_ns, st.st_size)


@dataclass
class Timing:
    """Predicted seconds of a workload (its slowest rank), with an interval."""

    seconds: float
    fast_s: float  # at the upper bandwidth quantile
    slow_s: float  # at the lower bandwidth quantile
    bytes: float
    outside: list[str] = field(default_factory=list)

    @property
    def mib_s(self) -> float:
        return self.bytes / self.seconds / MiB if self.seconds > 0 else math.nan


def predict_parts(model: Model, parts: list[Part]) -> Timing:
    """Time of a workload made of `parts` run one after the other (phases end at barriers)."""
    parts = [p for p in parts if p.bytes > 0]
    if not parts:
        return Timing(0.0, 0.0, 0.0, 0.0)
    rows = [features(p) for p in parts]
    mid, lo, hi = model.predict_log(matrix(rows, model.features))
    nbytes = np.array([p.bytes for p in parts]) / MiB
    flags = sorted({flag for row in rows for flag in outside(model, row)})
    return Timing(float(np.sum(nbytes / 10 ** mid)), float(np.sum(nbytes / 10 ** hi)),
                  float(np.sum(nbytes / 10 ** lo)), float(nbytes.sum() * MiB), flags)


def speedup(before: Timing, after: Timing, widen_log10: float = 0.0) -> tuple[float, float, float]:
    """(speedup, low, high): the ratio of the medians; the interval combines the log half-widths
    of both predictions in quadrature, widened by the model's conformal calibration
    (:mod:`advisor.models.conformal`: 80 % of the calibration's measured one-factor speedups fell
    inside the band so widened; never narrower than the point)."""
    log_ratio, half = speedup_band((before.seconds, before.fast_s, before.slow_s),
                                   (after.seconds, after.fast_s, after.slow_s))
    ratio, half = 10 ** log_ratio, max(half + widen_log10, 0.0)
    return ratio, ratio / 10 ** half, ratio * 10 ** half


def interval_widening(model: Model) -> float:
    """log10 widening of the speedup band the model's calibration found (0 when uncalibrated)."""
    return float((model.meta.get("speedup_interval") or {}).get("widen_log10", 0.0))


def predict_fixes(model: Model, profile: JobProfile, fixes: list[dict], np_: int | None = None,
                  scale: float | None = None, fstype: str | None = None, mount: str = "") -> dict[str, Prediction]:
    """fix key -> prediction, from the job's replay plan before and after each fix; `mount`: the
    job's file system when it is not the model's (the model of measured fixes widens its interval
    by its calibration for another mount, or declines)."""
    from advisor.models.sources.plan import plan_parts
    from advisor.fixes import fix_key
    from advisor.verify import replay_plan
    from replay.transforms import apply_fix

    fstype = fstype if fstype is not None else (model.meta.get("identity") or {}).get("fstype", "")
    ranks = np_ or min(max(profile.job.nprocs, 1), max_ranks(model))
    base = replay_plan(profile, np=ranks, scale=scale)
    base_parts = list(plan_parts(base, fstype).values())
    before = predict_parts(model, base_parts)
    if before.bytes == 0:
        reason = "the job's replay plan moves no data (metadata only): no bandwidth to predict"
        return {fix_key(fix): Prediction(reason=reason) for fix in fixes}
    out = {}
    for fix in fixes:
        key = fix_key(fix)
        try:
            fixed = apply_fix(base, fix)
        except ValueError as exc:
            out[key] = Prediction(reason=f"not predictable for this workload: {exc}")
            continue
        common = {"np": base.nranks, "scale": base.meta.get("scale", 1.0)}
        if model.speedup is not None:  # the two bandwidths would be another model's ratio: left out
            out[key] = _measured_fix(model, base, fixed, fix, fstype, common, mount)
            continue
        fixed_parts = list(plan_parts(fixed, fstype).values())
        if repr(fixed_parts) == repr(base_parts):  # repr: NaN features compare equal
            # e.g. ROMIO hints the features do not describe: a speedup of 1 would be the model's blindness
            out[key] = Prediction(reason="not predictable: the model's features do not change with this fix")
            continue
        after = predict_parts(model, fixed_parts)
        common.update(baseline_mib_s=_round(before.mib_s), fixed_mib_s=_round(after.mib_s))
        ratio, lo, hi = speedup(before, after, interval_widening(model))
        flags = sorted(set(before.outside) | set(after.outside))
        out[key] = Prediction(speedup=_round(ratio), interval=[_round(lo), _round(hi)],
                              extrapolated=bool(flags), extrapolation=flags, **common)
    return out


def _measured_fix(model: Model, base, fixed, fix: dict, fstype: str, common: dict, mount: str = "") -> Prediction:
    """A fix predicted by the model of measured fixes (advisor.models.speedup), or declined with the
    reason when it lies outside what that model measured. A transform it never measured, or another
    mount, is said beside the prediction (its interval is calibrated for that: speedup.width_for)."""
    from advisor.models import speedup as learned
    from advisor.models.pairs import plan_features

    meta, transform = model.meta.get("speedup_model") or {}, str(fix.get("transform", ""))
    before, after = plan_features(base, fstype), plan_features(fixed, fstype)
    got = learned.predict_fix(model.speedup, meta, before, after, transform, mount)
    if isinstance(got, list):
        return Prediction(reason=f"{OUTSIDE} ({'; '.join(got[:3])})", **common)
    ratio, lo, hi = got
    _, said = learned.width_for(meta, transform, mount)
    still = learned.changes_nothing(meta, before, after)
    basis = ([f"the fix changes nothing this model describes of the job's replay plan: it buys nothing, as the "
              f"{meta['no_change']['fixes']} measured fixes that changed nothing"] if still else []) + said
    return Prediction(speedup=_round(ratio), interval=[_round(lo), _round(hi)], extrapolated=bool(said),
                      interval_basis="; ".join(basis), **common)


def max_ranks(model: Model) -> int:
    """The largest rank count in the model's training data."""
    span = (model.meta.get("ranges") or {}).get("log2_nprocs") or [0, 0]
    return max(1, int(round(2 ** span[1])))


def _round(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(f"{x:.4g}")


def predict_findings(model: Model, profile: JobProfile, diagnosis: Diagnosis, exp: JobExpectation) -> None:
    """Predictions for the findings' fixes and the model's summary (in place)."""
    _fix_predictions(model, profile, diagnosis, exp)
    diagnosis.summary["model"] = _summary(model, exp)


def _fix_predictions(model: Model, profile: JobProfile, diagnosis: Diagnosis, exp: JobExpectation) -> None:
    from advisor.fixes import fix_key, proposed_fixes

    fixes = {key: fix for key, (fix, _) in proposed_fixes(diagnosis.findings).items()}
    if not fixes:
        return
    try:
        predicted = predict_fixes(model, profile, list(fixes.values()), mount=exp.mount)
    except AdvisorError as exc:
        predicted = {k: Prediction(reason=f"no replay plan: {exc}") for k in fixes}
    label = store.describe(model.meta)
    for finding in diagnosis.findings:
        if not finding.fix:
            continue
        p = replace(predicted[fix_key(finding.fix)], warning=exp.mount_warning, model=label)
        if p.speedup and exp.measured_s:
            p.time_saved_s = _round(exp.measured_s * (1 - 1 / p.speedup))
            p.job_io_s, p.saving = _round(exp.measured_s), "predicted"
        finding.prediction = p


def against_measured(diagnosis: Diagnosis) -> None:
    """After a replay (in place): each prediction beside what was measured of its fix. The saving
    becomes the measured one, and a measured speedup outside the predicted interval is said."""
    from advisor.formatting import fmt_speedup, fmt_speedup_range

    for f in diagnosis.findings:
        p, v = f.prediction, f.verification
        if p is None or v is None or not v.measured:
            continue
        if p.job_io_s:
            p.time_saved_s, p.saving = _round(p.job_io_s * (1 - 1 / v.speedup)), "measured"
        if p.speedup and p.interval and not p.interval[0] <= v.speedup <= p.interval[1]:
            how = "underestimates" if v.speedup > p.interval[1] else "overestimates"
            p.versus_measured = (f"measured {fmt_speedup(v.speedup)}, outside the predicted "
                                 f"{fmt_speedup_range(p.interval)}: the model {how} this workload")
        elif p.speedup and p.interval:
            p.versus_measured = (f"measured {fmt_speedup(v.speedup)}, inside the predicted "
                                 f"{fmt_speedup_range(p.interval)}")


def _summary(model: Model, exp: JobExpectation) -> dict:
    doc = {"model": store.describe(model.meta), "path": model.meta.get("path"),
           "trained_on": model.meta.get("trained_on"), "warnings": list(model.meta.get("warnings") or [])}
    if exp.mount_warning:
        doc["warnings"].append(exp.mount_warning)
    if exp.reason:
        doc["expectation"] = exp.reason
    else:
        doc.update(measured_mib_s=_round(exp.measured_mib_s), expected_mib_s=_round(exp.expected_mib_s),
                   expected_interval_mib_s=[_round(exp.expected_low_mib_s), _round(exp.expected_high_mib_s)],
                   extrapolation=exp.extrapolation)
    return doc
