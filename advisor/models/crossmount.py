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
    for family, workloads in families(small=False).items():  # the sample was frozen before SMALL
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


# --- leave-one-mount-out (committed before any figure of the second other mount, CephFS) ---

def mounts(other: list[dict]) -> dict[str, list[dict]]:
    """fstype -> its fixes (other mounts' measurements, each row naming its file system)."""
    out: dict[str, list[dict]] = {}
    for r in other:
        out.setdefault(r.get("fstype", ""), []).append(r)
    return dict(sorted(out.items()))


def leave_one_mount_out(home: list[dict], other: list[dict], rules=None, shipped: bool = False) -> dict:
    """(rule, judged mount) -> its fixes judged (:class:`advisor.models.speedup.Judged`): every mount of
    `other` in turn predicted by home-mount models, the interval (and, by the rule, the point) of
    production for another mount (:func:`advisor.models.speedup.width_for`) calibrated by `rule` on
    the *other* mounts' fixes only (:func:`advisor.models.speedup.mount_calibration`). Each judged
    family is predicted by a model that never saw it, calibrated on the other mounts' fixes of the
    other families (a new workload on a new mount); ``shipped``: the model of every home fix,
    calibrated on every fix of the other mounts (production's case: a campaign workload)."""
    from functools import partial

    import numpy as np

    from advisor.models import speedup

    h, by_mount = speedup.Rows.of(home), {m: speedup.Rows.of(rows) for m, rows in mounts(other).items()}
    home_width: dict = {}
    out: dict = {}
    for judged, o in by_mount.items():
        rest = {m: r for m, r in by_mount.items() if m != judged}
        for family in [None] if shipped else sorted(set(o.family)):
            held = np.ones(len(o), bool) if family is None else o.family == family
            train = h if family is None else h.subset(h.family != family)
            if family not in home_width:
                home_width[family] = speedup.out_of_family_width(train)
            residuals = {m: (_residuals(h, r, family), r.transform) for m, r in rest.items()}
            estimator, measured = speedup.fit(train), speedup.ranges(train)
            for rule in rules or speedup.MOUNT_RULES:
                cal = speedup.mount_calibration(residuals, rule)
                meta = {"widen_log10": home_width[family], "other_mount": cal, "transforms": measured["transforms"]}
                out.setdefault((rule, judged), []).extend(
                    speedup.judge(o, held, estimator, measured, partial(speedup.width_for, meta, mount=judged),
                                  partial(speedup.mount_shift, cal)))
    return out


def _residuals(home, other, family: str | None):
    """Signed cross-mount residuals of `other`'s fixes outside `family`, each by a home model that saw
    neither its own family nor `family`."""
    from advisor.models import speedup

    if family is None:
        return speedup.mount_residuals(home, other)
    return speedup.mount_residuals(home, other, sorted(set(other.family) - {family}), without=family)


def choose(judged: dict) -> str:
    """The rule production ships, decided on :func:`leave_one_mount_out` (families held out) by a choice
    written down before any figure of the second mount: among the rules whose interval holds on every
    judged mount (at least 80 % of all its fixes inside, a declined fix a miss) and, for a rule that
    moves the prediction, whose median error is no larger than the pooled rule's on every judged mount,
    the one with the narrowest median interval over all judged fixes; if none holds, the one whose
    worst mount's share inside is largest."""
    import numpy as np

    from advisor.models import conformal, speedup

    rules = sorted({rule for rule, _ in judged})
    judged_mounts = sorted({m for _, m in judged})

    def figure(rule, mount):
        return speedup.figures(judged[(rule, mount)])

    def holds(rule):
        ok = all(figure(rule, m)["coverage"] >= conformal.COVERAGE for m in judged_mounts)
        if rule == "shifted":
            ok = ok and all(figure(rule, m)["median_error"] <= figure("pooled", m)["median_error"]
                            for m in judged_mounts)
        return ok

    def width(rule):
        return float(np.median([np.log10(j.interval[1] / j.interval[0]) / 2 for m in judged_mounts
                                for j in judged[(rule, m)] if j.interval]))

    held = [r for r in rules if holds(r)]
    if held:
        return min(held, key=lambda r: (width(r), rules.index(r)))
    return max(rules, key=lambda r: min(figure(r, m)["coverage"] for m in judged_mounts))
