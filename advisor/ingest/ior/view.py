"""IOR runs, node snapshots and Recorder call counts as data (typed numbers, JSON-ready), and the
tables `show` draws from it.

What ``show --json`` and ``diagnose --json`` carry for an input that is not Darshan-like is each
profile's :meth:`~advisor.profile.JobProfile.results_data`: an IOR run's tests
(:func:`advisor.ingest.ior.model.ior_data`: parameters, per-operation summaries and every result
row, in IOR's units: MiB/s, seconds, bytes) or a snapshot's settings (:func:`snapshot_data`:
Lustre parameters as numbers where they are numbers). The display tables are built from that
data, so the text and the JSON cannot disagree.
"""

from __future__ import annotations

from typing import Any

from advisor.ingest.ior.model import FPP, SHARED
from advisor.collect import storage_devices
from advisor.formatting import counted

Table = tuple[str, list[str], list[list[str]]]

def snapshot_data(doc: dict[str, Any]) -> dict[str, Any]:
    """Every setting the snapshot read (its document less the commands run), with Lustre
    parameters as numbers where `lctl get_param` printed one number."""
    out = {k: v for k, v in doc.items() if k not in ("schema", "tool", "commands")}
    lustre = dict(doc.get("lustre") or {})
    lustre["params"] = {k: _typed(v) for k, v in (lustre.get("params") or {}).items()}
    out["lustre"] = lustre
    return out


def _typed(text: Any) -> Any:
    """'8' -> 8, '0.5' -> 0.5; anything else (several lines, words) stays as printed."""
    if not isinstance(text, str):
        return text
    value = text.strip()
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return text


# ---- the tables `show` prints, from the data above -------------------------------------------

def _size(n: int | None) -> str:
    if not n:
        return "-"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:g} {unit}" if n % div == 0 else f"{n / div:.2f} {unit}"
    return f"{n} B"


def _num(x: Any) -> str:
    return "-" if x is None else f"{x:,.2f}" if isinstance(x, float) else str(x)


def ior_tables(data: dict[str, Any]) -> list[Table]:
    """One row per test and operation: parameters and max/mean/min MiB/s."""
    rows = []
    for t in data["tests"]:
        p = t["params"]
        access = {FPP: "fpp", SHARED: "shared"}.get(p["access"], "?")
        for op, s in t["operations"].items():
            if "max_mib_s" not in s:
                continue
            rows.append([str(t["id"]), op, access, p["api"] or "?", _num(p["tasks"]), _num(p["nodes"]),
                         _size(p["transfer_size"]), _size(p["block_size"]), _num(p["segments"]),
                         _num(s["repetitions"] or p["repetitions"]), _num(s["max_mib_s"]), _num(s["mean_mib_s"]),
                         _num(s["min_mib_s"]), s["source"]])
    columns = ["test", "op", "access", "api", "tasks", "nodes", "xfer", "block", "segs", "reps",
               "max MiB/s", "mean MiB/s", "min MiB/s", "from"]
    return [(f"IOR {data['version'] or '?'} tests", columns, rows)]


def snapshot_tables(doc: dict[str, Any]) -> list[Table]:
    """Node, storage devices (not loop/zram) and Lustre parameters of a snapshot."""
    cpu, mem = doc["cpu"], doc["memory"]
    node = [["host", doc["host"].get("hostname", "")], ["kernel", doc["host"].get("kernel", "")],
            ["CPUs", f"{cpu.get('logical_cpus')} ({counted(cpu.get('sockets'), 'socket')}, "
                     f"{counted(cpu.get('cores'), 'core')}, "
                     f"{cpu.get('threads_per_core')} threads per core)"],
            ["NUMA nodes", str(len(doc.get("numa", [])))], ["memory", _size(mem.get("total_bytes"))]]
    devices = [[d["name"], _num(d["read_ahead_kb"]), _num(d["max_sectors_kb"]), _num(d.get("max_hw_sectors_kb")),
                _num(d["nr_requests"]), _num(d.get("queue_depth")), d.get("scheduler") or "-",
                {True: "hdd", False: "ssd"}.get(d.get("rotational"), "?")]
               for d in storage_devices(doc)]
    params = [[k, (str(v).splitlines() or [""])[0]] for k, v in sorted(doc["lustre"]["params"].items())]
    return [t for t in (
        ("Node", ["item", "value"], node),
        ("Block devices", ["device", "read_ahead_kb", "max_sectors_kb", "max_hw_sectors_kb", "nr_requests",
                           "queue_depth", "scheduler", "kind"], devices),
        ("Lustre parameters", ["param", "value"], params)) if t[2]]


def iozone_tables(data: dict[str, Any]) -> list[Table]:
    """Throughput mode: one row per test and thread count. Automatic mode: per test, the best value
    and where it was reached, and the count of file/record size cells (the full surface is in the JSON)."""
    unit = data["iozone"]["unit"]
    rows, best = [], {}
    for m in data["measurements"]:
        if m["threads"] is not None:
            rows.append([m["test"], str(m["threads"]), _size((m["file_kib"] or 0) * 1024),
                         _size((m["record_kib"] or 0) * 1024), _num(m["value"]), _num(m["parent_value"]),
                         _num(m["min_per_process"]), _num(m["max_per_process"])])
        else:
            count, top = best.get(m["test"], (0, None))
            best[m["test"]] = (count + 1, m if top is None or m["value"] > top["value"] else top)
    title = f"IOzone {data['iozone']['version'] or '?'}"
    tables = []
    if rows:
        tables.append((f"{title} throughput ({unit})", ["test", "threads", "file", "record", "children",
                                                        "parent", "min/process", "max/process"], rows))
    if best:
        tables.append((f"{title} automatic mode ({unit})", ["test", "cells", "best", "at file", "record"],
                       [[test, str(n), _num(m["value"]), _size(m["file_kib"] * 1024), _size(m["record_kib"] * 1024)]
                        for test, (n, m) in best.items()]))
    return tables


def fio_tables(data: dict[str, Any]) -> list[Table]:
    """One row per job (or group) and direction: bandwidth, IOPS, completion latency percentiles."""
    def pct(m: dict, p: str) -> str:
        return _num(m["clat_percentiles_us"].get(p))

    rows = [[m["job"], str(m["group"]), m["direction"], m["rw"] or "-", m["block_size"] or "-",
             _num(m["bw_kib_s"] / 1024), _num(m["iops"]), _num(m["clat_mean_us"]), pct(m, "50.000000"),
             pct(m, "99.000000"), pct(m, "99.990000")] for m in data["measurements"]]
    return [(f"fio {data['fio']['version'] or '?'} jobs", ["job", "group", "dir", "rw", "bs", "MiB/s", "IOPS",
                                                           "clat mean us", "p50 us", "p99 us", "p99.99 us"], rows)]


def mdtest_tables(data: dict[str, Any]) -> list[Table]:
    """One row per operation of each SUMMARY table."""
    rows = [[m["operation"], m["unit"], _num(m["max"]), _num(m["min"]), _num(m["mean"]), _num(m["stddev"]),
             str(m["iterations"])] for m in data["measurements"]]
    return [(f"{data['mdtest']['version'] or 'mdtest'} summary", ["operation", "unit", "max", "min", "mean",
                                                                  "std dev", "iterations"], rows)]


def extra_tables(data: dict[str, Any]) -> list[Table]:
    """Tables of an input's :meth:`~advisor.profile.JobProfile.results_data` (IOR runs, IOzone, fio
    and mdtest outputs, node snapshots), for `show`."""
    if "ior" in data:
        return ior_tables(data["ior"])
    for kind, tables in (("iozone", iozone_tables), ("fio", fio_tables), ("mdtest", mdtest_tables)):
        if kind in data:
            return tables(data)
    if "snapshot" in data:
        return snapshot_tables(data["snapshot"])
    if "recorder" in data:
        return recorder_tables(data["recorder"])
    return []


def recorder_tables(doc: dict[str, Any]) -> list[Table]:
    """A Recorder trace's calls per layer and per function (every rank, MPI included)."""
    calls = doc["calls"]
    layers = [[layer, f"{sum(funcs.values()):,}", str(len(funcs))] for layer, funcs in calls.items()]
    rows = sorted(((layer, name, n) for layer, funcs in calls.items() for name, n in funcs.items()),
                  key=lambda r: (-r[2], r[0], r[1]))
    kinds = doc.get("kinds", {})
    out = [("Recorder calls per layer", ["layer", "calls", "functions"], layers),
           ("Recorder calls per function", ["layer", "function", "kind", "calls"],
            [[layer, name, kinds.get(name, "-"), f"{n:,}"] for layer, name, n in rows])]
    unknown = doc.get("unknown") or {}
    if unknown:  # a newer Recorder's functions: counted, their arguments not interpreted
        out.append(("Recorder functions this reader does not know (counted, arguments not read)",
                    ["function", "calls"], [[name, f"{n:,}"] for name, n in sorted(unknown.items())]))
    return out
