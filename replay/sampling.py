"""How long a sample lasts and how many rounds a measurement takes (rank 0's bookkeeping).

- **Auto-ranging** (as ``timeit`` and ``pyperf`` do): the timed part of a sample must last
  at least ``min_sample_s``; a plan whose pass is shorter runs several passes in one sample
  (fresh files each pass, the page cache kept out before each, the files removed after
  each, all untimed), and the sample's time per pass is their mean. The pass count comes
  from a warm-up pass of each variant.
- **Rounds**: one sample of every active variant per round. Rounds come in mirrored pairs: a
  shuffled order, then the same order reversed (A B C, C B A): a sample is the finest grain
  that stays valid (its passes add up to ``min_sample_s``), and over each pair of rounds
  every variant's mean position is the same, so a load that rises or falls steadily slows
  the baseline and a fix alike and cancels from their ratio (ABBA counterbalancing); the
  shuffle keeps a variant from always following another. In a comparison (``adaptive``) variant 0 is the
  baseline; a fix stops being measured when the sequential test of :mod:`replay.stats`
  decides with a precise enough interval, or once a decision is out of reach (futility: it
  would need more than twice ``max_pairs``, judged from the third look on); the measurement
  stops when every fix has stopped or the budget (seconds, bytes written) would be exceeded
  by one more round. Otherwise exactly ``repeat`` rounds.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from replay import stats

MAX_PASSES = 1000  # a pass shorter than min_sample_s / MAX_PASSES is measured in a short sample
STOP_DECIDED, STOP_MAX_PAIRS, STOP_TIME, STOP_BYTES, STOP_REPEAT, STOP_FUTILE = (
    "decided", "max-pairs", "time budget", "bytes budget", "rounds done", "out of reach")
FUTILE_FROM_LOOK = 2  # the third look: by then the spread behind the projection is not a guess
FUTILE_FACTOR = 2  # a fix whose decision needs more than twice max_pairs will not decide here


def passes_for(warmup_s: float, min_sample_s: float) -> int:
    """Passes per sample: enough for the timed passes to add up to `min_sample_s`."""
    if min_sample_s <= 0 or warmup_s >= min_sample_s:
        return 1
    return int(min(MAX_PASSES, math.ceil(min_sample_s / max(warmup_s, min_sample_s / MAX_PASSES))))


@dataclass
class Budget:
    seconds: float = math.inf
    bytes: float = math.inf


PROGRESS = "ioadvisor-replay-progress: "
"""Prefix of the executor's progress lines on stderr (one per round); replay.launch passes them on."""


@dataclass
class Schedule:
    """Which variants the next round samples, until the measurement is done."""

    nvariants: int
    policy: stats.Policy
    adaptive: bool
    repeat: int = 1
    budget: Budget = field(default_factory=Budget)
    seed: int = 0
    times: list[list[float]] = field(init=False)  # per variant: time per pass of each sample
    stopped_at: list[int | None] = field(init=False)  # a fix's pairs when its test stopped
    stopped_why: list[str] = field(init=False)  # decided, or futile
    stop_reason: str = ""
    rounds: int = 0
    spent_bytes: int = 0
    _started: float = field(init=False)
    _round_wall: list[float] = field(init=False)
    _round_bytes: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.times = [[] for _ in range(self.nvariants)]
        self.stopped_at = [None] * self.nvariants
        self.stopped_why = [""] * self.nvariants
        self._rng = np.random.default_rng(self.seed)
        self._started = time.monotonic()
        self._round_wall, self._round_bytes = [], []
        self._last_order: list[int] = []

    def add(self, variant: int, time_per_pass: float) -> None:
        self.times[variant].append(time_per_pass)

    def end_round(self, wall_s: float, written: int) -> None:
        self.rounds += 1
        self.spent_bytes += written
        self._round_wall.append(wall_s)
        self._round_bytes.append(written)
        if self.adaptive:
            for v in self.active()[1:]:
                test = stats.sequential(self.log_ratios(v), self.policy)
                why = STOP_DECIDED if test.settled else STOP_FUTILE if self._futile(test) else ""
                if why:
                    self.stopped_at[v], self.stopped_why[v] = len(self.times[v]), why

    def progress(self) -> str:
        """One line after a round, for the caller's progress display: 'round 3 of at most 40, 2
        fixes still undecided, 12 s'."""
        most = self.repeat if not self.adaptive else self.policy.max_pairs
        open_ = len(self.active()[1:])
        undecided = f", {open_} fix{'es' if open_ != 1 else ''} still undecided" if self.adaptive and open_ else ""
        return f"round {self.rounds} of at most {most}{undecided}, {time.monotonic() - self._started:.0f} s"

    def _futile(self, test: stats.Decision) -> bool:
        """An undecided fix whose projected pairs to a decision lie far beyond max_pairs: its
        rounds would only slow the others' (stopping it leaves every interval valid)."""
        looks = self.policy.looks()
        if test.decided or test.pairs < looks[min(FUTILE_FROM_LOOK, len(looks) - 1)]:
            return False
        return test.more_pairs is None or test.more_pairs > FUTILE_FACTOR * self.policy.max_pairs

    def log_ratios(self, variant: int) -> np.ndarray:
        return stats.log_ratios(self.times[0], self.times[variant])

    def active(self) -> list[int]:
        return [v for v in range(self.nvariants) if self.stopped_at[v] is None]

    def next_round(self) -> list[int]:
        """The variants of the next round in the order to run them; [] when done."""
        reason = self._why_stop()
        if reason:
            self.stop_reason = reason
            return []
        active = self.active()
        if self.rounds % 2 and self._last_order:  # the mirror of the round before
            order = [v for v in reversed(self._last_order) if v in active]
        else:
            order = [active[i] for i in self._rng.permutation(len(active))]
        self._last_order = order
        return order

    def _why_stop(self) -> str:
        if not self.adaptive:
            return STOP_REPEAT if self.rounds >= self.repeat else ""
        fixes = self.active()[1:]
        if self.nvariants > 1 and not fixes:
            return STOP_DECIDED
        if self.rounds >= (self.policy.max_pairs if fixes else self.policy.min_pairs):
            return STOP_MAX_PAIRS if fixes else STOP_REPEAT
        if self.rounds < 2:  # at least two rounds whatever the budget: a spread needs two samples
            return ""
        # the next round costs about what the last rounds cost (fixes drop out: never more)
        wall, written = max(self._round_wall[-2:]), max(self._round_bytes[-2:])
        if time.monotonic() - self._started + wall > self.budget.seconds:
            return STOP_TIME
        if self.spent_bytes + written > self.budget.bytes:
            return STOP_BYTES
        return ""
