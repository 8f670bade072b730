"""The race: which candidates the next round of replays measures, and which drop out.

Candidates are measured in *rungs*: one replay job of a reference and a few candidates,
``ROUNDS`` paired rounds each (``FIRST_ROUNDS`` in the first; :func:`advisor.verify.measure` with
a fixed repeat). The reference is the job as recorded until a leader is ``CHAIN`` times faster
and either ``CHAIN_FAR`` times or decided by its pairs beside the job; then it is the leader (a
job far slower than its fixes is not sampled every rung), and speedups against the job chain
through it, link by link to the first candidate with pairs beside the job (:func:`scores`,
:func:`estimate`, :func:`chain_interval`). A leader still needing pairs beside the job
gets them beside the candidates joining, in the same replay job. Within a round every
candidate ran beside the same reference sample, so two candidates compare round by round
(``ln(time_a / time_b)``), whatever slowed the machine during that round cancelling. After each
rung:

- a candidate is **ruled out** as soon as the leader (the highest geometric-mean speedup) is
  faster than it with confidence: the Student-t interval of their paired log-ratios, at
  ``ALPHA`` over the rungs the search may take (Bonferroni), lies above 1;
- **successive halving**: of the candidates still racing, the better half (at least the leader)
  go on; the others are set aside, not separated from the leader, with what they measured;
- **refinement**: the settings one step from the leader's on each of its axes join, and the
  leader combined with the best measured setting of each other fix (fixes interact: a fix that
  did nothing alone may help beside the leader), unless the model, scaled by the rungs, puts
  them ``FAR`` behind (pruned);
- the search stops with **nothing to tune** once the leader's pairs beside the job cannot tell
  it from 1x;
- the first rung takes the proposal of each proposed fix and the settings the speedup model
  predicts best, in that order (the model's prediction is the search's starting order).

The search ends when nothing new would join (the best then gets ``FINAL_PAIRS`` pairs beside the
job unless its verdict is decided already, or ``CHAIN_ROUNDS`` beside its reference when those
can decide its chain: :func:`chain_can_settle`, or the reference's own pairs beside the job when
those decide it for less: :func:`reference_pairs`; a best its pairs beside the job leave undecided
then gets, once, the pairs the sequential test projects, up to the verification's ``max_pairs``:
:meth:`Race._settle`), or when the time budget would be exceeded by one more rung (the caller's
check). Everything here is bookkeeping on measured times: no replay, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from advisor.report.tune import (BEST, IDENTICAL, NOT_VERIFIABLE, PRUNED, RACING, RULED_OUT, RUNNER_UP,
                                 SET_ASIDE, UNTRIED)  # the statuses, as the result names them
from advisor.tune.chain import FINAL_PAIRS, ROUNDS, chain_can_settle, reference_pairs, settled
from advisor.tune.space import Candidate, combined, neighbours
from replay import stats
from replay.sampling import RaceRule, drop_test

FIRST_ROUNDS = 3  # ... the first: 3 pairs beside the job often decide a large speedup's verdict
WIDTH = 2  # candidates joining a rung besides those still racing (the first rung: FIRST)
FIRST = 3  # the first rung: every proposal, filled up to this with the model's best settings
SMALL_SPACE = 6  # a space of at most this many configurations ...
FIRST_SMALL = 2  # ... starts with fewer: its grid decides them all in a handful of rounds, and the
# first rung (a warm-up and 3 rounds per variant, the job's among them) is most of what tune may spend
MAX_RUNGS = 8  # the Bonferroni count of the drop test (a longer search only drops less readily)
ALPHA = 0.05
ALIKE = 1.25  # a candidate not separated from the best and within x1.25 of it is a runner-up
MIN_SHARED = 3  # pairs two candidates must share before one can rule the other out
CHAIN = 1.5  # a leader this much faster than the job is the reference of later rungs ...
CHAIN_FAR = 6.0  # ... once its verdict no longer needs pairs beside the job, or it is this much faster
MIN_FLAT = 4  # pairs beside the job before a leader can be called indistinguishable from it
ALIKE_STOP = "candidates alike"  # the stop reason's start: the best may still get pairs (Race._settle)
FAR = 2.0  # the model's interval top this many times below the measured leader: not replayed



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
    rungs: list[dict[str, Any]] = field(default_factory=list)
    """{"rung", "ref", "base": [samples], "fixed": [samples]}: "ref" is the key of the rung's
    reference ('' for the job as recorded); the reference's own rung has its samples on both sides."""

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
        """(rung, round) -> ln(reference / this candidate) of that round (0 where it was the reference)."""
        return {(r["rung"], i): math.log(max(b["time_s"], 1e-12) / max(f["time_s"], 1e-12))
                for r in self.rungs for i, (b, f) in enumerate(zip(r["base"], r["fixed"]))}

    def direct(self) -> list[float]:
        """ln(job / this candidate) of each round it ran beside the job as recorded."""
        return [math.log(max(b["time_s"], 1e-12) / max(f["time_s"], 1e-12))
                for r in self.rungs if not r.get("ref") for b, f in zip(r["base"], r["fixed"])]

    def against(self) -> dict[str, list[float]]:
        """reference key -> ln(reference / this candidate) of each round beside it (the job: '')."""
        out: dict[str, list[float]] = {}
        for r in self.rungs:
            if r.get("ref") != self.key:
                out.setdefault(r.get("ref") or "", []).extend(
                    math.log(max(b["time_s"], 1e-12) / max(f["time_s"], 1e-12)) for b, f in zip(r["base"], r["fixed"]))
        return out

    @property
    def pairs(self) -> int:
        """Pairs against the job as recorded (what a verification of it would pool)."""
        return len(self.direct())

    @property
    def measured(self) -> bool:
        return any(r["fixed"] for r in self.rungs)

    def mean(self) -> float:
        d = self.direct()
        return float(np.mean(d)) if d else -math.inf

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _slower(lead: Entry, test: stats.Decision) -> str:
    return (f"slower than {lead.label()}: {test.speedup:.2f}x its time "
            f"(95 % CI {test.ci[0]:.2f}x-{test.ci[1]:.2f}x, {test.pairs} shared pairs)")


def compare(leader: Entry, other: Entry) -> stats.Decision | None:
    """Whether `leader` is faster than `other`, on the rounds both ran (None: too few shared).
    Both ran beside the same reference sample in a shared round, so it cancels."""
    a, b = leader.rounds(), other.rounds()
    shared = sorted(set(a) & set(b))
    if len(shared) < MIN_SHARED:
        return None
    return drop_test([a[k] - b[k] for k in shared], ALPHA / (MAX_RUNGS + 1))  # ln(time_other / time_leader)


def scores(entries: dict[str, Entry]) -> dict[str, float]:
    """key -> ln(speedup against the job as recorded) of each measured candidate: the mean of
    its rounds beside the job, and of those beside another candidate plus that candidate's score
    (a chain through the leader). Fixed-point iteration: references are few and chains short."""
    score = {k: e.mean() for k, e in entries.items() if e.measured}
    for _ in range(6):
        new = {}
        for k, e in entries.items():
            if not e.measured:
                continue
            values = [x + (score.get(ref, -math.inf) if ref else 0.0) for ref, xs in e.against().items() for x in xs]
            values = [v for v in values if math.isfinite(v)]
            new[k] = float(np.mean(values)) if values else score.get(k, -math.inf)
        score = new
    return score


def out_of_reach(e: Entry) -> bool:
    """Whether `e`'s pairs beside the job (at least ``FIRST_ROUNDS``) leave its verdict undecided
    and projected to stay so at ``FINAL_PAIRS`` (the sequential test's estimate of the pairs a
    decision needs, as the replayer's futility stop uses it): its final pairs would not decide,
    and the verdict stays inconclusive with the pairs it would need."""
    d = e.direct()
    if len(d) < FIRST_ROUNDS:
        return False
    test = stats.sequential(d, stats.Policy(), final=True)
    return not test.decided and (test.more_pairs is None or test.more_pairs > FINAL_PAIRS)


def nothing_to_tune(lead: Entry, hopeful: list[Entry] = ()) -> str:
    """Why the search stops with nothing to tune ('' when it goes on): the leader's 95 % interval
    beside the job reaches down to 1x (the fastest of the candidates so far, and still not told
    from the job: the rest of the space, one step from them, is unlikely to be), after
    ``MIN_FLAT`` pairs; or already after the first rung's ``FIRST_ROUNDS`` when the leader is
    within ``ALIKE`` of 1x and the model expects none of the candidates not yet measured to be
    far faster (`hopeful`: those it does)."""
    d = lead.direct()
    if len(d) < FIRST_ROUNDS:
        return ""
    test = stats.decide(d, stats.Policy(margin=1e-9, reproducibility=0.0), level_alpha=ALPHA)
    lo, hi = test.ci
    if lo > 1.0 or (len(d) < MIN_FLAT and (test.speedup > ALIKE or hopeful)):
        return ""
    return (f"nothing to tune: the fastest candidate, {lead.label()}, cannot be told from the job as recorded "
            f"({test.speedup:.2f}x in {len(d)} pairs, 95 % CI {lo:.2f}x-{hi:.2f}x over these rounds alone)")


class Race:
    """The candidates of one search and what they measured; `order`: keys, the model's best first."""

    def __init__(self, entries: dict[str, Entry], order: list[str], nranks: int, rung: int = 0,
                 stopped: str = "", max_pairs: int = FINAL_PAIRS):
        self.entries, self.order, self.nranks, self.rung = entries, order, nranks, rung
        self.stopped = stopped  # why the search stopped early ('' while it goes on)
        self.max_pairs = max_pairs  # the verification's last look: an undecided best's pairs go up to it
        self.settling = False  # the next rung only settles the best's verdict (the search is over)
        self.racing_rung = False  # the next rung races candidates (its rounds take the race's decisions)
        self.rounds = ROUNDS  # of the next rung (set by next_rung)
        self.ref = ""  # the next rung's reference: a candidate's key, or '' for the job as recorded
        self._scores: dict[str, float] | None = None

    def racing(self) -> list[Entry]:
        return [e for e in self.entries.values() if e.status == RACING]

    def score(self, e: Entry) -> float:
        if self._scores is None:
            self._scores = scores(self.entries)
        return self._scores.get(e.key, -math.inf)

    def leader(self) -> Entry | None:
        """The highest score; but a candidate given more pairs beside the job to settle it (a
        leader extended in its rung, or a settling rung) keeps the lead over a rival that was not
        ahead of it in the rounds they shared: the rival's higher mean would come from fewer
        rounds, the settled one's from those and its own last pairs (a noisy mean read from 3
        rounds would otherwise win against one refined by 5, and get a settling rung in turn)."""
        measured = [e for e in self.racing() if e.measured]
        if not measured:
            return None
        top = max(measured, key=lambda e: (self.score(e), e.pairs))
        for e in measured:
            if e is not top and any(r.get("settle") for r in e.rungs):
                mine, theirs = e.rounds(), top.rounds()
                shared = set(mine) & set(theirs)
                if shared and sum(mine[k] - theirs[k] for k in shared) >= 0:
                    return e
        return top

    def next_rung(self) -> list[Entry]:
        """The candidates the next rung measures ([] when the search is done), marked racing;
        ``self.ref`` and ``self.rounds`` say against what and how many rounds."""
        self.settling = self.racing_rung = False
        if self.stopped:
            return self._settle(self.leader()) if self.stopped.startswith(ALIKE_STOP) else []
        fresh = self._joining()
        for e in fresh:
            e.status = RACING
        lead = self.leader()
        self.ref, self.rounds = "", ROUNDS if self.rung else FIRST_ROUNDS
        if lead is not None and self._races_leader(lead):
            # the job is far slower than the leader: later candidates race the leader, not the job
            self.ref = lead.key
        others = [e for e in self.racing() if e.key != self.ref]
        if fresh or (self.ref and others):
            self.racing_rung = True
            return sorted(others, key=lambda e: -self.score(e) if e.measured else math.inf)
        if lead is None or not self._needs_job(lead):
            return self._settle(lead)
        cand, via, rounds = chain_can_settle(self.entries, lead)
        if via:  # more rounds of one link decide the chain: the job is not sampled again
            self.ref, self.rounds = via, rounds
            return [self.entries[cand]]
        ref, rounds = reference_pairs(self.entries, lead)
        if ref:  # its reference's pairs beside the job decide the chain for fewer seconds of replay
            self.ref, self.rounds = "", rounds
            return [self.entries[ref]]
        # nothing new: the leader's last pairs beside the job, in one replay job (each costs a launch)
        self.ref, self.rounds = "", max(ROUNDS, FINAL_PAIRS - lead.pairs)
        return [lead]

    def done(self) -> str:
        """Why the search ended once nothing more is measured: what stopped it early; else, when
        its best still cannot be told from the job, nothing to tune (no candidate is left that
        could lift it: a "best" measured at 0.64x, 0.06x-7.08x, is not one to apply); else
        'search done'."""
        lead = self.leader()
        return self.stopped or (nothing_to_tune(lead) if lead is not None else "") or "search done"

    def rule(self, todo: list[Entry]) -> RaceRule | None:
        """The decisions the next rung takes between its rounds (None: a rung of fixed rounds, as
        the final pairs, a chain's rounds and a settling rung are): :meth:`judge`'s drop test and
        halving, taken as soon as the rounds say so, so that a candidate already beaten, or sure
        to be set aside, is not sampled to the rung's end. In the first rung of a small space,
        whose candidates alike end the search and whose best then gets its settling pairs
        (:meth:`_settle`), an undecided leader goes on beside the job in the same replay job, up
        to the pairs the sequential test projects (at most ``max_pairs``)."""
        if not self.racing_rung:
            return None
        small = len(self.order) <= SMALL_SPACE
        return RaceRule(keep=max(1, (len(todo) + bool(self.ref)) // 2), alpha=ALPHA / (MAX_RUNGS + 1),
                        min_shared=MIN_SHARED, alike=ALIKE, ref_competes=bool(self.ref),
                        extend_to=self.max_pairs if small and not self.ref and self.rung == 0 else 0,
                        extend_alike=FAR)

    def _needs_job(self, lead: Entry) -> bool:
        """Whether the leader's verdict still needs pairs beside the job: not decided, fewer than
        ``FINAL_PAIRS``, and not projected to stay undecided at that many."""
        return not (settled(self.entries, lead) or lead.pairs >= FINAL_PAIRS or out_of_reach(lead))

    def _settle(self, best: Entry | None) -> list[Entry]:
        """The search is over, its best's verdict undecided by its pairs beside the job: that best,
        for as many more pairs as the sequential test projects a decision needs, when those stay
        within the verification's ``max_pairs`` ([] when not, or decided, or chained). What a
        verification of it would go on measuring; the budget is the caller's check
        (``self.settling``: a rung the budget refuses ends the search as it stood)."""
        d = best.direct() if best is not None else []
        if len(d) < FIRST_ROUNDS or any(r.get("settle") for r in best.rungs) or settled(self.entries, best):
            return []  # once: a projection from the pairs so far, not a loop of launches
        test = stats.sequential(d, stats.Policy(max_pairs=self.max_pairs), final=True)
        if test.decided or test.more_pairs is None or test.more_pairs > self.max_pairs:
            return []
        self.ref, self.rounds, self.settling = "", max(ROUNDS, test.more_pairs - len(d)), True
        return [best]

    def _races_leader(self, lead: Entry) -> bool:
        """Whether the next rung's reference is the leader rather than the job: the leader is
        ``CHAIN`` times faster than the job, and either ``CHAIN_FAR`` times or its verdict needs
        no more pairs beside the job. A leader that still needs them gets them beside the
        candidates joining, in the same replay job, instead of in a final rung of its own (a
        launch and two warm-up passes more)."""
        speedup = math.exp(self.score(lead))
        if speedup < CHAIN:
            return False
        return speedup >= CHAIN_FAR or lead.pairs == 0 or not self._needs_job(lead)

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
        out = [e for e in [*near[:1], *combos[:1], *near[1:], *combos[1:]] if not self._far_behind(e, lead)]
        return out[:WIDTH]

    def _scaled_top(self, e: Entry) -> tuple[float | None, float | None]:
        """(top of `e`'s predicted interval, that top scaled by how far the model underestimated
        the candidates measured so far, never down); (None, None) without a prediction."""
        top = (e.predicted_interval or [None, None])[1]
        if top is None:
            return None, None
        under = [math.exp(self.score(m)) / m.predicted for m in self.entries.values()
                 if m.measured and m.predicted and math.isfinite(self.score(m))]
        return top, top * max([1.0, *under])

    def _hopeful(self, lead: Entry) -> list[Entry]:
        """Candidates not yet measured whose scaled predicted top is ``FAR`` times the leader's
        speedup or more (at least 1x): the model expects they could be far faster."""
        bar = FAR * max(1.0, math.exp(self.score(lead)))
        return [e for e in self._untried() if (self._scaled_top(e)[1] or 0.0) >= bar]

    def _far_behind(self, e: Entry, lead: Entry) -> bool:
        """Whether the model and the rungs so far put `e` so far behind the measured leader that
        it is not worth a replay: the top of its predicted interval, scaled by how far the model
        underestimated the candidates measured (never down), ``FAR`` times below the leader's
        speedup. Marked pruned, with the numbers."""
        top, scaled = self._scaled_top(e)
        if top is None or scaled * FAR >= math.exp(self.score(lead)):
            return False
        e.status = PRUNED
        e.why = (f"the model predicts at most {top:.2f}x ({scaled:.2f}x after the rungs so far), far behind "
                 f"{lead.label()} ({math.exp(self.score(lead)):.2f}x measured)")
        return True

    def _first(self) -> list[Entry]:
        """Each proposal (in the model's order), then the model's best settings, ``FIRST`` in all
        (``FIRST_SMALL`` in a space of ``SMALL_SPACE`` or fewer; at least the proposals: what the
        diagnosis says is always measured)."""
        untried = self._untried()
        proposals = [e for e in untried if e.origin == "proposed"]
        others = [e for e in untried if e.origin != "proposed" and len(e.fixes) == 1]
        width = FIRST_SMALL if len(self.order) <= SMALL_SPACE else FIRST
        return proposals + others[:max(0, width - len(proposals))]

    def _untried(self) -> list[Entry]:
        return [self.entries[k] for k in self.order if self.entries[k].status == UNTRIED]

    def _combinations(self, lead: Entry) -> list[Entry]:
        """The leader combined with the best measured setting of each other fix, the strongest
        first, where the configuration is in the space and untried (pairs, and triples when the
        leader is a pair). A fix that did nothing alone may still help beside the leader
        (coalescing once fsyncs are gone), so its own effect does not gate it."""
        best: dict[str, Entry] = {}
        for e in self.entries.values():
            if len(e.fixes) == 1 and e.measured and e.fixes[0]["transform"] not in Candidate(lead.fixes, "").transforms:
                t = e.fixes[0]["transform"]
                if t not in best or self.score(e) > self.score(best[t]):
                    best[t] = e
        out = []
        for other in sorted(best.values(), key=lambda e: -self.score(e)):
            fixes = combined(lead.fixes, other.fixes)
            e = self.entries.get(Candidate(fixes, "").key) if fixes is not None else None
            if e is not None and e.status == UNTRIED:
                out.append(e)
        return out

    def record(self, measured: dict[str, tuple[list[dict], list[dict]]]) -> None:
        """The rung's samples: key -> (reference samples, candidate samples), round by round (each
        sample a dict with its ``time_s`` per pass), against ``self.ref``."""
        for key, (base, fixed) in measured.items():
            settle = self.settling or len(fixed) > self.rounds  # a leader extended beside the job: once
            self.entries[key].rungs.append({"rung": self.rung, "ref": self.ref, "base": list(base),
                                            "fixed": list(fixed), **({"settle": True} if settle else {})})
        if self.ref and measured:  # the reference's own samples: 0 in every round, for comparisons
            base = next(iter(measured.values()))[0]
            self.entries[self.ref].rungs.append({"rung": self.rung, "ref": self.ref, "base": list(base),
                                                 "fixed": list(base)})
        self.rung += 1
        self._scores = None

    def judge(self) -> None:
        """After a rung: rule out what the leader beats with confidence, then halve the rest;
        stop when the leader cannot be told from the job (nothing to tune)."""
        lead = self.leader()
        if lead is None:
            return
        for e in self.racing():
            if e is lead or not e.measured:
                continue
            test = compare(lead, e)
            if test is not None and test.verdict == stats.IMPROVED:
                e.status, e.why = RULED_OUT, _slower(lead, test)
        measured = sorted((e for e in self.racing() if e.measured), key=lambda e: (e is not lead, -self.score(e)))
        keep = max(1, len(measured) // 2)
        for e in measured[keep:]:
            e.status = SET_ASIDE
            e.why = (f"set aside by halving: {math.exp(self.score(lead) - self.score(e)):.2f}x "
                     f"behind {lead.label()}, not separated")
        self.stopped = self.stopped or nothing_to_tune(lead, self._hopeful(lead)) or self._alike(lead)

    def _alike(self, lead: Entry) -> str:
        """Why the search stops after its first rung with the candidates alike ('' when it goes
        on): every candidate measured is within ``ALIKE`` of the leader (``FAR`` in a space of
        ``SMALL_SPACE`` or fewer), none is separated from it, and the model expects none of those
        not yet measured to be far faster. On a small, flat space (hint or stripe settings near
        each other) the next rungs would only split hairs, at a launch and a warm-up pass per
        variant each; in a space of 6 the rest is one step from what was measured, and a rung
        of them costs a quarter of measuring them all at once."""
        measured = [e for e in self.entries.values() if e.measured]
        if self.rung != 1 or len(measured) < 2 or any(e.status == RULED_OUT for e in measured):
            return ""
        bound = FAR if len(self.order) <= SMALL_SPACE else ALIKE
        if any(self.score(lead) - self.score(e) > math.log(bound) for e in measured) or self._hopeful(lead):
            return ""
        rest = len(self._untried())
        return (f"{ALIKE_STOP}: the {len(measured)} measured are within x{bound:g} of {lead.label()} and not "
                f"separated from it, and the model expects none of the {rest} others to be {FAR:g}x faster")

    def finish(self) -> Entry | None:
        """The best candidate, and each other measured one's status against it: ruled out when the
        best is faster with confidence; a runner-up when not, and its time is within ``ALIKE`` of
        the best's (the precision a verification reports a speedup with); else set aside."""
        lead = self.leader() or max((e for e in self.entries.values() if e.measured), key=self.score, default=None)
        if lead is None:
            return None
        lead.status, lead.why = BEST, "the fastest measured"
        for e in self.entries.values():
            if e is lead or e.status not in (RACING, SET_ASIDE):
                continue
            test = compare(lead, e)
            behind = math.exp(self.score(lead) - self.score(e))
            if test is not None and test.verdict == stats.IMPROVED:
                e.status, e.why = RULED_OUT, _slower(lead, test)
            elif behind <= ALIKE:
                e.status = RUNNER_UP
                e.why = f"cannot be told apart from {lead.label()} in {len(e.rounds())} rounds"
            else:
                e.status = SET_ASIDE
                e.why = f"{behind:.2f}x behind {lead.label()}, not separated with confidence"
        return lead

    def to_dict(self) -> dict[str, Any]:
        return {"rung": self.rung, "order": self.order, "nranks": self.nranks, "stopped": self.stopped,
                "max_pairs": self.max_pairs, "entries": [e.to_dict() for e in self.entries.values()]}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Race:
        entries = [Entry(**e) for e in doc["entries"]]
        return cls({e.key: e for e in entries}, list(doc["order"]), int(doc["nranks"]), int(doc["rung"]),
                   str(doc.get("stopped") or ""), int(doc.get("max_pairs") or FINAL_PAIRS))
