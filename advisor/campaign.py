"""Benchmark campaigns: several IOR (or IOzone) runs of one study as scaling curves, and what they show.

A curve is bandwidth against tasks for one kind of test (same study, access - shared
file or file per process -, operation, API, transfer size and stripe layout). IOzone's
throughput mode (``-t N``, ``-l/-u``) gives points the same way: its threads each write their own
file (file per process), the record size is the transfer size, and each test is an operation
(initial writers and readers are the write and read curves). From the
curves: the knee (where adding clients stops paying), the point where file-per-process
clients start to exceed the OSTs and the drop there, a collapse at the largest scale,
read vs write gaps, flat curves, and with baseline runs the tests that regressed.
:func:`campaign_profile` carries a campaign to the engine, whose campaign rules
(:mod:`advisor.facts.campaign`) judge it; :func:`advisor.pipeline.diagnose_campaign`
does that and returns one Diagnosis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from advisor.errors import InputError
from advisor.ingest import expand_inputs, load_profile
from advisor.ingest.ior.model import FPP, SHARED, IorProfile, IorTest, label
from advisor.ingest.iozone import KBS, IozoneProfile
from advisor.profile import JobInfo, JobProfile, Provenance

ACCESS_NAMES = {FPP: "file per process", SHARED: "shared file", "": "access unknown"}
IOZONE = "IOzone"  # the api of IOzone's curves
# IOzone's throughput tests that are the write and read curves (the others keep IOzone's names)
IOZONE_OPERATIONS = {"initial writers": "write", "readers": "read"}


@dataclass(frozen=True)
class CurveKey:
    """What makes two tests points of the same curve."""

    study: str
    access: str
    operation: str
    api: str
    transfer_size: int
    stripe_count: int
    stripe_size: int

    def label(self) -> str:
        parts = [self.study] if self.study else []
        if self.api == IOZONE:
            test = next((t for t, op in IOZONE_OPERATIONS.items() if op == self.operation), self.operation)
            return " · ".join(parts + [f"IOzone {test}", f"{self.transfer_size // 1024} KiB records"])
        parts += [ACCESS_NAMES.get(self.access, self.access), self.operation]
        if self.stripe_count:
            parts.append(f"stripe count {self.stripe_count}")
        return " · ".join(parts)

    def comparable(self) -> tuple:
        """The key without the study: how a baseline test is matched."""
        return (self.access, self.operation, self.api, self.transfer_size, self.stripe_count, self.stripe_size)


@dataclass
class Point:
    tasks: int
    bw_mib: float  # the test's max over its repetitions (IOR's headline figure)
    mean_mib: float
    source: str  # file path
    test: str  # test label
    block_size: int | None = None


@dataclass
class Curve:
    key: CurveKey
    points: list[Point] = field(default_factory=list)  # sorted by tasks, one per task count

    @property
    def label(self) -> str:
        return self.key.label()


@dataclass
class Campaign:
    """The runs of one study (and of its baseline), as curves."""

    curves: list[Curve]
    baseline: list[Curve] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    benchmark: str = "IOR"  # or IOZONE: what the runs are (a campaign holds one benchmark)

    @property
    def x_label(self) -> str:
        """What the x axis counts: IOR's tasks, IOzone's threads (or processes)."""
        return "threads" if self.benchmark == IOZONE else "tasks"

    @property
    def max_tasks(self) -> int:
        return max((p.tasks for c in self.curves for p in c.points), default=0)


# ---- building curves ----------------------------------------------------------------------

def _key(test: IorTest, operation: str, study: str, config) -> CurveKey:
    p = test.params
    system = config.system if config is not None else None
    count = p.stripe_count or (system.default_stripe_count if system else None) or 0
    size = p.stripe_size or (system.default_stripe_size if system else None) or 0
    return CurveKey(study, p.access, operation, p.api, p.transfer_size or 0, count, size)


def _study_names(profiles: list[JobProfile]) -> list[str]:
    """The directory of each run when the runs come from several directories, else ""."""
    dirs = [str(Path(p.source.path).parent) for p in profiles]
    if len(set(dirs)) <= 1:
        return [""] * len(profiles)
    return [Path(d).name for d in dirs]


def _ior_points(profile: IorProfile, study: str, config, notes: list[str]):
    """(key, point) of every test and operation of an IOR run."""
    for test in profile.run.tests:
        tasks = test.params.tasks
        if not tasks:
            notes.append(f"{profile.source.path}: {label(test)} states no task count; left out")
            continue
        for op, summary in test.summaries.items():
            yield _key(test, op, study, config), Point(tasks, summary.max_mib, summary.mean_mib, profile.source.path,
                                                       label(test), test.params.block_size)


def _iozone_points(profile: IozoneProfile, study: str, config):
    """(key, point) of every throughput-mode result of an IOzone run in kB/s (its 'Children see' rate:
    the sum of the threads' rates, as IOzone headlines it)."""
    system = config.system if config is not None else None
    count = (system.default_stripe_count if system else None) or 0
    size = (system.default_stripe_size if system else None) or 0
    for m in profile.iozone.measurements:
        if m.source != "throughput" or m.unit != KBS or not m.threads or not m.record_kib:
            continue
        op = IOZONE_OPERATIONS.get(m.test, m.test)
        mib = m.value / 1024  # IOzone's kB is 1,024 bytes
        key = CurveKey(study, FPP, op, IOZONE, m.record_kib * 1024, count, size)
        threads = f"{m.threads} thread{'s' if m.threads > 1 else ''}"
        yield key, Point(m.threads, mib, mib, profile.source.path, f"IOzone {m.test}, {threads}",
                         m.file_kib * 1024 if m.file_kib else None)


def build_curves(profiles: list[JobProfile], config=None) -> tuple[list[Curve], list[str]]:
    """Curves of the IOR or IOzone runs in `profiles` (one point per test, operation and task count)."""
    points: dict[CurveKey, dict[int, Point]] = {}
    notes: list[str] = []
    for profile, study in zip(profiles, _study_names(profiles)):
        if isinstance(profile, IorProfile):
            found = _ior_points(profile, study, config, notes)
        elif isinstance(profile, IozoneProfile):
            found = _iozone_points(profile, study, config)
        else:
            continue
        for key, point in found:
            tasks = point.tasks
            old = points.setdefault(key, {}).get(tasks)
            if old is not None:
                notes.append(f"{key.label()}: two runs at {tasks} tasks ({old.source}, "
                             f"{point.source}); the higher is kept")
            if old is None or point.bw_mib > old.bw_mib:
                points[key][tasks] = point
    curves = [Curve(key, [pts[t] for t in sorted(pts)]) for key, pts in points.items()]
    curves.sort(key=lambda c: (c.key.study, c.key.access, c.key.operation != "write", c.label))
    return curves, notes


def build_campaign(profiles: list[JobProfile], config=None,
                   baseline_profiles: list[JobProfile] | None = None) -> Campaign:
    curves, notes = build_curves(profiles, config)
    baseline, base_notes = build_curves(list(baseline_profiles or []), config)
    benchmark = IOZONE if curves and all(c.key.api == IOZONE for c in curves) else "IOR"
    return Campaign(curves, baseline, [p.source.path for p in profiles], notes + base_notes, benchmark)


# ---- analysis -------------------------------------------------------------------------------

def gain_per_doubling(a: Point, b: Point) -> float:
    """Relative bandwidth gain per doubling of tasks between two points."""
    doublings = math.log2(b.tasks / a.tasks)
    if doublings <= 0 or a.bw_mib <= 0:
        return 0.0
    return (b.bw_mib / a.bw_mib) ** (1 / doublings) - 1


def knee(curve: Curve) -> Point | None:
    """The knee of the rising part of the curve (Kneedle on log2 tasks), or None.

    Only points up to the curve's peak count: a collapse after the peak is reported on its
    own. The knee is the point farthest above the straight line from the first point to the
    peak in normalized (log2 tasks, bandwidth) space.
    """
    pts = curve.points
    if len(pts) < 4:
        return None
    top = max(range(len(pts)), key=lambda i: pts[i].bw_mib)
    rise = pts[: top + 1]
    if len(rise) < 3:
        return None
    x0, x1 = math.log2(rise[0].tasks), math.log2(rise[-1].tasks)
    y0, y1 = rise[0].bw_mib, rise[-1].bw_mib
    if x1 <= x0 or y1 <= y0:
        return None
    best, best_gap = None, 0.0
    for p in rise[1:-1]:
        gap = (p.bw_mib - y0) / (y1 - y0) - (math.log2(p.tasks) - x0) / (x1 - x0)
        if gap > best_gap:
            best, best_gap = p, gap
    return best


def exceed_point(curve: Curve, osts: int) -> tuple[Point, Point] | None:
    """(last point with files x stripes <= OSTs, first point beyond) of a file-per-process curve."""
    if curve.key.access != FPP:
        return None
    stripes = max(curve.key.stripe_count, 1)
    inside = [p for p in curve.points if p.tasks * stripes <= osts]
    beyond = [p for p in curve.points if p.tasks * stripes > osts]
    if not inside or not beyond:
        return None
    return inside[-1], beyond[0]


def collapse(curve: Curve) -> tuple[Point, Point] | None:
    """(previous, last) when the curve has at least three points (the drop is judged by the rules)."""
    if len(curve.points) < 3:
        return None
    return curve.points[-2], curve.points[-1]


def pair_curves(curves: list[Curve]) -> list[tuple[Curve, Curve]]:
    """(write, read) curves of the same kind of test."""
    by_kind: dict[tuple, dict[str, Curve]] = {}
    for c in curves:
        k = c.key
        by_kind.setdefault((k.study, k.access, k.api, k.transfer_size, k.stripe_count, k.stripe_size),
                           {})[k.operation] = c
    return [(ops["write"], ops["read"]) for ops in by_kind.values() if "write" in ops and "read" in ops]


def regressions(campaign: Campaign) -> list[tuple[CurveKey, Point, Point]]:
    """(key, baseline point, new point) for every test both campaigns ran at the same task count."""
    base = {(c.key.comparable(), p.tasks): p for c in campaign.baseline for p in c.points}
    out = []
    for curve in campaign.curves:
        for p in curve.points:
            old = base.get((curve.key.comparable(), p.tasks))
            if old is not None:
                out.append((curve.key, old, p))
    return out


# ---- figures for the HTML report ----------------------------------------------------------------

def campaign_data(campaign: Campaign) -> dict:
    """The campaign as data: every curve (what its tests share) with its points, one per task
    count (the test's max and mean MiB/s over its repetitions, the test and the file it came
    from), the baseline's curves likewise, and the runs read."""
    def curves(items: list[Curve]) -> list[dict]:
        return [{"label": c.label, "study": c.key.study, "access": c.key.access, "operation": c.key.operation,
                 "api": c.key.api, "transfer_size": c.key.transfer_size, "stripe_count": c.key.stripe_count,
                 "stripe_size": c.key.stripe_size,
                 "points": [{"tasks": p.tasks, "max_mib_s": p.bw_mib, "mean_mib_s": p.mean_mib,
                             "block_size": p.block_size, "test": p.test, "source": p.source} for p in c.points]}
                for c in items]

    return {"benchmark": campaign.benchmark, "x": campaign.x_label, "curves": curves(campaign.curves),
            "baseline": curves(campaign.baseline), "sources": list(campaign.sources), "notes": list(campaign.notes)}


def figure_data(campaign: Campaign, osts: int | None) -> dict:
    """Compact plot data: curves, the 'clients exceed OSTs' points and the baseline overlay
    (the knees are filled in by :func:`advisor.pipeline.diagnose_campaign` from the CAM001 finding)."""
    def series(curves: list[Curve]) -> list[dict]:
        return [{"label": c.label, "access": c.key.access, "operation": c.key.operation,
                 "study": c.key.study, "tasks": [p.tasks for p in c.points],
                 "bw_mib_s": [round(p.bw_mib, 3) for p in c.points]} for c in curves]

    exceed = []
    for c in campaign.curves:
        pair = exceed_point(c, osts) if osts else None
        if pair:
            exceed.append({"label": c.label, "osts": osts,
                           "before": {"tasks": pair[0].tasks, "bw_mib_s": pair[0].bw_mib},
                           "after": {"tasks": pair[1].tasks, "bw_mib_s": pair[1].bw_mib}})
    return {"x": campaign.x_label, "y": "bandwidth (MiB/s)", "osts": osts, "curves": series(campaign.curves),
            "baseline": series(campaign.baseline), "knees": [], "clients_exceed_osts": exceed}


# ---- the engine's input -------------------------------------------------------------------------------

@dataclass(kw_only=True)
class CampaignProfile(JobProfile):
    """A campaign as the engine's input: the campaign rules apply to it."""

    kind: ClassVar[str] = "campaign"
    campaign: Campaign


def campaign_profile(campaign: Campaign) -> CampaignProfile:
    """A profile carrying the campaign, so that the engine runs the campaign rules over it."""
    where = str(Path(campaign.sources[0]).parent) if campaign.sources else "<campaign>"
    name = campaign.benchmark
    source = Provenance(path=where, format=f"{name.lower()}-campaign", parser="ioadvisor campaign",
                        notes=[f"{len(campaign.sources)} {name} runs, {len(campaign.curves)} curves"] + campaign.notes)
    job = JobInfo(nprocs=campaign.max_tasks, exe=f"{name} campaign of {len(campaign.sources)} runs",
                  metadata={"runs": str(len(campaign.sources))})
    return CampaignProfile(source=source, job=job, campaign=campaign)


def campaign_runs(profiles: list[JobProfile]) -> list[list[JobProfile]]:
    """The runs of each benchmark that makes campaigns (IOR, IOzone), in input order: one campaign each."""
    ior = [p for p in profiles if isinstance(p, IorProfile)]
    iozone = [p for p in profiles if isinstance(p, IozoneProfile) and thread_counts(p)]
    return [runs for runs in (ior, iozone) if runs]


def thread_counts(profile: IozoneProfile) -> set[int]:
    """The thread counts of an IOzone output's throughput results (several: `-l 1 -u 8`, or runs appended)."""
    return {m.threads for m in profile.iozone.measurements if m.source == "throughput" and m.threads}


def load_runs(paths: list[str | Path]) -> tuple[list[JobProfile], list[str]]:
    """IOR (or IOzone) profiles from files and directories (the inputs in a directory, not recursive).

    Files that are not usable IOR or IOzone output are skipped with their one-line reason.
    """
    profiles, skipped = [], []
    for file in expand_inputs(map(str, paths)):
        try:
            if isinstance(file, InputError):  # a directory with no input in it
                raise file
            profile = load_profile(file)
        except InputError as exc:
            skipped.append(str(exc))
            continue
        if isinstance(profile, (IorProfile, IozoneProfile)):
            profiles.append(profile)
        else:
            skipped.append(f"{file}: not an IOR or IOzone run ({profile.source.format})")
    return profiles, skipped
