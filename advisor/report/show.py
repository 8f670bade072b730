"""What `ioadvisor show` reports about one input: a JSON-ready dict and its rendering.

The dict (`ioadvisor/show/v1`, documented in docs/ingest.md) is built once from
the job profile and its metrics; the terminal views are drawn from that dict, so
the text and `--json` can never disagree. Rich tables on a terminal; plain
aligned text otherwise (pipes, files, CI logs). Names from traces are untrusted:
control characters are shown escaped and never interpreted as markup.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import sys
import textwrap
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from advisor.engine.chain import json_ready
from advisor.facts import FactContext
from advisor.facts.layers import layer_section
from advisor.formatting import counted, fmt_middle, printable
from advisor.metrics import FileModuleStats, ModuleSummary, per_file, summarize
from advisor.profile import JobProfile, LustreLayout
from advisor.report.layers import file_table, layer_lines, layer_table
from advisor.report.units import fmt_bytes, fmt_count, fmt_seconds, fmt_share

SCHEMA = "ioadvisor/show/v1"
def _num(x: Any) -> Any:
    """JSON-safe number: NaN/inf become null, numpy scalars plain Python."""
    if x is None:
        return None
    if isinstance(x, (np.integer, int)):
        return int(x)
    x = float(x)
    return x if math.isfinite(x) else None


# ---------------------------------------------------------------- JSON view

def _name(path: str, record_id: int) -> str:
    """A record's name; some modules (DFS, DAOS) record empty names."""
    return path or f"<unnamed record {record_id:#x}>"


def error_entry(path: str, reason: str) -> dict:
    return {"path": str(path), "ok": False, "error": reason}


def show_entry(profile: JobProfile, top_files: int = 10) -> dict:
    """The `show` result of one profile (top_files=0: every file)."""
    from advisor.ingest.ior.view import extra_tables

    summary = summarize(profile)
    shown = per_file(profile, None if top_files <= 0 else top_files)
    ctx = FactContext(profile)
    layers = layer_section(ctx)
    data = profile.results_data()
    j = profile.job
    return {
        "path": profile.source.path,
        "ok": True,
        "source": {"format": profile.source.format, "parser": profile.source.parser,
                   "log_version": profile.source.log_version, "notes": list(profile.source.notes),
                   "ingest": profile.ingest or None},
        "job": {"jobid": j.jobid, "uid": j.uid, "nprocs": j.nprocs, "start_time": _num(j.start_time),
                "end_time": _num(j.end_time), "runtime_s": _num(j.runtime_s), "exe": j.exe,
                "library_version": j.library_version, "metadata": dict(j.metadata)},
        "modules": [{"name": m.name, "version": m.version, "records": m.records, "partial": m.partial,
                     "supported": m.supported, "note": m.note} for m in profile.modules.values()],
        "summary": {
            "base_modules": summary.base_modules,
            "bytes_read": summary.bytes_read, "bytes_written": summary.bytes_written,
            "io_time_s": _num(summary.io_time_s), "io_time_per_rank_s": _num(summary.io_time_per_rank_s),
            "io_fraction": _num(summary.io_fraction), "files": summary.files,
            "rank_time_imbalance": _num(summary.rank_time_imbalance),
            # the counters not believed as recorded, as `diagnose` says them (summary.counter_notes)
            "counter_notes": ctx.value("counter_notes") or [],
            "modules": {name: _module_json(ms) for name, ms in summary.modules.items()},
        },
        "layers": json_ready(layers) if layers is not None else None,  # as `diagnose` has it in summary.layers
        "files_total": summary.files,
        "files": [{"path": _name(f.path, f.record_id), "record_id": str(f.record_id), "fstype": f.fstype,
                   "shared": f.shared, "ranks": f.ranks,
                   "modules": {m: _stats_json(s) for m, s in f.by_module.items()},
                   "lustre": _layout_json(f.layout)} for f in shown],
        "lustre": _lustre_json(profile, shown, top_files),
        "dxt": [_dxt_json(profile, name) for name in profile.dxt],
        "mounts": [{"path": m.path, "fstype": m.fstype} for m in profile.mounts],
        **data,  # an IOR run's tests ("ior") or a snapshot's settings ("snapshot"), as numbers
        "extra_tables": [list(t) for t in extra_tables(data)],  # the same, as the tables printed
    }


def _module_json(ms: ModuleSummary) -> dict:
    return {
        "records": ms.records, "files": ms.files, "shared_files": ms.shared_files,
        "bytes_read": ms.bytes_read, "bytes_written": ms.bytes_written,
        "reads": ms.reads, "writes": ms.writes, "meta_ops": ms.meta_ops,
        "read_time_s": _num(ms.read_time), "write_time_s": _num(ms.write_time),
        "meta_time_s": _num(ms.meta_time),
        "size_hist_read": ms.size_hist_read, "size_hist_write": ms.size_hist_write,
        "common_sizes": [[s, c] for s, c in ms.common_sizes],
        "seq_read_frac": _num(ms.seq_read_frac), "consec_read_frac": _num(ms.consec_read_frac),
        "seq_write_frac": _num(ms.seq_write_frac), "consec_write_frac": _num(ms.consec_write_frac),
        "file_not_aligned": ms.file_not_aligned, "mem_not_aligned": ms.mem_not_aligned,
        "file_alignment": ms.file_alignment, "mem_alignment": ms.mem_alignment,
        "rw_switches": ms.rw_switches,
        "shared_bytes": ms.shared_bytes, "shared_time_s": _num(ms.shared_time),
        "rank_time_imbalance": _num(ms.rank_time_imbalance),
        "rank_bytes_imbalance": _num(ms.rank_bytes_imbalance),
        "shared_time_imbalance": _num(ms.shared_time_imbalance),
    }


def _stats_json(s: FileModuleStats) -> dict:
    return {"bytes_read": s.bytes_read, "bytes_written": s.bytes_written, "reads": s.reads,
            "writes": s.writes, "meta_ops": s.meta_ops, "read_time_s": _num(s.read_time),
            "write_time_s": _num(s.write_time), "meta_time_s": _num(s.meta_time),
            "ranks": s.ranks, "shared": s.shared,
            "slowest_rank_time_s": _num(s.slowest_rank_time), "fastest_rank_time_s": _num(s.fastest_rank_time),
            "slowest_rank_bytes": _num(s.slowest_rank_bytes), "fastest_rank_bytes": _num(s.fastest_rank_bytes)}


def _layout_json(layout: LustreLayout | None) -> dict | None:
    if layout is None:
        return None
    return {"stripe_count": layout.stripe_count, "stripe_size": layout.stripe_size,
            "ost_ids": layout.ost_ids, "osts": layout.osts, "mdts": layout.mdts,
            "components": [{"extent_start": c.extent_start, "extent_end": c.extent_end,
                            "stripe_size": c.stripe_size, "stripe_count": c.stripe_count,
                            "stripe_offset": c.stripe_offset, "pattern": c.pattern, "pool": c.pool,
                            "ost_ids": list(c.ost_ids)} for c in layout.components]}


def _lustre_json(profile: JobProfile, files, top: int) -> dict:
    """Layouts of the listed (busiest) files first, then of the other files by path."""
    order = [f.record_id for f in files if f.layout is not None]
    seen = set(order)
    rest = sorted((rid for rid in profile.lustre if rid not in seen), key=profile.name_of)
    ids = order + rest
    ids = ids if top <= 0 else ids[:top]
    return {"files": len(profile.lustre),
            "layouts": [{"path": _name(profile.name_of(rid), rid), "record_id": str(rid),
                         **_layout_json(profile.lustre[rid])} for rid in ids]}


def _dxt_json(profile: JobProfile, name: str) -> dict:
    t = profile.dxt[name]
    info = profile.modules.get(name)
    out = {"module": name, "readable": t.readable, "note": t.note,
           "records": info.records if info else None, "segments": len(t) if t.readable else None}
    if t.readable and len(t):
        out.update(ranks=int(np.unique(t.rank).size), reads=int((t.op == 0).sum()),
                   writes=int((t.op == 1).sum()), bytes=int(t.length[t.length > 0].sum()),
                   first_start_s=_num(t.start.min()), last_end_s=_num(t.end.max()))
    return out


# ---------------------------------------------------------------- terminal views

def render(entry: dict, out: IO[str] | None = None) -> None:
    """Print one `show` result: rich tables on a terminal, plain text otherwise."""
    out = out or sys.stdout
    sections = Sections.of(entry)
    if hasattr(out, "isatty") and out.isatty():
        _render_rich(sections, out)
    else:
        out.write(sections.plain())


def _render_rich(sections, out: IO[str]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=out, highlight=False, emoji=False, no_color="NO_COLOR" in os.environ)
    console.print(Text(sections.title, style="bold"))
    for line in sections.header:
        console.print(Text(line))
    for title, columns, rows in sections.tables:
        if columns[0] == "file":
            columns, rows = _stack_file_column(columns, rows)
        table = Table(title=title, title_justify="left", title_style="bold", show_edge=False)
        for i, col in enumerate(columns):
            wide = col.startswith("file") or col in ("status", "note")  # long text folds; numbers never wrap
            table.add_column(col, justify="left" if i == 0 or col in _LEFT else "right",
                             overflow="fold", no_wrap=not wide, min_width=20 if col.startswith("file") else None,
                             ratio=1 if wide else None)
        for row in rows:
            table.add_row(*(Text(c, style=_cell_style(c)) for c in row))
        console.print(table)
    console.print()


def _cell_style(cell: str) -> str:
    """Colour only what needs attention: unread data and partial modules."""
    if cell == "UNREADABLE" or cell.startswith("not read"):
        return "bold red" if cell == "UNREADABLE" else "yellow"
    return "yellow" if cell == "PARTIAL" else ""


def _stack_file_column(columns: list[str], rows: list[list[str]]):
    """Put each file name on a row of its own above its rows (modules, layout components): a long
    path then has the whole line."""
    out = []
    for row in rows:
        if row[0]:
            out.append([row[0]] + [""] * (len(columns) - 2))
        out.append([f"  {row[1]}"] + row[2:])
    return [f"file / {columns[1]}"] + columns[2:], out


_LEFT = {"module", "partial", "status", "pattern", "OSTs", "note", "pool", "extent", "file", "ranks"}
_WRAPPED = {"status", "note", "value", "OSTs"}  # text that wraps when it ends a row


@dataclass
class Sections:
    """One `show` result as a title, header lines and (title, columns, rows) tables of text."""

    title: str
    header: list[str] = field(default_factory=list)
    tables: list[tuple[str, list[str], list[list[str]]]] = field(default_factory=list)

    @classmethod
    def of(cls, e: dict) -> Sections:
        j, s = e["job"], e["summary"]
        out = cls(title=printable(e["path"]))
        job = (f"job {printable(j['jobid'])}, {counted(j['nprocs'], 'process')}, "
               f"run time {fmt_seconds(j['runtime_s']) if j['runtime_s'] else 'unknown'}, ")  # 0: not stated
        snapshot = e["source"]["format"] == "snapshot"  # a node's settings: no job, no ranks, no run time
        out.header = [
            f"{'collected' if snapshot else job + 'started'} {when(j['start_time'])}",
            f"exe: {printable(j['exe']) or 'unknown'}",
            f"log: {e['source']['format']} {e['source']['log_version']} written by "
            f"{'Darshan ' if e['source']['format'].startswith('darshan') else ''}"
            f"{printable(j['library_version']) or '?'}, read with {e['source']['parser']}",
        ]
        if s["base_modules"]:
            out.header.append(
                f"I/O ({'+'.join(s['base_modules'])}): read {fmt_bytes(s['bytes_read'])}, "
                f"wrote {fmt_bytes(s['bytes_written'])} in {counted(s['files'], 'file')}")
        layers = e.get("layers")
        if layers and layers.get("io_time"):
            io = layers["io_time"]
            out.header.append(f"I/O time {fmt_seconds(io['total'])} per process in {io['layer']}"
                              f"{_run_share(io['total'], j['runtime_s'])}; by layer:")
        out.header += [f"  {printable(line)}" for line in layer_lines(layers)]
        out.header += [f"note: {printable(n)}" for n in (*e["source"]["notes"], *s.get("counter_notes", []))]
        layers = [layer_table(e["layers"]), file_table(e["layers"])] if e.get("layers") else []
        out.tables = [t for t in (_modules_table(e), *layers, _totals_table(s), _files_table(e),
                                  _lustre_table(e), _dxt_table(e)) if t[2]]
        out.tables += [(printable(t), c, [[printable(x) for x in r] for r in rows])
                       for t, c, rows in e.get("extra_tables", [])]
        return out

    def plain(self, width: int | None = None) -> str:
        """Aligned plain text (no colour, no box drawing) within `width` columns ($COLUMNS, else
        100): a file gets a row of its own above its modules, as on a terminal, and a text cell
        too long for its column is cut in the middle (a path keeps its start and its file name)."""
        width = width or _columns()
        lines = [wrapped for line in (f"== {self.title}", *self.header)
                 for wrapped in textwrap.wrap(line, width, subsequent_indent="   ") or [""]]
        for title, columns, rows in self.tables:
            if columns[0] == "file":
                columns, rows = _stack_file_column(columns, rows)
            lines += ["", title, *_aligned(columns, rows, width)]
        return "\n".join(lines) + "\n\n"


def _columns() -> int:
    try:
        return max(40, int(os.environ.get("COLUMNS", "") or 100))
    except ValueError:
        return 100


def _aligned(columns: list[str], rows: list[list[str]], width: int) -> list[str]:
    """The table's lines, two spaces apart, within `width`: file columns give up what the line
    lacks (cut in the middle, down to 16 characters); a free-text last column (a note, a status)
    wraps under itself; a row with only its first cell (a file above its modules) has the whole
    line. Numbers are never cut (a line of numbers alone may be wider)."""
    alone = [len(r) > 1 and not any(r[1:]) for r in rows]
    table = [columns] + [r for r, a in zip(rows, alone) if not a]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    text = [i for i, c in enumerate(columns) if i == 0 or c in _LEFT]
    last = len(columns) - 1 if columns[-1] in _WRAPPED else None
    excess = 2 + sum(widths) + 2 * (len(widths) - 1) - width
    if last is not None and excess > 0:
        cut = min(excess, widths[last] - 16) if widths[last] > 16 else 0
        widths[last] -= cut
        excess -= cut
    paths = [i for i in range(len(columns)) if columns[i].startswith("file") and widths[i] > 16]
    for i in paths:
        cut = min(excess, widths[i] - 16) if excess > 0 else 0
        widths[i] -= cut
        excess -= cut
    gap = "  " if excess <= 0 else " "  # nothing else is cut: narrower gaps before a longer line
    out = []
    for r, a in zip([columns, *rows], [False, *alone]):
        if a:
            out.append("  " + fmt_middle(r[0], width - 2))
            continue
        cells = [fmt_middle(c, w) if i in paths else c for i, (c, w) in enumerate(zip(r, widths))]
        tail = textwrap.wrap(cells[last], widths[last]) if last is not None and cells[last] else []
        if tail:
            cells[last] = tail[0]
        line = [c.ljust(w) if i in text else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        out.append("  " + gap.join(line).rstrip())
        indent = 2 + sum(widths[:-1]) + len(gap) * (len(widths) - 1)
        out += [" " * indent + more for more in tail[1:]]
    return out


def _run_share(seconds: float, runtime: float | None) -> str:
    return f" ({fmt_share(min(seconds / runtime, 1.0))} of the run)" if runtime else ""


def _modules_table(e: dict):
    rows = []
    for m in e["modules"]:
        status = "read" if m["supported"] else "not read"
        if m["note"]:
            status += f": {printable(m['note'])}"
        rows.append([m["name"], str(m["version"] if m["version"] is not None else "-"),
                     fmt_count(m["records"]), "PARTIAL" if m["partial"] else "no", status])
    return "modules", ["module", "version", "records", "partial", "status"], rows


def _totals_table(s: dict):
    rows = [[name, fmt_bytes(m["bytes_read"]), fmt_bytes(m["bytes_written"]), fmt_count(m["reads"]),
             fmt_count(m["writes"]), fmt_count(m["meta_ops"]),
             fmt_seconds((m["read_time_s"] or 0) + (m["write_time_s"] or 0) + (m["meta_time_s"] or 0)),
             fmt_count(m["files"])] for name, m in s["modules"].items()]
    return ("totals per module (time: cumulative over ranks)",
            ["module", "read", "written", "reads", "writes", "meta ops", "I/O time", "files"], rows)


def _files_table(e: dict):
    rows = []
    for f in e["files"]:
        ranks = f"shared ({f['ranks']})" if f["shared"] else str(f["ranks"])
        for i, (mod, st) in enumerate(f["modules"].items()):
            rows.append([printable(f["path"]) if i == 0 else "", mod, ranks if i == 0 else "",
                         fmt_bytes(st["bytes_read"]), fmt_bytes(st["bytes_written"]),
                         fmt_count(st["reads"]), fmt_count(st["writes"]), fmt_count(st["meta_ops"]),
                         fmt_seconds((st["read_time_s"] or 0) + (st["write_time_s"] or 0)
                                     + (st["meta_time_s"] or 0))])
    title = f"files: top {len(e['files'])} of {e['files_total']} by bytes"
    return title, ["file", "module", "ranks", "read", "written", "reads", "writes", "meta ops",
                   "I/O time"], rows


def _lustre_table(e: dict):
    rows = []
    for lay in e["lustre"]["layouts"]:
        for i, c in enumerate(lay["components"]):
            end = "EOF" if c["extent_end"] < 0 else fmt_bytes(c["extent_end"])
            osts = ", ".join(map(str, c["ost_ids"][:16])) + (" ..." if len(c["ost_ids"]) > 16 else "")
            rows.append([printable(lay["path"]) if i == 0 else "", f"{fmt_bytes(c['extent_start'])}-{end}",
                         str(c["stripe_count"]), fmt_bytes(c["stripe_size"]), c["pattern"],
                         printable(c["pool"]) or "-", osts or "-"])
    title = f"Lustre layout: {len(e['lustre']['layouts'])} of {e['lustre']['files']} files"
    return title, ["file", "extent", "stripes", "stripe size", "pattern", "pool", "OSTs"], rows


def _dxt_table(e: dict):
    rows = []
    for d in e["dxt"]:
        if not d["readable"]:
            rows.append([d["module"], "UNREADABLE", "-", "-", "-", printable(d["note"])])
            continue
        rows.append([d["module"], fmt_count(d["segments"]), fmt_count(d.get("ranks", 0)),
                     fmt_count(d.get("reads", 0)), fmt_count(d.get("writes", 0)), printable(d["note"]) or "-"])
    return "DXT traces", ["module", "segments", "ranks", "reads", "writes", "note"], rows


def when(ts: float | None) -> str:
    if ts is None:
        return "unknown"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
