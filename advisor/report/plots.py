"""Plots of a diagnosis' figure data (``Diagnosis.figures``) as inline SVG.

Each builder takes one section of the figure data (see :mod:`advisor.report.figures`)
and returns a :class:`Plot`: the SVG, a title, a one-sentence text alternative and
a data table (shown under the plot, for screen readers and for copying numbers).
Builders read only plain JSON values, so a saved diagnosis re-renders without the log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from markupsafe import Markup

from advisor.formatting import counted, fmt_middle
from advisor.report.svg import Axis, Scale, Svg, axis, text_width
from advisor.report.units import compact_count, fmt_bytes, fmt_num, fmt_rate, fmt_secs
from advisor.units import STD_STREAMS, MiB


def _median(values: list[float]) -> float:
    """statistics.median, imported at the call: only drawing needs it, and with it decimal and
    fractions (~8 ms of a `diagnose --json`, which imports this module for the timeline's data)."""
    from statistics import median

    return median(values)


WIDTH = 860
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 26, 46
TABLE_ROWS = 64  # rows of a data table shown under a plot; the rest are summarised
LEGEND_MOST = 6  # curves named in a campaign plot's legend


@dataclass
class Plot:
    """One rendered plot and its text alternative."""

    id: str
    title: str
    svg: Markup
    alt: str
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    more_rows: int = 0  # rows left out of the table

    @property
    def marks(self) -> int:
        """Drawn shapes (the size budget of a plot)."""
        return sum(str(self.svg).count(f"<{t} ") for t in ("rect", "line", "circle", "polyline", "path"))


def with_table(plot: Plot, headers: list[str], rows: list[list[str]]) -> Plot:
    """`plot` with its data table: the first TABLE_ROWS rows and how many were left out."""
    plot.headers = headers
    plot.rows = rows[:TABLE_ROWS]
    plot.more_rows = max(0, len(rows) - TABLE_ROWS)
    return plot


LEGEND_ROW = 15  # pixels between wrapped legend rows


def legend_layout(labels: list[str], x0: float, swatch: float, right: float = WIDTH - RIGHT) -> list[tuple[float, int]]:
    """(x, row) of each legend item: side by side, wrapping to a new row before `right`."""
    out, x, row = [], x0, 0
    for label in labels:
        width = swatch + 4 + text_width(label, 11)
        if x + width > right and x > x0:
            x, row = x0, row + 1
        out.append((x, row))
        x += width + 14
    return out


def _legend(svg: Svg, items: list[tuple[str, str]], x: float, y: float) -> None:
    for (label, cls), (lx, row) in zip(items, legend_layout([i[0] for i in items], x, 10)):
        svg.rect(lx, y + row * LEGEND_ROW - 9, 10, 10, cls)
        svg.text(lx + 14, y + row * LEGEND_ROW, label, "legend")


def x_axis(svg: Svg, xs: Scale, y: float, what: str, ax: Axis, top: float = TOP) -> None:
    """The time or value axis at height `y`: grid lines up to `top`, tick numbers and the title
    with the axis unit ('time (ms), mean per process')."""
    for t in ax.ticks:
        svg.line(xs(t), top, xs(t), y, "grid")
        svg.text(xs(t), y + 16, ax.label(t), "tick", "middle")
    svg.line(xs.p0, y, xs.p1, y, "axis")
    svg.text((xs.p0 + xs.p1) / 2, y + 34, ax.title(what), "label", "middle")


def _y_axis(svg: Svg, ys: Scale, x0: float, x1: float, what: str, ax: Axis) -> None:
    for t in ax.ticks:
        svg.line(x0, ys(t), x1, ys(t), "grid")
        svg.text(x0 - 5, ys(t) + 4, ax.label(t), "tick", "end")
    svg.line(x0, ys.p0, x0, ys.p1, "axis")
    svg.text(14, (ys.p0 + ys.p1) / 2, ax.title(what), "label", "middle", rotate=True)


def stacked_hbars(plot_id: str, title: str, labels: list[str], tips: list[str],
                   stacks: list[tuple[str, str, list[float]]], xlabel: str, desc: str) -> Svg:
    """Horizontal stacked bars, one row per label; `stacks` = (legend, css class, values)."""
    row_h = 22
    label_w = 190 if max((len(t) for t in labels), default=0) > 10 else LEFT
    height = TOP + row_h * len(labels) + BOTTOM
    svg = Svg(WIDTH, height, title, desc)
    totals = [sum(s[2][i] for s in stacks) for i in range(len(labels))]
    ax = axis("seconds", max(totals, default=0))
    xs = Scale(0, ax.end, label_w, WIDTH - RIGHT)
    x_axis(svg, xs, TOP + row_h * len(labels), xlabel, ax)
    for i, label in enumerate(labels):
        y, x = TOP + i * row_h + 3, 0.0
        svg.text(label_w - 6, y + 13, label, "tick", "end", tip=tips[i])
        for name, cls, values in stacks:
            if values[i] > 0:
                svg.rect(xs(x), y, xs(x + values[i]) - xs(x), row_h - 6, cls,
                         f"{tips[i]}: {name} {fmt_secs(values[i])}")
            x += values[i]
    _legend(svg, [(s[0], s[1]) for s in stacks], label_w, 16)
    return svg


def io_time_plot(fig: dict) -> Plot:
    """I/O time split into read, write and metadata, per module."""
    modules = [str(m) for m in fig["modules"]]
    read, write, meta = ([float(v) for v in fig[k]] for k in ("read", "write", "meta"))
    basis = str(fig.get("basis", "mean per process"))
    title = f"I/O time by module ({basis})"
    stacks = [("read", "c-read", read), ("write", "c-write", write), ("metadata", "c-meta", meta)]
    summed = [r + w + m for r, w, m in zip(read, write, meta)]  # saved diagnoses before `total`
    totals = [float(v) for v in fig.get("total") or summed]
    top = max(range(len(modules)), key=lambda i: totals[i]) if modules else None
    runtime = float(fig.get("runtime_s") or 0)
    alt = "No I/O time recorded." if top is None else (
        # per module, not per layer: HDF5's time is split over H5F and H5D (FLASH: H5D 32.0 s, H5F 10.6 s
        # beside MPI-IO's 34.4 s), so no module here is "the" I/O time; the layer account says that
        f"Of the modules, {modules[top]} records the most I/O time: {fmt_secs(totals[top])} "
        f"(read {fmt_secs(read[top])}, write {fmt_secs(write[top])}, metadata {fmt_secs(meta[top])})"
        + (f" of a {fmt_secs(runtime)} run." if runtime else "."))
    svg = stacked_hbars("io-time", title, modules, modules, stacks, f"time ({{unit}}), {basis}", alt)
    rows = [[m, fmt_secs(r), fmt_secs(w), fmt_secs(x), fmt_secs(r + w + x)]
            for m, r, w, x in zip(modules, read, write, meta)]
    return with_table(Plot("io-time", title, svg.markup("io-time"), alt),
                  ["module", "read", "write", "metadata", "total"], rows)


def access_size_plots(fig: dict) -> list[Plot]:
    """One grouped bar chart (reads and writes per size bin) per module with requests."""
    bins = [str(b) for b in fig["bins"]]
    plots = []
    for module, counts in fig["modules"].items():
        read = [int(v) for v in counts.get("read", [0] * len(bins))]
        write = [int(v) for v in counts.get("write", [0] * len(bins))]
        if sum(read) + sum(write) == 0:
            continue
        plots.append(_size_plot(str(module), bins, read, write))
    return plots


def _size_plot(module: str, bins: list[str], read: list[int], write: list[int]) -> Plot:
    pid = "sizes-" + "".join(c if c.isalnum() else "-" for c in module.lower())
    title = f"Access sizes, {module}"
    height = 250
    bottom = height - BOTTOM
    top_read = max(range(len(bins)), key=lambda i: read[i])
    top_write = max(range(len(bins)), key=lambda i: write[i])
    alt = (f"{module}: {fmt_num(sum(read))} reads, most of {bins[top_read]} bytes; "
           f"{fmt_num(sum(write))} writes, most of {bins[top_write]} bytes.")
    svg = Svg(WIDTH, height, title, alt)
    ax = axis("count", max(read + write) * 1.08, 4)  # headroom for the value labels above the bars
    ys = Scale(0, ax.end, bottom, TOP)
    _y_axis(svg, ys, LEFT, WIDTH - RIGHT, "requests", ax)
    slot = (WIDTH - RIGHT - LEFT) / len(bins)
    bar = (slot - 8) / 2
    for i, label in enumerate(bins):
        x = LEFT + i * slot
        for j, (name, cls, values) in enumerate((("reads", "c-read", read), ("writes", "c-write", write))):
            if values[i]:
                bx = x + 4 + j * bar
                svg.rect(bx, ys(values[i]), bar, bottom - ys(values[i]), cls,
                         f"{label} B: {fmt_num(values[i])} {name}")
                text = _bar_label(values[i], bar)
                if text:
                    svg.text(bx + bar / 2, ys(values[i]) - 3, text, "tick", "middle")
        svg.text(x + slot / 2, bottom + 16, label, "tick", "middle")
    svg.line(LEFT, bottom, WIDTH - RIGHT, bottom, "axis")
    svg.text((LEFT + WIDTH) / 2, height - 8, "request size (bytes)", "label", "middle")
    _legend(svg, [("reads", "c-read"), ("writes", "c-write")], LEFT + 8, 16)
    rows = [[b, fmt_num(r), fmt_num(w)] for b, r, w in zip(bins, read, write)]
    return with_table(Plot(pid, title, svg.markup(pid), alt), ["size (bytes)", "reads", "writes"], rows)


def _bar_label(value: float, width: float) -> str:
    """A count over a bar of `width` pixels: in full when it fits ('16,384'), else short ('16.4k'),
    else none (the tooltip and the data table hold it): labels of neighbouring bars never touch."""
    for text in (fmt_num(value), compact_count(value)):
        if text_width(text) <= width - 2:  # a pixel of air on each side
            return text
    return ""


def rank_plot(fig: dict) -> Plot:
    """Bytes and I/O time per rank (or per group of ranks), stragglers highlighted."""
    labels = [str(x) for x in fig["labels"]]
    split = "bytes_read" in fig  # DXT gives read and written per rank, counters only a total
    read = [float(v) for v in (fig["bytes_read"] if split else fig["bytes"])]
    written = [float(v) for v in fig["bytes_written"]] if split else [0.0] * len(read)
    time_s = [float(v) for v in fig["time_s"]]
    time_max = [float(v) for v in fig.get("time_max_s") or time_s]
    hot = {int(i) for i in fig.get("straggler_index", [])}
    layer = str(fig.get("layer") or "I/O")  # older saved diagnoses name no layer
    title = f"Bytes and {layer} time per rank" + (" (groups of ranks: mean, whisker to the slowest)"
                                                  if fig.get("grouped") else "")
    med = _median(time_s) if time_s else 0.0
    total = float(fig.get("bytes_total", sum(read) + sum(written)))  # older saved diagnoses lack it
    alt = _rank_alt(labels, total, time_max, hot, med, str(fig.get("source", "")), layer)
    panel, gap = 150, 58
    height = TOP + 2 * panel + gap + BOTTOM
    svg = Svg(WIDTH, height, title, alt)
    slot = (WIDTH - RIGHT - LEFT) / max(len(labels), 1)
    totals = [r + w for r, w in zip(read, written)]
    bytes_axis = axis("bytes", max(totals, default=0), 4)
    yb = Scale(0, bytes_axis.end, TOP + panel, TOP)
    _y_axis(svg, yb, LEFT, WIDTH - RIGHT, "bytes", bytes_axis)
    time_axis = axis("seconds", max(time_max, default=0), 4)
    yt = Scale(0, time_axis.end, TOP + 2 * panel + gap, TOP + panel + gap)
    _y_axis(svg, yt, LEFT, WIDTH - RIGHT, "I/O time", time_axis)
    for i, label in enumerate(labels):
        x, w = LEFT + i * slot + slot * 0.1, max(slot * 0.8, 0.6)
        svg.rect(x, yb(read[i] + written[i]), w, yb(written[i]) - yb(read[i] + written[i]),
                 "c-read" if split else "c-bytes", f"rank {label}: {'read' if split else 'moved'} {fmt_bytes(read[i])}")
        if split:
            svg.rect(x, yb(written[i]), w, yb(0) - yb(written[i]), "c-write",
                     f"rank {label}: written {fmt_bytes(written[i])}")
        cls = "c-hot" if i in hot else "c-time"
        svg.rect(x, yt(time_s[i]), w, yt(0) - yt(time_s[i]), cls, f"rank {label}: I/O time {fmt_secs(time_s[i])}"
                 + (" (straggler)" if i in hot else ""))
        if time_max[i] > time_s[i]:
            svg.line(x + w / 2, yt(time_s[i]), x + w / 2, yt(time_max[i]), "whisker",
                     f"ranks {label}: slowest {fmt_secs(time_max[i])}")
    if med > 0:
        svg.line(LEFT, yt(med), WIDTH - RIGHT, yt(med), "median", f"median {fmt_secs(med)}")
    for t in _label_ticks(labels):
        svg.text(LEFT + (t + 0.5) * slot, yt.p0 + 16, labels[t], "tick", "middle")
    svg.text((LEFT + WIDTH) / 2, height - 8, "rank", "label", "middle")
    bytes_legend = [("read", "c-read"), ("written", "c-write")] if split else [("bytes", "c-bytes")]
    _legend(svg, bytes_legend + [("I/O time", "c-time"), ("straggler", "c-hot")], LEFT + 8, 16)
    rows = [[lab, fmt_bytes(r), fmt_bytes(w) if split else "", fmt_secs(t), "yes" if i in hot else ""]
            for i, (lab, r, w, t) in enumerate(zip(labels, read, written, time_max))]
    rows.sort(key=lambda r: r[4] != "yes")  # stragglers first in the text alternative
    return with_table(Plot("ranks", title, svg.markup("ranks"), alt),
                  ["rank(s)", "read" if split else "bytes", "written", "I/O time", "straggler"], rows)


def _rank_alt(labels, total, time_s, hot, med, source, layer="I/O") -> str:
    if not labels:
        return "No per-rank data."
    slow = max(range(len(labels)), key=lambda i: time_s[i])
    text = (f"{len(labels)} bars; total {fmt_bytes(total)}. "
            f"Slowest rank(s) {labels[slow]}: {fmt_secs(time_s[slow])} of {layer} time, median {fmt_secs(med)}.")
    if hot:
        text += f" Stragglers: {', '.join(labels[i] for i in sorted(hot)[:8])}."
    return text + (f" Source: {source}." if source else "")


def _label_ticks(labels: list[str], span: float = WIDTH - RIGHT - LEFT) -> list[int]:
    """Indices of the bar labels to print: every k-th, k chosen so the widest label keeps 8 pixels
    of air between neighbours over `span` pixels."""
    n = len(labels)
    if not n:
        return []
    room = max(text_width(label) for label in labels) + 8
    step = max(1, math.ceil(n * room / span))
    return list(range(0, n, step))


def ost_plot(fig: dict) -> Plot:
    """Bandwidth per OST (bytes over the I/O time of the files striped on it), outliers marked.

    OSTs timed only by small files (their latency, not the OST's bandwidth) are drawn faint and
    never called outliers; without enough comparable OSTs there is no median and no outlier."""
    osts = [int(o) for o in fig["ost"]]
    bw = [float(v) for v in fig["bandwidth"]]
    nbytes = [float(v) for v in fig["bytes"]]
    outliers = {int(o) for o in fig.get("outliers", [])}
    compared = {int(o) for o in fig.get("compared", osts)}  # saved before 'compared': all were
    med = float(fig["median"]) if "median" in fig else (_median(bw) if bw else 0.0)
    title = "Bandwidth per OST (Lustre)"
    alt = _ost_alt(osts, compared, outliers, med, int(fig.get("min_file_bytes", 0)))
    height = 260
    bottom = height - BOTTOM
    svg = Svg(WIDTH, height, title, alt)
    ax = axis("rate", max(bw, default=0), 4)
    ys = Scale(0, ax.end, bottom, TOP)
    _y_axis(svg, ys, LEFT, WIDTH - RIGHT, "bandwidth", ax)
    slot = (WIDTH - RIGHT - LEFT) / max(len(osts), 1)
    for i, ost in enumerate(osts):
        cls = "c-hot" if ost in outliers else "c-time" if ost in compared else "c-faint"
        note = " (outlier)" if ost in outliers else "" if ost in compared else " (small files only: not compared)"
        svg.rect(LEFT + i * slot + slot * 0.1, ys(bw[i]), max(slot * 0.8, 0.6), bottom - ys(bw[i]), cls,
                 f"OST {ost}: {fmt_rate(bw[i])}, {fmt_bytes(nbytes[i])}{note}")
    if med > 0:
        svg.line(LEFT, ys(med), WIDTH - RIGHT, ys(med), "median", f"median {fmt_rate(med)}")
    for t in _label_ticks([str(o) for o in osts]):
        svg.text(LEFT + (t + 0.5) * slot, bottom + 16, str(osts[t]), "tick", "middle")
    svg.line(LEFT, bottom, WIDTH - RIGHT, bottom, "axis")
    svg.text((LEFT + WIDTH) / 2, height - 8, "OST index", "label", "middle")
    rows = [[str(o), fmt_rate(b), fmt_bytes(n), "yes" if o in compared else "no", "yes" if o in outliers else ""]
            for o, b, n in zip(osts, bw, nbytes)]
    return with_table(Plot("osts", title, svg.markup("osts"), alt),
                      ["OST", "bandwidth", "bytes", "compared", "outlier"], rows)


def _ost_alt(osts: list[int], compared: set[int], outliers: set[int], med: float, min_bytes: int) -> str:
    text = f"{len(osts)} OSTs"
    if med <= 0:
        small = f" (the others hold only files under {fmt_bytes(min_bytes)}, timed by latency)" if min_bytes else ""
        return text + f"; {len(compared)} timed by large files{small}: too few to compare, no outlier called."
    text += f", median {fmt_rate(med)} over the {len(compared)} timed by large files."
    if outliers:
        return text + f" Outliers (slow): OST {', '.join(str(o) for o in sorted(outliers))}."
    return text + " No outlier."


def top_files_plot(fig: dict) -> Plot:
    """The files with the most I/O time, split into read, write and metadata."""
    files = fig["files"]
    paths = [str(f["path"]) for f in files]
    title = "Top files by I/O time"
    stacks = [(name, cls, [float(f.get(key, 0)) for f in files])
              for name, cls, key in (("read", "c-read", "read_s"), ("write", "c-write", "write_s"),
                                     ("metadata", "c-meta", "meta_s"))]
    basis = str(fig.get("basis", "summed over ranks"))
    streams = [p for p in paths if p in STD_STREAMS]  # shown, but not files (the header's count)
    shown = counted(len(paths) - len(streams), "file") + "".join(f" and {s}" for s in streams)
    alt = ("No file with I/O time." if not files else
           f"{shown}; the slowest is {paths[0]} with {fmt_secs(_file_total(files[0]))} of I/O.")
    labels = [fmt_middle(p, 30, "\u2026") for p in paths]
    svg = stacked_hbars("top-files", title, labels, paths, stacks, f"I/O time ({{unit}}), {basis}", alt)
    rows = [[p, fmt_secs(_file_total(f)), fmt_bytes(float(f.get("bytes_read", 0))),
             fmt_bytes(float(f.get("bytes_written", 0))), fmt_num(float(f.get("ranks", 0)))]
            for p, f in zip(paths, files)]
    return with_table(Plot("top-files", title, svg.markup("top-files"), alt),
                  ["file", "I/O time", "read", "written", "ranks"], rows)


def _file_total(f: dict) -> float:
    return sum(float(f.get(k, 0)) for k in ("read_s", "write_s", "meta_s"))


def verification_plot(v: dict, plot_id: str) -> Plot:
    """Before/after replay time per pass: each bar the median of its samples, its whisker their range."""
    runs = [("before", v["baseline"], "c-before"),
            ("after fix", v["fixed"], {"improved": "c-after", "regressed": "c-hot"}.get(str(v.get("verdict")),
                                                                                       "c-before"))]
    bars = [(label, float(run["median_s"]), _spread(run), cls) for label, run, cls in runs]
    title = "Replay: before and after the fix"
    alt = (f"Replayed in {v.get('pairs') or v.get('repeat', '?')} rounds: " + "; ".join(
        f"{label} median {fmt_secs(med)} per pass (samples {fmt_secs(lo)} to {fmt_secs(hi)})"
        for label, med, (lo, hi), _ in bars) + ".")
    width = WIDTH / 1.5
    svg = Svg(width, 118, title, alt)
    ax = axis("seconds", max(max(med, hi) for _, med, (_, hi), _ in bars), 4)
    xs = Scale(0, ax.end, 92, width - RIGHT)
    x_axis(svg, xs, 70, "replay time per pass ({unit}), median of the samples", ax)
    for i, (label, med, (lo, hi), cls) in enumerate(bars):
        y = TOP + 2 + i * 21
        svg.text(86, y + 12, label, "tick", "end")
        svg.rect(xs(0), y, xs(med) - xs(0), 15, cls, f"{label}: median {fmt_secs(med)}")
        if hi > lo:
            mid = y + 7.5
            svg.line(xs(lo), mid, xs(hi), mid, "whisker", f"{label}: samples {fmt_secs(lo)} to {fmt_secs(hi)}")
            for x in (xs(lo), xs(hi)):
                svg.line(x, mid - 5, x, mid + 5, "whisker")
    rows = [[label, fmt_secs(float(run["median_s"])), _bw(run), _runs(run)] for label, run, _ in runs]
    return with_table(Plot(plot_id, title, svg.markup(plot_id), alt),
                      ["replay", "median time per pass", "bandwidth", "each sample (time per pass)"], rows)


def _spread(run: dict) -> tuple[float, float]:
    """The fastest and slowest sample of a replay, time per pass (its median when none were kept)."""
    times = [float(t) for t in run.get("runs_s") or [] if isinstance(t, (int, float))]
    med = float(run["median_s"])
    return (min(times), max(times)) if times else (med, med)


def _runs(run: dict) -> str:
    times = run.get("runs_s")
    return ", ".join(fmt_secs(float(t)) for t in times[:20]) if isinstance(times, list) else ""


def _bw(run: dict) -> str:
    mib = run.get("bandwidth_mib_s")
    return fmt_rate(float(mib) * 1048576) if isinstance(mib, (int, float)) else ""


def campaign_plots(fig: dict) -> list[Plot]:
    """Bandwidth against tasks, one plot per operation: the study's curves, the baseline dashed,
    knees circled and the step where clients exceed the OSTs marked (``advisor.campaign.figure_data``)."""
    curves = ([dict(c, baseline=False) for c in fig["curves"]]
              + [dict(c, baseline=True) for c in fig.get("baseline", [])])
    plots = []
    for op in dict.fromkeys(str(c.get("operation", "")) for c in curves):
        plots.append(_campaign_plot(fig, op, [c for c in curves if str(c.get("operation", "")) == op]))
    return plots


def _campaign_plot(fig: dict, op: str, curves: list[dict]) -> Plot:
    pid = "campaign-" + ("".join(c if c.isalnum() else "-" for c in op.lower()) or "all")
    xlabel, ylabel = str(fig.get("x", "tasks")), str(fig.get("y", "bandwidth (MiB/s)"))
    title = f"Scaling: {op or 'bandwidth'} vs {xlabel}"
    labels = {str(c["label"]) for c in curves if not c["baseline"]}
    knees = [k for k in fig.get("knees", []) if str(k.get("label")) in labels]
    exceed = [e for e in fig.get("clients_exceed_osts", []) if str(e.get("label")) in labels]
    xs_all = [float(x) for c in curves for x in c["tasks"] if float(x) > 0]
    ys_all = [float(y) for c in curves for y in c["bw_mib_s"]]
    alt = _campaign_alt(curves, knees, exceed, xlabel)
    legend = [(("baseline: " if c["baseline"] else "") + str(c["label"]),
               "series-base" if c["baseline"] else f"series s{i % 4}") for i, c in enumerate(curves)][:LEGEND_MOST]
    if len(curves) > LEGEND_MOST:
        legend.append((f"and {len(curves) - LEGEND_MOST} more curves (in the data table)", ""))
    top = TOP + LEGEND_ROW * legend_layout([label for label, _ in legend], LEFT + 8, 18)[-1][1]
    height = 300 + top - TOP
    bottom = height - BOTTOM
    svg = Svg(WIDTH, height, title, alt)
    lo, hi = min(xs_all), max(xs_all)
    xs = Scale(lo, hi if hi > lo else lo * 2, LEFT + 12, WIDTH - RIGHT - 12, log=True)
    ax = axis("rate", max(ys_all, default=0) * MiB)
    ys = Scale(0, ax.end / MiB, bottom, top)  # points in MiB/s; the axis in the unit that fits
    _y_axis(svg, ys, LEFT, WIDTH - RIGHT, "bandwidth", _scaled(ax, 1 / MiB))
    for t in sorted(set(xs_all)):
        svg.text(xs(t), bottom + 16, fmt_num(t), "tick", "middle")
    svg.line(LEFT, bottom, WIDTH - RIGHT, bottom, "axis")
    svg.text((LEFT + WIDTH) / 2, height - 8, xlabel, "label", "middle")
    for e in exceed:
        a, b = float(e["before"]["tasks"]), float(e["after"]["tasks"])
        x = (xs(a) + xs(b)) / 2
        svg.line(x, top, x, bottom, "limit", f"{e['label']}: clients exceed the {e.get('osts')} OSTs between "
                                           f"{fmt_num(a)} and {fmt_num(b)} {xlabel}")
        svg.text(x + 4, top + 12, f"clients > OSTs ({e.get('osts')})", "legend")
    for i, c in enumerate(curves):
        _campaign_series(svg, xs, ys, c, "series-base" if c["baseline"] else f"series s{i % 4}", xlabel)
    for k in knees:
        where = f"{fmt_num(float(k['bw_mib_s']))} MiB/s at {fmt_num(float(k['tasks']))} {xlabel}"
        svg.circle(xs(float(k["tasks"])), ys(float(k["bw_mib_s"])), 7, "knee", f"knee of {k['label']}: {where}")
    _line_legend(svg, legend, LEFT + 8, 16)
    rows = [[("baseline: " if c["baseline"] else "") + str(c["label"]), fmt_num(float(x)), fmt_num(float(y))]
            for c in curves for x, y in zip(c["tasks"], c["bw_mib_s"])]
    return with_table(Plot(pid, title, svg.markup(pid), alt), ["curve", xlabel, ylabel], rows)


def _scaled(ax: Axis, by: float) -> Axis:
    """`ax` for data in another base unit (a campaign's MiB/s): ticks and factor times `by`."""
    return Axis(ax.kind, ax.unit, ax.factor * by, tuple(t * by for t in ax.ticks))


def _campaign_series(svg: Svg, xs: Scale, ys: Scale, c: dict, cls: str, xlabel: str) -> None:
    points = [(float(x), float(y)) for x, y in zip(c["tasks"], c["bw_mib_s"]) if float(x) > 0]
    svg.polyline([(xs(x), ys(y)) for x, y in points], cls)
    for x, y in points:
        svg.circle(xs(x), ys(y), 3, cls, f"{c['label']}: {fmt_num(y)} MiB/s at {fmt_num(x)} {xlabel}")


def _line_legend(svg: Svg, items: list[tuple[str, str]], x: float, y: float) -> None:
    for (label, cls), (lx, row) in zip(items, legend_layout([i[0] for i in items], x, 18)):
        ly = y + row * LEGEND_ROW
        if cls:  # a note ('and 3 more curves') has no line
            svg.polyline([(lx, ly - 4), (lx + 18, ly - 4)], cls)
        svg.text(lx + 22 if cls else lx, ly, label, "legend")


def _campaign_alt(curves, knees, exceed, xlabel) -> str:
    parts = []
    for c in curves:
        if c["bw_mib_s"] and not c["baseline"]:
            best = max(range(len(c["bw_mib_s"])), key=lambda j: float(c["bw_mib_s"][j]))
            parts.append(f"{c['label']} peaks at {fmt_num(float(c['bw_mib_s'][best]))} MiB/s with "
                         f"{fmt_num(float(c['tasks'][best]))} {xlabel}")
    text = "; ".join(parts) + "."
    text += "".join(f" Knee of {k['label']} at {fmt_num(float(k['tasks']))} {xlabel}." for k in knees[:3])
    text += "".join(f" {e['label']}: clients exceed the OSTs after {fmt_num(float(e['before']['tasks']))} {xlabel}."
                    for e in exceed[:3])
    if any(c["baseline"] for c in curves):
        text += " Dashed: the baseline."
    return text
