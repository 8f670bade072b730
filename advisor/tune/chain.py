"""Chains of references: a candidate's speedup against the job as recorded when it ran beside
another candidate rather than beside the job, and what the search does to decide such a verdict
(more rounds beside the reference, or the reference's own pairs beside the job). A chain runs link
by link to the first candidate with pairs beside the job; each link's rounds are their own
replay job, independent samples. Bookkeeping on measured times: no replay, no I/O.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from replay import stats

if TYPE_CHECKING:
    from advisor.tune.race import Entry

ROUNDS = 2  # paired rounds per rung: each rung is one replay job
FINAL_PAIRS = 5  # the best's pairs beside the job at the end when its verdict is not decided before
# (a verification's first look: 3 pairs of a large speedup decide, 3 of a noisy 3x read 0.05x-263x)
CHAIN_ROUNDS = 5  # rounds beside its reference a chained best may get instead of a final rung beside the job


def chain_interval(ref_log: float, ref_half: float, ratios: list[float]) -> tuple[float, float, float]:
    """(centre, low, high) of ln(speedup against the job) of a candidate measured beside a
    reference: the reference's ln speedup (95 % half-width `ref_half`) plus the mean of the
    candidate's ln ratios to it. Different rounds, independent samples: the half-widths add in
    quadrature, the ratio's a Student-t one of its rounds (Banerjee's interval for a sum of
    independent means, each with its own Student-t half-width: at least 95 % coverage whatever
    their spreads; tests/test_tune.py checks it for chains of 1-3 links of 2-5 rounds)."""
    n = len(ratios)
    half_rel = stats.t_quantile(0.975, n - 1) * float(np.std(ratios, ddof=1)) / math.sqrt(n)
    centre = ref_log + float(np.mean(ratios))
    half = math.hypot(ref_half, half_rel)
    return centre, centre - half, centre + half


def settled(entries: dict[str, Entry], e: Entry) -> bool:
    """Whether `e`'s verdict against the job is decided (improved or regressed at the
    verification's default margin and run-to-run floor) by its pairs beside the job, or else by
    its chain through the reference it ran beside most (through as many links as lead to pairs
    beside the job: :func:`estimate`): then the job is not measured again."""
    policy = stats.Policy()
    d = e.direct()
    if len(d) >= ROUNDS:
        return stats.sequential(d, policy, final=True).verdict in (stats.IMPROVED, stats.REGRESSED)
    chain = _chain(entries, e)
    if chain is None:
        return False
    _, ref_log, ref_half, xs = chain
    _, lo, hi = chain_interval(ref_log, ref_half, xs)
    band = math.log1p(policy.margin)
    return lo > band or hi < -band


def _chain(entries: dict[str, Entry], e: Entry,
           seen: tuple[str, ...] = ()) -> tuple[str, float, float, list[float]] | None:
    """(reference key, its ln speedup against the job, that estimate's 95 % half-width, `e`'s ln
    ratios to it) of the reference `e` ran beside most (2 rounds at least); None without one. The
    reference's estimate is its pairs beside the job (2 at least, a finite interval), or else its
    own chain, link by link (:func:`estimate`)."""
    groups = [(ref, xs) for ref, xs in e.against().items() if ref and len(xs) >= 2]
    if not groups:
        return None
    ref, xs = max(groups, key=lambda g: len(g[1]))
    known = estimate(entries, ref, seen=(*seen, e.key))
    return None if known is None else (ref, known[0], known[1], xs)


def estimate(entries: dict[str, Entry], key: str, seen: tuple[str, ...] = ()) -> tuple[float, float] | None:
    """(ln speedup against the job, 95 % half-width) of candidate `key`: of its pairs beside the
    job (the verification's sequential interval, 2 pairs at least), else through the reference
    it ran beside most, as many links as it takes (each link's rounds are their own replay job:
    independent samples). The half-widths of the links' own Student-t intervals add in quadrature,
    Banerjee's rule for a sum of independent means: conservative whatever the links' spreads and
    counts (:func:`chain_interval`). None without pairs beside the job at the chain's end."""
    e = entries.get(key)
    if e is None or key in seen:  # a cycle of references chains nothing
        return None
    rd = e.direct()
    if len(rd) >= 2:
        lo, hi = stats.sequential(rd, stats.Policy(), final=True).ci
        if 0 < lo < hi < math.inf:
            return float(np.mean(rd)), math.log(hi / lo) / 2
        return None
    chain = _chain(entries, e, seen)
    if chain is None:
        return None
    _, ref_log, ref_half, xs = chain
    centre, lo, _ = chain_interval(ref_log, ref_half, xs)
    return centre, centre - lo


def links(entries: dict[str, Entry], e: Entry) -> list[tuple[str, str, list[float]]]:
    """`e`'s chain to the job, link by link: [(candidate key, its reference's key, its ln ratios
    to it)], from `e` to the first reference with pairs beside the job ([] without a chain)."""
    out, cur = [], e
    while len(cur.direct()) < 2:
        groups = [(ref, xs) for ref, xs in cur.against().items() if ref and len(xs) >= 2]
        if not groups:
            return []
        ref, xs = max(groups, key=lambda g: len(g[1]))
        if ref == e.key or any(ref == c for c, _, _ in out):
            return []
        out.append((cur.key, ref, xs))
        cur = entries[ref]
    return out


def _t_half(xs: list[float], n: int | None = None) -> float:
    """The 95 % Student-t half-width of the mean of `xs`, or of `n` rounds of their spread."""
    n = n or len(xs)
    return stats.t_quantile(0.975, n - 1) * float(np.std(xs, ddof=1)) / math.sqrt(n)


def chain_can_settle(entries: dict[str, Entry], e: Entry) -> tuple[str, str, int]:
    """(candidate, its reference, rounds) when ``CHAIN_ROUNDS`` rounds of one link of `e`'s chain
    would decide `e`'s chained verdict, projected with that link's spread as measured and the
    other links as they are, for less replay than `e`'s final pairs beside the job (('', '', 0)
    when none): the cheapest such link by the measured sample times of its two configurations.
    Rounds between two fast configurations cost a fraction of the job's own samples (fsync after
    every write: 14-84x); a middle link of 2 rounds (a Student-t quantile of 12.7) is often what
    keeps a chain of two links open."""
    chain = links(entries, e)
    base = estimate(entries, chain[-1][1]) if chain and not e.pairs else None
    if base is None:
        return "", "", 0
    band = math.log1p(stats.Policy().margin)
    centre = base[0] + sum(float(np.mean(xs)) for _, _, xs in chain)
    halves = [_t_half(xs) for _, _, xs in chain]
    job, t_e = sample_s(entries[chain[-1][1]], "base"), sample_s(e)
    own = FINAL_PAIRS * ((job or math.inf) + (t_e or math.inf))
    best: tuple[float, str, str, int] | None = None
    for i, (cand, ref, xs) in enumerate(chain):
        if len(xs) >= CHAIN_ROUNDS:
            continue
        projected = [_t_half(xs, CHAIN_ROUNDS) if j == i else h for j, h in enumerate(halves)]
        half = math.hypot(base[1], *projected)
        if abs(centre) - half <= band:
            continue
        rounds = max(ROUNDS, CHAIN_ROUNDS - len(xs))
        cost = rounds * ((sample_s(entries[cand]) or math.inf) + (sample_s(entries[ref]) or math.inf))
        if cost < own and (best is None or cost < best[0]):
            best = (cost, cand, ref, rounds)
    return best[1:] if best else ("", "", 0)


def sample_s(e: Entry, side: str = "fixed") -> float | None:
    """The mean measured time of one of `e`'s samples (its whole sample, every pass; `side`
    "base" for its reference's samples beside the job: the job's own); None before any."""
    times = [float(s.get("sample_s") or s["time_s"] * (s.get("passes") or 1))
             for r in e.rungs if side == "fixed" or not r.get("ref") for s in r[side]]
    return float(np.mean(times)) if times else None


def reference_pairs(entries: dict[str, Entry], e: Entry) -> tuple[str, int]:
    """(reference key, rounds) when more pairs of the reference `e` ran beside, beside the job,
    would decide `e`'s chained verdict and cost less replay than `e`'s own final pairs beside the
    job (('', 0) when not): the reference's interval against the job is what keeps the chain
    open, and narrowing it costs as many job samples as narrowing `e`'s own, so the count of
    pairs decides, priced by the measured sample times. The projection keeps the reference's
    mean and spread, the run-to-run floor and `e`'s ratio to it as measured; the reference gets
    pairs up to ``FINAL_PAIRS`` in all, once (then the final pairs are `e`'s own)."""
    chain = _chain(entries, e)
    if e.pairs or chain is None:
        return "", 0
    ref, ref_log, _, xs = chain
    lead, policy = entries[ref], stats.Policy()
    rd = lead.direct()
    if len(rd) < 2:  # a middle link of a longer chain: the job is not its reference
        return "", 0
    n0, sd = len(rd), float(np.std(rd, ddof=1))
    ratio_half = chain_interval(0.0, 0.0, xs)[2]
    band, centre, own = math.log1p(policy.margin), ref_log + float(np.mean(xs)), FINAL_PAIRS - e.pairs
    job, t_ref, t_e = sample_s(lead, "base"), sample_s(lead), sample_s(e)
    if not (job and t_ref and t_e) or not math.isfinite(sd) or abs(centre) <= band:
        return "", 0
    for rounds in range(ROUNDS, FINAL_PAIRS - n0 + 1):  # the reference's pairs up to a verification's first look
        n = n0 + rounds
        half = math.hypot(stats.t_quantile(1 - policy.look_alpha() / 2, n - 1) * sd / math.sqrt(n), policy.floor())
        if abs(centre) - math.hypot(half, ratio_half) > band:
            cheaper = rounds * (job + t_ref) < own * (job + t_e)
            return (ref, rounds) if cheaper else ("", 0)
    return "", 0
