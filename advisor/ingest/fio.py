"""fio's JSON output (``--output-format=json``, ``json+``, or the JSON part of ``normal,json``) as an input.

One :class:`FioMeasurement` per job (or reported group, with ``group_reporting``) and direction
that moved data: bandwidth, IOPS, runtime, bytes, and the completion-latency mean and percentiles
fio printed. fio may print warnings (``fio: ...``) before the JSON document; they are kept as notes.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from advisor.errors import InputError
from advisor.ingest import InputFormat, read_bounded, register
from advisor.ingest.plausible import MAX_COUNT, MAX_TOTAL
from advisor.profile import JobInfo, JobProfile, Provenance

MAX_BYTES = 64 << 20  # json+ of many jobs with latency bins is a few MB
DIRECTIONS = ("read", "write", "trim")
PERCENTILES = ("50.000000", "90.000000", "95.000000", "99.000000", "99.900000", "99.990000")


@dataclass
class FioMeasurement:
    """One job's (or reported group's) results in one direction."""

    job: str
    group: int
    direction: str  # read, write, trim
    bw_kib_s: float  # fio's "bw": KiB/s
    iops: float
    runtime_ms: float
    io_bytes: int
    block_size: str = ""  # the job's bs option as given ("4k")
    rw: str = ""  # the job's rw option ("randwrite")
    numjobs: int | None = None
    iodepth: int | None = None
    direct: bool = False  # direct=1: O_DIRECT, the page cache out of the way
    clat_mean_us: float | None = None
    clat_percentiles_us: dict[str, float] = field(default_factory=dict)  # "99.000000" -> us
    error: int = 0


@dataclass
class FioRun:
    version: str = ""
    time: str = ""
    measurements: list[FioMeasurement] = field(default_factory=list)
    global_options: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class FioProfile(JobProfile):
    """The profile of one fio JSON output."""

    kind: ClassVar[str] = "fio"
    fio: FioRun

    def plausible_fields(self):
        for i, m in enumerate(self.fio.measurements):
            where = f"job {i} ({m.job} {m.direction}) "
            yield where + "bandwidth", m.bw_kib_s, 0, MAX_TOTAL
            yield where + "IOPS", m.iops, 0, MAX_TOTAL
            yield where + "runtime (ms)", m.runtime_ms, 0, MAX_TOTAL
            yield where + "bytes", m.io_bytes, 0, MAX_COUNT

    def results_data(self) -> dict[str, Any]:
        """``fio`` (version, options, notes) and ``measurements``, for show and diagnose JSON."""
        run = self.fio
        return {"fio": {"version": run.version, "time": run.time, "global_options": dict(run.global_options),
                        "notes": list(run.notes)},
                "measurements": [asdict(m) for m in run.measurements]}


def parse(text: str) -> FioRun:
    """The measurements of fio's JSON output held in `text` (ValueError when there is none)."""
    start = text.find("{")
    if start < 0:
        if _TEXT_OUTPUT.search(text):
            raise ValueError("fio's text output (--output-format=normal): ioadvisor reads fio's JSON; "
                             "run fio with --output-format=json (or json+, or normal,json)")
        raise ValueError("no JSON document in the fio output")
    try:
        doc, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            raise ValueError(f"fio's JSON ends before its document does (line {exc.lineno}): truncated, "
                             "or fio was killed before it printed its results") from None
        raise ValueError(f"fio's JSON does not parse (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise ValueError("not fio's JSON output (no 'jobs' list)")
    run = FioRun(version=str(doc.get("fio version", "")), time=str(doc.get("time", "")),
                 global_options={str(k): str(v) for k, v in (doc.get("global options") or {}).items()})
    run.notes = [line.strip() for line in text[:start].splitlines() if line.strip()][:20]
    for job in doc["jobs"]:
        if isinstance(job, dict):
            run.measurements += _job(job, run.global_options)
    return run


def _job(job: dict[str, Any], global_options: dict[str, str]) -> list[FioMeasurement]:
    options = {**global_options, **{str(k): str(v) for k, v in (job.get("job options") or {}).items()}}
    found = []
    for direction in DIRECTIONS:
        d = job.get(direction)
        if not isinstance(d, dict) or not _number(d.get("io_bytes")):
            continue
        clat = d.get("clat_ns") if isinstance(d.get("clat_ns"), dict) else {}
        percentiles = clat.get("percentile") if isinstance(clat.get("percentile"), dict) else {}
        found.append(FioMeasurement(
            job=str(job.get("jobname", "")), group=int(_number(job.get("groupid")) or 0), direction=direction,
            bw_kib_s=float(_number(d.get("bw")) or 0), iops=float(_number(d.get("iops")) or 0),
            runtime_ms=float(_number(d.get("runtime")) or 0), io_bytes=int(_number(d.get("io_bytes")) or 0),
            block_size=options.get("bs", ""), rw=options.get("rw", options.get("readwrite", "")),
            numjobs=_int(options.get("numjobs")), iodepth=_int(options.get("iodepth")),
            direct=options.get("direct", "0") in ("1", "true"),
            clat_mean_us=_us(clat.get("mean")),
            clat_percentiles_us={p: _us(percentiles[p]) for p in PERCENTILES if _number(percentiles.get(p))},
            error=int(_number(job.get("error")) or 0)))
    return found


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _us(ns: Any) -> float | None:
    value = _number(ns)
    return None if value is None else value / 1000.0


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


# fio's normal output: the job line, then the version ("randwrite4k: (g=0): rw=randwrite, ...", "fio-3.33")
_TEXT_OUTPUT = re.compile(r"^\S+: \(g=\d+\): rw=\w+, .*\n(?:.*\n)?fio-\d", re.MULTILINE)


def _sniff(path: Path, head: bytes) -> bool:
    if b'"fio version"' in head and b'"jobs"' in head:
        return True
    return bool(_TEXT_OUTPUT.search(head.decode("utf-8", "replace")))


def load(path: Path) -> JobProfile:
    """Read one fio JSON output; InputError (one line) when unusable."""
    try:
        run = parse(read_bounded(path, MAX_BYTES, "a fio output").decode("utf-8", "replace"))
    except ValueError as exc:
        raise InputError(str(path), str(exc)) from None
    if not run.measurements:
        raise InputError(str(path), "a fio output in which no job moved data")
    jobs = len({(m.job, m.group) for m in run.measurements})
    job = JobInfo(nprocs=jobs, runtime_s=max(m.runtime_ms for m in run.measurements) / 1000.0,
                  library_version=run.version, metadata={"fio_version": run.version, "jobs": str(jobs)})
    source = Provenance(path=str(path), format="fio-json", parser="ioadvisor fio-json", log_version=run.version,
                        notes=list(run.notes))
    return FioProfile(source=source, job=job, fio=run)


FORMAT = register(InputFormat(name="fio", sniff=_sniff, load=load))
