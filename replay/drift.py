"""What moved while a fix was measured: the spread between time blocks of one measurement, the
target's run-to-run spread from its history, and the node's load.

Pairing cancels what slows both samples of one round; it does not cancel what changes the
*effect* of a fix over minutes (the load beside a CPU-hungry fix, a writeback storm), which
is what makes one measurement disagree with the next. Three estimates of that spread, as a
standard deviation of ln(speedup), widen a verification's interval (:func:`between_runs`):

- **the measurement's own blocks**: consecutive pairs grouped in blocks of :data:`BLOCK`
  rounds (two mirrored round pairs: a linear drift cancels within each); DerSimonian-Laird's
  estimate of the variance between the blocks' means beyond what their pairs explain;
- **this fix's runs on this target** (the history, this run included): the same estimate
  between whole measurements;
- **the target's history** over all its fixes (one common variance, as
  :func:`replay.stats.between_run_sd` pools it), which replaces the site's constant
  (``[replay] reproducibility``) once it rests on :data:`MIN_HISTORY_DF` degrees of freedom
  (runs beyond each fix's first, summed over the fixes); before that the constant stands.

The largest of them is used, and the result says which.

The load: when the node's 1-minute load average moved by at least :data:`LOAD_MOVE` of its
cores during the measurement *and* the pair log-ratios follow it (their regression on the
load has a slope whose 95 % interval excludes 0, and the fitted speedups at the two ends of
the load range fall on different sides of a decision line), no single verdict describes the
fix: :func:`load_effect` says so, and the verification is inconclusive with that reason.
The CPUs: every sample records how long its ranks were runnable but held off a CPU by other
work (the kernel's ``run_delay``, :func:`replay.rank.cpu_wait_s`). A fix that changes what the
ranks do on their CPUs (collective buffering's exchange, more or fewer calls) meets a busy node
differently from the baseline, so its speedup there is not the one a quiet node measures. When
the ranks waited :data:`WAIT_SHARE` of either side's time, :func:`cpu_contention` measures the
speedup again with the waits taken out of every sample: the interval becomes the span of both,
and a verdict stands only if both give it.
Only numpy and the standard library: the executor imports :mod:`replay.stats`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from replay import stats

BLOCK = 4  # rounds per block: two mirrored round pairs (replay.sampling), a linear drift cancels
MIN_HISTORY_DF = 4  # runs beyond each fix's first, in all, before the history replaces the site constant
LOAD_MOVE = 0.5  # a load range of half the cores or more has moved (2 cores: 1.9 -> 2.9)
WAIT_SHARE = 0.05  # ranks held off their CPUs for 5 % of a side's time: the node was busy


@dataclass(frozen=True)
class Spread:
    """The run-to-run standard deviation of ln(speedup) a verification's interval adds, and why."""

    sd: float
    source: str  # "the site's [replay] reproducibility", "this target's history (12 runs of 4 fixes)", ...


def block_sd(log_ratios, size: int = BLOCK) -> tuple[float, int]:
    """The between-block standard deviation of consecutive blocks of `size` pairs (a trailing
    partial block of at least 2 pairs counts) and the number of blocks; nan under 2 blocks."""
    d = np.asarray(log_ratios, dtype=float)
    blocks = [d[i:i + size] for i in range(0, d.size, size)]
    blocks = [b for b in blocks if b.size >= 2]
    if len(blocks) < 2:
        return float("nan"), len(blocks)
    return stats.between_run_sd([[mean_se(b) for b in blocks]]), len(blocks)


def mean_se(log_ratios) -> tuple[float, float]:
    """A measurement's mean log-ratio and its standard error (nan with under 2 pairs)."""
    d = np.asarray(log_ratios, dtype=float)
    if d.size < 2:
        return (float(d.mean()) if d.size else float("nan")), float("nan")
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))


def history_df(groups) -> int:
    """Runs beyond the first of each group: the degrees of freedom of a between-run estimate."""
    return sum(max(len(g) - 1, 0) for g in groups)


def between_runs(site: float, log_ratios, history: dict[str, list[tuple[float, float]]],
                 fix: str) -> Spread:
    """The run-to-run spread of one verification. `site`: ``[replay] reproducibility``;
    `log_ratios`: this measurement's pairs; `history`: the target's earlier runs as (mean, se)
    per fix key; `fix`: this fix's key (this run joins its runs)."""
    here = mean_se(log_ratios)
    runs = [*history.get(fix, []), here] if math.isfinite(here[1]) else list(history.get(fix, []))
    candidates = [prior(site, {**history, fix: runs})]
    if len(runs) >= 2 and math.isfinite(here[1]):
        candidates.append(Spread(stats.between_run_sd([runs]), f"this fix's {len(runs)} runs on this target"))
    within, nblocks = block_sd(log_ratios)
    if math.isfinite(within):
        candidates.append(Spread(within, f"this measurement's {len(log_ratios)} pairs in {nblocks} blocks"))
    best = max(candidates, key=lambda s: s.sd if math.isfinite(s.sd) else -1.0)
    return Spread(min(best.sd, 0.99), best.source)  # the interval's check wants < 1; e^(1.96) says enough


def prior(site: float, history: dict[str, list[tuple[float, float]]]) -> Spread:
    """The target's run-to-run spread before this fix's measurement is looked at: its history's
    pooled estimate once it has ``MIN_HISTORY_DF`` runs beyond each fix's first (in all), else the
    site's constant (the executor stops on it; the verdict adds the other two estimates)."""
    groups = [g for g in history.values() if len(g) >= 2]
    if history_df(groups) < MIN_HISTORY_DF:
        return Spread(site, "the site's [replay] reproducibility")
    nruns = sum(len(g) for g in groups)
    return Spread(stats.between_run_sd(groups), f"this target's history ({nruns} runs of {len(groups)} fixes)")


@dataclass(frozen=True)
class LoadEffect:
    """The speedup followed the node's load during the measurement."""

    low: float  # the lowest and highest load average of the pairs
    high: float
    cores: int
    at_low: float  # the fitted speedup at each end
    at_high: float

    def text(self) -> str:
        return (f"the load moved from {self.low:.1f} to {self.high:.1f} on {self.cores} "
                f"core{'' if self.cores == 1 else 's'} during the measurement and the speedup followed it "
                f"({self.at_low:.2f}x at load {self.low:.1f}, {self.at_high:.2f}x at {self.high:.1f})")


def load_effect(log_ratios, loads, cores: int | None, margin: float) -> LoadEffect | None:
    """The load dependence that makes one verdict wrong for part of the measurement, or None:
    the load range reached ``LOAD_MOVE`` of the cores, the pairs' regression on the load has a
    slope whose 95 % interval excludes 0, and the fitted speedups at the two ends of the range
    would get different verdicts (above 1 + margin, within, below 1 / (1 + margin))."""
    d = np.asarray(log_ratios, dtype=float)
    x = np.asarray(loads, dtype=float)[:d.size]
    ok = np.isfinite(x)
    d, x = d[ok], x[ok]
    if d.size < 4 or not cores or x.max() - x.min() < LOAD_MOVE * cores:
        return None
    xc = x - x.mean()
    sxx = float((xc * xc).sum())
    slope = float((xc * (d - d.mean())).sum() / sxx)
    resid = d - d.mean() - slope * xc
    se = math.sqrt(float((resid * resid).sum()) / (d.size - 2) / sxx)
    if abs(slope) <= stats.t_quantile(0.975, d.size - 2) * se:
        return None
    at_low = math.exp(d.mean() + slope * (x.min() - x.mean()))
    at_high = math.exp(d.mean() + slope * (x.max() - x.mean()))
    if _side(at_low, margin) == _side(at_high, margin):
        return None
    return LoadEffect(float(x.min()), float(x.max()), int(cores), at_low, at_high)


def _side(speedup: float, margin: float) -> int:
    return 1 if speedup > 1 + margin else -1 if speedup < 1 / (1 + margin) else 0


@dataclass(frozen=True)
class CpuContention:
    """Other work held the replay's ranks off their CPUs during a measurement."""

    baseline_share: float  # median share of a sample's time the slowest-waiting rank waited
    fixed_share: float
    unwaited: stats.Decision  # the test on the samples with the waits taken out

    def text(self) -> str:
        lo, hi = self.unwaited.ci
        return (f"other work held the ranks off their CPUs for {self.fixed_share:.0%} of the fix's time and "
                f"{self.baseline_share:.0%} of the baseline's; without those waits the fix measures "
                f"{self.unwaited.speedup:.2f}x ({lo:.2f}x-{hi:.2f}x, {self.unwaited.verdict})")

    def as_dict(self) -> dict:
        return {"baseline_share": round(self.baseline_share, 4), "fixed_share": round(self.fixed_share, 4),
                "speedup_without": round(self.unwaited.speedup, 4),
                "ci95_without": [round(x, 4) for x in self.unwaited.ci], "verdict_without": self.unwaited.verdict}


def wait_share(runs: list[dict]) -> float | None:
    """The median share of a sample's time its ranks waited for a CPU (None: not recorded)."""
    shares = [r["cpu_wait_s"] / r["time_s"] for r in runs
              if r.get("cpu_wait_s") is not None and r.get("time_s", 0) > 0]
    return float(np.median(shares)) if shares and len(shares) == len(runs) else None


def cpu_contention(base_runs: list[dict], fixed_runs: list[dict], policy: stats.Policy) -> CpuContention | None:
    """The measurement again without the CPU waits, when the ranks waited ``WAIT_SHARE`` of
    either side's time; None on a node that left them their CPUs (or kept no schedstat)."""
    shares = wait_share(base_runs), wait_share(fixed_runs)
    if None in shares or max(shares) < WAIT_SHARE:
        return None

    def unwaited(runs: list[dict]) -> list[float]:  # at least a tenth of the sample: a rank ran
        return [max(r["time_s"] - r["cpu_wait_s"], r["time_s"] / 10) for r in runs]

    test = stats.sequential(stats.log_ratios(unwaited(base_runs), unwaited(fixed_runs)), policy, final=True)
    return CpuContention(shares[0], shares[1], test)


def with_contention(test: stats.Decision, busy: CpuContention) -> stats.Decision:
    """The verdict over both measurements: the span of their intervals; their verdict if they
    agree, else inconclusive (which of them the job would see depends on its nodes' load)."""
    ci = (min(test.ci[0], busy.unwaited.ci[0]), max(test.ci[1], busy.unwaited.ci[1]))
    if busy.unwaited.verdict == test.verdict:
        return replace(test, ci=ci)
    return replace(test, ci=ci, verdict=stats.INCONCLUSIVE, more_pairs=None, settled=False)
