"""Before/after statistics: a sequential paired test on log-ratios and its verdict.

A verification runs the baseline and each fix in rounds (one sample of each per round, in
a shuffled order); round *i* gives the paired log-ratio ``d_i = ln(baseline_i / fixed_i)``
of the time per pass. Whatever slows the machine during a round (another job, a writeback
burst) slows both samples of the pair and cancels in ``d_i``.

The test looks at the pairs only at the sample sizes of :func:`look_schedule` and, at each
look, computes a Student-t interval of the mean log-ratio at the level ``1 - alpha / K``
(``K`` looks in all: Bonferroni), so the chance that *any* look's interval misses the true
speedup stays under ``alpha`` however many looks are taken, whatever made the measurement
stop. The first look that decides with an interval narrow enough to report the speedup
(``precision``: within x/÷1.25) ends the fix's measurement; a look that decides with a wider
interval settles the verdict, and measuring goes on for the speedup's sake:

- ``improved``:   the interval lies above ``1 + margin`` (faster by more than the margin);
- ``regressed``:  the interval lies below ``1 / (1 + margin)``;
- ``equivalent``: the interval lies inside ``[1 / (1 + margin), 1 + margin]``;
- ``inconclusive``: no look decided before the pairs or the budget ran out.

The pairs of one measurement share what differs from one measurement to the next (the
machine's load and CPU steal, which a CPU-bound fix and an I/O-bound baseline feel
differently; where the files landed): a demo's collective fix measured 0.89x in one run and
0.99x with a +-4 % interval in the next. The interval therefore adds, in quadrature, the
target's run-to-run reproducibility (``reproducibility``: the standard deviation of
ln(speedup) between measurements, 0.05 by default, measured by bench/verify_stability.py) at
95 %; no number of pairs narrows it below that floor, so a verdict that a rerun would reverse
stays ``inconclusive``. The bounds are compared as they are reported: 4 significant digits,
rounded outwards.

``not-verifiable`` is the fifth verdict, for fixes that could not be replayed at all.
Only numpy and the standard library are used: the executor decides on compute nodes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

IMPROVED, REGRESSED, EQUIVALENT, INCONCLUSIVE, NOT_VERIFIABLE = (
    "improved", "regressed", "equivalent", "inconclusive", "not-verifiable")
VERDICTS = (IMPROVED, REGRESSED, EQUIVALENT, INCONCLUSIVE, NOT_VERIFIABLE)
DECIDED = (IMPROVED, REGRESSED, EQUIVALENT)
SIGNIFICANT = 4  # digits a reported speedup or bound keeps (advisor/verify.py)
Z95 = 1.959964  # the reproducibility is one draw per measurement: no correction for the looks


@dataclass(frozen=True)
class Policy:
    """When the sequential test looks, and what it calls a practical difference."""

    margin: float = 0.05  # a speedup within +-5 % is "equivalent"
    reproducibility: float = 0.05  # sd of ln(speedup) between measurements, unseen by one measurement's pairs
    precision: float = 0.25  # a decided verdict stops the measurement once its interval is within x/÷1.25
    alpha: float = 0.05  # over all looks together
    min_pairs: int = 5
    max_pairs: int = 40
    growth: float = 1.4  # each look after the first has about 40 % more pairs

    def looks(self) -> tuple[int, ...]:
        return look_schedule(self.min_pairs, self.max_pairs, self.growth)

    def look_alpha(self) -> float:
        """The per-look level; one look more than scheduled is allowed (budget stop)."""
        return self.alpha / (len(self.looks()) + 1)

    @classmethod
    def fixed(cls, pairs: int, **knobs: float) -> Policy:
        """A single look after exactly `pairs` pairs (``--repeat N``); `knobs`: margin, reproducibility."""
        return cls(min_pairs=pairs, max_pairs=pairs, **knobs)

    def floor(self) -> float:
        """The half-width, in ln(speedup), that no number of pairs narrows: the run-to-run
        reproducibility at 95 %."""
        return Z95 * self.reproducibility

    def precise(self, decision: Decision) -> bool:
        """Whether a decided interval is narrow enough for its speedup to be reported: the same
        verdict with a speedup far off would read as a different result the next time."""
        lo, hi = decision.ci
        return lo > 0 and math.log(hi / lo) / 2 <= math.log1p(self.precision)


def look_schedule(min_pairs: int, max_pairs: int, growth: float = 1.4) -> tuple[int, ...]:
    """Pair counts at which the test looks: min_pairs, then about `growth` times more, up to
    max_pairs (always included)."""
    first = max(2, min_pairs)
    last = max(first, max_pairs)
    looks = [first]
    while looks[-1] < last:
        looks.append(min(last, max(looks[-1] + 1, math.ceil(looks[-1] * growth))))
    return tuple(looks)


@dataclass(frozen=True)
class Decision:
    """The test's state after `pairs` pairs."""

    verdict: str
    pairs: int
    speedup: float  # geometric mean of baseline / fixed over the pairs
    ci: tuple[float, float]  # at the per-look level (simultaneous 1 - alpha over the looks)
    spread: float  # standard deviation of the log-ratios
    more_pairs: int | None = None  # inconclusive: pairs that would likely decide (None: cannot say)
    settled: bool = False  # decided with an interval within the policy's precision: measuring can stop

    @property
    def decided(self) -> bool:
        return self.verdict in DECIDED


def decide(log_ratios, policy: Policy, level_alpha: float | None = None) -> Decision:
    """The verdict of one look at the paired log-ratios (no stopping rule: see :func:`sequential`)."""
    d = np.asarray(log_ratios, dtype=float)
    n = int(d.size)
    alpha = policy.look_alpha() if level_alpha is None else level_alpha
    if n < 2:
        s = float(math.exp(d.mean())) if n else float("nan")
        return Decision(INCONCLUSIVE, n, s, (float("nan"), float("nan")), float("nan"), None)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    half = math.hypot(t_quantile(1.0 - alpha / 2.0, n - 1) * sd / math.sqrt(n), policy.floor())
    lo, hi = outward(math.exp(mean - half), math.exp(mean + half))
    top, bottom = 1.0 + policy.margin, 1.0 / (1.0 + policy.margin)
    if lo > top:
        verdict = IMPROVED
    elif hi < bottom:
        verdict = REGRESSED
    elif bottom <= lo and hi <= top:
        verdict = EQUIVALENT
    else:
        verdict = INCONCLUSIVE
    band = math.log1p(policy.margin)
    more = None if verdict != INCONCLUSIVE else _pairs_to_decide(mean, sd, n, band, alpha, policy.floor())
    return Decision(verdict, n, math.exp(mean), (lo, hi), sd, more)


def outward(lo: float, hi: float, digits: int = SIGNIFICANT) -> tuple[float, float]:
    """The interval widened to the `digits` significant digits it is reported with: the verdict
    is decided on the bounds a reader sees (an interval from 1.0502 decided "improved" over a
    5 % margin but was reported from 1.05)."""
    return _to_digits(lo, digits, down=True), _to_digits(hi, digits, down=False)


def _to_digits(x: float, digits: int, down: bool) -> float:
    if not math.isfinite(x) or x <= 0:
        return x
    step = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    near = float(f"{x:.{digits}g}")  # the printed value; one step out when it rounded inwards
    if (near > x) if down else (near < x):
        near = float(f"{near - step if down else near + step:.{digits}g}")
    return near


def sequential(log_ratios, policy: Policy, *, final: bool = False) -> Decision:
    """The test after the pairs so far, looking only at the scheduled pair counts: the first
    look that decided with an interval within the policy's precision (settled); else the
    latest look that decided (its verdict holds, its interval is wider); else inconclusive.
    `final`: the measurement ends here (budget or last round), so the current count is
    looked at even when it is not on the schedule."""
    d = np.asarray(log_ratios, dtype=float)
    counts = [n for n in policy.looks() if n <= d.size]
    if final and d.size >= 2 and d.size not in counts:
        counts.append(d.size)
    decided = None
    for n in counts:
        look = decide(d[:n], policy)
        if look.decided and policy.precise(look):
            return replace(look, settled=True)
        decided = look if look.decided else decided
    if decided is not None:
        return decided
    last = decide(d, policy)
    return Decision(INCONCLUSIVE, last.pairs, last.speedup, last.ci, last.spread,
                    last.more_pairs if not last.decided else None)


def _pairs_to_decide(mean: float, sd: float, n: int, band: float, alpha: float, floor: float) -> int | None:
    """Pairs at which an interval of this spread around this mean would clear the nearest
    boundary (the margin for improved/regressed, or fit the band for equivalent); None when
    the reproducibility floor alone is wider than the distance to it."""
    distance = abs(abs(mean) - band)
    room = distance * distance - floor * floor
    if sd <= 0 or room <= 1e-12:
        return None
    z = t_quantile(1.0 - alpha / 2.0, max(n - 1, 30))
    need = math.ceil((z * sd) ** 2 / room)
    return max(need, n + 1) if need < 100_000 else None


def log_ratios(baseline, fixed) -> np.ndarray:
    """ln(baseline / fixed) per pair (times > 0; pairs are rounds)."""
    b, f = np.asarray(baseline, dtype=float), np.asarray(fixed, dtype=float)
    n = min(b.size, f.size)
    return np.log(np.maximum(b[:n], 1e-12) / np.maximum(f[:n], 1e-12))


def between_run_sd(groups) -> float:
    """The run-to-run reproducibility behind ``Policy.reproducibility``: the standard deviation of
    ln(speedup) between measurements beyond what each one's pairs explain. `groups`: per fix,
    its runs' (mean log-ratio, standard error of that mean). DerSimonian-Laird's moment estimate
    of the between-run variance, one variance common to all the fixes: the sum over fixes of
    (Q - (k - 1)) over the sum of their scaling terms, 0 when the runs agree within their errors."""
    excess, scale = 0.0, 0.0
    for runs in groups:
        m = np.array([r[0] for r in runs], dtype=float)
        w = 1.0 / np.maximum(np.array([r[1] for r in runs], dtype=float), 1e-9) ** 2
        if m.size < 2:
            continue
        centre = float((w * m).sum() / w.sum())
        excess += float((w * (m - centre) ** 2).sum()) - (m.size - 1)
        scale += float(w.sum() - (w * w).sum() / w.sum())
    return math.sqrt(max(0.0, excess / scale)) if scale > 0 else float("nan")


def relative_spread(times) -> float:
    """Run-to-run spread of one variant: the standard deviation of ln(time) (0.05 ~ +-5 %)."""
    t = np.log(np.maximum(np.asarray(times, dtype=float), 1e-12))
    return float(t.std(ddof=1)) if t.size > 1 else float("nan")


def median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


# -- Student's t without scipy (the executor imports only numpy) ---------------------------

def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with integer `df` (Abramowitz & Stegun 26.7.3-26.7.4)."""
    if df >= 5000:  # the series needs df terms; the normal is within 1e-4 here
        return 0.5 * math.erfc(-t / math.sqrt(2.0))
    theta = math.atan2(t, math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2:
        term, total = c, (c if df > 1 else 0.0)
        for k in range(3, df, 2):
            term *= c * c * (k - 1) / k
            total += term
        a = (2.0 / math.pi) * (theta + s * total)
    else:
        term, total = 1.0, 1.0
        for k in range(2, df, 2):
            term *= c * c * (k - 1) / k
            total += term
        a = s * total
    return min(1.0, max(0.0, 0.5 + 0.5 * a))  # rounding must not leave [0, 1]


@functools.cache  # the looks ask for the same few (level, df) pairs again and again
def t_quantile(p: float, df: int) -> float:
    """The `p` quantile of Student's t with integer `df` >= 1 (bisection on :func:`t_cdf`)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must lie in (0, 1)")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)
