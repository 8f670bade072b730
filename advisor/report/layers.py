"""The layer account as every reporter prints it: lines, tables and the HTML picture.

All of it reads the summary's ``layers`` section (:meth:`advisor.facts.layers.LayerAccount.to_dict`,
plain JSON values), so `show`, the terminal header and the HTML page state the same figures from
the same numbers, and a saved diagnosis re-renders without the log.
"""

from __future__ import annotations

from advisor.formatting import fmt_bytes, fmt_num, fmt_pct, fmt_ratio, fmt_secs, printable
from advisor.report.plots import Plot, stacked_hbars, with_table

AMPLIFIED = 1.05  # below this, the layer below moved what was asked (rounding, headers)


def _share(section: dict, seconds: float | None) -> str:
    runtime = float(section.get("runtime_s") or 0.0)
    return f" ({fmt_pct(min(seconds / runtime, 1.0))} of the run)" if seconds is not None and runtime > 0 else ""


def layer_line(section: dict, row: dict) -> str:
    """One layer in a sentence: 'MPI-IO: 11.4 min per process (94.3% of the run), 11.0 min of it above
    POSIX (...); POSIX moved 3.93x its bytes in 5.60x its operations'."""
    name = str(row["layer"])
    if row.get("time_s") is None:
        text = f"{name}: not timed in this log ({fmt_num(row.get('files', 0))} files)"
    else:
        text = f"{name}: {fmt_secs(row['time_s'])} per process{_share(section, row['time_s'])}"
    if row.get("own_time_s") is not None:
        text += f", {fmt_secs(row['own_time_s'])} of it above {row['below']} ({row.get('own') or 'its own work'})"
    amp, ops = row.get("byte_amplification"), row.get("op_amplification")
    if row.get("below") and ((amp or 0) >= AMPLIFIED or (ops or 0) >= AMPLIFIED):
        text += f"; {row['below']} moved {fmt_ratio(amp)} its bytes in {fmt_ratio(ops)} its operations"
    notes = [str(n) for n in row.get("notes") or [] if not str(n).startswith("not timed")]
    return text + "".join(f"; {n}" for n in notes)


def layer_lines(section: dict | None) -> list[str]:
    """Every layer of the account, top first, one line each ([] without an account)."""
    if not isinstance(section, dict):
        return []
    try:
        return [layer_line(section, row) for row in section.get("rows") or []]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a hand-edited saved diagnosis
        return [f"layers: not shown, malformed summary data ({type(exc).__name__})"]


def layer_table(section: dict) -> tuple[str, list[str], list[list[str]]]:
    """(title, columns, rows): each layer's figures, top first ('own': its time above the layer
    below, 'x bytes' and 'x ops': what the layer below moved per byte and operation asked)."""
    rows = []
    for r in section.get("rows") or []:
        rows.append([str(r["layer"]), _secs(r.get("time_s"), "not timed"),
                     _share(section, r.get("time_s")).strip(" ()").replace(" of the run", "") or "-",
                     _secs(r.get("own_time_s")), str(r.get("below") or "-"),
                     fmt_bytes(r["bytes_read"] + r["bytes_written"]), fmt_num(r["reads"] + r["writes"]),
                     fmt_num(r["files"]), _ratio(r.get("byte_amplification")), _ratio(r.get("op_amplification"))])
    return ("I/O layers (time per process, bounded)",
            ["layer", "time", "of run", "own", "above", "bytes", "ops", "files", "x bytes", "x ops"], rows)


def _secs(value, missing: str = "-") -> str:
    return fmt_secs(value) if value is not None else missing


def _ratio(value) -> str:
    return fmt_ratio(value) if value is not None else "-"


def file_table(section: dict) -> tuple[str, list[str], list[list[str]]]:
    """(title, columns, rows): each listed file's layers, its name on its first row; no rows when no
    file was seen by two layers (the reports' own file tables then say it all)."""
    rows = []
    files = section.get("files") or []
    if not any(len(f.get("layers") or []) > 1 for f in files):
        files = []
    for f in files:
        for i, cell in enumerate(f.get("layers") or []):
            rows.append([printable(f["path"]) if i == 0 else "", str(cell["layer"]),
                         _secs(cell.get("time_s"), "not timed"), _secs(cell.get("own_time_s")),
                         str(cell.get("below") or "-"), fmt_bytes(cell["bytes"]), fmt_num(cell["ops"])])
    title = f"I/O layers per file: top {len(section.get('files') or [])} of {section.get('files_total', 0)} by time"
    return title, ["file", "layer", "time", "own", "above", "bytes", "ops"], rows


def layer_plot(section: dict) -> Plot | None:
    """Where the I/O time went, layer by layer: each timed layer's bar split into the time its calls
    spent in the layer below and its own time above it (a base layer's bar: its system calls)."""
    rows = list(section.get("rows") or [])
    if not any(r.get("below") for r in rows) or not any(float(r.get("time_s") or 0) > 0 for r in rows):
        return None  # one layer over another, or the plot of I/O time by module says it all
    carried, own, base = [], [], []
    for r in rows:  # a layer the log does not time keeps its row, named so, without a bar
        total = float(r.get("time_s") or 0.0)
        mine = float(r["own_time_s"]) if r.get("own_time_s") is not None else None
        carried.append(total - mine if mine is not None else 0.0)
        own.append(mine or 0.0)
        base.append(total if mine is None else 0.0)
    labels = [str(r["layer"]) + (" (not timed)" if r.get("time_s") is None else "") for r in rows]
    title = "Where the I/O time went, layer by layer (per process)"
    alt = " ".join(f"{line}." for line in layer_lines(section))
    stacks = [("in the layer below", "c-read", carried), ("own time above the layer below", "c-meta", own),
              ("lowest layer Darshan sees", "c-write", base)]
    svg = stacked_hbars("io-layers", title, labels, labels, stacks, "time ({unit}), per process", alt)
    _, columns, table = layer_table(section)
    return with_table(Plot("io-layers", title, svg.markup("io-layers"), alt), columns, table)
