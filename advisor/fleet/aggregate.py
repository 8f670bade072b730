"""What the machine view shows, computed from the fleet dataset with Arrow group-bys.

Lost time is the findings' estimated cost (seconds of I/O time per process the fix
would save) times the job's processes: core-hours, the currency a centre counts in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from advisor.fleet.store import FleetStore

OTHER = "other"
WEEKS = 104  # the weekly chart covers the last two years with findings


@dataclass
class Ranked:
    """One row of a ranking: a name, core-hours lost, jobs and findings involved."""

    name: str
    hours: float
    jobs: int
    findings: int
    extra: str = ""  # e.g. the top category of an application


@dataclass
class JobRef:
    """Who and what a listed job is (a row of the worst-jobs and slow-jobs tables)."""

    path: str
    content_hash: str
    jobid: str
    user: str
    app: str
    start: str  # UTC, to the minute
    nprocs: int

    @classmethod
    def of(cls, row: dict) -> dict:
        """The JobRef fields of a job row, as keyword arguments."""
        return {"path": row["path"], "content_hash": row["content_hash"], "jobid": row["jobid"] or "",
                "user": row["user"] or "", "app": row["app"] or "",
                "start": _day(row["start_time"], minutes=True), "nprocs": int(row["nprocs"] or 0)}


@dataclass
class WorstJob(JobRef):
    hours: float = 0.0
    codes: list[str] = field(default_factory=list)


@dataclass
class FleetSummary:
    jobs: int = 0
    errors: int = 0
    with_findings: int = 0
    hours_lost: float = 0.0
    io_hours: float = 0.0  # I/O core-hours recorded (per-process I/O time x processes)
    bytes_moved: int = 0
    first: str = ""
    last: str = ""
    categories: list[Ranked] = field(default_factory=list)
    apps: list[Ranked] = field(default_factory=list)
    users: list[Ranked] = field(default_factory=list)
    mounts: list[Ranked] = field(default_factory=list)
    weeks: list[str] = field(default_factory=list)  # Monday of each week, oldest first
    weekly: dict[str, list[float]] = field(default_factory=dict)  # category -> hours per week
    weeks_left_out: int = 0  # older weeks with findings, beyond the chart's span
    worst: list[WorstJob] = field(default_factory=list)
    error_reasons: list[tuple[str, int]] = field(default_factory=list)


_JOB_COLUMNS = ["path", "content_hash", "jobid", "user", "app", "start_time", "nprocs", "bytes_read",
                "bytes_written", "io_time_s", "cost_s", "codes", "error"]
_FINDING_COLUMNS = ["path", "content_hash", "category", "cost_s", "user", "app", "start_time", "mount"]


def summarise(dataset: str | Path, top: int = 20) -> FleetSummary:
    """Every aggregate of the machine view, `top` rows per ranking."""
    store = FleetStore(dataset, create=False)
    jobs = store.jobs(_JOB_COLUMNS)
    findings = _with_hours(store.findings(_FINDING_COLUMNS), jobs)
    out = _totals(jobs)
    out.categories = _rank(findings, "category", top)
    out.apps = _rank(findings, "app", top, detail="category")
    out.users = _rank(findings, "user", top, detail="category")
    out.mounts = _rank(findings, "mount", top)
    out.weeks, out.weekly, out.weeks_left_out = _weekly(findings, [r.name for r in out.categories[:6]])
    out.worst = _worst(jobs, top)
    out.error_reasons = _error_reasons(jobs, top)
    return out


def _with_hours(findings: pa.Table, jobs: pa.Table) -> pa.Table:
    """Each finding's cost in core-hours (cost per process x the job's processes)."""
    ranks = jobs.select(["path", "content_hash", "nprocs"])
    table = findings.join(ranks, ["path", "content_hash"], join_type="left outer")
    nprocs = pc.max_element_wise(pc.fill_null(table["nprocs"], 1), 1)
    hours = pc.divide(pc.multiply(pc.fill_null(table["cost_s"], 0.0), pc.cast(nprocs, pa.float64())), 3600.0)
    return table.append_column("hours", hours)


def _totals(jobs: pa.Table) -> FleetSummary:
    ok = pc.is_null(jobs["error"])
    good = jobs.filter(ok)
    nprocs = pc.cast(pc.max_element_wise(pc.fill_null(good["nprocs"], 1), 1), pa.float64())
    io_hours = pc.sum(pc.multiply(pc.fill_null(good["io_time_s"], 0.0), nprocs)).as_py() or 0.0
    lost = pc.sum(pc.multiply(pc.fill_null(good["cost_s"], 0.0), nprocs)).as_py() or 0.0
    moved = (pc.sum(good["bytes_read"]).as_py() or 0) + (pc.sum(good["bytes_written"]).as_py() or 0)
    starts = pc.min_max(good["start_time"]).as_py() if len(good) else {"min": None, "max": None}
    return FleetSummary(
        jobs=len(jobs), errors=len(jobs) - len(good),
        with_findings=pc.sum(pc.greater(pc.fill_null(good["cost_s"], 0.0), 0.0)).as_py() or 0,
        hours_lost=lost / 3600.0, io_hours=io_hours / 3600.0, bytes_moved=int(moved),
        first=_day(starts["min"]), last=_day(starts["max"]))


def _rank(findings: pa.Table, key: str, top: int, detail: str | None = None) -> list[Ranked]:
    table = findings.filter(pc.invert(pc.is_null(findings[key])))
    if not len(table):
        return []
    grouped = table.group_by(key).aggregate([("hours", "sum"), ("path", "count_distinct"),
                                             ("cost_s", "count")])
    rows = sorted(zip(*(grouped[c].to_pylist() for c in (key, "hours_sum", "path_count_distinct",
                                                         "cost_s_count"))),
                  key=lambda r: (-r[1], str(r[0])))[:top]
    tops = _top_detail(table, key, detail, {r[0] for r in rows}) if detail else {}
    return [Ranked(str(name) or "(unknown)", hours, jobs, n, tops.get(name, ""))
            for name, hours, jobs, n in rows]


def _top_detail(table: pa.Table, key: str, detail: str, names: set) -> dict:
    """For each name, its `detail` value with the most hours (an app's worst category)."""
    grouped = table.group_by([key, detail]).aggregate([("hours", "sum")])
    best: dict = {}
    for name, value, hours in zip(*(grouped[c].to_pylist() for c in (key, detail, "hours_sum"))):
        if name in names and hours > best.get(name, ("", -1.0))[1]:
            best[name] = (value, hours)
    return {name: value for name, (value, _) in best.items()}


def _weekly(findings: pa.Table, categories: list[str],
            span: int = WEEKS) -> tuple[list[str], dict[str, list[float]], int]:
    """Core-hours lost per week (Monday to Sunday, UTC) for the top categories and the rest,
    over the last `span` weeks with findings; also how many older weeks with findings are left out."""
    table = findings.filter(pc.invert(pc.is_null(findings["start_time"])))
    if not len(table):
        return [], {}, 0
    hours: dict[tuple[str, str], float] = {}
    for start, category, h in zip(table["start_time"].to_pylist(), table["category"].to_pylist(),
                                  table["hours"].to_pylist()):
        week = _monday(start)
        name = category if category in categories else OTHER
        hours[(week, name)] = hours.get((week, name), 0.0) + (h or 0.0)
    weeks = _all_weeks(min(w for w, _ in hours), max(w for w, _ in hours), span)
    older = len({w for w, _ in hours if w < weeks[0]})
    names = categories + ([OTHER] if any(n == OTHER for w, n in hours if w >= weeks[0]) else [])
    return weeks, {n: [hours.get((w, n), 0.0) for w in weeks] for n in names}, older


def _monday(when: datetime) -> str:
    day = when.astimezone(UTC).date()
    return (day - timedelta(days=day.weekday())).isoformat()


def _all_weeks(first: str, last: str, most: int) -> list[str]:
    """Every Monday from `first` to `last` (empty weeks too), the last `most` at most."""
    day, end = datetime.fromisoformat(first), datetime.fromisoformat(last)
    if (end - day).days // 7 >= most:
        day = end - timedelta(weeks=most - 1)
    weeks = []
    while day <= end:
        weeks.append(day.date().isoformat())
        day += timedelta(weeks=1)
    return weeks


def _worst(jobs: pa.Table, top: int) -> list[WorstJob]:
    good = jobs.filter(pc.and_(pc.is_null(jobs["error"]), pc.greater(pc.fill_null(jobs["cost_s"], 0.0), 0.0)))
    if not len(good):
        return []
    nprocs = pc.cast(pc.max_element_wise(pc.fill_null(good["nprocs"], 1), 1), pa.float64())
    hours = pc.divide(pc.multiply(good["cost_s"], nprocs), 3600.0)
    order = pc.array_sort_indices(hours, order="descending")
    rows = []
    for i in order.to_pylist()[:top]:
        row = {c: good[c][i].as_py() for c in good.column_names}
        codes = [c["code"] for c in sorted(row["codes"] or [], key=lambda c: -c["cost_s"])]
        rows.append(WorstJob(**JobRef.of(row), hours=hours[i].as_py(), codes=codes))
    return rows


def _error_reasons(jobs: pa.Table, top: int) -> list[tuple[str, int]]:
    errors = jobs.filter(pc.invert(pc.is_null(jobs["error"])))
    if not len(errors):
        return []
    counts = pc.value_counts(errors["error"]).to_pylist()
    return sorted(((c["values"], c["counts"]) for c in counts), key=lambda r: (-r[1], r[0]))[:top]


def _day(when: datetime | None, minutes: bool = False) -> str:
    if when is None:
        return ""
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M" if minutes else "%Y-%m-%d")
