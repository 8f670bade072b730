"""IOR text output (2.x, 3.x, 4.x, with or without -v/-vv, IO500 captures) -> IorRun.

A line-oriented state machine that knows IOR's own lines and ignores the rest:
launcher prefixes (``stdout[0] ``, ``[1,0]<stdout>:``) are stripped, MPI and
launcher noise before, inside and after the report is skipped, ``Commencing ...``
lines interleaved in the results table are skipped, and a run cut short keeps
what it printed. Several IOR invocations appended to one file become several tests.
"""

from __future__ import annotations

import calendar
import re
import time

from advisor.errors import InputError
from advisor.ingest.ior.blocks import apply_option, apply_summary_row, number, summary_columns, summary_row
from advisor.ingest.ior.model import IorIteration, IorRun, IorTest
from advisor.ingest.ior.options import fill_missing, params_from_command_line

HEADER = re.compile(r"IOR-(\S+?): MPI Coordinated Test of Parallel I/O")
_PREFIX = re.compile(r"^(?:stdout\[\d+\] ?|\[\d+,\d+\]<std(?:out|err)>: ?)")
_KEYVAL = re.compile(
    r"^(Began|Run began|Command line used|Command line|Machine|TestID|StartTime|Path|FS|"
    r"Participating tasks|Finished|Run finished|Test (\d+) started)\s*:\s?(.*)$")
_TABLE = re.compile(r"^access\s+bw\(MiB/s\)")
_ROW = re.compile(r"^(write|read)\s+[-+]?(?:\d|inf|nan)", re.IGNORECASE)
_MAX = re.compile(r"^Max (Write|Read):\s+([\d.]+) MiB/sec")
# IOR's WARN_RESET: an option the backend cannot honour, reset before the test ran (CHFS's -e)
_RESET = re.compile(r"WARNING:\s*(.+?)\.\s+Using value of (-?\d+)")
_RESET_PARAMS = {"fsync() not supported": "fsync", "collective not available": "collective"}
_DATE = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} +\d+ [\d:]+ \d{4}$")
_TASK_HOST = re.compile(r"^task \d+ on (\S+)")
_IOR_SOURCE = re.compile(r"\(\S*ior\S*\.c:\d+\)")
_SHELL_CMD = re.compile(r"^\$ (.*\bior\b.*)$", re.IGNORECASE)
_ROW_FIELDS = {
    "bw(MiB/s)": "bw_mib", "IOPS": "iops", "Latency(s)": "latency_s", "block(KiB)": "block_kib",
    "xfer(KiB)": "xfer_kib", "open(s)": "open_s", "wr/rd(s)": "wrrd_s", "close(s)": "close_s",
    "total(s)": "total_s",
}
_DEFAULT_COLUMNS = ["access", "bw(MiB/s)", "block(KiB)", "xfer(KiB)", "open(s)", "wr/rd(s)",
                    "close(s)", "total(s)", "iter"]


def parse_date(text: str) -> float | None:
    """POSIX seconds of an IOR date (``Sat Nov 21 18:20:38 2026``, taken as UTC), or None."""
    try:
        return float(calendar.timegm(time.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y")))
    except ValueError:
        return None


class _Parser:
    """One pass over the lines; `mode` says which block the current line belongs to."""

    def __init__(self) -> None:
        self.run = IorRun(format="ior-text")
        self.test: IorTest | None = None
        self.invocation: list[IorTest] = []  # tests of the current IOR invocation
        self.header = IorTest()  # run-level header fields to copy into new tests
        self.mode = ""
        self.columns: list[str] = []
        self.summary_cols: list[str] = []
        self.pending_stonewall = ""
        self.pending_warnings: list[str] = []
        self.hosts: set[str] = set()
        self.ignored = 0
        self.prefixed = 0
        self.cut_rows = 0
        self.shell_command = ""
        self.output_file = ""  # "Writing output to FILE": the report went to a summary file

    # ---- tests --------------------------------------------------------------------
    def _new_test(self, test_id: int | None = None) -> IorTest:
        self._close_test()
        h = self.header
        self.test = IorTest(test_id=test_id if test_id is not None else len(self.invocation),
                            command_line=h.command_line, version=h.version, machine=h.machine,
                            began=h.began)
        self.run.tests.append(self.test)
        self.invocation.append(self.test)
        return self.test

    def _current(self) -> IorTest:
        return self.test if self.test is not None else self._new_test()

    def _close_test(self) -> None:
        if self.test is not None and self.hosts:
            self.test.hosts = len(self.hosts)
        self.hosts = set()

    def _has_body(self, test: IorTest) -> bool:
        return bool(test.iterations or test.summaries or test.params.api or test.params.tasks)

    # ---- lines --------------------------------------------------------------------
    def feed(self, raw: str) -> None:
        line = raw.rstrip("\r\n")
        stripped_prefix = _PREFIX.sub("", line)
        if stripped_prefix != line:
            self.prefixed += 1
        line = stripped_prefix.rstrip()
        text = line.strip()
        if not text:
            if self.mode in ("options", "summary-block"):
                self.mode = ""
            return
        for handler in (self._header, self._keyval, self._blocks, self._table, self._summary,
                        self._row, self._misc):
            if handler(line, text):
                return
        self.ignored += 1

    def _header(self, line: str, text: str) -> bool:
        m = HEADER.search(text)
        if not m:
            return False
        self.header = IorTest(version=m.group(1))
        if not self.run.version:
            self.run.version = m.group(1)
        self.invocation = []
        self._close_test()
        self.test = None
        self.mode = ""
        return True

    def _keyval(self, line: str, text: str) -> bool:
        m = _KEYVAL.match(text)
        if not m or self.mode == "options":
            return False
        key, value = m.group(1), m.group(3).strip()
        if key.startswith("Test ") or key == "TestID":
            number = m.group(2) if m.group(2) is not None else (value.split() or ["0"])[0]
            test_id = int(number) if number.isdigit() else 0
            if self.test is None or self._has_body(self.test):
                self._new_test(test_id)
            else:
                self.test.test_id = test_id
            if key.startswith("Test ") and value:
                self.test.began = value
            return True
        target = self.test if self.test is not None else self.header
        if key in ("Began", "Run began", "StartTime"):
            target.began = target.began or value
            self.run.began = self.run.began or value
        elif key.startswith("Command line"):
            target.command_line = value
            self.run.command_line = self.run.command_line or value
        elif key == "Machine":
            target.machine = value
            self.run.machine = self.run.machine or value
        elif key == "Path":
            self._current().path = value
        elif key == "FS":
            self._current().fs_info = f"FS: {value}"
        elif key == "Participating tasks":
            m = re.match(r"\d+", value)
            if m and not self._current().params.tasks:
                self._current().params.tasks = int(m.group())
        elif key in ("Finished", "Run finished"):
            for test in self.invocation or [self._current()]:
                test.finished = value
            self.run.finished = value
            self.mode = ""
        return True

    def _blocks(self, line: str, text: str) -> bool:
        if text in ("Options:", "Summary:"):
            test = self.test if self.test is not None and not self.test.iterations else self._new_test()
            self.test = test
            self.mode = "options" if text == "Options:" else "summary-block"
            return True
        if text == "Results:":
            self.mode = ""
            return True
        if self.mode == "options" and ":" in text:
            key, _, value = text.partition(":")
            apply_option(self._current().params, key, value)
            return True
        if self.mode == "summary-block":
            if "=" in text and line[:1] in ("\t", " "):
                key, _, value = text.partition("=")
                apply_option(self._current().params, key, value)
                return True
            self.mode = ""
        return False

    def _table(self, line: str, text: str) -> bool:
        if _TABLE.match(text):
            self.columns = text.split()
            self.mode = "results"
            return True
        if re.fullmatch(r"-{2,}(\s+-{2,})*", text):
            return True
        if text.startswith("Summary of all tests"):
            self.mode = "summary-header"
            return True
        return False

    def _summary(self, line: str, text: str) -> bool:
        if self.mode == "summary-header" and text.startswith("Operation"):
            self.summary_cols = summary_columns(text)
            self.mode = "summary"
            return True
        if self.mode != "summary" or not _ROW.match(text):
            return False
        tokens = text.split()
        summary, row = summary_row(self.summary_cols, tokens)
        test = self._summary_target(row.get("Test#"))
        if summary is None:
            self.cut_rows += 1
            return True
        test.summaries[summary.operation] = summary
        apply_summary_row(test.params, row)
        return True

    def _summary_target(self, test_no: str | None) -> IorTest:
        for test in self.invocation:
            if test_no is not None and str(test.test_id) == test_no:
                return test
        return self._current()

    def _row(self, line: str, text: str) -> bool:
        if not _ROW.match(text):
            return False
        tokens = text.split()
        columns = self.columns or _DEFAULT_COLUMNS
        if len(tokens) < len(columns):
            self.cut_rows += 1  # a row cut short (file truncated mid-line)
            return True
        values = dict(zip(columns, tokens))
        bw = number(values.get("bw(MiB/s)", ""))
        if bw is None:
            self.cut_rows += 1
            return True
        it = IorIteration(operation=tokens[0].lower(), iteration=int(number(values.get("iter", "0")) or 0),
                          bw_mib=bw, stonewall=self.pending_stonewall,
                          warnings=self.pending_warnings)
        for col, name in _ROW_FIELDS.items():
            if col in values and name != "bw_mib":
                setattr(it, name, number(values[col]))
        self.pending_stonewall, self.pending_warnings = "", []
        self._current().iterations.append(it)
        return True

    def _misc(self, line: str, text: str) -> bool:
        test = self.test
        if m := _MAX.match(text):
            self._current().max_lines[m.group(1).lower()] = float(m.group(2))
        elif text.startswith("stonewalling pairs accessed"):
            self.pending_stonewall = text
        elif text.startswith("Pairs deadlineForStonewalling") and test and test.iterations:
            test.iterations[-1].stonewall = (test.iterations[-1].stonewall + " " + text).strip()
        elif "WARNING" in text[:20]:
            self.pending_warnings = self.pending_warnings + [text]
            if test is not None:
                test.warnings.append(text)
            else:
                self.header.warnings.append(text)
        elif text.startswith("ERROR:") or text.startswith("ior ERROR"):
            (self.test or self.header).errors.append(text)
        elif text.startswith("Commencing ") or _DATE.match(text) or text.startswith("remove "):
            pass
        elif m := _TASK_HOST.match(text):
            self.hosts.add(m.group(1))
        elif text.startswith("Using reorderTasks"):
            self._current().params.reorder_tasks = True
        elif (m := _SHELL_CMD.match(text)) and not self.header.version:
            self.shell_command = m.group(1)
        elif text.startswith("Writing output to "):
            self.output_file = text[len("Writing output to "):].strip()
        else:
            return False
        return True

    # ---- result -------------------------------------------------------------------
    def finish(self, path: str) -> IorRun:
        self._close_test()
        run = self.run
        run.tests = [t for t in run.tests if t.iterations or t.summaries or t.max_lines or t.errors]
        if not run.tests:
            raise InputError(path, self._why_empty())
        for test in run.tests:
            self._complete(test)
        with_results = [t for t in run.tests if t.summaries]
        if not with_results:
            errors = [e for t in run.tests for e in t.errors]
            reason = f": {errors[0][:160]}" if errors else ""
            raise InputError(path, f"IOR run aborted before any result{reason}")
        if len(with_results) < len(run.tests):
            run.notes.append(f"{len(run.tests) - len(with_results)} test(s) without any result "
                             "row were dropped (aborted or cut short)")
        run.tests = with_results
        if len({t.test_id for t in run.tests}) < len(run.tests):
            for number, test in enumerate(run.tests):  # several invocations each start at test 0
                test.test_id = number
        self._notes(run)
        return run

    def _why_empty(self) -> str:
        errors = self.header.errors
        if self.header.version or self.run.version:
            return ("IOR log without any result (truncated or aborted run)" +
                    (f": {errors[0][:160]}" if errors else ""))
        if any(_IOR_SOURCE.search(e) for e in errors):
            return f"IOR aborted before printing its header: {errors[0][:160]}"
        if self.output_file:
            return f"IOR's stdout only: its report went to {self.output_file[:200]} (-O summaryFile); give that file"
        return "not an IOR log (no IOR header, results table or summary)"

    def _complete(self, test: IorTest) -> None:
        if not test.command_line and self.shell_command:
            test.command_line = self.shell_command
            self.run.command_line = self.run.command_line or self.shell_command
        if test.command_line:
            fill_missing(test.params, params_from_command_line(test.command_line))
        if test.params.repetitions is None and test.iterations:
            test.params.repetitions = len({it.iteration for it in test.iterations})
        if test.params.transfer_size is None and test.iterations and test.iterations[0].xfer_kib:
            test.params.transfer_size = int(test.iterations[0].xfer_kib * 1024)
        if test.iterations and test.iterations[0].block_kib:
            _exact_block(test.params, test.iterations[0].block_kib)
        if test.params.nodes is None and test.hosts:
            test.params.nodes = test.hosts
        for warning in test.warnings + [w for it in test.iterations for w in it.warnings]:
            if m := _RESET.search(warning):
                for what, name in _RESET_PARAMS.items():
                    if m.group(1).startswith(what):  # what IOR ran with, not what was asked for
                        setattr(test.params, name, m.group(2) != "0")
        p = test.params
        if p.nodes is None and p.tasks and p.tasks_per_node:
            p.nodes = max(1, p.tasks // p.tasks_per_node)
        test.fill_summaries_from_rows()

    def _notes(self, run: IorRun) -> None:
        if self.prefixed:
            run.notes.append(f"launcher prefixes stripped from {self.prefixed} line(s)")
        if self.ignored:
            run.notes.append(f"{self.ignored} line(s) that are not IOR output were ignored "
                             "(MPI/launcher messages)")
        if self.cut_rows:
            run.notes.append(f"{self.cut_rows} incomplete table row(s) skipped (output cut short)")
        sources = {s.source for t in run.tests for s in t.summaries.values()}
        if "results" in sources and (run.version or "").startswith("2."):
            # the block came with IOR 3: its absence from a 2.x output is no sign of a cut
            run.notes.append(f"IOR {run.version} prints no 'Summary of all tests' block: statistics "
                             "computed from the result rows")
        elif "results" in sources:
            run.notes.append("no 'Summary of all tests' block for some tests (IO500 prints none; "
                             "otherwise the output was cut short): statistics computed from the "
                             "result rows")
        if "max-line" in sources:
            run.notes.append("some operations are known only from their 'Max' line")
        if not self.header.version and not run.version:
            run.notes.append("no IOR header (a table-only fragment): parameters from the "
                             "command line where one is given")


def _exact_block(params, block_kib: float) -> None:
    """Block and aggregate sizes from a result row where the parameter block printed them rounded
    ("9.46 TiB", "1.53 TiB"): a row's whole number of KiB is exact, and of two statements of one
    size the finer wins; the aggregate is then IOR's block x segments x tasks."""
    row = int(block_kib * 1024)
    if params.block_size is None:
        params.block_size = row
    if block_kib != int(block_kib) or abs(row - params.block_size) >= 0.01 * row:
        return
    params.block_size = row
    total = row * (params.segments or 0) * (params.tasks or 0)
    if params.aggregate_size and abs(total - params.aggregate_size) < 0.01 * total:
        params.aggregate_size = total


def parse_text(text: str, path: str = "<text>") -> IorRun:
    """Parse IOR text output; InputError (one line) when it holds no IOR result."""
    parser = _Parser()
    for line in text.splitlines():
        parser.feed(line)
    return parser.finish(path)
