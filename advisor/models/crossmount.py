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


# --- judging (the protocol, committed with the design before any figure of the other mount) ---

def judge_shipped(home: list[dict], other: list[dict]):
    """The shipped model (every fix of the home mount) predicting the other mount's fixes, with its
    own interval (out-of-family, home mount): the first figure of an unseen file system. Its
    workloads are the campaign's own, so what it misses is the mount, not the workload."""
    import numpy as np

    from advisor.models import speedup

    train, held = speedup.Rows.of(home), speedup.Rows.of(other)
    return speedup.judge(held, np.ones(len(held), bool), speedup.fit(train), speedup.ranges(train),
                         speedup.out_of_family_width(train))


def mount_scores(home, other, without: str | None = None):
    """The cross-mount scores of the fit half only (:func:`advisor.models.speedup.mount_scores`):
    each fit-half fix of `other` predicted by a home-mount model that saw neither its family nor
    `without`."""
    from advisor.models import speedup

    return speedup.mount_scores(home, other, FIT_FAMILIES, without)


def judge_cross(home: list[dict], other: list[dict], calibration: str = "mount"):
    """Each judged family of the other mount predicted by a home-mount model that never saw the
    family, its interval the 80 % conformal quantile of :func:`mount_scores` (the fit half, from
    models that saw neither the judged family nor their own): a new workload on a new mount, the
    cross-mount calibration judged on fixes it did not see. ``calibration="home"``: the interval of
    today's protocol instead (the home mount's out-of-family residuals), for comparison."""
    from advisor.models import speedup

    h, o = speedup.Rows.of(home), speedup.Rows.of(other)
    out = []
    for family in JUDGED_FAMILIES:
        held = o.family == family
        if not held.any():
            continue
        train = h.subset(h.family != family)
        width = (speedup.calibrated_width(mount_scores(h, o, without=family)) if calibration == "mount"
                 else speedup.out_of_family_width(train))
        out += speedup.judge(o, held, speedup.fit(train), speedup.ranges(train), width)
    return out


def shift(home: list[dict], other: list[dict]) -> dict[tuple[str, str], float]:
    """(workload, fix) -> log10 of the speedup measured on the other mount over the home mount's,
    for every fix measured on both: what the mount alone changes of a fix's speedup."""
    import math

    measured = {(r["workload"], r["fix"]): float(r["speedup"]) for r in home}
    return {(r["workload"], r["fix"]): math.log10(float(r["speedup"]) / measured[(r["workload"], r["fix"])])
            for r in other if (r["workload"], r["fix"]) in measured}
