"""Plots of a diagnosis' figure data (``Diagnosis.figures``) as inline SVG.

Each builder takes one section of the figure data (see :mod:`advisor.report.figures`)
and returns a :class:`Plot`: the SVG, a title, a one-sentence text alternative and
a data table (shown under the plot, for screen readers and for copying numbers).
Builders read only plain JSON values, so a saved diagnosis re-renders without the log.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from markupsafe import Markup

from advisor.report.svg import Scale, Svg, byte_max, byte_ticks, nice_max, nice_ticks
from advisor.report.units import fmt_bytes, fmt_num, fmt_rate, fmt_secs, tick_bytes, tick_count, tick_rate, tick_seconds

WIDTH = 860
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 26, 46
TABLE_ROWS = 64  # rows of a data table shown under a plot; the rest are summarised


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


def _legend(svg: Svg, items: list[tuple[str, str]], x: float, y: float) -> None:
    for label, cls in items:
        svg.rect(x, y - 9, 10, 10, cls)
        svg.text(x + 14, y, label, "legend")
        x += 24 + 7 * len(label)


def x_axis(svg: Svg, xs: Scale, y: float, label: str, fmt, ticks: list[float]) -> None:
    """The time or value axis at height `y`: grid lines up to the top, tick labels and `label`."""
    for t in ticks:
        svg.line(xs(t), TOP, xs(t), y, "grid")
        svg.text(xs(t), y + 14, fmt(t), "tick", "middle")
    svg.line(xs.p0, y, xs.p1, y, "axis")
    svg.text((xs.p0 + xs.p1) / 2, y + 34, label, "label", "middle")


def _y_axis(svg: Svg, ys: Scale, x0: float, x1: float, label: str, fmt, ticks: list[float]) -> None:
    for t in ticks:
        svg.line(x0, ys(t), x1, ys(t), "grid")
        svg.text(x0 - 5, ys(t) + 4, fmt(t), "tick", "end")
    svg.line(x0, ys.p0, x0, ys.p1, "axis")
    svg.text(14, (ys.p0 + ys.p1) / 2, label, "label", "middle", rotate=True)


def _stacked_hbars(plot_id: str, title: str, labels: list[str], tips: list[str],
                   stacks: list[tuple[str, str, list[float]]], xlabel: str, desc: str) -> Svg:
    """Horizontal stacked bars, one row per label; `stacks` = (legend, css class, values)."""
    row_h = 22
    label_w = 190 if max((len(t) for t in labels), default=0) > 10 else LEFT
    height = TOP + row_h * len(labels) + BOTTOM
    svg = Svg(WIDTH, height, title, desc)
    totals = [sum(s[2][i] for s in stacks) for i in range(len(labels))]
    xs = Scale(0, nice_max(max(totals, default=0)), label_w, WIDTH - RIGHT)
    x_axis(svg, xs, TOP + row_h * len(labels), xlabel, tick_seconds, nice_ticks(xs.lo, xs.hi))
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
    totals = [r + w + m for r, w, m in zip(read, write, meta)]
    top = max(range(len(modules)), key=lambda i: totals[i]) if modules else None
    runtime = float(fig.get("runtime_s") or 0)
    alt = "No I/O time recorded." if top is None else (
        f"{modules[top]} spends the most time in I/O: {fmt_secs(totals[top])} "
        f"(read {fmt_secs(read[top])}, write {fmt_secs(write[top])}, metadata {fmt_secs(meta[top])})"
        + (f" of a {fmt_secs(runtime)} run." if runtime else "."))
    svg = _stacked_hbars("io-time", title, modules, modules, stacks, f"time (s), {basis}", alt)
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
    ys = Scale(0, nice_max(max(read + write)), bottom, TOP)
    _y_axis(svg, ys, LEFT, WIDTH - RIGHT, "requests (count)", tick_count, nice_ticks(ys.lo, ys.hi, 4))
    slot = (WIDTH - RIGHT - LEFT) / len(bins)
    for i, label in enumerate(bins):
        x = LEFT + i * slot
        for j, (name, cls, values) in enumerate((("reads", "c-read", read), ("writes", "c-write", write))):
            if values[i]:
                bx = x + 4 + j * (slot - 8) / 2
                svg.rect(bx, ys(values[i]), (slot - 8) / 2, bottom - ys(values[i]), cls,
                         f"{label} B: {fmt_num(values[i])} {name}")
                svg.text(bx + (slot - 8) / 4, ys(values[i]) - 3, fmt_num(values[i]), "tick", "middle")
        svg.text(x + slot / 2, bottom + 14, label, "tick", "middle")
    svg.line(LEFT, bottom, WIDTH - RIGHT, bottom, "axis")
    svg.text((LEFT + WIDTH) / 2, height - 8, "request size (bytes)", "label", "middle")
    _legend(svg, [("reads", "c-read"), ("writes", "c-write")], LEFT + 8, 16)
    rows = [[b, fmt_num(r), fmt_num(w)] for b, r, w in zip(bins, read, write)]
    return with_table(Plot(pid, title, svg.markup(pid), alt), ["size (bytes)", "reads", "writes"], rows)


def rank_plot(fig: dict) -> Plot:
    """Bytes and I/O time per rank (or per group of ranks), stragglers highlighted."""
    labels = [str(x) for x in fig["labels"]]
    split = "bytes_read" in fig  # DXT gives read and written per rank, counters only a total
    read = [float(v) for v in (fig["bytes_read"] if split else fig["bytes"])]
    written = [float(v) for v in fig["bytes_written"]] if split else [0.0] * len(read)
    time_s = [float(v) for v in fig["time_s"]]
    time_max = [float(v) for v in fig.get("time_max_s") or time_s]
    hot = {int(i) for i in fig.get("straggler_index", [])}
    title = "Bytes and I/O time per rank" + (" (groups of ranks: mean, whisker to the slowest)"
                                             if fig.get("grouped") else "")
    med = statistics.median(time_s) if time_s else 0.0
    alt = _rank_alt(labels, read, written, time_max, hot, med, str(fig.get("source", "")))
    panel, gap = 150, 58
    height = TOP + 2 * panel + gap + BOTTOM
    svg = Svg(WIDTH, height, title, alt)
    slot = (WIDTH - RIGHT - LEFT) / max(len(labels), 1)
    totals = [r + w for r, w in zip(read, written)]
    yb = Scale(0, byte_max(max(totals, default=0)), TOP + panel, TOP)
    _y_axis(svg, yb, LEFT, WIDTH - RIGHT, "bytes", tick_bytes, byte_ticks(yb.hi, 4))
    yt = Scale(0, nice_max(max(time_max, default=0)), TOP + 2 * panel + gap, TOP + panel + gap)
    _y_axis(svg, yt, LEFT, WIDTH - RIGHT, "I/O time (s)", tick_seconds, nice_ticks(yt.lo, yt.hi, 4))
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
    for t in _label_ticks(len(labels)):
        svg.text(LEFT + (t + 0.5) * slot, yt.p0 + 14, labels[t], "tick", "middle")
    svg.text((LEFT + WIDTH) / 2, height - 8, "rank", "label", "middle")
    bytes_legend = [("read", "c-read"), ("written", "c-write")] if split else [("bytes", "c-bytes")]
    _legend(svg, bytes_legend + [("I/O time", "c-time"), ("straggler", "c-hot")], LEFT + 8, 16)
    rows = [[lab, fmt_bytes(r), fmt_bytes(w) if split else "", fmt_secs(t), "yes" if i in hot else ""]
            for i, (lab, r, w, t) in enumerate(zip(labels, read, written, time_max))]
    rows.sort(key=lambda r: r[4] != "yes")  # stragglers first in the text alternative
    return with_table(Plot("ranks", title, svg.markup("ranks"), alt),
                  ["rank(s)", "read" if split else "bytes", "written", "I/O time", "straggler"], rows)


def _rank_alt(labels, read, written, time_s, hot, med, source) -> str:
    if not labels:
        return "No per-rank data."
    slow = max(range(len(labels)), key=lambda i: time_s[i])
    text = (f"{len(labels)} bars; total {fmt_bytes(sum(read) + sum(written))}. "
            f"Slowest rank(s) {labels[slow]}: {fmt_secs(time_s[slow])} of I/O, median {fmt_secs(med)}.")
    if hot:
        text += f" Stragglers: {', '.join(labels[i] for i in sorted(hot)[:8])}."
    return text + (f" Source: {source}." if source else "")


def _label_ticks(n: int, most: int = 12) -> list[int]:
    step = max(1, -(-n // most))
    return list(range(0, n, step))


def ost_plot(fig: dict) -> Plot:
    """Bandwidth per OST (bytes over the I/O time of the files striped on it), outliers marked."""
    osts = [int(o) for o in fig["ost"]]
    bw = [float(v) for v in fig["bandwidth"]]
    nbytes = [float(v) for v in fig["bytes"]]
    outliers = {int(o) for o in fig.get("outliers", [])}
    title = "Bandwidth per OST (Lustre)"
    med = statistics.median(bw) if bw else 0.0
    alt = (f"{len(osts)} OSTs, median {fmt_rate(med)}."
           + (f" Outliers (slow): OST {', '.join(str(o) for o in sorted(outliers))}." if outliers
              else " No outlier."))
    height = 260
    bottom = height - BOTTOM
    svg = Svg(WIDTH, height, title, alt)
    ys = Scale(0, byte_max(max(bw, default=0)), bottom, TOP)
    _y_axis(svg, ys, LEFT, WIDTH - RIGHT, "bandwidth (bytes/s)", tick_rate, byte_ticks(ys.hi, 4))
    slot = (WIDTH - RIGHT - LEFT) / max(len(osts), 1)
    for i, ost in enumerate(osts):
        cls = "c-hot" if ost in outliers else "c-time"
        svg.rect(LEFT + i * slot + slot * 0.1, ys(bw[i]), max(slot * 0.8, 0.6), bottom - ys(bw[i]), cls,
                 f"OST {ost}: {fmt_rate(bw[i])}, {fmt_bytes(nbytes[i])}" + (" (outlier)" if ost in outliers else ""))
    if med > 0:
        svg.line(LEFT, ys(med), WIDTH - RIGHT, ys(med), "median", f"median {fmt_rate(med)}")
    for t in _label_ticks(len(osts), 24):
        svg.text(LEFT + (t + 0.5) * slot, bottom + 14, str(osts[t]), "tick", "middle")
    svg.line(LEFT, bottom, WIDTH - RIGHT, bottom, "axis")
    svg.text((LEFT + WIDTH) / 2, height - 8, "OST index", "label", "middle")
    rows = [[str(o), fmt_rate(b), fmt_bytes(n), "yes" if o in outliers else ""]
            for o, b, n in zip(osts, bw, nbytes)]
    return with_table(Plot("osts", title, svg.markup("osts"), alt), ["OST", "bandwidth", "bytes", "outlier"], rows)


def top_files_plot(fig: dict) -> Plot:
    """The files with the most I/O time, split into read, write and metadata."""
    files = fig["files"]
    paths = [str(f["path"]) for f in files]
    title = "Top files by I/O time"
    stacks = [(name, cls, [float(f.get(key, 0)) for f in files])
              for name, cls, key in (("read", "c-read", "read_s"), ("write", "c-write", "write_s"),
                                     ("metadata", "c-meta", "meta_s"))]
    basis = str(fig.get("basis", "summed over ranks"))
    alt = ("No file with I/O time." if not files else
           f"{len(files)} files; the slowest is {paths[0]} with {fmt_secs(_file_total(files[0]))} of I/O.")
    labels = [_middle_ellipsis(p, 30) for p in paths]
    svg = _stacked_hbars("top-files", title, labels, paths, stacks, f"I/O time (s), {basis}", alt)
    rows = [[p, fmt_secs(_file_total(f)), fmt_bytes(float(f.get("bytes_read", 0))),
             fmt_bytes(float(f.get("bytes_written", 0))), fmt_num(float(f.get("ranks", 0)))]
            for p, f in zip(paths, files)]
    return with_table(Plot("top-files", title, svg.markup("top-files"), alt),
                  ["file", "I/O time", "read", "written", "ranks"], rows)


def _file_total(f: dict) -> float:
    return sum(float(f.get(k, 0)) for k in ("read_s", "write_s", "meta_s"))


def _middle_ellipsis(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most // 2 - 1] + "\u2026" + text[-(most // 2):]


def verification_plot(v: dict, plot_id: str) -> Plot:
    """Before/after replay time (median) with the time range implied by the speedup's 95 % interval."""
    before, after = float(v["baseline"]["median_s"]), float(v["fixed"]["median_s"])
    ci = v.get("ci95") if isinstance(v.get("ci95"), (list, tuple)) and len(v["ci95"]) == 2 else None
    lo_s, hi_s = (before / float(ci[1]), before / float(ci[0])) if ci and min(ci) > 0 else (after, after)
    title = "Replay: before and after the fix"
    alt = (f"Replayed {v.get('repeat', '?')} times: median {fmt_secs(before)} as recorded, "
           f"{fmt_secs(after)} with the fix" + (f" (95 % interval {fmt_secs(lo_s)} to {fmt_secs(hi_s)})"
                                                    if ci else "") + ".")
    svg = Svg(WIDTH / 1.5, 118, title, alt)
    xs = Scale(0, nice_max(max(before, after, hi_s)), 92, WIDTH / 1.5 - 16)
    x_axis(svg, xs, 70, "replay time, median (s)", tick_seconds, nice_ticks(xs.lo, xs.hi, 4))
    after_cls = {"improved": "c-after", "regressed": "c-hot"}.get(str(v.get("verdict")), "c-before")
    for i, (label, value, cls) in enumerate((("before", before, "c-before"), ("after fix", after, after_cls))):
        y = TOP + 2 + i * 21
        svg.text(86, y + 12, label, "tick", "end")
        svg.rect(xs(0), y, xs(value) - xs(0), 15, cls, f"{label}: {fmt_secs(value)}")
    if ci:
        y = TOP + 2 + 21 + 7.5
        svg.line(xs(lo_s), y, xs(hi_s), y, "whisker", f"95 % interval: {fmt_secs(lo_s)} to {fmt_secs(hi_s)}")
        for x in (xs(lo_s), xs(hi_s)):
            svg.line(x, y - 5, x, y + 5, "whisker")
    rows = [[label, fmt_secs(float(run["median_s"])), _bw(run), _runs(run)]
            for label, run in (("before", v["baseline"]), ("after fix", v["fixed"]))]
    return with_table(Plot(plot_id, title, svg.markup(plot_id), alt),
                  ["replay", "median time", "bandwidth", "each repetition"], rows)


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
    height = 300
    bottom = height - BOTTOM
    svg = Svg(WIDTH, height, title, alt)
    lo, hi = min(xs_all), max(xs_all)
    xs = Scale(lo, hi if hi > lo else lo * 2, LEFT + 12, WIDTH - RIGHT - 12, log=True)
    ys = Scale(0, nice_max(max(ys_all, default=0)), bottom, TOP)
    _y_axis(svg, ys, LEFT, WIDTH - RIGHT, ylabel, tick_count, nice_ticks(ys.lo, ys.hi, 5))
    for t in sorted(set(xs_all)):
        svg.text(xs(t), bottom + 14, fmt_num(t), "tick", "middle")
    svg.line(LEFT, bottom, WIDTH - RIGHT, bottom, "axis")
    svg.text((LEFT + WIDTH) / 2, height - 8, xlabel, "label", "middle")
    for e in exceed:
        a, b = float(e["before"]["tasks"]), float(e["after"]["tasks"])
        x = (xs(a) + xs(b)) / 2
        svg.line(x, TOP, x, bottom, "limit", f"{e['label']}: clients exceed the {e.get('osts')} OSTs between "
                                           f"{fmt_num(a)} and {fmt_num(b)} {xlabel}")
        svg.text(x + 4, TOP + 12, f"clients > OSTs ({e.get('osts')})", "legend")
    legend = []
    for i, c in enumerate(curves):
        cls = "series-base" if c["baseline"] else f"series s{i % 4}"
        _campaign_series(svg, xs, ys, c, cls, xlabel)
        legend.append((("baseline: " if c["baseline"] else "") + str(c["label"]), cls))
    for k in knees:
        where = f"{fmt_num(float(k['bw_mib_s']))} MiB/s at {fmt_num(float(k['tasks']))} {xlabel}"
        svg.circle(xs(float(k["tasks"])), ys(float(k["bw_mib_s"])), 7, "knee", f"knee of {k['label']}: {where}")
    _line_legend(svg, legend[:6], LEFT + 8, 16)
    rows = [[("baseline: " if c["baseline"] else "") + str(c["label"]), fmt_num(float(x)), fmt_num(float(y))]
            for c in curves for x, y in zip(c["tasks"], c["bw_mib_s"])]
    return with_table(Plot(pid, title, svg.markup(pid), alt), ["curve", xlabel, ylabel], rows)


def _campaign_series(svg: Svg, xs: Scale, ys: Scale, c: dict, cls: str, xlabel: str) -> None:
    points = [(float(x), float(y)) for x, y in zip(c["tasks"], c["bw_mib_s"]) if float(x) > 0]
    svg.polyline([(xs(x), ys(y)) for x, y in points], cls)
    for x, y in points:
        svg.circle(xs(x), ys(y), 3, cls, f"{c['label']}: {fmt_num(y)} MiB/s at {fmt_num(x)} {xlabel}")


def _line_legend(svg: Svg, items: list[tuple[str, str]], x: float, y: float) -> None:
    for label, cls in items:
        svg.polyline([(x, y - 4), (x + 18, y - 4)], cls)
        svg.text(x + 22, y, label, "legend")
        x += 34 + 7 * len(label)


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
