"""IOR CSV output (``-O summaryFormat=CSV``) -> IorRun.

IOR 4 prints the results table as CSV (one row per operation and repetition,
with ``numTasks``); a summary table, where present, has the text summary's
columns. The per-rank file of ``-O saveRankPerformanceDetailsCSV`` is a
different thing and is refused with a pointer to the run's own output.
"""

from __future__ import annotations

import csv
import io

from advisor.errors import InputError
from advisor.ingest.ior.blocks import apply_summary_row, number, summary_columns, summary_row
from advisor.ingest.ior.model import IorIteration, IorRun, IorTest

RESULTS_HEADER = "access,bw(MiB/s)"
SUMMARY_HEADER = "Operation,Max(MiB)"
RANK_HEADER = "access,rank,runtime"
_FIELDS = {"IOPS": "iops", "Latency": "latency_s", "block(KiB)": "block_kib",
           "xfer(KiB)": "xfer_kib", "open(s)": "open_s", "wr/rd(s)": "wrrd_s",
           "close(s)": "close_s", "total(s)": "total_s"}


def parse_csv(text: str, path: str = "<csv>") -> IorRun:
    """Parse IOR CSV output; InputError (one line) for per-rank files or empty tables."""
    if text.lstrip().startswith(RANK_HEADER):
        raise InputError(path, "an IOR per-rank performance CSV (saveRankPerformanceDetailsCSV), "
                               "not a run summary: give the IOR output of the same run")
    run = IorRun(format="ior-csv")
    test = IorTest()
    columns: list[str] = []
    kind = ""
    for record in csv.reader(io.StringIO(text)):
        if not record or not any(cell.strip() for cell in record):
            continue
        joined = ",".join(record)
        if joined.startswith(RESULTS_HEADER) or joined.startswith(SUMMARY_HEADER):
            kind = "results" if joined.startswith(RESULTS_HEADER) else "summary"
            columns = summary_columns(" ".join(record)) if kind == "summary" else record
            continue
        if kind == "results" and record[0] in ("write", "read") and len(record) < len(columns):
            # the last row of an output cut short: its last number may be cut too (3944 of 3944.1871)
            run.notes.append(f"a CSV row with {len(record)} of the header's {len(columns)} fields was skipped "
                             "(the output ends inside it)")
            continue
        if kind == "results" and record[0] in ("write", "read"):
            _result(test, dict(zip(columns, record)), run)
        elif kind == "summary" and record[0] in ("write", "read"):
            summary, row = summary_row(columns, record)
            if summary is not None:
                test.summaries[summary.operation] = summary
                apply_summary_row(test.params, row)
    if not test.iterations and not test.summaries:
        raise InputError(path, "IOR CSV output without any result row")
    if test.params.repetitions is None:
        test.params.repetitions = len({it.iteration for it in test.iterations}) or None
    test.fill_summaries_from_rows()
    run.tests.append(test)
    run.notes.append("CSV output states no version, command line or test parameters beyond "
                     "sizes and task count")
    return run


def _result(test: IorTest, row: dict[str, str], run: IorRun) -> None:
    bw = number(row.get("bw(MiB/s)"))
    if bw is None:
        run.notes.append("a CSV row without a bandwidth was skipped")
        return
    it = IorIteration(operation=row["access"], iteration=int(number(row.get("iter")) or 0), bw_mib=bw)
    for col, name in _FIELDS.items():
        setattr(it, name, number(row.get(col)))
    test.iterations.append(it)
    tasks = number(row.get("numTasks"))
    if tasks:
        test.params.tasks = int(tasks)
    if it.block_kib and test.params.block_size is None:
        test.params.block_size = int(it.block_kib * 1024)
    if it.xfer_kib and test.params.transfer_size is None:
        test.params.transfer_size = int(it.xfer_kib * 1024)
