"""The speedup interval's calibration (advisor.models.conformal) on simulated calibrations whose
true band is known, and its use in a prediction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.models import conformal
from advisor.models.design import KEY_GROUP, TRANSFERS, Point
from advisor.models.predict import Timing, speedup

Z90 = 1.2815516  # standard normal 90 % quantile: a band of +-Z90 sigma holds 80 %


def _calibration(sigma: float, band: float, seed: int = 0):
    """Two-phase patterns over transfers and fsync modes: measured log10 bandwidth = predicted +
    N(0, sigma) per phase, the regressors' band +-`band` around the prediction."""
    rng = np.random.default_rng(seed)
    groups, nbytes, y, mid = [], [], [], []
    for transfer in TRANSFERS:
        for fsync in ("none", "at-close", "every-4", "per-write"):
            for volume in ("tiny", "small", "large"):
                key = Point("write-read", transfer, "fpp", 2, "posix", fsync, "sequential", True, volume).key
                truth = math.log10(transfer) / 3 + 0.2 * ("none", "at-close", "every-4", "per-write").index(fsync)
                for _ in (0, 1):  # a write phase and a read phase
                    groups.append(KEY_GROUP + key)
                    nbytes.append(4 << 20)
                    mid.append(truth)
                    y.append(truth + rng.normal(0, sigma))
    mid = np.asarray(mid)
    return np.asarray(groups), np.asarray(nbytes, float), np.asarray(y), (mid, mid - band, mid + band)


def test_a_band_that_already_holds_80_percent_is_left_as_it_is():
    sigma = 0.1
    # a pattern's time sums two phases: its own log-noise is about sigma / sqrt(2)
    cal = conformal.calibrate(*_calibration(sigma, Z90 * sigma / math.sqrt(2)))
    assert cal["coverage"] == 0.8 and set(cal["by_factor"]) == {"transfer", "fsync"}
    assert abs(cal["widen_log10"]) < 0.02
    assert cal["pairs"] == sum(f["pairs"] for f in cal["by_factor"].values())


def test_a_band_too_narrow_is_widened_to_hold_80_percent_and_one_too_wide_narrowed():
    sigma = 0.1
    narrow = conformal.calibrate(*_calibration(sigma, 0.0))
    pair_sigma = sigma  # difference of two patterns, each sigma / sqrt(2)
    assert narrow["widen_log10"] == pytest.approx(Z90 * pair_sigma, rel=0.15)
    wide = conformal.calibrate(*_calibration(sigma, 0.5))
    assert wide["widen_log10"] < -0.3


def test_pairs_are_the_patterns_a_fix_changes_in_one_factor_only():
    groups = np.asarray([KEY_GROUP + Point("write-read", t, "fpp", 2, "posix", f, "sequential", True, "small").key
                         for t, f in ((4096, "none"), (8192, "none"), (4096, "per-write"), (8192, "per-write"))])
    times = conformal.pattern_times(groups, np.full(4, 1 << 20), np.zeros(4), (np.zeros(4),) * 3)
    assert len(times) == 4 and all(t[0] == pytest.approx(1 << 20) for t in times.values())
    old = conformal.MIN_PAIRS
    conformal.MIN_PAIRS = 1
    try:
        scores = conformal.pair_scores(times)
    finally:
        conformal.MIN_PAIRS = old
    assert {f: len(s) for f, s in scores.items()} == {"transfer": 2, "fsync": 2}  # never both at once
    # rows of IOR outputs or Darshan logs make no pattern: no calibration, the band stays as it is
    assert conformal.calibrate(np.asarray(["darshan:x"] * 3), np.full(3, 1e6), np.zeros(3),
                               (np.zeros(3),) * 3) is None


def test_a_prediction_carries_the_calibrated_widening():
    before, after = Timing(2.0, 1.0, 4.0, 1e9), Timing(1.0, 0.5, 2.0, 1e9)
    ratio, lo, hi = speedup(before, after)
    assert ratio == 2.0 and lo == pytest.approx(2 / 10 ** math.hypot(math.log10(4) / 2, math.log10(4) / 2))
    _, lo2, hi2 = speedup(before, after, 0.1)
    assert lo2 == pytest.approx(lo / 10 ** 0.1) and hi2 == pytest.approx(hi * 10 ** 0.1)
    _, lo3, hi3 = speedup(before, after, -10.0)
    assert lo3 == hi3 == ratio  # narrowed at most to the point


def test_mondrian_bins_hold_80_percent_each_and_a_sparse_bin_is_never_narrower_than_pooled():
    from advisor.models.conformal import binned_quantile, quantile

    rng = np.random.default_rng(0)
    keys = np.concatenate([np.full(400, 0.02), np.full(200, 0.5), [0.2, 0.25]])
    scores = np.concatenate([rng.uniform(0, 0.1, 400), rng.uniform(0, 0.4, 200), [0.01, 0.02]])
    near, middle, far = binned_quantile(scores, keys, (0.1, 0.3), fewest=20)
    assert near < quantile(scores) < far
    for width, key in ((near, 0.02), (far, 0.5)):
        assert (scores[keys == key] <= width).mean() >= 0.8
    assert middle == quantile(scores)  # two fixes say too little: the pooled width, not their 0.02
