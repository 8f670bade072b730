"""What a learned model expects of a job's own pattern, next to what the job measured.

A typed input of the fact context (:attr:`advisor.facts.FactContext.expectation`): the
model stage (:mod:`advisor.models.expect`) computes it before the engine runs, and the
anomaly facts (:mod:`advisor.facts.model`) read it. It lives here, beside the job
profile, so the facts need nothing from the model code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.units import MiB


@dataclass
class JobExpectation:
    """Measured vs expected for one job; `reason` says why there is no comparison."""

    model: str = ""
    measured_s: float = 0.0  # I/O seconds of the slowest rank, all parts
    expected_s: float = math.nan
    expected_fast_s: float = math.nan
    expected_slow_s: float = math.nan
    bytes: float = 0.0
    extrapolation: list[str] = field(default_factory=list)
    mount_warning: str = ""
    mount: str = ""  # the job's file system(s) when not the model's
    reason: str = ""

    @property
    def measured_mib_s(self) -> float:
        return _mib_s(self.bytes, self.measured_s)

    @property
    def expected_mib_s(self) -> float:
        return _mib_s(self.bytes, self.expected_s)

    @property
    def expected_low_mib_s(self) -> float:
        return _mib_s(self.bytes, self.expected_slow_s)

    @property
    def expected_high_mib_s(self) -> float:
        return _mib_s(self.bytes, self.expected_fast_s)

    @property
    def shortfall(self) -> float:
        """How many times slower than expected the job was (> 1: slower)."""
        return self.measured_s / self.expected_s if self.expected_s > 0 else math.nan


def _mib_s(nbytes: float, seconds: float) -> float:
    """Bandwidth in MiB/s; NaN when there is no time to divide by."""
    return nbytes / seconds / MiB if seconds > 0 else math.nan
