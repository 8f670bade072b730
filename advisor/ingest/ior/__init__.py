"""IOR output (text 2.x-4.x, IO500 captures, JSON, CSV) as an input format.

The profile of an IOR log (:class:`IorProfile`) carries the parsed run
(:class:`advisor.ingest.ior.model.IorRun`) and fills ``job`` where it applies:
``exe`` is the command line, ``nprocs`` the task count, start/end from the
Began/Finished lines.
"""

from __future__ import annotations

import re
from pathlib import Path

from advisor.errors import InputError
from advisor.ingest import InputFormat, read_bounded, register
from advisor.ingest.ior.csv import RANK_HEADER, RESULTS_HEADER, SUMMARY_HEADER, parse_csv
from advisor.ingest.ior.json import parse_json
from advisor.ingest.ior.model import IorProfile, IorRun
from advisor.ingest.ior.text import HEADER, parse_date, parse_text
from advisor.profile import JobInfo, JobProfile, Provenance

MAX_BYTES = 256 << 20  # an IO500 -vv log with 60,000 task lines is a few MB
_SNIFF_MORE = 2 << 20  # launcher noise can push IOR's header this far down
_TEXT_MARKS = re.compile(
    r"IOR-\S+: MPI Coordinated Test of Parallel I/O|^\s*access\s+bw\(MiB/s\)|"
    r"^ERROR: .*\(\S*ior\S*\.c:\d+\)", re.MULTILINE)
_JSON_MARKS = ('"Command line"', '"tests"', '"summary"')


def _kind(text: str) -> str | None:
    """"json", "csv" or "text" when `text` looks like IOR output of that kind."""
    stripped = text.lstrip()
    if stripped.startswith("{") and '"Version"' in text[:400] and any(m in text for m in _JSON_MARKS):
        return "json"
    if stripped.startswith((RESULTS_HEADER, SUMMARY_HEADER, RANK_HEADER)):
        return "csv"
    if _TEXT_MARKS.search(text) or (stripped.startswith("Writing output to ") and text.count("\n") <= 3):
        return "text"  # the last: IOR's whole stdout when -O summaryFile sent the report elsewhere
    return None


def _sniff(path: Path, head: bytes) -> bool:
    if b"\x00" in head:
        return False
    if _kind(head.decode("utf-8", "replace")):
        return True
    try:
        with open(path, "rb") as fh:
            more = fh.read(_SNIFF_MORE)
    except OSError:
        return False
    return b"\x00" not in more[:65536] and bool(HEADER.search(more.decode("utf-8", "replace")))


def parse_ior(text: str, path: str = "<ior>") -> IorRun:
    """Parse IOR output of any kind held in `text`."""
    kind = _kind(text) or "text"
    if kind == "json":
        return parse_json(text, path)
    if kind == "csv":
        return parse_csv(text, path)
    return parse_text(text, path)


def load_run(path: str | Path) -> IorRun:
    """Read and parse one IOR output file; InputError (one line) when unusable."""
    path = Path(path)
    data = read_bounded(path, MAX_BYTES, "an IOR output file")
    if b"\x00" in data[:65536]:
        raise InputError(str(path), "not an IOR log (binary data)")
    return parse_ior(data.decode("utf-8", "replace"), str(path))


def profile_of(run: IorRun, path: str) -> IorProfile:
    """The job profile of a parsed IOR run."""
    start, end = parse_date(run.began), parse_date(run.finished)
    # Began/Finished have whole seconds: a run of 5.6 ms between two stamps of one second lasted at least
    # its phases' total times, not 0 s (IOR -vvv -t 1m -b 4m, review11)
    phases = sum(it.total_s or 0.0 for t in run.tests for it in t.iterations)
    runtime = max(end - start, phases) if start is not None and end is not None and end >= start else phases
    apis = sorted({t.params.api for t in run.tests if t.params.api})
    job = JobInfo(nprocs=run.tasks, start_time=start, end_time=end, runtime_s=float(runtime),
                  exe=run.command_line, library_version=f"IOR {run.version}" if run.version else "",
                  metadata={"machine": run.machine, "ior_version": run.version,
                            "api": ",".join(apis), "tests": str(len(run.tests))})
    source = Provenance(path=path, format=run.format, parser=f"ioadvisor {run.format}",
                        log_version=run.version, notes=list(run.notes))
    return IorProfile(source=source, job=job, run=run)


def load(path: Path) -> JobProfile:
    return profile_of(load_run(path), str(path))


def _per_rank_csv(path: Path, head: bytes) -> bool:
    return head.decode("utf-8", "replace").lstrip().startswith(RANK_HEADER)


FORMAT = register(InputFormat(name="ior", sniff=_sniff, load=load, companion=_per_rank_csv))
