"""Severity from impact and significance: how much a finding costs, and how sure we are of it.

A finding's severity is the lowest of three levels:

- the rule's ceiling (``severity`` in the rule file);
- its impact: the cost as a share of the run time (``severity_high_share``, 10 %: high;
  ``severity_warn_share``, 2 %: warn; below: info; below ``severity_min_share`` no finding;
  a site may also ask high findings to cost at least ``severity_high_min_s`` seconds);
  a cost of at least ``severity_io_warn_share`` (50 %) of the job's I/O time is at least warn
  (the main thing wrong with the I/O, even when I/O is a small part of the run);
- its significance: a cost resting on counts (operations, bytes, offsets) is as certain as
  the counters; a cost resting on timings is compared with the timing noise of the job
  (:mod:`advisor.facts.noise`): at ``significance_high`` (3) times the noise or more it is
  certain (confidence high), from 1 to 3 times it may be noise (medium, at most warn),
  below the noise it is noise (low, at most info, and the finding says so).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from advisor.config import SiteConfig
from advisor.facts import PARAMS, param
from advisor.findings import SEVERITY_RANK
from advisor.formatting import fmt_pct, fmt_secs
from advisor.records import Frozen

HIGH_SHARE = param("severity_high_share", 0.10, "a finding costing this share of the run time or more is high",
                   kind="fraction")
WARN_SHARE = param("severity_warn_share", 0.02, "below this share of the run time a finding is at most info",
                   kind="fraction")
MIN_SHARE = param("severity_min_share", 0.001, "below this share of the run time there is no finding at all",
                  kind="fraction")
HIGH_MIN_S = param("severity_high_min_s", 0.0,
                   "a finding costing less than this many seconds is at most warn (0: the share decides)",
                   kind="seconds")
IO_WARN_SHARE = param("severity_io_warn_share", 0.5,
                      "a finding costing this share of the job's I/O time or more is at least warn", kind="fraction")
SIGNIFICANT = param("significance_high", 3.0,
                    "a timed effect this many times the timing noise or more is certain (confidence high)",
                    kind="ratio")

EVIDENCE_KINDS = ("timing", "counts")
"""What a rule's cost rests on: compared timings, or counted operations and bytes."""

CAP = {"high": "high", "medium": "warn", "low": "info"}
"""The highest severity each confidence level allows."""


class Limits(Frozen):
    """The policy's numbers: the parameters above, as the site config sets them."""

    high_share: float
    warn_share: float
    min_share: float
    io_warn_share: float
    significant: float
    high_min_s: float

    @classmethod
    def of(cls, config: SiteConfig | None = None, code: str | None = None) -> Limits:
        """The site's limits for rule `code` (global or per-rule overrides, else the defaults)."""
        config = config if config is not None else SiteConfig()

        def get(name: str) -> float:
            return float(config.threshold(name, PARAMS[name].default, code))

        return cls(get(HIGH_SHARE), get(WARN_SHARE), get(MIN_SHARE), get(IO_WARN_SHARE), get(SIGNIFICANT),
                   get(HIGH_MIN_S))


@dataclass(frozen=True)
class Confidence:
    """How sure a finding is, and why, in one line."""

    level: str  # high, medium, low
    reason: str
    ratio: float | None = None  # effect / noise, for timing evidence
    by_cost: str | None = None  # the severity the cost's share alone gives, when the rule's ceiling held it lower

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or k != "by_cost"}


DECLARED = Confidence("high", "stated by the input (counters, settings, outputs), not a timed effect")
"""Rules without a cost: their severity is declared, their evidence is what the input states."""

class Impact(Frozen):
    """What a finding costs: seconds lost, against the run time and the I/O time."""
    cost_s: float
    runtime_s: float
    io_time_s: float | None = None

    @property
    def share(self) -> float | None:
        return self.cost_s / self.runtime_s if self.runtime_s > 0 else None

    @property
    def io_share(self) -> float | None:
        return self.cost_s / self.io_time_s if self.io_time_s else None


def confidence(kind: str, impact: Impact, noise: dict | None, limits: Limits, counted: str = "",
               estimate: tuple[str, str] = ("", "")) -> Confidence:
    """The confidence of a cost resting on evidence of `kind`, against the job's timing `noise`
    ({'seconds', 'why'} from the fact ``timing_noise``; None when unknown); `counted` names the
    count behind counted evidence ('small_write_count 262,144'); `estimate` the Lustre defaults a
    counted cost's seconds rest on and the file system the job ran on instead."""
    if kind == "counts":
        what = f" ({counted})" if counted else ""
        assumed, ran_on = estimate
        if assumed:
            # the count is certain, the seconds it costs are not: they are priced with a Lustre RPC's
            # latency and size on a file system that has neither (ext4, NFS, GPFS): an estimate
            return Confidence("medium", f"counted{what}, but its seconds are priced with Lustre's defaults "
                              f"(see Assumed values) and this job ran on {ran_on}: an estimate")
        return Confidence("high", f"counted{what}, not timed: certain however short the run")
    if not noise or not noise.get("seconds"):
        return Confidence("medium", "timed, and the timing noise of this input is unknown")
    effect, floor = impact.cost_s, float(noise["seconds"])
    ratio = effect / floor
    versus = f"timing noise {fmt_secs(floor)} ({noise['why']})"
    if ratio >= limits.significant and noise.get("page_cache"):
        return Confidence("medium", f"{fmt_secs(effect)} is {ratio:.1f}x the {versus}, but timings in the "
                          "page cache do not show how the file system behaves", round(ratio, 3))
    if ratio >= limits.significant:
        return Confidence("high", f"{fmt_secs(effect)} is {ratio:.1f}x the {versus}", round(ratio, 3))
    if ratio >= 1:
        return Confidence("medium", f"{fmt_secs(effect)} is only {ratio:.1f}x the {versus}: may be noise",
                          round(ratio, 3))
    over = f" over a {fmt_secs(impact.runtime_s)} run" if impact.runtime_s > 0 else ""
    return Confidence("low", f"{fmt_secs(effect)}{over}: within {versus}", round(ratio, 3))


def impact_level(impact: Impact, limits: Limits) -> str | None:
    """high / warn / info from the cost's share of the run (and of the I/O time); None: too small to report."""
    share = impact.share
    if share is None:
        return "high"  # run time unknown: the ceiling and the significance decide
    if share < limits.min_share:
        return None
    if share >= limits.high_share and impact.cost_s >= limits.high_min_s:
        return "high"
    if share >= limits.warn_share or (impact.io_share or 0) >= limits.io_warn_share:
        return "warn"
    return "info"


def grade(ceiling: str, kind: str, impact: Impact, noise: dict | None,
          limits: Limits, counted: str = "", estimate: tuple[str, str] = ("", "")) -> tuple[str | None, Confidence]:
    """The finding's severity (None: no finding) and its confidence."""
    sure = confidence(kind, impact, noise, limits, counted, estimate)
    by_cost = impact_level(impact, limits)
    if by_cost is None:
        return None, sure
    severity = lowest(ceiling, by_cost, CAP[sure.level])
    if severity == ceiling and SEVERITY_RANK[ceiling] > SEVERITY_RANK[by_cost]:  # the rule's ceiling, not the cost
        sure = replace(sure, by_cost=by_cost)
    return severity, sure


def lowest(*severities: str) -> str:
    return max(severities, key=SEVERITY_RANK.__getitem__)


def describe(impact: Impact) -> str:
    """'8.4 ms (24.2% of the run, 36.5% of the I/O time)' for messages and docs."""
    parts = [fmt_pct(impact.share) + " of the run"] if impact.share is not None else []
    if impact.io_share is not None and impact.io_share <= 1:  # waiting is not I/O time: no share over 100 %
        parts.append(fmt_pct(impact.io_share) + " of the I/O time")
    return f"{fmt_secs(impact.cost_s)} ({', '.join(parts)})" if parts else fmt_secs(impact.cost_s)
