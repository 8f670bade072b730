"""mdtest's text output (1.9 to 4.x, alone or as IO500 prints it) as an input.

Every row of every SUMMARY table becomes one :class:`MdtestMeasurement` (operation, max, min,
mean, standard deviation, unit). The tables' headers differ by version:

- 1.9: ``SUMMARY: (of 3 iterations)``, rows ``Directory creation:  max min mean sd`` (rates, ops/s);
- 3.x: ``SUMMARY rate: (of 1 iterations)`` and ``SUMMARY time: ...`` (seconds), rows with a colon;
- 4.x: ``SUMMARY rate (in ops/sec): (of 1 iterations)``, ``SUMMARY time (in sec): ...``, rows without.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from advisor.errors import InputError
from advisor.ingest import InputFormat, read_bounded, register
from advisor.ingest.plausible import MAX_RANKS, MAX_TOTAL
from advisor.profile import JobInfo, JobProfile, Provenance

MAX_BYTES = 64 << 20
_VERSION = re.compile(r"^(mdtest-\S+) was launched with (\d+) total task\(s\) on (\d+) node", re.MULTILINE)
_COMMAND = re.compile(r"^Command line used: (.*)$", re.MULTILINE)
_SUMMARY = re.compile(r"^\s*SUMMARY\s*(rate|time)?[^:]*:\s*\(of (\d+) iterations?\)", re.IGNORECASE)
_ROW = re.compile(r"^\s+([A-Za-z][A-Za-z ]*?)\s*:?\s+(-?[\d.]+(?:e[+-]?\d+)?)\s+(-?[\d.]+(?:e[+-]?\d+)?)"
                  r"\s+(-?[\d.]+(?:e[+-]?\d+)?)\s+(-?[\d.]+(?:e[+-]?\d+)?)\s*$", re.IGNORECASE)
_TASKS_FILES = re.compile(r"^(\d+) tasks, (\d+) (files|directories|files/directories)", re.MULTILINE)


@dataclass
class MdtestMeasurement:
    """One operation of one SUMMARY table."""

    operation: str  # as mdtest names it: "File creation", "Tree removal", ...
    max: float
    min: float
    mean: float
    stddev: float
    unit: str  # "ops/s" (rate tables) or "s" (time tables)
    iterations: int = 1


@dataclass
class MdtestRun:
    version: str = ""
    command_line: str = ""
    tasks: int | None = None
    nodes: int | None = None
    items: int | None = None  # files and/or directories, as the "4 tasks, 8000 files" line says
    measurements: list[MdtestMeasurement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class MdtestProfile(JobProfile):
    """The profile of one mdtest output."""

    kind: ClassVar[str] = "mdtest"
    mdtest: MdtestRun

    def plausible_fields(self):
        yield "tasks", self.mdtest.tasks, 0, MAX_RANKS
        for m in self.mdtest.measurements:
            for stat in ("max", "min", "mean"):
                yield f"{m.operation} {stat}", getattr(m, stat), 0, MAX_TOTAL

    def results_data(self) -> dict[str, Any]:
        """``mdtest`` (version, tasks, nodes, items, notes) and ``measurements``."""
        run = self.mdtest
        return {"mdtest": {"version": run.version, "command_line": run.command_line, "tasks": run.tasks,
                           "nodes": run.nodes, "items": run.items, "notes": list(run.notes)},
                "measurements": [asdict(m) for m in run.measurements]}


def parse(text: str) -> MdtestRun:
    """Every SUMMARY row of an mdtest output."""
    run = MdtestRun()
    if m := _VERSION.search(text):
        run.version, run.tasks, run.nodes = m[1], int(m[2]), int(m[3])
    if m := _COMMAND.search(text):
        run.command_line = m[1].strip()
    if m := _TASKS_FILES.search(text):
        run.tasks = run.tasks or int(m[1])
        run.items = int(m[2])
    unit, iterations = "", 1
    for line in text.splitlines():
        if m := _SUMMARY.match(line):
            unit, iterations = ("s" if (m[1] or "").lower() == "time" else "ops/s"), int(m[2])
        elif unit and (m := _ROW.match(line)):
            run.measurements.append(MdtestMeasurement(m[1].strip(), *(float(m[k]) for k in range(2, 6)),
                                                      unit=unit, iterations=iterations))
        elif unit and line.strip().startswith("--") and "---" not in line:
            unit = ""  # "-- finished at ..." ends the table
    if "-- started at" in text and "-- finished at" not in text:
        run.notes.append("truncated: the output ends before '-- finished at' (a SUMMARY table may be partial "
                         "and the operations after it are missing)")
    if "WARNING" in text:
        run.notes += list(dict.fromkeys(ln.strip() for ln in text.splitlines() if ln.startswith("WARNING")))[:10]
    return run


def _sniff(path: Path, head: bytes) -> bool:
    text = head.decode("utf-8", "replace")
    return bool(re.search(r"^mdtest-\S+ was launched with", text, re.MULTILINE)
                or (re.search(r"^\s*SUMMARY", text, re.MULTILINE) and "mdtest" in text))


def _stamp(text: str, marker: str) -> float | None:
    """POSIX seconds of mdtest's "-- started at 11/27/2026 10:46:11 --" line (the node's local
    time, read as UTC: mdtest prints no zone), or None."""
    m = re.search(re.escape(marker) + r" (\d\d/\d\d/\d{4} \d\d:\d\d:\d\d) --", text)
    return float(calendar.timegm(time.strptime(m.group(1), "%m/%d/%Y %H:%M:%S"))) if m else None


def load(path: Path) -> JobProfile:
    """Read one mdtest output; InputError (one line) when it holds no SUMMARY table."""
    text = read_bounded(path, MAX_BYTES, "an mdtest output").decode("utf-8", "replace")
    run = parse(text)
    if not run.measurements:
        raise InputError(str(path), "an mdtest output with no SUMMARY table (an interrupted or failed run?)")
    began, ended = (_stamp(text, f"-- {word} at") for word in ("started", "finished"))
    job = JobInfo(nprocs=run.tasks or 0, exe=run.command_line, library_version=run.version,
                  start_time=began, end_time=ended,
                  runtime_s=ended - began if began is not None and ended is not None else 0.0,
                  metadata={"mdtest_version": run.version, "nodes": str(run.nodes or "")})
    source = Provenance(path=str(path), format="mdtest-text", parser="ioadvisor mdtest-text",
                        log_version=run.version, notes=list(run.notes))
    return MdtestProfile(source=source, job=job, mdtest=run)


FORMAT = register(InputFormat(name="mdtest", sniff=_sniff, load=load))
