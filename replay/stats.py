"""Before/after statistics: medians, a bootstrap interval of the speedup, a verdict."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOTSTRAP_SAMPLES = 4000
MIN_RUNS = 3  # fewer runs per variant cannot support an interval

IMPROVED, NO_CHANGE, REGRESSED, NOT_VERIFIABLE = "improved", "no-change", "regressed", "not-verifiable"


@dataclass
class Comparison:
    """Baseline vs fixed run times (seconds) summarised."""

    baseline_median_s: float
    fixed_median_s: float
    speedup: float  # baseline median / fixed median: > 1 means the fix is faster
    ci95: tuple[float, float]
    verdict: str
    reason: str = ""


def median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def bootstrap_speedup_ci(baseline, fixed, *, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0,
                         level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of median(baseline) / median(fixed).

    The two variants are resampled independently (their runs are interleaved, not paired
    by design), with a fixed seed so that a result is reproducible from its run times.
    """
    b = np.asarray(baseline, dtype=float)
    f = np.asarray(fixed, dtype=float)
    rng = np.random.default_rng(seed)
    mb = np.median(b[rng.integers(0, b.size, (samples, b.size))], axis=1)
    mf = np.median(f[rng.integers(0, f.size, (samples, f.size))], axis=1)
    ratio = mb / np.maximum(mf, 1e-12)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(ratio, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def compare(baseline, fixed) -> Comparison:
    """Speedup of `fixed` over `baseline` with its 95 % interval and a verdict."""
    b, f = list(baseline), list(fixed)
    if min(len(b), len(f)) < MIN_RUNS:
        mb = median(b) if b else float("nan")
        mf = median(f) if f else float("nan")
        return Comparison(mb, mf, mb / mf if b and f and mf > 0 else float("nan"),
                          (float("nan"), float("nan")), NOT_VERIFIABLE,
                          f"only {min(len(b), len(f))} runs per variant; at least {MIN_RUNS} needed")
    mb, mf = median(b), median(f)
    lo, hi = bootstrap_speedup_ci(b, f)
    if lo > 1.0:
        verdict = IMPROVED
    elif hi < 1.0:
        verdict = REGRESSED
    else:
        verdict = NO_CHANGE
    return Comparison(mb, mf, mb / mf if mf > 0 else float("inf"), (lo, hi), verdict)
