"""IOzone output as an input format: throughput and automatic modes, `-R`/`-b` reports, `-O`, `-+u`.

Every number IOzone printed becomes one :class:`IozoneMeasurement` (test as IOzone names it,
threads, file and record size, value and unit). The forms and the quirks this parser survives are
those of ``../shared/corpus/iozone/README.md``:

- throughput blocks (``-t N``, ``-l/-u``): ``Children see throughput for 64 initial writers = ...``,
  with Parent/Min/Max/Avg lines and ``-+u`` CPU lines attached to the same measurement;
- automatic-mode tables in three column layouts, parsed by column position (values are right-aligned
  under their header), so blank columns (tests not run) are never shifted onto their neighbours;
- the Excel-style text report (after ``-R`` or ``-b``), used when no table holds the same run (a
  headless fragment): its ``0`` cells are skipped cells, not measurements;
- the binary ``-b`` workbook (BIFF, read with xlrd);
- ``-O`` (ops/sec): the banner says so, and every table and report value is then ``ops/s``.
"""

from __future__ import annotations

import io
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from advisor.errors import InputError
from advisor.ingest import InputFormat, read_bounded, register
from advisor.ingest.plausible import MAX_COUNT, MAX_RANKS, MAX_TOTAL
from advisor.profile import JobInfo, JobProfile, Provenance

MAX_BYTES = 16 << 20  # a full -a run with its report is under 100 kB
KBS, OPS = "kB/s", "ops/s"

# The 13 tests of the automatic table, left to right, and the Excel report's names for them.
AUTO_TESTS = ("write", "rewrite", "read", "re-read", "random read", "random write", "backward read",
              "record rewrite", "stride read", "fwrite", "re-fwrite", "fread", "re-fread")
_REPORT_TESTS = {"writer": "write", "re-writer": "rewrite", "reader": "read", "re-reader": "re-read",
                 "random read": "random read", "random write": "random write",
                 "backward read": "backward read", "record rewrite": "record rewrite",
                 "stride read": "stride read", "fwrite": "fwrite", "re-fwrite": "re-fwrite",
                 "fread": "fread", "re-fread": "re-fread"}

_BANNER = re.compile(r"Iozone: Performance Test of File I/O")
_VERSION = re.compile(r"Version \$Revision: ([\d.]+) \$")
_COMMAND = re.compile(r"Command line used: (.*)")
_RECORD = re.compile(r"^\s*Record Size (\d+) [kK]B?", re.MULTILINE)  # not "Using Maximum Record Size" (-a -q)
_FILE_SIZE = re.compile(r"^\s*File size set to (\d+) [kK]B?", re.MULTILINE)
_EACH = re.compile(r"Each process writes a (\d+) kByte file in (\d+) kByte records", re.IGNORECASE)  # 3.3xx: Kbyte
_CHILDREN = re.compile(r"Children see throughput for\s+(\d+)\s+([a-z][a-z -]*?)\s*=\s*([\d.]+)\s*(\S+)")
_PER_LINE = re.compile(r"(Parent sees throughput for\s+\d+\s+.+?|(?:Min|Max|Avg) throughput per process)"
                       r"\s*=\s*([\d.]+)")
_CPU = re.compile(r"CPU [Uu]tilization: Wall time\s+([\d.]+)\s+CPU time\s+([\d.]+)\s+CPU utilization\s+([\d.]+) %")
_TABLE_HEAD = re.compile(r"^\s+[kK]B\s+reclen\s+write", re.MULTILINE)
_REPORT_HEAD = re.compile(r'^"([A-Za-z -]+?) [rR]eport"\s*$')


@dataclass
class IozoneMeasurement:
    """One number IOzone printed: a test at one thread count, file size and record size."""

    test: str  # as IOzone names it: "initial writers", "random readers", "write", "re-read", ...
    value: float
    unit: str  # KBS or OPS, as the output says
    threads: int | None = None  # throughput mode's process/thread count
    file_kib: int | None = None
    record_kib: int | None = None
    source: str = "table"  # "throughput", "table", "report", "workbook"
    parent_value: float | None = None  # throughput mode: what the parent saw
    min_per_process: float | None = None
    max_per_process: float | None = None
    avg_per_process: float | None = None
    cpu_percent: float | None = None  # -+u


@dataclass
class IozoneRun:
    """Everything one IOzone output holds."""

    format: str  # "iozone-text" or "iozone-workbook"
    version: str = ""
    command_line: str = ""
    mode: str = ""  # "throughput", "automatic" or "" (unknown)
    unit: str = KBS
    measurements: list[IozoneMeasurement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class IozoneProfile(JobProfile):
    """The profile of one IOzone output: its run, for the benchmark rules and campaigns."""

    kind: ClassVar[str] = "iozone"
    iozone: IozoneRun

    def plausible_fields(self):
        """(field, value, low, high) of every number, for :func:`advisor.ingest.plausible.check`."""
        for i, m in enumerate(self.iozone.measurements):
            where = f"measurement {i} ({m.test}) "
            yield where + "value", m.value, 0, MAX_TOTAL
            yield where + "threads", m.threads, 0, MAX_RANKS
            yield where + "file size (KiB)", m.file_kib, 0, MAX_COUNT
            yield where + "record size (KiB)", m.record_kib, 0, MAX_COUNT

    def results_data(self) -> dict[str, Any]:
        """The run's header (``iozone``) and every number it printed (``measurements``: test as IOzone
        names it, threads, file and record size in KiB, value and its unit; null where it does not apply)."""
        run = self.iozone
        return {"iozone": {"format": run.format, "version": run.version, "command_line": run.command_line,
                           "mode": run.mode, "unit": run.unit, "notes": list(run.notes)},
                "measurements": [asdict(m) for m in run.measurements]}


def parse_text(text: str) -> IozoneRun:
    """Every measurement of an IOzone text output (whole, interrupted or a fragment)."""
    run = IozoneRun(format="iozone-text")
    run.version = _first(_VERSION, text)
    run.command_line = _first(_COMMAND, text).strip()
    run.unit = OPS if "OPS Mode" in text else KBS
    record, file_size = _first(_RECORD, text), _first(_FILE_SIZE, text)
    run.measurements = _throughput(text, _int(record), _int(file_size))
    skipped: list[str] = []
    tables = _tables(text, run.unit, skipped)
    run.measurements += tables
    if not tables:  # a report repeats the table of its run; alone (a fragment), it is the data
        run.measurements += _reports(text, run.unit)
    run.mode = ("throughput" if any(m.source == "throughput" for m in run.measurements)
                else "automatic" if run.measurements else "")
    run.notes += _damage(text, run.mode)
    foreign = [line for line in skipped if not line.startswith("iozone: interrupted")]
    if foreign:
        run.notes.append(f"{len(foreign)} line(s) inside the table are not rows and were skipped "
                         f"(output interleaved into it), the first: {foreign[0][:80]!r}")
    return run


def _interrupted(notes: list[str]) -> bool:
    return any(n.startswith("interrupted") for n in notes)


def _damage(text: str, mode: str) -> list[str]:
    """What the output says about its own completeness: interrupted, cut short, or headless."""
    notes = []
    if "iozone: interrupted" in text or "exiting iozone" in text:
        notes.append("interrupted ('iozone: interrupted'): the tests and rows after the last value printed never ran")
    elif _BANNER.search(text) and "iozone test complete." not in text:
        notes.append("truncated: the output ends before 'iozone test complete.' (the last "
                     + ("throughput block" if mode == "throughput" else "table row") + " may be partial)")
    if not _BANNER.search(text):
        notes.append("no IOzone banner: a fragment of an output (version and options unknown)")
    return notes


def _throughput(text: str, record_kib: int | None, file_kib: int | None) -> list[IozoneMeasurement]:
    found: list[IozoneMeasurement] = []
    for line in text.splitlines():
        if m := _EACH.search(line):
            file_kib, record_kib = int(m[1]), int(m[2])
        elif m := _CHILDREN.search(line):
            unit = OPS if m[4].lower().startswith("ops") else KBS
            found.append(IozoneMeasurement(m[2].strip(), float(m[3]), unit, threads=int(m[1]), file_kib=file_kib,
                                           record_kib=record_kib, source="throughput"))
        elif found and (m := _PER_LINE.search(line)):
            name = m[1].split()[0].lower()
            attr = {"parent": "parent_value", "min": "min_per_process", "max": "max_per_process",
                    "avg": "avg_per_process"}[name]
            setattr(found[-1], attr, float(m[2]))
        elif found and (m := _CPU.search(line)):
            found[-1].cpu_percent = float(m[3])
    return found


def _tables(text: str, unit: str, skipped: list[str]) -> list[IozoneMeasurement]:
    """The rows of every automatic-mode table, each value assigned to the column whose header it
    ends under (IOzone right-aligns both); lines inside a table that are not rows go to `skipped`."""
    found = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not _TABLE_HEAD.match(line):
            continue
        ends = [m.end() for m in re.finditer(r"\S+", line)]  # kB, reclen, then the 13 tests
        for row in lines[i + 1:]:
            cells = [(m.end(), m[0]) for m in re.finditer(r"\S+", row)]
            if not cells:
                break  # the blank line that ends every table
            if len(cells) < 2 or not all(c.isdigit() for _, c in cells):
                skipped.append(row.strip())  # a line printed into the table (kernel log, 'iozone: interrupted')
                continue
            file_kib, record_kib = int(cells[0][1]), int(cells[1][1])
            for end, cell in cells[2:]:
                column = min(range(2, len(ends)), key=lambda k: abs(ends[k] - end))
                if column - 2 < len(AUTO_TESTS):
                    found.append(IozoneMeasurement(AUTO_TESTS[column - 2], float(cell), unit,
                                                   file_kib=file_kib, record_kib=record_kib))
    return found


def _reports(text: str, unit: str) -> list[IozoneMeasurement]:
    """The Excel-style report blocks: rows of file sizes, columns of record sizes."""
    found = []
    test, records = "", []
    for line in text.splitlines():
        stripped = line.strip()
        if m := _REPORT_HEAD.match(stripped):
            test, records = _REPORT_TESTS.get(m[1].lower(), ""), []
        elif test and stripped.startswith('"') and not records:
            records = [_int(r) for r in re.findall(r'"(\d+)"', stripped)]
        elif test and records and (m := re.match(r'^"(\d+)"\s+(.*)$', stripped)):
            for record_kib, cell in zip(records, m[2].split()):
                value = _float(cell)
                if value:  # 0: a record size the run skipped for this file size
                    found.append(IozoneMeasurement(test, value, unit, file_kib=int(m[1]),
                                                   record_kib=record_kib, source="report"))
    return found


def parse_workbook(data: bytes) -> IozoneRun:
    """The measurements of the binary workbook `-b` writes (BIFF, through xlrd)."""
    import xlrd

    try:
        book = xlrd.open_workbook(file_contents=data, logfile=io.StringIO())
    except Exception as exc:  # a damaged BIFF file raises XLRDError, struct.error, IndexError ...
        raise ValueError(f"a damaged IOzone workbook ({type(exc).__name__}: {exc})") from None
    sheet = book.sheet_by_index(0)
    rows = [[sheet.cell_value(r, c) for c in range(sheet.ncols)] for r in range(sheet.nrows)]
    run = IozoneRun(format="iozone-workbook")
    if rows and isinstance(rows[0][0], str) and rows[0][0].lstrip().startswith("iozone"):
        run.command_line = rows[0][0].strip()
    run.unit = OPS if " -O" in f" {run.command_line}" else KBS
    test, records = "", []
    for row in rows:
        first = row[0] if row else ""
        if isinstance(first, str) and first.lower().endswith(" report"):
            test, records = _REPORT_TESTS.get(first[:-len(" report")].strip().lower(), ""), []
        elif test and first == "" and any(isinstance(v, float) for v in row[1:]):
            records = [int(v) if isinstance(v, float) else None for v in row[1:]]
        elif test and records and isinstance(first, float):
            for record_kib, value in zip(records, row[1:]):
                if record_kib and isinstance(value, float) and value:
                    run.measurements.append(IozoneMeasurement(test, value, run.unit, file_kib=int(first),
                                                              record_kib=record_kib, source="workbook"))
    run.mode = "automatic" if run.measurements else ""
    return run


def _first(pattern: re.Pattern, text: str) -> str:
    m = pattern.search(text)
    return m[1] if m else ""


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


_BIFF_BOF = (b"\x09\x00", b"\x09\x02", b"\x09\x04", b"\x09\x08")
_TEXT_MARKS = (_BANNER, _TABLE_HEAD, re.compile(r"Children see throughput for"),
               re.compile(r'^"Writer report"', re.MULTILINE))


def _sniff(path: Path, head: bytes) -> bool:
    if head[:2] in _BIFF_BOF:
        return b"iozone" in head[:512]
    if b"\x00" in head:
        return False
    text = head.decode("utf-8", "replace")
    return any(p.search(text) for p in _TEXT_MARKS)


def load(path: Path) -> JobProfile:
    """Read one IOzone output; InputError (one line) when it holds no measurement."""
    data = read_bounded(path, MAX_BYTES, "an IOzone output")
    if b"\n```" in data or data.startswith(b"```"):  # IOzone never prints a code fence: excerpts in a document
        raise InputError(str(path), "IOzone lines quoted in a Markdown document, not an IOzone output "
                                    "(give the output file itself)")
    try:
        run = parse_workbook(data) if data[:2] in _BIFF_BOF else parse_text(data.decode("utf-8", "replace"))
    except ValueError as exc:
        raise InputError(str(path), str(exc)) from None
    if not run.measurements:
        cause = ("interrupted ('iozone: interrupted') before its first value" if _interrupted(run.notes)
                 else "; ".join(run.notes) or "no throughput line, table or report")
        raise InputError(str(path), f"an IOzone output with no measurement ({cause})")
    threads = max((m.threads or 0 for m in run.measurements), default=0)
    job = JobInfo(nprocs=threads or 1, exe=run.command_line,
                  library_version=f"IOzone {run.version}" if run.version else "IOzone",
                  metadata={"iozone_version": run.version, "mode": run.mode, "unit": run.unit})
    source = Provenance(path=str(path), format=run.format, parser=f"ioadvisor {run.format}",
                        log_version=run.version, notes=list(run.notes))
    return IozoneProfile(source=source, job=job, iozone=run)


FORMAT = register(InputFormat(name="iozone", sniff=_sniff, load=load))
