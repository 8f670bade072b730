"""A calibrated interval for predicted speedups: conformalized quantile regression on pairs.

A fix's predicted speedup is the ratio of two predicted times, and its band combines the
quantile regressors' bands of both sides (:func:`advisor.models.predict.speedup`). Nothing
makes that band cover 80 % of measured speedups: the two sides' errors are not independent,
and the quantile fits are themselves estimates. So the band is calibrated as conformalized
quantile regression does (Romano, Patterson and Candes, 2019), on speedups the calibration
itself measured:

- every calibration pattern is predicted by the three regressors of a model that never saw
  it (out of fold), and its time, predicted, fast and slow, is the sum over its phases;
- pairs of patterns that differ in exactly one factor a fix changes (transfer size, interface,
  fsync frequency, order, alignment, aggregators, layout, striping) are "fixes" whose speedup
  was measured: each gives the score ``max(low - y, y - high)`` in log10, ``y`` the measured
  speedup and ``[low, high]`` the predicted band;
- the band of every prediction is widened (or narrowed, when the score is negative) by the
  score's 80 % quantile, every factor weighing the same however many pairs it has.

A model trained without calibration data (IOR outputs, Darshan logs) has no such pairs and
keeps the uncalibrated band, and says so.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np

from advisor.models.design import KEY_GROUP, Point

COVERAGE = 0.8
FIX_FACTORS = ("transfer", "api", "fsync", "order", "aligned", "aggregators", "layout", "stripe_count")
"""Factors a fix changes (coalesce, collective, fsync, sequential, align, aggregate, layout, stripe)."""
MIN_PAIRS = 20  # fewer pairs of a factor say too little about its speedups


def band_half_width(fast_s: float, slow_s: float) -> float:
    """log10 half-width of one prediction's band (its quantile regressors)."""
    return math.log10(slow_s / fast_s) / 2 if fast_s > 0 and slow_s > 0 else 0.0


def pattern_times(groups: np.ndarray, nbytes: np.ndarray, y: np.ndarray, bands: tuple) -> dict[str, np.ndarray]:
    """Calibration pattern key -> seconds (measured, predicted, fast, slow): sums over its phases
    of bytes / bandwidth, the predictions out of fold."""
    mid, lo, hi = bands
    sums: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(4))
    for g, b, obs, m, low, high in zip(groups, nbytes, y, mid, lo, hi):
        if not str(g).startswith(KEY_GROUP) or not b > 0:
            continue
        sums[str(g)[len(KEY_GROUP):]] += b / np.power(10.0, [obs, m, high, low])
    return dict(sums)


def pair_scores(times: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Factor -> conformity scores (log10) of every pair of patterns differing in that factor only."""
    points = {}
    for key in times:
        try:
            points[key] = Point.from_key(key)
        except ValueError:
            continue
    out = {}
    for factor in FIX_FACTORS:
        alike: dict[tuple, list[str]] = defaultdict(list)
        for key, p in points.items():
            alike[tuple(v for k, v in vars(p).items() if k != factor)].append(key)
        scores = [_score(times[a], times[b]) for keys in alike.values()
                  for a, b in itertools.combinations(keys, 2)]
        if len(scores) >= MIN_PAIRS:
            out[factor] = np.asarray(scores)
    return out


def _score(a: np.ndarray, b: np.ndarray) -> float:
    """Score of the speedup from pattern a to pattern b, both (measured, predicted, fast, slow) s."""
    return score(math.log10(a[0] / b[0]), a[1:], b[1:])


def speedup_band(before, after) -> tuple[float, float]:
    """(log10 speedup, log10 half-width) predicted for before -> after, each (seconds, fast, slow):
    the ratio of the medians, the two bands' half-widths combined in quadrature."""
    return (math.log10(before[0] / after[0]),
            math.hypot(band_half_width(before[1], before[2]), band_half_width(after[1], after[2])))


def score(y_log10: float, before: np.ndarray, after: np.ndarray) -> float:
    """max(low - y, y - high) in log10 of a measured speedup `y_log10` against the predicted band of
    before -> after, each (seconds, fast, slow) (positive: outside the band)."""
    ratio, half = speedup_band(before, after)
    return max(ratio - half - y_log10, y_log10 - ratio - half)


def quantile(scores: np.ndarray, coverage: float = COVERAGE) -> float:
    """The conformal quantile of `scores`: the ceil((n + 1) coverage)-th smallest (the largest
    when there are too few for the coverage asked)."""
    s = np.sort(np.asarray(scores, float))
    k = min(math.ceil((len(s) + 1) * coverage), len(s))
    return float(s[k - 1])


def binned_quantile(scores: np.ndarray, keys: np.ndarray, edges: tuple[float, ...], fewest: int) -> list[float]:
    """Mondrian conformal quantiles: :func:`quantile` of the `scores` whose `keys` fall in each bin cut at
    `edges` (len(edges) + 1 bins, each [edge, next edge)); a bin with fewer than `fewest` scores
    says too little alone and takes the widest of its own and the pooled quantile."""
    scores, keys = np.asarray(scores, float), np.asarray(keys, float)
    pooled = quantile(scores)
    where = np.digitize(keys, edges)
    out = []
    for b in range(len(edges) + 1):
        mine = scores[where == b]
        out.append(quantile(mine) if len(mine) >= fewest else max(pooled, quantile(mine) if len(mine) else pooled))
    return out


def weighted_quantile(scores: dict[str, np.ndarray], level: float, slack: float = 0.0) -> float:
    """The `level` quantile of all scores, each factor's scores weighing 1 in all (`slack`: how far
    below `level` a cumulative weight still counts as reaching it)."""
    values = np.concatenate(list(scores.values()))
    weights = np.concatenate([np.full(len(s), 1.0 / len(s)) for s in scores.values()])
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order]) / weights.sum()
    return float(values[order][min(np.searchsorted(cum, level - slack), len(values) - 1)])


def group_quantile(scores: dict[str, np.ndarray]) -> float:
    """The 80 % quantile of all scores, every group weighing the same (a new case is one draw of
    groups, not of scores), at conformal's finite-sample level of the group with fewest scores."""
    fewest = min(len(s) for s in scores.values())
    # a cumulative sum of 1/n falls an ulp short of k/n: without the slack the (k+1)-th smallest of
    # one group, not :func:`quantile`'s k-th (the calibration of the bandwidth model keeps none: it
    # was shipped so)
    return weighted_quantile(scores, min(1.0, math.ceil((fewest + 1) * COVERAGE) / fewest), 1e-9)


def calibrate(groups: np.ndarray, nbytes: np.ndarray, y: np.ndarray, bands: tuple) -> dict | None:
    """The interval's calibration for a model's metadata, or None without calibration pairs."""
    scores = pair_scores(pattern_times(groups, nbytes, y, bands))
    if not scores:
        return None
    n = sum(len(s) for s in scores.values())
    fewest = min(len(s) for s in scores.values())
    level = min(1.0, math.ceil((fewest + 1) * COVERAGE) / fewest)  # conformal's finite-sample level
    q = weighted_quantile(scores, level)
    return {"coverage": COVERAGE, "widen_log10": q, "pairs": n,
            "by_factor": {f: {"pairs": len(s), "q_log10": float(np.quantile(s, COVERAGE))}
                          for f, s in scores.items()},
            "method": "conformalized quantile regression: out-of-fold bands of calibration patterns "
                      "differing in one factor a fix changes, every factor weighted alike"}


def interval_summary(meta: dict) -> str:
    """What a model's speedup interval is calibrated on, in words."""
    cal = meta.get("speedup_interval") or {}
    if "widen_log10" not in cal or not cal.get("coverage"):
        return "the quantile regressors' band, uncalibrated (no calibration patterns or replayed fixes)"
    on = (f"{cal['fixes']} replayed fixes of {cal['workloads']} workloads, each predicted out of fold"
          if "fixes" in cal else f"{cal['pairs']} one-factor pairs of calibration patterns, out of fold")
    factor = 10 ** cal["widen_log10"]
    how = f"widened x{factor:.2f}" if factor >= 1 else f"narrowed /{1 / factor:.2f}"
    return f"{cal['coverage']:.0%} of {on} fall inside the band {how}"
