"""What the replayer measured of one fix (:mod:`advisor.verify`), and the one sentence that
says it in the terminal, the JSON, the HTML and the docs.

Five verdicts, one meaning each (the test behind them: :mod:`replay.stats`):

- ``improved``: faster by more than the margin (the 95 % interval lies above 1 + margin);
- ``regressed``: slower by more than the margin (the interval lies below 1 / (1 + margin));
- ``equivalent``: the interval lies within the margin (no difference worth applying it for);
- ``inconclusive``: the runs and the budget ran out before any of those held;
- ``not-verifiable``: the fix could not be replayed here (the reason says why).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from advisor.formatting import fmt_secs, fmt_speedup, fmt_speedup_range
from replay.stats import (DECIDED, EQUIVALENT, IMPROVED, INCONCLUSIVE, NOT_VERIFIABLE, REGRESSED,
                          VERDICTS, Z95)

__all__ = ["DECIDED", "MEASURED", "VERDICTS", "Side", "Verification", "sentence"]

MEASURED = (IMPROVED, REGRESSED, EQUIVALENT, INCONCLUSIVE)  # verdicts with a measured speedup
LEGACY = {"no-change": INCONCLUSIVE}  # verdicts of diagnoses saved before the sequential test


@dataclass
class Side:
    """One variant (as recorded, or with the fix) over its samples."""

    median_s: float | None = None  # time per pass, median over the samples
    bandwidth_mib_s: float | None = None
    runs_s: list[float] = field(default_factory=list)  # time per pass of each sample
    passes: int = 1  # passes per sample (auto-ranging)
    spread: float | None = None  # run-to-run: standard deviation of ln(time per pass)
    bytes: int = 0  # moved by one pass
    data_ops: int = 0
    cpu_wait_share: float | None = None  # median share of a sample's time the ranks waited for a CPU

    @classmethod
    def from_dict(cls, doc: Any) -> Side | None:
        return cls(**_known(cls, doc)) if isinstance(doc, dict) else None


@dataclass
class Verification:
    """The replay of one fix: its verdict, the speedup with its interval, and how it was measured."""

    verdict: str
    reason: str = ""  # the one sentence (see :func:`sentence`); for not-verifiable, why
    speedup: float | None = None  # time as recorded / time with the fix (geometric mean of the pairs)
    ci95: list[float] | None = None  # 95 % over all the looks the test took
    pairs: int = 0  # rounds in which both variants ran
    repeat: int = 0  # v1 name of `pairs`
    margin: float = 0.05
    reproducibility: float = 0.0  # sd of ln(speedup) between runs that widened the interval (0: none)
    reproducibility_source: str = ""  # where it came from: the site's constant, the target's history, ...
    more_pairs: int | None = None  # inconclusive: pairs that would likely decide
    more_s: float | None = None  # ... and about how long they would take
    stop_reason: str = ""  # decided, max-pairs, time budget, bytes budget
    baseline: Side | None = None
    fixed: Side | None = None
    min_sample_s: float | None = None
    cache_policy: str | None = None
    target: str | None = None
    fstype: str | None = None
    scale: float | None = None
    np: int | None = None
    nprocs_source: int | None = None
    source: str | None = None
    layouts: dict[str, Any] | None = None  # layout fixes: {baseline, fixed} as read back after the run
    load: dict[str, Any] | None = None  # rank 0's node's 1-minute load average: start, end, min, max; cores
    cpu_contention: dict[str, Any] | None = None  # the ranks waited for CPUs: the speedup without the waits

    @property
    def measured(self) -> bool:
        return self.verdict in MEASURED and isinstance(self.speedup, (int, float))

    @property
    def detail(self) -> str:
        """The sentence after its verdict ('2.26x faster (95 % CI ...)'), beside a verdict badge."""
        head, sep, rest = self.reason.partition(": ")
        return rest if sep and head.replace(" ", "-") == self.verdict else self.reason

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Any) -> Verification | None:
        """From a saved diagnosis (unknown keys dropped; a verdict of an older version mapped)."""
        if not isinstance(doc, dict) or not isinstance(doc.get("verdict"), str):
            return None
        known = _known(cls, doc)
        known["verdict"] = LEGACY.get(known["verdict"], known["verdict"])
        if known["verdict"] not in VERDICTS:
            return None
        known["baseline"], known["fixed"] = Side.from_dict(doc.get("baseline")), Side.from_dict(doc.get("fixed"))
        return cls(**known)

    @classmethod
    def not_verifiable(cls, why: str, **context: Any) -> Verification:
        return cls(verdict=NOT_VERIFIABLE, reason=sentence(NOT_VERIFIABLE, why=why), **context)


def sentence(verdict: str, speedup: float | None = None, ci95: Any = None, pairs: int = 0,
             margin: float = 0.05, more_pairs: int | None = None, more_s: float | None = None,
             stop_reason: str = "", why: str = "", reproducibility: float = 0.0, load_moved: str = "") -> str:
    """The verdict in words, the same in every reporter:

    'improved: 2.26x faster (95 % CI 1.72x-2.96x, 5 pairs)'; one pair gives no interval and
    says so ('inconclusive: speedup 1.20x, 1 pair: no interval'); `load_moved`: why no verdict
    holds for the whole measurement (:meth:`replay.drift.LoadEffect.text`)."""
    band = fmt_speedup_range(ci95)
    counted = f"{pairs} pair{'' if pairs == 1 else 's'}"
    if verdict == NOT_VERIFIABLE or speedup is None or not math.isfinite(speedup):
        return f"not verifiable: {why}" if why else "not verifiable"
    if verdict == IMPROVED:
        return f"improved: {fmt_speedup(speedup)} faster (95 % CI {band}, {counted})"
    if verdict == REGRESSED:
        return (f"regressed: {fmt_speedup(1 / speedup)} slower (speedup {fmt_speedup(speedup)}, "
                f"95 % CI {band}, {counted})")
    if verdict == EQUIVALENT:
        return (f"equivalent: within +-{margin:.0%} (speedup {fmt_speedup(speedup)}, 95 % CI {band}, "
                f"{counted})")
    measured = f"95 % CI {band} after {counted}" if band else f"{counted}: no interval"
    text = f"inconclusive: speedup {fmt_speedup(speedup)}, {measured}"
    text += f" ({stop_reason})" if stop_reason else ""
    if load_moved:
        return text + f"; {load_moved}"
    if not band:
        return text
    if more_pairs:
        took = f", ~{fmt_secs(more_s)}" if more_s else ""
        return text + f"; about {more_pairs} pairs in all{took} would decide"
    if reproducibility:
        return text + (f"; more pairs would not decide: the effect is within this target's run-to-run "
                       f"reproducibility (+-{math.expm1(Z95 * reproducibility):.0%}) of the +-{margin:.0%} margin")
    return text + f"; the effect sits at the +-{margin:.0%} margin: more pairs would not decide"


def _known(cls: type, doc: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in doc.items() if k in names}
