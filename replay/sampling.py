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
- **A race** (``race``: a tune's rung, :class:`RaceRule`): ``repeat`` rounds, with the race's own
  decisions taken between rounds from the second on, so that no sample goes to a question already
  answered. A candidate stops being sampled once the rung's leader (the highest mean ratio to
  variant 0, the reference) beats it with confidence (the race's paired test on ln(time_v /
  time_leader), at its level), or once it is outside the candidates the rung's halving keeps and
  the leader was more than ``alike`` times faster in every round (halving would set it aside
  after the rung: its last samples would change nothing). After the ``repeat`` rounds, a leader
  whose pairs beside the reference leave its verdict undecided, with the candidates within
  ``extend_alike`` of it, goes on beside the reference in the same job (the others stop) up to the
  pairs the sequential test projects a decision needs (``extend_to`` at most), its decision looked
  at on the verification's schedule: what a settling rung of its own would measure, without a
  launch and a warm-up pass more.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from replay import stats

MAX_PASSES = 1000  # a pass shorter than min_sample_s / MAX_PASSES is measured in a short sample
STOP_DECIDED, STOP_MAX_PAIRS, STOP_TIME, STOP_BYTES, STOP_REPEAT, STOP_FUTILE = (
    "decided", "max-pairs", "time budget", "bytes budget", "rounds done", "out of reach")
STOP_BEATEN, STOP_HALVED, STOP_EXTENDED = "ruled out", "set aside", "extended"
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


@dataclass(frozen=True)
class RaceRule:
    """A tune rung's decisions between rounds (variant 0 the reference, the others candidates)."""

    keep: int = 1  # candidates the rung's halving keeps (the reference counted when it competes)
    alpha: float = 0.05 / 9  # the race's drop test: its level over the rungs a search may take
    min_shared: int = 3  # rounds two variants must share before one can rule the other out
    alike: float = 1.25  # a halved candidate is dropped only when this far behind in every round
    ref_competes: bool = False  # the reference is a candidate (the leader of earlier rungs)
    extend_to: int = 0  # the leader's pairs beside the reference may go up to this (0: no extension)
    extend_alike: float = 2.0  # ... when every candidate sampled is within this of the leader

    def args(self) -> list[str]:
        """The executor's command-line options for this rule."""
        out = ["--race-keep", str(self.keep), "--race-alpha", repr(self.alpha), "--race-min-shared",
               str(self.min_shared), "--race-alike", repr(self.alike), "--extend-to", str(self.extend_to),
               "--extend-alike", repr(self.extend_alike)]
        return out + (["--race-ref-competes"] if self.ref_competes else [])


def drop_test(behind, alpha: float) -> stats.Decision:
    """The race's test of paired ln(time_other / time_leader): improved when the leader is faster
    with confidence at level `alpha`. No margin and no run-to-run floor: a drop only says which
    of two is faster in these rounds; the intervals reported against the job are the verification's."""
    return stats.decide(behind, stats.Policy(margin=1e-9, reproducibility=0.0), level_alpha=alpha)


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
    race: RaceRule | None = None
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
        self.extended: int | None = None  # the leader going on beside the reference after the rounds
        self._extend_until = 0  # ... up to this many pairs

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
        elif self.race is not None:
            self._race_round()

    def progress(self) -> str:
        """One line after a round, for the caller's progress display: 'round 3 of at most 40, 2
        fixes still undecided, 12 s'."""
        if self.extended is not None:  # a race's leader going on beside the reference after its rounds
            return (f"round {self.rounds}, the leader beside the reference (at most {self.race.extend_to}), "
                    f"{time.monotonic() - self._started:.0f} s")
        most = self.policy.max_pairs if self.adaptive else self.repeat
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

    def _stop(self, v: int, why: str) -> None:
        self.stopped_at[v], self.stopped_why[v] = len(self.times[v]), why

    def _race_round(self) -> None:
        """A race's decisions after a round (:class:`RaceRule`)."""
        rule = self.race
        if self.extended is not None:
            if len(self.times[self.extended]) >= self._extend_until or self._extension_decided():
                self._stop(self.extended, STOP_EXTENDED)
            return
        if self.rounds >= 2:
            self._race_drops(rule)
        if self.rounds >= self.repeat:
            lead = self._extension(rule)
            for v in self.active()[1:]:
                if v != lead:
                    self._stop(v, STOP_REPEAT)

    def _means(self) -> dict[int, float]:
        """Each active candidate's mean ln(reference / candidate); the reference's 0 when it competes."""
        out = {v: float(np.mean(self.log_ratios(v))) for v in self.active()[1:]}
        return {0: 0.0, **out} if self.race.ref_competes else out

    def _race_drops(self, rule: RaceRule) -> None:
        """Stop the candidates the rung's leader beats with confidence, and those outside the
        halving's keep it led by more than ``alike`` in every round (the reference never)."""
        means = self._means()
        if len(means) < 2:
            return
        ranked = sorted(means, key=lambda v: -means[v])
        lead = ranked[0]
        ahead = self.log_ratios(lead) if lead else np.zeros(self.rounds)
        for rank, v in enumerate(ranked[1:], start=1):
            if v == 0:
                continue
            behind = ahead[:len(self.times[v])] - self.log_ratios(v)  # ln(time_v / time_leader) per round
            if behind.size >= rule.min_shared and drop_test(behind, rule.alpha).verdict == stats.IMPROVED:
                self._stop(v, STOP_BEATEN)
            elif rank >= rule.keep and float(behind.min()) > math.log(rule.alike):
                self._stop(v, STOP_HALVED)

    def _extension(self, rule: RaceRule) -> int | None:
        """The leader that goes on beside the reference after the rounds, or None: its verdict
        undecided, a decision projected within ``extend_to`` pairs, every candidate still sampled
        within ``extend_alike`` of it and none ruled out."""
        means = {v: m for v, m in self._means().items() if v}
        if not rule.extend_to or not means or STOP_BEATEN in self.stopped_why:
            return None
        lead = max(means, key=lambda v: means[v])
        if any(means[lead] - m > math.log(rule.extend_alike) for m in means.values()):
            return None
        policy = replace(self.policy, max_pairs=rule.extend_to)
        test = stats.sequential(self.log_ratios(lead), policy, final=True)
        if test.decided or test.more_pairs is None or test.more_pairs > rule.extend_to:
            return None
        self.extended, self._extend_until = lead, max(test.more_pairs, self.rounds + 2)
        return lead

    def _extension_decided(self) -> bool:
        """Whether the extended leader's verdict is decided, looked at on the verification's schedule."""
        policy = replace(self.policy, max_pairs=self.race.extend_to)
        return stats.sequential(self.log_ratios(self.extended), policy).decided

    def _why_stop(self) -> str:
        if not self.adaptive:
            if self.race is not None and self.nvariants > 1 and (self.rounds >= self.repeat or not self.active()[1:]):
                return self._race_stop()
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

    def _race_stop(self) -> str:
        """After a race's rounds: done unless its leader goes on (and the budget allows a round)."""
        if self.extended is None or not self.active()[1:]:
            return STOP_EXTENDED if self.extended is not None else STOP_REPEAT
        if time.monotonic() - self._started + max(self._round_wall[-2:]) > self.budget.seconds:
            return STOP_TIME
        return ""
