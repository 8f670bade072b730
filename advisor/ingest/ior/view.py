"""Tables of an IOR run and of a node snapshot for `ioadvisor show` (plain lists, JSON-ready)."""

from __future__ import annotations

from typing import Any

from advisor.ingest.ior.model import FPP, SHARED, IorProfile, IorRun
from advisor.ingest.snapshot import SnapshotProfile
from advisor.profile import JobProfile

Table = tuple[str, list[str], list[list[str]]]


def _size(n: int | None) -> str:
    if not n:
        return "-"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:g} {unit}" if n % div == 0 else f"{n / div:.2f} {unit}"
    return f"{n} B"


def _num(x: Any) -> str:
    return "-" if x is None else f"{x:,.2f}" if isinstance(x, float) else str(x)


def ior_tables(run: IorRun) -> list[Table]:
    """One row per test and operation: parameters and max/mean/min MiB/s."""
    rows = []
    for t in run.tests:
        p = t.params
        access = {FPP: "fpp", SHARED: "shared"}.get(p.access, "?")
        for op, s in t.summaries.items():
            rows.append([str(t.test_id), op, access, p.api or "?", _num(p.tasks), _num(p.nodes),
                         _size(p.transfer_size), _size(p.block_size), _num(p.segments),
                         _num(s.repetitions or p.repetitions), _num(s.max_mib), _num(s.mean_mib),
                         _num(s.min_mib), s.source])
    columns = ["test", "op", "access", "api", "tasks", "nodes", "xfer", "block", "segs", "reps",
               "max MiB/s", "mean MiB/s", "min MiB/s", "from"]
    return [(f"IOR {run.version or '?'} tests", columns, rows)]


def snapshot_tables(doc: dict[str, Any]) -> list[Table]:
    """Node, storage devices (not loop/zram) and Lustre parameters of a snapshot."""
    cpu, mem = doc["cpu"], doc["memory"]
    node = [["host", doc["host"].get("hostname", "")], ["kernel", doc["host"].get("kernel", "")],
            ["CPUs", f"{cpu.get('logical_cpus')} ({cpu.get('sockets')} sockets, {cpu.get('cores')} cores, "
                     f"{cpu.get('threads_per_core')} threads per core)"],
            ["NUMA nodes", str(len(doc.get("numa", [])))], ["memory", _size(mem.get("total_bytes"))]]
    devices = [[d["name"], _num(d["read_ahead_kb"]), _num(d["max_sectors_kb"]), _num(d.get("max_hw_sectors_kb")),
                _num(d["nr_requests"]), _num(d.get("queue_depth")), d.get("scheduler") or "-",
                {True: "hdd", False: "ssd"}.get(d.get("rotational"), "?")]
               for d in doc["block_devices"] if not d.get("virtual")]
    params = [[k, v.splitlines()[0] if v else ""] for k, v in sorted(doc["lustre"]["params"].items())]
    return [t for t in (
        ("Node", ["item", "value"], node),
        ("Block devices", ["device", "read_ahead_kb", "max_sectors_kb", "max_hw_sectors_kb", "nr_requests",
                           "queue_depth", "scheduler", "kind"], devices),
        ("Lustre parameters", ["param", "value"], params)) if t[2]]


def extra_tables(profile: JobProfile) -> list[Table]:
    """Tables for the payloads `show` does not know itself (IOR runs, node snapshots)."""
    if isinstance(profile, IorProfile):
        return ior_tables(profile.run)
    if isinstance(profile, SnapshotProfile):
        return snapshot_tables(profile.settings)
    return []
