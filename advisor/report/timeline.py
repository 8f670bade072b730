"""The DXT timeline: operations per rank over time, downsampled to a fixed grid.

A million DXT segments become at most ``MAX_ROWS x BINS`` cells per operation
(rows are ranks, or groups of consecutive ranks when there are many) plus the
``LONGEST`` slowest operations drawn individually, so a straggling request stays
visible however coarse the grid. Cells keep the exact busy time (a segment that
spans bins is split across them), the bytes and the operation count.
"""

from __future__ import annotations

import numpy as np

from advisor import arrays
from advisor.profile import DXT_READ, DXT_WRITE, DxtTrace, JobProfile
from advisor.report.plots import WIDTH, Plot, with_table, x_axis
from advisor.report.svg import Scale, Svg, axis, text_width
from advisor.report.units import fmt_bytes, fmt_num, fmt_pct, fmt_secs

MAX_ROWS = 32
BINS = 80
LONGEST = 24
LEVELS = (0.0, 0.05, 0.15, 0.35, 0.6, 0.85)  # busy-fraction thresholds of the 6 shades
OPS = (("write", DXT_WRITE), ("read", DXT_READ))


def _sig(values: np.ndarray, digits: int = 4) -> list[float]:
    """Floats rounded to `digits` significant digits (compact JSON)."""
    return [float(f"{v:.{digits}g}") for v in values.tolist()]


def timeline_data(profile: JobProfile) -> dict | None:
    """Downsampled DXT timeline of the module with the most segments, or None without DXT."""
    traces = [t for t in profile.dxt.values() if t.readable and len(t)]
    if not traces:
        return None
    trace = max(traces, key=len)
    t1 = max(float(trace.end.max()), float(profile.job.runtime_s or 0.0))
    t1 = t1 if t1 > 0 else 1.0
    rank_ids = arrays.unique(trace.rank)
    nprocs = max(int(profile.job.nprocs or 0), int(rank_ids.max()) + 1)
    group = -(-nprocs // MAX_ROWS)  # ranks per row
    nrows = -(-nprocs // group)
    row = (trace.rank.astype(np.int64) // group)
    width = t1 / BINS
    cells = {name: _bin_op(trace, row, trace.op == code, nrows, width) for name, code in OPS}
    rows = []
    for r in range(nrows):
        lo, hi = r * group, min(nprocs, (r + 1) * group) - 1
        entry = {"label": f"rank {lo}" if lo == hi else f"ranks {lo}-{hi}", "ranks": [lo, hi]}
        for name, _ in OPS:
            busy, nbytes, ops = cells[name]
            entry[f"{name}_busy"] = _sig(busy[r])
            entry[f"{name}_bytes"] = nbytes[r].astype(np.int64).tolist()
            entry[f"{name}_ops"] = ops[r].astype(np.int64).tolist()
        rows.append(entry)
    return {"module": trace.module, "t0": 0.0, "t1": float(f"{t1:.6g}"), "bins": BINS,
            "segments": len(trace), "ranks_traced": int(rank_ids.size), "rows": rows,
            "longest": _longest(profile, trace), "note": trace.note,
            "hosts": sorted(set(trace.hostnames.values()))[:16]}


def _bin_op(trace: DxtTrace, row: np.ndarray, mask: np.ndarray, nrows: int, width: float):
    """(busy seconds, bytes, ops) per (row, bin) for the segments selected by `mask`."""
    start, end, r = trace.start[mask], trace.end[mask], row[mask]
    length = trace.length[mask].astype(np.float64)
    size = nrows * BINS
    b0 = np.clip((start / width).astype(np.int64), 0, BINS - 1)
    b1 = np.clip((end / width).astype(np.int64), 0, BINS - 1)
    idx0, idx1 = r * BINS + b0, r * BINS + b1
    ops = np.bincount(idx0, minlength=size)
    nbytes = np.bincount(idx0, weights=length, minlength=size)
    one = b0 == b1
    busy = np.bincount(idx0[one], weights=(end - start)[one], minlength=size).astype(np.float64)
    many = ~one  # segments crossing bin edges: split their time over the bins they cover
    if many.any():
        s, e, k0, k1, j0, j1 = start[many], end[many], b0[many], b1[many], idx0[many], idx1[many]
        busy += np.bincount(j0, weights=(k0 + 1) * width - s, minlength=size)
        busy += np.bincount(j1, weights=e - k1 * width, minlength=size)
        full = np.bincount(j0 + 1, minlength=size + 1)[:size] - np.bincount(j1, minlength=size)
        busy += np.cumsum(full.reshape(nrows, BINS), axis=1).ravel() * width
    shape = (nrows, BINS)
    return busy.reshape(shape), nbytes.reshape(shape), ops.reshape(shape)


def _longest(profile: JobProfile, trace: DxtTrace) -> list[list]:
    dur = trace.end - trace.start
    k = min(LONGEST, len(trace))
    top = np.argpartition(dur, -k)[-k:]
    top = top[np.argsort(-dur[top])]
    return [[int(trace.rank[i]), "write" if trace.op[i] == DXT_WRITE else "read",
             float(f"{trace.start[i]:.6g}"), float(f"{trace.end[i]:.6g}"), int(trace.length[i]),
             profile.name_of(int(trace.record_id[i]))] for i in top]


def _level(fraction: float) -> int:
    return 0 if fraction <= 0 else sum(fraction > t for t in LEVELS)


def timeline_plot(fig: dict) -> Plot:
    """Heat strips per rank row (writes above, reads below) plus the slowest operations."""
    rows, bins, t1 = fig["rows"], int(fig["bins"]), float(fig["t1"])
    title = f"I/O timeline per rank ({fig.get('module', 'DXT')})"
    alt = _timeline_alt(fig)
    left, lane = 100, max(3.0, min(12.0, 200 / max(len(rows), 1)))
    top = 26
    height = top + 2 * lane * len(rows) + 6 * len(rows) // 8 + 50
    svg = Svg(WIDTH, height, title, alt)
    ax = axis("seconds", t1, 6)
    xs = Scale(0.0, ax.end, left, WIDTH - 16)
    pitch = 2 * lane + (0.75 if len(rows) > 8 else 2)
    bottom = top + pitch * len(rows)
    x_axis(svg, xs, bottom, "time since job start", ax, top)
    ylabel = "rank (writes above reads)"  # rotated: it must fit the height of the rows
    svg.text(14, (top + bottom) / 2, ylabel if text_width(ylabel, 11) < bottom - top else "rank", "label", "middle",
             rotate=True)
    width = t1 / bins
    for r, row in enumerate(rows):
        y = top + r * pitch
        svg.text(left - 6, y + lane + 3, str(row["label"]), "tick", "end")
        for k, (name, _) in enumerate(OPS):
            _draw_lane(svg, xs, row, name, y + k * lane, lane, width)
    for rank, op, start, end, nbytes, path in fig.get("longest", []):
        r = next((i for i, row in enumerate(rows) if row["ranks"][0] <= rank <= row["ranks"][1]), None)
        if r is not None:
            x0 = xs(float(start))
            svg.rect(x0, top + r * pitch - 0.5, max(xs(float(end)) - x0, 2), 2 * lane + 1, "c-long",
                     f"rank {rank}: {op} of {fmt_bytes(nbytes)} took {fmt_secs(end - start)} "
                     f"at {fmt_secs(start)} ({path})")
    _timeline_legend(svg, left)
    return with_table(Plot("timeline", title, svg.markup("timeline"), alt),
                  ["rank(s)", "written", "write ops", "read", "read ops", "busy (write+read)", "first I/O",
                   "last I/O"], [_row_summary(row, width) for row in rows])


def _draw_lane(svg: Svg, xs: Scale, row: dict, name: str, y: float, lane: float, width: float) -> None:
    """One lane as runs of equal shade (run-length encoded to bound the number of marks)."""
    busy, nbytes, ops = row[f"{name}_busy"], row[f"{name}_bytes"], row[f"{name}_ops"]
    nranks = row["ranks"][1] - row["ranks"][0] + 1
    levels = [max(_level(b / (width * nranks)), 1 if o else 0) for b, o in zip(busy, ops)]
    i = 0
    while i < len(levels):
        j = i
        while j + 1 < len(levels) and levels[j + 1] == levels[i]:
            j += 1
        if levels[i]:
            run_busy = sum(busy[i:j + 1])
            tip = (f"{row['label']}, {fmt_secs(i * width)}-{fmt_secs((j + 1) * width)}: {name} "
                   f"{fmt_bytes(sum(nbytes[i:j + 1]))} in {fmt_num(sum(ops[i:j + 1]))} ops, busy "
                   f"{fmt_pct(run_busy / ((j + 1 - i) * width * nranks))}")
            svg.rect(xs(i * width), y, xs((j + 1) * width) - xs(i * width), lane, f"c-{name} lv{levels[i]}", tip)
        i = j + 1


def _timeline_legend(svg: Svg, left: float) -> None:
    x = left
    for name, _ in OPS:
        svg.text(x, 16, f"{name}s", "legend")
        x += 44
        for lv in range(1, len(LEVELS) + 1):
            svg.rect(x, 7, 9, 10, f"c-{name} lv{lv}")
            x += 10
        x += 14
    svg.text(x, 16, "shade: share of time busy", "legend")
    svg.rect(x + 178, 7, 14, 10, "c-long")
    svg.text(x + 196, 16, "slowest operations", "legend")


def _row_summary(row: dict, width: float) -> list[str]:
    active = [i for i in range(len(row["write_ops"])) if row["write_ops"][i] or row["read_ops"][i]]
    busy = sum(row["write_busy"]) + sum(row["read_busy"])
    return [str(row["label"]), fmt_bytes(sum(row["write_bytes"])), fmt_num(sum(row["write_ops"])),
            fmt_bytes(sum(row["read_bytes"])), fmt_num(sum(row["read_ops"])), fmt_secs(busy),
            fmt_secs(active[0] * width) if active else "-",
            fmt_secs((active[-1] + 1) * width) if active else "-"]


def _timeline_alt(fig: dict) -> str:
    rows = fig["rows"]
    busy = [sum(r["write_busy"]) + sum(r["read_busy"]) for r in rows]
    text = (f"{fmt_num(fig.get('segments', 0))} {fig.get('module', 'DXT')} operations of "
            f"{fig.get('ranks_traced', len(rows))} ranks over {fmt_secs(float(fig['t1']))}, "
            f"drawn as {len(rows)} rows of {fig['bins']} time bins.")
    if busy and max(busy) > 0:
        hi = max(range(len(rows)), key=lambda i: busy[i])
        text += f" Busiest: {rows[hi]['label']} with {fmt_secs(busy[hi])} in I/O."
    if fig.get("longest"):
        rank, op, start, end = fig["longest"][0][:4]
        text += f" Slowest operation: a {op} on rank {rank} taking {fmt_secs(end - start)}."
    return text
