"""Slow storage targets among their peers: the one statistic of the slow-OST rule and the probe.

Each target (an OST, a CephFS OSD) has several timed rates (files of a job on it, or probe
rounds pinned to it). Its median rate is compared with the typical target's, the median of
the targets' medians; a target whose median is below it by the factor is slow. Medians
of medians, because one slow target must not drag the yardstick down with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from advisor import arrays

FACTOR_PARAM = "slow_ost_factor"  # the site config's [thresholds] key of the factor
FACTOR = 4.0
MIN_TARGETS = 4  # fewer targets give no typical rate to speak of
MIN_SAMPLES = 2  # timed rates per target


class TooFewTargets(ValueError):
    """Not enough targets with enough rates to compare."""


@dataclass
class Outliers:
    """The slow targets and the medians they were judged by."""
    slow: list[int]  # slowest first
    medians: dict[int, float]  # per target with enough rates
    typical: float  # the median of the medians


def slow_targets(rates: Mapping[int, Sequence[float]], factor: float = FACTOR) -> Outliers:
    """The targets whose median rate times `factor` is below the typical target's."""
    usable = {t: r for t, r in rates.items() if len(r) >= MIN_SAMPLES}
    if len(usable) < MIN_TARGETS:
        raise TooFewTargets(f"fewer than {MIN_TARGETS} targets with {MIN_SAMPLES} or more timed rates each "
                            f"({len(usable)} of {len(rates)})")
    medians = {t: float(arrays.median(r)) for t, r in usable.items()}
    typical = float(arrays.median(list(medians.values())))
    slow = sorted((t for t, m in medians.items() if m * factor < typical), key=medians.get)
    return Outliers(slow=slow, medians=medians, typical=typical)
