"""A held-out file system: the campaign's fixes measured on another mount than the model learned.

The shipped speedup model learned every measured fix on one mount (the development VM's ext4,
1-2 ranks). What it says of another file system is judged on a sample of the campaign's own
workloads (:func:`sample`, fixed before anything was measured on the other mount), measured by
the campaign's very protocol (:func:`advisor.models.campaign.run`: ``advisor.verify.measure``,
40 s a workload) on that mount, and predicted by the model that never saw it.

The design (committed before the first measurement on the other mount):

- :data:`PER_FAMILY` workloads of each of the six pattern families, chosen greedily so that each
  next one adds the most factor values its family's sample lacks (interface, direction, ranks,
  syncing, volume, layout, the fix transforms it is paired with), ties broken by name: a sample
  spread over every interface, direction and transform, not the first workloads in some order;
- measured families interleaved (:func:`order`), so a measurement cut short covers all six;
- the families split in two halves *before* any measurement (:data:`FIT_FAMILIES`,
  :data:`JUDGED_FAMILIES`), each half with every geometry and both size classes: whatever is
  learned from the other mount's measurements (a calibration of cross-mount residuals) is fitted
  on one half and judged on the other, never on what it saw.
"""

from __future__ import annotations

from advisor.models.campaign import Workload, families, fixes, geometry, pattern, size_class

PER_FAMILY = 8
FIT_FAMILIES = ("small-sequential", "large-random", "small-unaligned")
"""The families whose other-mount measurements may fit anything (a cross-mount calibration)."""
JUDGED_FAMILIES = ("large-sequential", "small-random", "large-unaligned")
"""The families that judge it: never seen by what is fitted on the other mount."""


def _values(w: Workload) -> set[tuple[str, str]]:
    """The factor values a workload brings to a sample."""
    p = w.point
    out = {("api", p.api), ("direction", w.direction), ("nprocs", str(p.nprocs)), ("layout", p.layout),
           ("fsync", "none" if p.fsync == "none" else "synced"), ("volume", p.volume)}
    out |= {("transform", f["transform"]) for f in fixes(w)}
    return out


def sample(per_family: int = PER_FAMILY) -> dict[str, list[Workload]]:
    """Pattern family -> its sampled workloads (greedy cover of factor values, ties by name)."""
    out = {}
    for family, workloads in families().items():
        pool = sorted(workloads, key=lambda w: w.name)
        chosen: list[Workload] = []
        covered: set[tuple[str, str]] = set()
        while pool and len(chosen) < per_family:
            best = max(pool, key=lambda w: (len(_values(w) - covered), -pool.index(w)))
            pool.remove(best)
            chosen.append(best)
            covered |= _values(best)
            if not any(_values(w) - covered for w in pool):
                covered = set()  # every value seen: the next pick covers them again, spread
        out[family] = chosen
    return out


def order(per_family: int = PER_FAMILY) -> list[Workload]:
    """The sampled workloads, families interleaved (a cut-short measurement covers all six)."""
    chosen = list(sample(per_family).values())
    return [group[i] for i in range(per_family) for group in chosen if i < len(group)]


def half(family: str) -> str:
    """``fit`` or ``judged``: which half of the split a family belongs to."""
    if family in FIT_FAMILIES:
        return "fit"
    if family in JUDGED_FAMILIES:
        return "judged"
    raise ValueError(f"{family}: not a family of the campaign")


__all__ = ["FIT_FAMILIES", "JUDGED_FAMILIES", "PER_FAMILY", "geometry", "half", "order", "pattern", "sample",
           "size_class"]
