"""The speedup of a fix, learned from paired measurements of fixes (what verification measures).

Inputs of a fix on a workload (:func:`inputs`): what the workload's plan is, in shares and ratios
(:data:`advisor.models.pairs.DESCRIPTORS`), and what the fix changes of it (each descriptor after
the fix minus before: a coalescing to 4 MiB raises ``log2_call_pages`` by 10 on 4 KiB requests,
by 2 on 1 MiB ones). One absolute size, log-scaled: the volume a rank moves in a phase, which
the per-phase fixed costs are a share of. No fix name: a fix is judged by what it does to the
plan, so what is learned of one fix transfers to another that changes the plan alike. The target is
log10 of the speedup verification measured (:mod:`advisor.models.pairs`).

The interval is symmetric in log10: the prediction widened by the 80 % conformal quantile of
|measured - predicted| over fixes each predicted by a model that never saw their *family*
(:func:`family_scores`), the distribution a new workload is predicted from, taken apart by the
effect predicted (:data:`EFFECT_EDGES`, :func:`out_of_family_calibration`): a fix predicted near 1x
is predicted closer than one predicted to remove a dominant cost (a sync per write, tiny requests),
whose size the model knows less well.

A fix outside what the model measured gets no number (:func:`outside`): an input beyond the
training rows' range (with a margin), or a fix that changes nothing the descriptors see and was
never measured (a stripe layout on a model measured on a local disk).

Two conditions the out-of-family interval was not calibrated for get intervals calibrated on
their own distribution (:func:`width_for`), the widest that applies:

- a fix *transform* the model never measured (a site's model can lack one): the 80 % conformal
  quantile of leave-transform-out residuals, every transform weighing the same
  (:func:`transform_scores`: each transform predicted by a model that never saw it, only the fixes
  that model would predict); with fewer than :data:`MIN_TRANSFORMS` transforms measured, declined;
- *another mount* than the one the fixes were measured on: the 80 % conformal quantile of
  :func:`mount_residuals` (fixes measured on other file systems, each predicted by a model that saw
  neither that mount nor the fix's family, every mount weighing the same), by :data:`MOUNT_RULE`: one
  width per fix transform with enough such fixes (the rule that held leave-one-mount-out, GlusterFS
  and CephFS, docs/models.md); a model without such measurements declines there.

The held-out protocol (``bench/models.py --held-out``, docs/models.md section 6), fixed before
any held-out figure was seen: :func:`leave_out` with ``by="family"`` (every pattern family of
the campaign held out in turn) and ``by="transform"`` (every fix transform held out in turn).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from advisor.models import conformal
from advisor.models.pairs import DESCRIPTORS
from advisor.models.speedrows import (  # noqa: F401  the model's rows, inputs and regressor, used from here
    INPUTS, LOAD, QUIET, Rows, fit, inputs, load_of, predict, ranges, regressor)

SATURATING = {"b_log2_rank_phase_mib"}
"""Inputs never a reason to decline above what was measured: a phase moving more than the largest
volume measured pays its fixed costs over more bytes still, so a fix's speedup nears its limit
for that pattern, what the trees predict at the largest volume (a verification's plan moves at
most 256 MiB a pass). Below the smallest volume measured, fixed costs weigh more: declined."""
MARGIN = 0.1  # share of a feature's training span a value may lie beyond it
MIN_SLACK = {"fraction": 0.05, "log2": 0.5}  # ... and at least this much (shares, log2 values)
MARGIN_RULES = ("share-of-span", "fixed-factor", "none")
"""Candidate margins of "outside" for a log2 input (a scale: size, volume, calls per MiB, bytes per
fsync), judged on fresh workloads (bench/fresh14_protocol.md): ``share-of-span`` :data:`MARGIN` of
the measured span, at least :data:`MIN_SLACK` (1.6 for request sizes: a factor 3); ``fixed-factor``
:data:`MIN_SLACK` alone, a factor 1.41 whatever the span (what a measurement at the edge says of a
neighbour depends on how far it is in that scale, not on how many sizes the campaign spanned);
``none`` the measured range itself (the trees predict beyond it as at the edge). A share input's
margin is the same in every rule."""
MARGIN_RULE = "share-of-span"
"""The rule production uses, unless a model's metadata names another (``margin_rule``)."""
STILL = 1e-6  # a change smaller than this is no change
MIN_FAMILIES = 3  # fewer families say nothing about a new one
MIN_FIXES = 20  # fewer measured fixes make no speedup model
MIN_TRANSFORMS = 3  # fewer transforms measured say nothing about a new one
EFFECT_EDGES = (0.1, 0.3)
"""Bins of the out-of-family interval by the effect predicted, |log10 speedup|: near 1x (within
x/÷1.26, the replayer's run-to-run spread), up to x/÷2, beyond. One width for every fix would be
too wide near 1x and too narrow where a fix removes a dominant cost: the campaign's out-of-family
residuals are x1.35 near 1x and x2.05 beyond 2x (80 % quantiles, 382 and 134 fixes), and a
prediction far from 1x is where a workload unlike the campaign's misses most (a sync per 512 B
write: 28x predicted, 58-76x measured). Mondrian conformal: each bin's quantile holds 80 % of its
own fixes, so the whole does too."""
MIN_EFFECT_FIXES = 20  # fewer fixes in a bin: the widest of its own and the pooled quantile


def outside(measured: dict, x: dict[str, float], transform: str, rule: str = "") -> list[str]:
    """Why a fix lies outside what the model measured, in words ([] when inside); `rule`: the margin
    of a log2 input (:data:`MARGIN_RULES`, default :data:`MARGIN_RULE`)."""
    rule = rule or MARGIN_RULE
    if rule not in MARGIN_RULES:
        raise ValueError(f"{rule}: not one of {', '.join(MARGIN_RULES)}")
    out = []
    spans = measured.get("inputs") or {}
    for name in INPUTS:
        if name == LOAD:
            continue  # a condition of the node: predicted as at the nearest load measured
        value, span = x.get(name, math.nan), spans.get(name)
        if value is None or not math.isfinite(value) or span is None:
            continue
        if not span:
            out.append(f"{_said(name)} {value:.3g}, never measured")
            continue
        slack = _slack(name, span, rule)
        if value < span[0] - slack or (value > span[1] + slack and name not in SATURATING):
            out.append(f"{_said(name)} {value:.3g} vs measured {span[0]:.3g}..{span[1]:.3g}")
    if unchanged(x) and transform not in (measured.get("transforms") or []):
        out.append(f"the fix '{transform}' changes nothing this model describes and was never measured")
    return out


def _slack(name: str, span: list[float], rule: str) -> float:
    """How far beyond its measured `span` input `name` may lie and still be predicted, by `rule`."""
    if "log2" not in name:
        return max(MARGIN * (span[1] - span[0]), MIN_SLACK["fraction"])
    if rule == "none":
        return 0.0
    return MIN_SLACK["log2"] if rule == "fixed-factor" else max(MARGIN * (span[1] - span[0]), MIN_SLACK["log2"])


def unchanged(x: dict[str, float]) -> bool:
    """The fix changes nothing the inputs describe of the plan (every change NaN or under STILL)."""
    return all(abs(x.get(f"d_{d}", 0.0)) < STILL or not math.isfinite(x.get(f"d_{d}", 0.0)) for d in DESCRIPTORS)


def no_change_calibration(rows: Rows) -> dict | None:
    """What the measured fixes that changed nothing the inputs describe measured: the 80 % conformal
    quantile of |log10 measured| (what measuring a fix that does nothing measures), a floor of the
    interval of such a fix, predicted 1.00x; None with fewer than MIN_EFFECT_FIXES of them."""
    d = [INPUTS.index(f"d_{k}") for k in DESCRIPTORS]
    still = np.all(~(np.abs(rows.x[:, d]) >= STILL), axis=1)  # NaN: unknown, no change seen
    if still.sum() < MIN_EFFECT_FIXES:
        return None
    return {"widen_log10": conformal.quantile(np.abs(rows.y[still])), "fixes": int(still.sum())}


def _said(name: str) -> str:
    side, feature = name.split("_", 1)
    return f"{feature} {'change' if side == 'd' else ''}".strip()


def out_of_family_width(rows: Rows) -> float:
    """log10 half-width of the 80 % interval of a model of `rows` on a family it never saw (pooled)."""
    return calibrated_width(_finite(family_scores(rows)))


def out_of_family_calibration(rows: Rows) -> dict:
    """The out-of-family interval's calibration: the pooled log10 half-width (``widen_log10``) and
    one per bin of the effect predicted (``widen_by_effect``: :data:`EFFECT_EDGES`), from the same
    residuals, each fix binned by its own out-of-family prediction (what a new workload's is)."""
    pred = family_predictions(rows)
    ok = np.isfinite(pred)
    if not ok.any():
        return {"widen_log10": math.inf}
    scores, effect = np.abs(rows.y[ok] - pred[ok]), np.abs(pred[ok])
    counts = np.bincount(np.digitize(effect, EFFECT_EDGES), minlength=len(EFFECT_EDGES) + 1)
    return {"widen_log10": calibrated_width(scores),
            "widen_by_effect": {"edges": list(EFFECT_EDGES), "fixes": counts.tolist(),
                                "widen_log10": conformal.binned_quantile(scores, effect, EFFECT_EDGES,
                                                                         MIN_EFFECT_FIXES)}}


def effect_width(meta: dict, predicted: float | None) -> float:
    """log10 half-width of the out-of-family interval of a prediction of log10 speedup `predicted`
    (the pooled one for a model calibrated before the bins, or without a prediction)."""
    cal = meta.get("widen_by_effect")
    if not cal or predicted is None or not math.isfinite(predicted):
        return float(meta["widen_log10"])
    return float(cal["widen_log10"][int(np.digitize(abs(predicted), cal["edges"]))])


def calibrated_width(scores: np.ndarray) -> float:
    """log10 half-width of the 80 % interval from out-of-family |residuals|."""
    return conformal.quantile(np.abs(scores)) if len(scores) else math.inf


def family_scores(rows: Rows, by: str = "family") -> np.ndarray:
    """Residual (measured - predicted, log10) of every row, predicted by a model fitted without its
    `by` group (family or transform)."""
    return rows.y - family_predictions(rows, by)


def family_predictions(rows: Rows, by: str = "family") -> np.ndarray:
    """Predicted log10 speedup of every row by a model fitted without its `by` group (NaN: too few
    rows without it)."""
    groups = getattr(rows, by)
    out = np.full(len(rows), math.nan)
    for g in np.unique(groups):
        held = groups == g
        if (~held).sum() < 10:
            continue
        out[held] = predict(fit(rows.subset(~held)), rows.x[held])
    return out


@dataclass
class Judged:
    """One held-out fix: measured, predicted (None: outside what the model measured), interval."""

    family: str
    workload: str
    transform: str
    measured: float
    predicted: float | None
    interval: tuple[float, float] | None
    outside: list[str]

    @property
    def error(self) -> float | None:
        return abs(self.predicted / self.measured - 1) if self.predicted else None

    @property
    def inside(self) -> bool:
        """Measured inside the interval; a fix without a prediction counts as a miss."""
        return self.interval is not None and self.interval[0] <= self.measured <= self.interval[1]


def leave_out(rows: Rows, by: str = "family") -> list[Judged]:
    """The held-out protocol: every `by` group (``family`` or ``transform``) in turn is predicted by a
    model fitted on the others, its interval as production's (:func:`width_for`): calibrated on the
    others' out-of-family residuals, or for a transform the others never measured on their
    leave-transform-out residuals (each from a model that saw neither that group nor the held-out
    one)."""
    groups = getattr(rows, by)
    out = []
    for g in np.unique(groups):
        held = groups == g
        train = rows.subset(~held)
        if len(np.unique(getattr(train, by))) < 2:
            continue
        meta = {**out_of_family_calibration(train), "measured": ranges(train),
                "unseen_transform": unseen_transform(train), "no_change": no_change_calibration(train)}
        out += judge(rows, held, fit(train), meta["measured"], partial(width_for, meta),
                     still_is_one=bool(meta["no_change"]))
    return out


def judge(rows: Rows, held: np.ndarray, estimator, measured: dict,
          width: float | Callable[..., tuple[float, list[str]] | list[str]],
          shift: Callable[[str], float] | None = None, still_is_one: bool = False) -> list[Judged]:
    """The `held` rows predicted by `estimator` (a model that never saw them), each with its interval:
    `width` a log10 half-width, or a transform's :func:`width_for` answer; `shift`: a transform's log10
    move of the prediction (another mount's); `still_is_one`: a fix that changes nothing the inputs
    describe is predicted 1.00x (production's rule, :func:`predict_fix`); no prediction for a fix
    outside what the model measured, nor where no interval is honest."""
    out = []
    for i, p in zip(np.flatnonzero(held), predict(estimator, rows.x[held])):
        transform, x = str(rows.transform[i]), dict(zip(INPUTS, rows.x[i]))
        still = still_is_one and unchanged(x)
        p = 0.0 if still else p + (shift(transform) if shift else 0.0)
        why = outside(measured, x, transform)
        half = None
        if not why:
            answer = width(transform, predicted=p, still=still) if callable(width) else (width, [])
            why, half = (answer, None) if isinstance(answer, list) else ([], answer[0])
        out.append(Judged(str(rows.family[i]), str(rows.workload[i]), transform, float(10 ** rows.y[i]),
                          None if half is None else float(10 ** p),
                          None if half is None else (float(10 ** (p - half)), float(10 ** (p + half))), why))
    return out


def figures(judged: list[Judged]) -> dict:
    """Median |predicted / measured - 1| (over the fixes predicted), the share of all held-out
    fixes whose measured speedup lies in the predicted 80 % interval (no prediction: a miss)."""
    errors = [j.error for j in judged if j.error is not None]
    return {"fixes": len(judged), "predicted": len(errors),
            "median_error": float(np.median(errors)) if errors else math.nan,
            "inside": sum(j.inside for j in judged),
            "coverage": sum(j.inside for j in judged) / len(judged) if judged else math.nan}


def build(measured: list[dict], other_mount: list[dict] | None = None) -> tuple[object, dict] | None:
    """The speedup regressor of every measured fix and its metadata (None with too few to learn):
    what it measured (ranges, transforms), its interval calibrated out of family, for a transform
    it never measured (:func:`unseen_transform`) and, given fixes measured on another mount, for
    another mount (:func:`other_mount_calibration`)."""
    rows = Rows.of(measured)
    if len(rows) < MIN_FIXES or len(set(rows.family)) < MIN_FAMILIES:
        return None
    meta = {"fixes": len(rows), "workloads": len(set(rows.workload)), "families": sorted(set(rows.family)),
            "transforms": sorted(set(rows.transform)), "coverage": conformal.COVERAGE,
            **out_of_family_calibration(rows), "inputs": INPUTS, "measured": ranges(rows),
            "target": "log10 of the speedup verification measured (before / after, paired)",
            "predicted_for": f"a quiet node: {LOAD} {QUIET} (the replay's own ranks on every CPU)",
            "method": "gradient-boosted regressor of what the plan is and what the fix changes of it; "
                      "the interval the 80 % conformal quantile of out-of-family residuals, by the effect "
                      "predicted",
            "fstype": ", ".join(sorted({r.get("fstype", "") for r in measured} - {""})),
            "unseen_transform": unseen_transform(rows), "no_change": no_change_calibration(rows)}
    if other_mount:
        meta["other_mount"] = other_mount_calibration(rows, other_mount)
    return fit(rows), meta


def predict_fix(estimator, meta: dict, before: dict[str, float], after: dict[str, float],
                transform: str, mount: str = "") -> tuple[float, float, float] | list[str]:
    """(speedup, low, high) of one fix, or the reasons it lies outside what the model measured.
    `mount`: the file system predicted for when it is not the one the fixes were measured on."""
    x = inputs(before, after)
    why = outside(meta.get("measured") or {}, x, transform, meta.get("margin_rule", ""))
    if why:
        return why
    still = changes_nothing(meta, before, after)
    if still:  # nothing the fix does is in the plan's description: it buys nothing (as measured)
        log_ratio = 0.0
    else:
        (log_ratio,) = predict(estimator, np.array([[x[n] for n in meta.get("inputs", INPUTS)]], float))
        if mount and meta.get("other_mount"):
            log_ratio += mount_shift(meta["other_mount"], transform)
    width = width_for(meta, transform, mount, float(log_ratio), still)
    if isinstance(width, list):
        return width
    return float(10 ** log_ratio), float(10 ** (log_ratio - width[0])), float(10 ** (log_ratio + width[0]))


def changes_nothing(meta: dict, before: dict[str, float], after: dict[str, float]) -> bool:
    """The fix leaves every input describing the plan as it was, and the model calibrated what such
    fixes measure (:func:`no_change_calibration`): predicted 1.00x, not what the trees make of the
    plan alone (coalescing writes each followed by an fsync merges none of them)."""
    return bool(meta.get("no_change")) and unchanged(inputs(before, after))


def width_for(meta: dict, transform: str, mount: str = "", predicted: float | None = None,
              still: bool = False) -> tuple[float, list[str]] | list[str]:
    """(log10 half-width, what it was calibrated for, in words) of a prediction of `transform` for
    `mount` ("" : the model's own), of log10 speedup `predicted` (None: the pooled out-of-family
    width), `still`: of a fix that changes nothing the inputs describe (its own calibration), or
    the reasons there is no honest interval: the widest of the calibrations that apply (out of
    family, by the effect predicted; a transform never measured; another mount)."""
    width, said = effect_width(meta, predicted), []
    if still and meta.get("no_change"):  # never narrower than the out-of-family interval near 1x
        width = max(width, float(meta["no_change"]["widen_log10"]))
    for half, missing, told in _conditions(meta, transform, mount):
        if half is None:
            return [missing]
        width = max(width, half)
        said.append(told)
    return width, said


def _conditions(meta: dict, transform: str, mount: str) -> list[tuple[float | None, str, str]]:
    """(log10 half-width or None, why none, what it is) of each condition the out-of-family interval
    was not calibrated for that applies to this prediction."""
    out = []
    known = meta.get("transforms") or meta.get("measured", {}).get("transforms") or transform.split("+")
    if not set(transform.split("+")) <= set(known):  # a combination of measured transforms is measured
        unseen = meta.get("unseen_transform")
        half = None if not unseen else float(unseen["widen_log10"])
        out.append((half,
                    f"the fix '{transform}' was never measured, and too few transforms were to calibrate an "
                    f"interval for one never measured",
                    f"the fix '{transform}' was never measured by this model: its interval is that of fixes "
                    f"predicted without their own transform ({_times(half)}, "
                    f"{len((unseen or {}).get('transforms', []))} transforms)"))
    if mount:
        learned, other = meta.get("fstype") or "one file system", meta.get("other_mount")
        half = None if not other else mount_width(other, transform)
        mounts = (other or {}).get("mounts", 1)
        drawn = "one other file system" if mounts == 1 else f"{mounts} other file systems"
        out.append((half,
                    f"this model measured its fixes on {learned} only: no fix measured on another file system "
                    f"calibrates an interval for {mount}",
                    f"predicted for {mount} from fixes measured on {learned}: its interval is that of "
                    f"{(other or {}).get('fixes')} fixes measured on {(other or {}).get('fstype')}, {drawn}, "
                    f"not {mount} itself ({_times(half)})"))
    return out


def _times(half: float | None) -> str:
    return f"x/{chr(247)}{10 ** half:.2f}" if half is not None else ""


def _finite(a: np.ndarray) -> np.ndarray:
    return a[np.isfinite(a)]


def transform_scores(rows: Rows) -> dict[str, np.ndarray]:
    """Transform -> |log10 measured - predicted| of its fixes, each predicted by a model fitted
    without that transform, over the fixes that model would predict (not outside what it measured:
    a declined fix gets no interval, so it calibrates none)."""
    out = {}
    for t in np.unique(rows.transform):
        held = rows.transform == t
        train = rows.subset(~held)
        if len(train) < 10:
            continue
        measured = ranges(train)
        inside = np.array([not outside(measured, dict(zip(INPUTS, rows.x[i])), str(t)) for i in np.flatnonzero(held)])
        if inside.any():
            idx = np.flatnonzero(held)[inside]
            out[str(t)] = np.abs(rows.y[idx] - predict(fit(train), rows.x[idx]))
    return out


def unseen_transform(rows: Rows) -> dict | None:
    """The interval's calibration for a transform the model never measured: the 80 % conformal
    quantile of :func:`transform_scores`, every transform weighing the same (a new transform is one
    draw of transforms, not of fixes: pooled, the transforms with most fixes would decide), at
    conformal's finite-sample level of the fewest; None with fewer than MIN_TRANSFORMS transforms."""
    scores = transform_scores(rows)
    if len(scores) < MIN_TRANSFORMS:
        return None
    return {"widen_log10": conformal.group_quantile(scores), "transforms": sorted(scores),
            "fixes": int(sum(len(v) for v in scores.values())),
            "method": "80 % conformal quantile of leave-transform-out |residuals|, each transform weighing the same"}


def mount_residuals(home: Rows, other: Rows, families=None, without: str | None = None) -> np.ndarray:
    """log10 measured on another mount - predicted, for each of `other`'s fixes (of `families`, default
    all; NaN for the others), each predicted by a model of `home` (one mount's fixes) that saw neither
    its family nor `without`: a new workload's error on a new mount."""
    out = np.full(len(other), math.nan)
    for family in sorted(set(other.family) if families is None else families):
        mine = other.family == family
        keep = (home.family != family) & (home.family != (without or ""))
        if mine.any() and keep.sum() >= MIN_FIXES:
            out[mine] = other.y[mine] - predict(fit(home.subset(keep)), other.x[mine])
    return out


def mount_scores(home: Rows, other: Rows, families=None, without: str | None = None) -> np.ndarray:
    """|:func:`mount_residuals`| of the fixes predicted."""
    return np.abs(_finite(mount_residuals(home, other, families, without)))


MOUNT_RULES = ("pooled", "by-transform", "by-transform-floor", "shifted")
"""Candidate rules of the interval on a mount the fixes were not measured on, from the residuals of
fixes measured on other mounts (:func:`mount_calibration`), every mount weighing the same:
``pooled`` one width for every fix; ``by-transform`` a width per transform with at least
:data:`MIN_MOUNT_FIXES` fixes measured on other mounts (the pooled one otherwise); ``by-transform-floor``
the same, never narrower than the pooled one; ``shifted`` the prediction moved by the other mounts'
median residual of its transform (at least :data:`MIN_MOUNT_FIXES`), the pooled width of the
residuals so moved. Judged leave-one-mount-out (:mod:`advisor.models.crossmount`)."""
MOUNT_RULE = "by-transform"
"""The rule production uses (:func:`other_mount_calibration`)."""
MIN_MOUNT_FIXES = 10  # fewer fixes of a transform on other mounts calibrate no width or shift of its own


def mount_calibration(residuals: dict[str, tuple[np.ndarray, np.ndarray]], rule: str = MOUNT_RULE) -> dict | None:
    """The interval's calibration for a mount never measured, from mount -> (signed residuals, their
    transforms) of fixes measured on other mounts (:func:`mount_residuals`; NaN: not predicted), by
    `rule` (:data:`MOUNT_RULES`); None without any residual."""
    if rule not in MOUNT_RULES:
        raise ValueError(f"{rule}: not one of {', '.join(MOUNT_RULES)}")
    found = {m: (r[np.isfinite(r)], t[np.isfinite(r)]) for m, (r, t) in residuals.items() if np.isfinite(r).any()}
    if not found:
        return None
    transforms = sorted({str(t) for _, ts in found.values() for t in ts})
    shift = {}
    if rule == "shifted":
        for t in transforms:
            medians = [float(np.median(r[ts == t])) for r, ts in found.values() if (ts == t).any()]
            if sum(int((ts == t).sum()) for _, ts in found.values()) >= MIN_MOUNT_FIXES:
                shift[t] = float(np.mean(medians))
        found = {m: (r - np.array([shift.get(str(t), 0.0) for t in ts]), ts) for m, (r, ts) in found.items()}
    out = {"widen_log10": conformal.group_quantile({m: np.abs(r) for m, (r, _) in found.items()}),
           "fixes": int(sum(len(r) for r, _ in found.values())), "rule": rule}
    if rule.startswith("by-transform"):
        out["by_transform"] = {}
        for t in transforms:
            scores = {m: np.abs(r[ts == t]) for m, (r, ts) in found.items() if (ts == t).any()}
            if sum(len(v) for v in scores.values()) >= MIN_MOUNT_FIXES:
                width = conformal.group_quantile(scores)
                out["by_transform"][t] = max(width, out["widen_log10"]) if rule.endswith("floor") else width
    if shift:
        out["shift"] = shift
    return out


def mount_width(calibration: dict, transform: str) -> float:
    """log10 half-width of a prediction of `transform` on a mount never measured."""
    return float((calibration.get("by_transform") or {}).get(transform, calibration["widen_log10"]))


def mount_shift(calibration: dict, transform: str) -> float:
    """log10 by which a prediction of `transform` on a mount never measured is moved (0: not moved)."""
    return float((calibration.get("shift") or {}).get(transform, 0.0))


def other_mount_calibration(home: Rows, measured: list[dict], rule: str = MOUNT_RULE) -> dict | None:
    """The interval's calibration for another mount, from fixes measured on other mounts (`measured`,
    their file system in ``fstype``): each predicted by a model that saw neither that mount nor the
    fix's family, every mount weighing the same."""
    mounts = sorted({r.get("fstype", "") for r in measured})
    residuals = {}
    for m in mounts:
        other = Rows.of([r for r in measured if r.get("fstype", "") == m])
        residuals[m] = (mount_residuals(home, other), other.transform)
    out = mount_calibration(residuals, rule)
    if out is None:
        return None
    return dict(out, fstype=", ".join(m for m in mounts if m), mounts=len(mounts),
                method="80 % conformal quantile of |residuals| of fixes measured on other mounts, each predicted by "
                       "a model that saw neither that mount nor the fix's family, every mount weighing the same")
