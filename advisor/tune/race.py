"""The race: which candidates the next round of replays measures, and which drop out.

Candidates are measured in *rungs*: one replay job of the recorded job and a few candidates,
``ROUNDS`` paired rounds each (:func:`advisor.verify.measure` with a fixed repeat). Within a round
every candidate ran beside the same baseline sample, so two candidates compare round by round
(``ln(time_a / time_b)``), whatever slowed the machine during that round cancelling as it does
against the baseline. After each rung:

- a candidate is **ruled out** as soon as the leader (the highest geometric-mean speedup) is
  faster than it with confidence: the Student-t interval of their paired log-ratios, at
  ``ALPHA`` over the rungs the search may take (Bonferroni), lies above 1;
- **successive halving**: of the candidates still racing, the better half (at least the leader)
  go on; the others are set aside, not separated from the leader, with what they measured;
- **refinement**: the settings one step from the leader's on each of its axes join, and the
  leader combined with the best measured setting of each other fix (fixes interact: a fix that
  did nothing alone may help beside the leader);
- the first rung takes the proposal of each proposed fix and the settings the speedup model
  predicts best, in that order (the model's prediction is the search's starting order).

The search ends when nothing new would join and the leader has ``FINAL_PAIRS`` pairs, or when
the time budget would be exceeded by one more rung (the caller's check).
Everything here is bookkeeping on measured times: no replay, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from advisor.tune.space import Candidate, combined, neighbours
from replay import stats

ROUNDS = 2  # paired rounds per rung: each rung is one replay job
WIDTH = 2  # candidates joining a rung besides those still racing (the first rung: FIRST)
FIRST = 3  # the first rung: every proposal, filled up to this with the model's best settings
FINAL_PAIRS = 6  # the leader has at least these pairs at the end (its interval)
MAX_RUNGS = 8  # the Bonferroni count of the drop test (a longer search only drops less readily)
ALPHA = 0.05
ALIKE = 1.25  # a candidate not separated from the best and within x1.25 of it is a runner-up
MIN_SHARED = 3  # pairs two candidates must share before one can rule the other out

UNTRIED, RACING, RULED_OUT, SET_ASIDE = "untried", "racing", "ruled-out", "set-aside"
NOT_VERIFIABLE, IDENTICAL, BEST, RUNNER_UP = "not-verifiable", "identical", "best", "runner-up"


@dataclass
class Entry:
    """A candidate in the race: its configuration, prediction, status and every sample it had."""

    fixes: list[dict[str, Any]]
    origin: str
    codes: list[str] = field(default_factory=list)
    predicted: float | None = None
    predicted_interval: list[float] | None = None
    predicted_reason: str = ""
    status: str = UNTRIED
    why: str = ""
    rungs: list[dict[str, Any]] = field(default_factory=list)  # {"rung", "base": [samples], "fixed": [samples]}

    @classmethod
    def of(cls, c: Candidate) -> Entry:
        e = cls(fixes=c.fixes, origin=c.origin, codes=c.codes)
        if c.unusable:
            e.status, e.why = NOT_VERIFIABLE, c.unusable
        elif c.same_as:
            e.status, e.why = IDENTICAL, f"replays exactly as {c.same_as}"
        return e

    @property
    def key(self) -> str:
        return Candidate(self.fixes, self.origin).key

    def label(self) -> str:
        return Candidate(self.fixes, self.origin).label()

    def rounds(self) -> dict[tuple[int, int], float]:
        """(rung, round) -> ln(baseline / this candidate) of that round."""
        return {(r["rung"], i): math.log(max(b["time_s"], 1e-12) / max(f["time_s"], 1e-12))
                for r in self.rungs for i, (b, f) in enumerate(zip(r["base"], r["fixed"]))}

    @property
    def pairs(self) -> int:
        return sum(min(len(r["base"]), len(r["fixed"])) for r in self.rungs)

    def mean(self) -> float:
        d = list(self.rounds().values())
        return float(np.mean(d)) if d else -math.inf

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _slower(lead: Entry, test: stats.Decision) -> str:
    return (f"slower than {lead.label()}: {test.speedup:.2f}x its time "
            f"(95 % CI {test.ci[0]:.2f}x-{test.ci[1]:.2f}x, {test.pairs} shared pairs)")


def compare(leader: Entry, other: Entry) -> stats.Decision | None:
    """Whether `leader` is faster than `other`, on the rounds both ran (None: too few shared)."""
    a, b = leader.rounds(), other.rounds()
    shared = sorted(set(a) & set(b))
    if len(shared) < MIN_SHARED:
        return None
    x = [a[k] - b[k] for k in shared]  # ln(time_other / time_leader) per round
    # no margin and no run-to-run floor: a drop only says which of two is faster in these rounds;
    # the intervals reported against the job are the verification's (advisor.verify)
    policy = stats.Policy(margin=1e-9, reproducibility=0.0)
    return stats.decide(x, policy, level_alpha=ALPHA / (MAX_RUNGS + 1))


class Race:
    """The candidates of one search and what they measured; `order`: keys, the model's best first."""

    def __init__(self, entries: dict[str, Entry], order: list[str], nranks: int, rung: int = 0):
        self.entries, self.order, self.nranks, self.rung = entries, order, nranks, rung
        self.rounds = ROUNDS  # of the next rung (set by next_rung)
        self._space = {e.key for e in entries.values()}

    def racing(self) -> list[Entry]:
        return [e for e in self.entries.values() if e.status == RACING]

    def leader(self) -> Entry | None:
        measured = [e for e in self.racing() if e.pairs]
        return max(measured, key=lambda e: (e.mean(), e.pairs)) if measured else None

    def next_rung(self) -> list[Entry]:
        """The candidates the next rung measures ([] when the search is done), marked racing."""
        fresh = self._joining()
        for e in fresh:
            e.status = RACING
        lead = self.leader()
        if not fresh and (lead is None or lead.pairs >= FINAL_PAIRS):
            return []
        # nothing new: the leader's last pairs in one replay job, not in several (each costs a launch)
        self.rounds = ROUNDS if fresh or lead is None else max(ROUNDS, FINAL_PAIRS - lead.pairs)
        return sorted(self.racing(), key=lambda e: -e.mean() if e.pairs else math.inf)

    def _joining(self) -> list[Entry]:
        if not any(e.rungs for e in self.entries.values()):
            return self._first()
        lead = self.leader()
        if lead is None:
            return self._untried()[:WIDTH]
        near = []
        for fixes in neighbours(Candidate(lead.fixes, lead.origin), self.nranks):
            e = self.entries.get(Candidate(fixes, "").key)
            if e is not None and e.status == UNTRIED and e not in near:
                near.append(e)
        combos = self._combinations(lead)
        # one step along an axis and one combination first, then the rest of either
        out = [*near[:1], *combos[:1], *near[1:], *combos[1:]]
        return out[:WIDTH]

    def _first(self) -> list[Entry]:
        """Each proposal (in the model's order), then the model's best settings, WIDTH in all
        (at least the proposals: what the diagnosis says is always measured)."""
        untried = self._untried()
        proposals = [e for e in untried if e.origin == "proposed"]
        others = [e for e in untried if e.origin != "proposed" and len(e.fixes) == 1]
        return proposals + others[:max(0, FIRST - len(proposals))]

    def _untried(self) -> list[Entry]:
        return [self.entries[k] for k in self.order if self.entries[k].status == UNTRIED]

    def _combinations(self, lead: Entry) -> list[Entry]:
        """The leader combined with the best measured setting of each other fix, the strongest
        first, where the pair is in the space and untried. A fix that did nothing alone may still
        help beside the leader (coalescing once fsyncs are gone), so its own effect does not gate it."""
        best: dict[str, Entry] = {}
        for e in self.entries.values():
            if len(e.fixes) == 1 and e.pairs and e.fixes[0]["transform"] not in Candidate(lead.fixes, "").transforms:
                t = e.fixes[0]["transform"]
                if t not in best or e.mean() > best[t].mean():
                    best[t] = e
        out = []
        for other in sorted(best.values(), key=lambda e: -e.mean()):
            fixes = combined(lead.fixes, other.fixes)
            e = self.entries.get(Candidate(fixes, "").key) if fixes is not None else None
            if e is not None and e.status == UNTRIED:
                out.append(e)
        return out

    def record(self, measured: dict[str, tuple[list[float], list[float]]]) -> None:
        """The rung's samples: key -> (baseline samples, candidate samples), round by round (each
        sample a dict with its ``time_s`` per pass)."""
        for key, (base, fixed) in measured.items():
            self.entries[key].rungs.append({"rung": self.rung, "base": list(base), "fixed": list(fixed)})
        self.rung += 1

    def judge(self) -> None:
        """After a rung: rule out what the leader beats with confidence, then halve the rest."""
        lead = self.leader()
        if lead is None:
            return
        for e in self.racing():
            if e is lead or not e.pairs:
                continue
            test = compare(lead, e)
            if test is not None and test.verdict == stats.IMPROVED:
                e.status, e.why = RULED_OUT, _slower(lead, test)
        measured = sorted((e for e in self.racing() if e.pairs), key=lambda e: -e.mean())
        keep = max(1, len(measured) // 2)
        for e in measured[keep:]:
            e.status = SET_ASIDE
            e.why = (f"set aside by halving after {e.pairs} pairs: {math.exp(lead.mean() - e.mean()):.2f}x "
                     f"behind {lead.label()}, not separated")

    def finish(self) -> Entry | None:
        """The best candidate, and each other measured one's status against it: ruled out when the
        best is faster with confidence; a runner-up when not, and its time is within ``ALIKE`` of
        the best's (the precision a verification reports a speedup with); else set aside."""
        lead = self.leader() or max((e for e in self.entries.values() if e.pairs), key=Entry.mean, default=None)
        if lead is None:
            return None
        lead.status, lead.why = BEST, "the fastest measured"
        for e in self.entries.values():
            if e is lead or e.status not in (RACING, SET_ASIDE):
                continue
            test = compare(lead, e)
            if test is not None and test.verdict == stats.IMPROVED:
                e.status, e.why = RULED_OUT, _slower(lead, test)
            elif math.exp(lead.mean() - e.mean()) <= ALIKE:
                e.status = RUNNER_UP
                e.why = f"cannot be told apart from {lead.label()} in {e.pairs} pairs"
            else:
                e.status = SET_ASIDE
                e.why = (f"{math.exp(lead.mean() - e.mean()):.2f}x behind {lead.label()} after {e.pairs} pairs, "
                         "not separated with confidence")
        return lead

    def to_dict(self) -> dict[str, Any]:
        return {"rung": self.rung, "order": self.order, "nranks": self.nranks,
                "entries": [e.to_dict() for e in self.entries.values()]}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Race:
        entries = [Entry(**e) for e in doc["entries"]]
        return cls({e.key: e for e in entries}, list(doc["order"]), int(doc["nranks"]), int(doc["rung"]))
