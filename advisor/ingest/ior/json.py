"""IOR JSON summaries (``-O summaryFormat=JSON``) -> IorRun, including broken ones.

IOR 4.0 with ``-v`` writes its verbose lines ("Participating tasks", "Commencing
...") into the JSON stream and closes the Results array twice (IOR issue #503);
runs that abort leave the document cut short. When the document does not parse,
the recovery drops the lines that cannot be JSON and then decodes every object it
can find (parameters, options, result rows, summaries, the max block), and says
so in the run's notes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from advisor.errors import InputError
from advisor.ingest import jsondoc
from advisor.ingest.ior.blocks import apply_option
from advisor.ingest.ior.model import FPP, SHARED, IorIteration, IorRun, IorSummary, IorTest
from advisor.ingest.ior.options import fill_missing, params_from_command_line

_JSONISH = re.compile(r'^\s*([{}\[\],"]|-?\d|true|false|null|$)')
_HEAD_FIELDS = ("Version", "Began", "Command line", "Machine", "Finished")


def parse_json(text: str, path: str = "<json>") -> IorRun:
    """Parse an IOR JSON summary; InputError (one line) when nothing usable is in it."""
    run = IorRun(format="ior-json")
    try:
        doc = jsondoc.decode(text, path, "IOR JSON summary")
    except json.JSONDecodeError:
        try:
            doc = _recover(text, run)
        except RecursionError:
            raise InputError(path, "IOR JSON summary nested too deeply to be read") from None
    if not isinstance(doc, dict) or not ("tests" in doc or "summary" in doc):
        raise InputError(path, "not an IOR JSON summary (no 'tests' or 'summary')")
    jsondoc.validate(doc, "ior-json", path, "IOR JSON summary")
    _fill_run(run, doc)
    if not any(t.summaries for t in run.tests):
        cut = " (the document is cut short: the run aborted)" if run.notes else ""
        raise InputError(path, f"IOR JSON summary without any result{cut}")
    run.tests = [t for t in run.tests if t.summaries]
    return run


# ---- recovery of invalid JSON ---------------------------------------------------------

def _recover(text: str, run: IorRun) -> dict[str, Any]:
    kept = [line for line in text.splitlines() if _JSONISH.match(line)]
    dropped = len(text.splitlines()) - len(kept)
    cleaned = "\n".join(kept)
    try:
        doc = json.loads(cleaned)
        run.notes.append(f"invalid JSON: {dropped} non-JSON line(s) removed, then it parsed")
        return doc
    except ValueError:
        pass
    doc = _salvage(cleaned)
    run.notes.append(f"invalid JSON (IOR -v output mixed into it, or cut short): {dropped} non-JSON "
                     f"line(s) removed and {_count(doc)} object(s) decoded one by one; "
                     "values outside those objects are lost")
    return doc


def _count(doc: dict[str, Any]) -> int:
    tests = doc.get("tests", [])
    return (sum(len(t.get("Results", [])) + ("Parameters" in t) + ("Options" in t) for t in tests)
            + len(doc.get("summary", [])))


def _salvage(text: str) -> dict[str, Any]:
    """Decode the innermost known objects one by one and rebuild the document."""
    doc: dict[str, Any] = {"tests": [], "summary": []}
    for key in _HEAD_FIELDS:
        m = re.search(rf'"{re.escape(key)}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        if m:
            try:
                doc[key] = json.loads(f'"{m.group(1)}"')
            except ValueError:  # control characters in a damaged document
                doc[key] = m.group(1)
    decoder = json.JSONDecoder()
    pos = text.find("{", 1)
    test: dict[str, Any] | None = None
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        test = _place(doc, obj, test)
        pos = text.find("{", end)
    return doc


def _place(doc: dict[str, Any], obj: Any, test: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return test
    if "Results" in obj or ("Parameters" in obj and "TestID" in obj):
        doc["tests"].append(obj)
        return obj
    if "testID" in obj or "testFileName" in obj:  # a Parameters block opens a test
        test = {"TestID": obj.get("testID", len(doc["tests"])), "Parameters": obj, "Results": []}
        doc["tests"].append(test)
    elif "operation" in obj and "bwMaxMIB" in obj:
        doc["summary"].append(obj)
    elif test is not None and "access" in obj and ("bwMiB" in obj or "totalTime" in obj):
        test.setdefault("Results", []).append(obj)
    elif test is not None and "test filename" in obj:
        test["Options"] = obj
    elif test is not None and ("writeMiB" in obj or "readMiB" in obj):
        test["max"] = obj
    return test


# ---- document -> model ------------------------------------------------------------------

def _fill_run(run: IorRun, doc: dict[str, Any]) -> None:
    run.version = str(doc.get("Version", ""))
    run.command_line = str(doc.get("Command line", ""))
    run.machine = str(doc.get("Machine", ""))
    run.began, run.finished = str(doc.get("Began", "")), str(doc.get("Finished", ""))
    for i, item in enumerate(t for t in doc.get("tests", []) if isinstance(t, dict)):
        run.tests.append(_test(run, item, i))
    for item in doc.get("summary", []):
        if isinstance(item, dict):
            _apply_summary(run, item)
    for test in run.tests:
        fill_missing(test.params, params_from_command_line(run.command_line))
        test.fill_summaries_from_rows()
    if any(s.source == "results" for t in run.tests for s in t.summaries.values()):
        run.notes.append("no summary for some tests: statistics computed from the result rows")


def _flatten(items: Any):
    for item in items if isinstance(items, list) else []:
        if isinstance(item, list):
            yield from _flatten(item)
        elif isinstance(item, dict):
            yield item


def _test(run: IorRun, item: dict[str, Any], index: int) -> IorTest:
    test = IorTest(test_id=int(item.get("TestID", index) or 0), command_line=run.command_line,
                   version=run.version, machine=run.machine, began=str(item.get("StartTime", "")),
                   finished=run.finished, path=str(item.get("Path", "")))
    if "Capacity" in item:
        test.fs_info = f"FS: {item.get('Capacity')}   Used FS: {item.get('Used Capacity', '')}"
    for key, value in (item.get("Options") or {}).items():
        apply_option(test.params, key, str(value))
    _apply_parameters(test, item.get("Parameters") or {})
    counts: dict[str, int] = {}
    for row in _flatten(item.get("Results", [])):
        op = str(row.get("access", ""))
        if op not in ("write", "read") or not isinstance(row.get("bwMiB"), (int, float)):
            continue
        test.iterations.append(IorIteration(
            operation=op, iteration=counts.get(op, 0), bw_mib=float(row["bwMiB"]),
            iops=row.get("iops"), latency_s=row.get("latency"), block_kib=row.get("blockKiB"),
            xfer_kib=row.get("xferKiB"), open_s=row.get("openTime"), wrrd_s=row.get("wrRdTime"),
            close_s=row.get("closeTime"), total_s=row.get("totalTime")))
        counts[op] = counts.get(op, 0) + 1
    for op in ("write", "read"):
        value = (item.get("max") or {}).get(f"{op}MiB")
        if isinstance(value, (int, float)):
            test.max_lines[op] = float(value)
    return test


_PARAM_MAP = {
    "api": ("api", str), "testFileName": ("test_file", str), "nodes": ("nodes", int),
    "tasksPerNode": ("tasks_per_node", int), "numTasks": ("tasks", int),
    "repetitions": ("repetitions", int), "segmentCount": ("segments", int),
    "transferSize": ("transfer_size", int), "blockSize": ("block_size", int),
    "fsync": ("fsync", bool), "fsyncperwrite": ("fsync_per_write", bool),
    "readFile": ("read", bool), "writeFile": ("write", bool), "keepFile": ("keep_file", bool),
    "reorderTasks": ("reorder_tasks", bool), "reorderTasksRandom": ("reorder_random", bool),
    "randomOffset": ("random_offsets", bool), "collective": ("collective", bool),
    "useO_DIRECT": ("direct_io", bool), "stoneWallingWearOut": ("stonewall_wearout", bool),
    "taskPerNodeOffset": ("task_offset", int),
}


def _apply_parameters(test: IorTest, params: dict[str, Any]) -> None:
    p = test.params
    for key, value in params.items():
        if key in _PARAM_MAP:
            name, convert = _PARAM_MAP[key]
            try:
                setattr(p, name, convert(value))
            except (TypeError, ValueError):
                p.other[key] = str(value)
        elif key == "filePerProc":
            p.access = FPP if value else SHARED
        elif key == "deadlineForStonewall" and value:
            p.stonewall_s = float(value)
        elif key == "lustreStripeCount" and value:
            p.stripe_count = int(value)
        elif key == "lustreStripeSize" and value:
            p.stripe_size = int(value)
        else:
            p.other[key] = str(value)


def _apply_summary(run: IorRun, item: dict[str, Any]) -> None:
    test_id = item.get("TestID", 0)
    test = next((t for t in run.tests if t.test_id == test_id), None)
    if test is None:
        test = IorTest(test_id=int(test_id or 0), command_line=run.command_line, version=run.version)
        run.tests.append(test)
    try:
        summary = IorSummary(
            operation=str(item["operation"]), max_mib=float(item["bwMaxMIB"]),
            min_mib=float(item["bwMinMIB"]), mean_mib=float(item["bwMeanMIB"]),
            stddev_mib=float(item.get("bwStdMIB", 0.0)), ops_max=item.get("OPsMax"),
            ops_min=item.get("OPsMin"), ops_mean=item.get("OPsMean"),
            mean_time_s=item.get("MeanTime"), stonewall_s=item.get("StoneWallTime"),
            stonewall_mib=item.get("StoneWallbwMeanMIB"),
            repetitions=int(item.get("repetitions", 0) or 0))
    except (KeyError, TypeError, ValueError):
        run.notes.append(f"a summary entry of test {test_id} is incomplete and was skipped")
        return
    test.summaries[summary.operation] = summary
    p = test.params
    p.tasks = int(item.get("numTasks") or p.tasks or 0) or None
    p.segments = int(item.get("segmentCount") or p.segments or 0) or None
    p.block_size = int(item.get("blockSize") or p.block_size or 0) or None
    p.transfer_size = int(item.get("transferSize") or p.transfer_size or 0) or None
    if "filePerProc" in item:
        p.access = FPP if item["filePerProc"] else SHARED
    if not p.api and item.get("API"):
        p.api = str(item["API"])
