"""The IOR run model: what one IOR output file says, whatever its format.

One file holds one :class:`IorRun`; a run holds one :class:`IorTest` per test IOR
executed (an ``-f`` script, or several invocations appended to one file, give
several). Bandwidths are IOR's own unit, MiB/s; sizes are bytes.

Carried by an :class:`IorProfile` and read by ``advisor.facts.ior``,
``advisor.campaign``, the replay planner and the models.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from advisor.profile import JobProfile

SHARED = "shared"  # one file for all tasks (IOR "single-shared-file")
FPP = "fpp"  # one file per process (IOR -F, "file-per-process")


@dataclass
class IorParams:
    """The parameters of one test, as far as the output states them (None: not stated)."""

    api: str = ""
    api_version: str = ""
    test_file: str = ""
    access: str = ""  # SHARED, FPP or "" when unknown
    collective: bool | None = None
    segments: int | None = None
    random_offsets: bool | None = None  # -z ("ordering in a file: random")
    ordering_inter_file: str = ""
    task_offset: int | None = None  # -Q
    reorder_tasks: bool | None = None  # -C: read what a neighbour node wrote
    reorder_random: bool | None = None  # -Z
    nodes: int | None = None
    tasks: int | None = None
    tasks_per_node: int | None = None
    repetitions: int | None = None
    transfer_size: int | None = None
    block_size: int | None = None
    aggregate_size: int | None = None
    fsync: bool | None = None  # -e: fsync at close
    fsync_per_write: bool | None = None  # -Y
    direct_io: bool | None = None  # -B / --posix.odirect
    write: bool | None = None
    read: bool | None = None
    keep_file: bool | None = None
    stonewall_s: float | None = None  # -D deadline
    stonewall_wearout: bool | None = None
    stripe_count: int | None = None  # -O lustreStripeCount, --posix.lustre... where given
    stripe_size: int | None = None
    hints: dict[str, str] = field(default_factory=dict)  # MPI-IO hints and -O options
    other: dict[str, str] = field(default_factory=dict)  # every other option line verbatim

    @property
    def bytes_per_task(self) -> int | None:
        """Data each task moves per phase (block x segments)."""
        if self.block_size is None:
            return None
        return self.block_size * (self.segments or 1)


@dataclass
class IorIteration:
    """One row of the results table: one phase (write or read) of one repetition."""

    operation: str  # "write" or "read"
    iteration: int
    bw_mib: float  # MiB/s as printed
    iops: float | None = None
    latency_s: float | None = None
    block_kib: float | None = None
    xfer_kib: float | None = None
    open_s: float | None = None
    wrrd_s: float | None = None
    close_s: float | None = None
    total_s: float | None = None
    stonewall: str = ""  # the "stonewalling pairs accessed ..." line preceding the row
    warnings: list[str] = field(default_factory=list)


@dataclass
class IorSummary:
    """One operation of a test, summarized over its repetitions (MiB/s).

    `source` says where the numbers come from: ``summary`` (IOR's "Summary of all
    tests" or JSON ``summary``), ``max-line`` (only the ``Max Write:`` line) or
    ``results`` (computed here from the result rows because IOR printed no summary).
    """

    operation: str
    max_mib: float
    min_mib: float
    mean_mib: float
    stddev_mib: float = 0.0
    ops_max: float | None = None
    ops_min: float | None = None
    ops_mean: float | None = None
    mean_time_s: float | None = None
    stonewall_s: float | None = None
    stonewall_mib: float | None = None
    repetitions: int = 0
    source: str = "summary"


@dataclass
class IorTest:
    """One IOR test: its parameters, its result rows and its per-operation summary."""

    test_id: int = 0
    command_line: str = ""
    version: str = ""
    machine: str = ""
    began: str = ""
    finished: str = ""
    path: str = ""
    fs_info: str = ""  # "FS: 29877.0 TiB Used FS: 0.1% ..." as printed
    params: IorParams = field(default_factory=IorParams)
    iterations: list[IorIteration] = field(default_factory=list)
    summaries: dict[str, IorSummary] = field(default_factory=dict)  # operation -> summary
    max_lines: dict[str, float] = field(default_factory=dict)  # "Max Write:" MiB/s by operation
    hosts: int | None = None  # distinct hosts in a "task N on HOST" listing
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def operations(self) -> list[str]:
        seen = dict.fromkeys(list(self.summaries) + [it.operation for it in self.iterations])
        return list(seen)

    def bandwidth(self, operation: str, stat: str = "max") -> float | None:
        """The test's max/mean/min bandwidth of `operation` in MiB/s, or None."""
        summary = self.summaries.get(operation)
        if summary is None:
            return None
        return {"max": summary.max_mib, "mean": summary.mean_mib, "min": summary.min_mib}[stat]

    def fill_summaries_from_rows(self) -> None:
        """Summarize operations IOR printed no summary for, from rows or the Max line."""
        for op in self.operations():
            if op in self.summaries:
                continue
            rows = [it.bw_mib for it in self.iterations if it.operation == op]
            if rows:
                self.summaries[op] = IorSummary(
                    operation=op, max_mib=max(rows), min_mib=min(rows),
                    mean_mib=statistics.fmean(rows),
                    stddev_mib=statistics.pstdev(rows) if len(rows) > 1 else 0.0,
                    repetitions=len(rows), source="results")
        for op, bw in self.max_lines.items():
            if op not in self.summaries:
                self.summaries[op] = IorSummary(op, bw, bw, bw, repetitions=1, source="max-line")


@dataclass
class IorRun:
    """Everything one IOR output file holds."""

    format: str  # "ior-text", "ior-json", "ior-csv"
    version: str = ""
    command_line: str = ""
    machine: str = ""
    began: str = ""
    finished: str = ""
    tests: list[IorTest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was recovered, skipped or guessed

    @property
    def tasks(self) -> int:
        return max((t.params.tasks or 0 for t in self.tests), default=0)

    def best(self, operation: str) -> float | None:
        """The highest max bandwidth of `operation` over all tests (MiB/s)."""
        values = [t.bandwidth(operation) for t in self.tests]
        values = [v for v in values if v is not None]
        return max(values) if values else None


def label(test: IorTest) -> str:
    """``test 0 (file per process, POSIX, 64 tasks)``: how findings name a test."""
    p = test.params
    access = {FPP: "file per process", SHARED: "shared file"}.get(p.access, "access unknown")
    api = " ".join(p.api.split())  # from the log: a newline would end the shell comment it goes in
    parts = [access] + ([api] if api else []) + ([f"{p.tasks} tasks"] if p.tasks else [])
    return f"test {test.test_id} ({', '.join(parts)})"


@dataclass(kw_only=True)
class IorProfile(JobProfile):
    """The profile of one IOR output file: its run, for the IOR rules."""

    kind: ClassVar[str] = "ior"
    run: IorRun

    def results_data(self) -> dict[str, Any]:
        return {"ior": ior_data(self.run)}


# JSON names of the model's fields whose unit the model's name does not say (IOR's units).
_SUMMARY_NAMES = {"max_mib": "max_mib_s", "min_mib": "min_mib_s", "mean_mib": "mean_mib_s",
                  "stddev_mib": "stddev_mib_s", "ops_max": "max_iops", "ops_min": "min_iops",
                  "ops_mean": "mean_iops", "stonewall_mib": "stonewall_mib_s"}
_ROW_NAMES = {"bw_mib": "bw_mib_s"}


def ior_data(run: IorRun) -> dict[str, Any]:
    """The run: its header and per test the parameters (sizes in bytes, stonewall in seconds),
    per operation the summary (MiB/s, IOPS, seconds; `source` says whether IOR printed it) and
    its result rows, one per repetition (bandwidth, IOPS, latency, open/wr-rd/close/total times)."""
    return {"format": run.format, "version": run.version, "command_line": run.command_line,
            "machine": run.machine, "began": run.began, "finished": run.finished, "tasks": run.tasks,
            "tests": [_test(t) for t in run.tests], "notes": list(run.notes)}


def _test(test: IorTest) -> dict[str, Any]:
    operations = {}
    for op in test.operations():
        summary = test.summaries.get(op)
        operations[op] = {**(_renamed(summary, _SUMMARY_NAMES) if summary else {}),
                          "iterations": [_renamed(it, _ROW_NAMES) for it in test.iterations if it.operation == op]}
    return {"id": test.test_id, "command_line": test.command_line, "version": test.version,
            "began": test.began, "finished": test.finished, "path": test.path, "hosts": test.hosts,
            "params": asdict(test.params), "operations": operations,
            "max_mib_s": dict(test.max_lines), "warnings": list(test.warnings), "errors": list(test.errors)}


def _renamed(item: IorSummary | IorIteration, names: dict[str, str]) -> dict[str, Any]:
    return {names.get(f.name, f.name): getattr(item, f.name) for f in fields(item) if f.name != "operation"}
