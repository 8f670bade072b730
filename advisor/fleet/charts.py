"""The machine view's charts as inline SVG, drawn with the per-job report's SVG writer.

Colours come from the report stylesheet's classes (``c-read``, ``c-write`` ...), so
the charts follow its light, dark and print themes; every label is escaped by
:class:`advisor.report.svg.Svg`.
"""

from __future__ import annotations

from advisor.fleet.aggregate import Ranked
from advisor.report.plots import Plot
from advisor.report.svg import Scale, Svg, nice_max, nice_ticks

WIDTH = 860
TOP, BOTTOM, RIGHT = 30, 46, 16
PALETTE = ("c-hot", "c-write", "c-read", "c-meta", "c-time", "c-after", "c-before")


def fmt_hours(hours: float) -> str:
    """Core-hours, short: '1,234 h', '12.5 h', '0.42 h', '< 0.01 h'."""
    if hours >= 100:
        return f"{hours:,.0f} h"
    if hours >= 0.01:
        return f"{hours:.3g} h"
    return "0 h" if hours <= 0 else "< 0.01 h"


def ranking_chart(plot_id: str, title: str, rows: list[Ranked], what: str) -> Plot:
    """Horizontal bars of core-hours lost, one per name, largest first."""
    label_w = min(260, 40 + 7 * max((len(r.name) for r in rows), default=4))
    row_h = 22
    height = TOP + row_h * len(rows) + BOTTOM
    top = rows[0] if rows else None
    alt = (f"{top.name} loses the most: {fmt_hours(top.hours)} in {top.jobs} job{'s' if top.jobs != 1 else ''}."
           if top
           else f"No {what} with findings.")
    svg = Svg(WIDTH, height, title, alt)
    xs = Scale(0, nice_max(max((r.hours for r in rows), default=0)), label_w, WIDTH - RIGHT)
    _x_axis(svg, xs, TOP + row_h * len(rows), "core-hours lost (estimated)")
    for i, r in enumerate(rows):
        y = TOP + i * row_h + 3
        svg.text(label_w - 6, y + 13, _clip(r.name, (label_w - 12) // 7), "tick", "end", tip=r.name)
        svg.rect(xs(0), y, xs(r.hours) - xs(0), row_h - 6, PALETTE[i % len(PALETTE)] if what == "categories"
                 else "c-hot", f"{r.name}: {fmt_hours(r.hours)} lost, {r.jobs} jobs, {r.findings} findings")
    plot = Plot(plot_id, title, svg.markup(plot_id), alt)
    worst = any(r.extra for r in rows)
    plot.headers = ["name", "core-hours lost", "jobs", "findings"] + (["worst category"] if worst else [])
    plot.rows = [[r.name, fmt_hours(r.hours), str(r.jobs), str(r.findings)] + ([r.extra] if worst else [])
                 for r in rows]
    return plot


def weekly_chart(plot_id: str, weeks: list[str], series: dict[str, list[float]], older: int = 0) -> Plot:
    """Stacked columns of core-hours lost per week, one colour per category."""
    title = "Core-hours lost per week, by category"
    totals = [sum(v[i] for v in series.values()) for i in range(len(weeks))]
    worst = max(range(len(weeks)), key=lambda i: totals[i]) if weeks else None
    alt = ("No dated findings." if worst is None else
           f"{len(weeks)} weeks from {weeks[0]} to {weeks[-1]}; the worst week starts {weeks[worst]} "
           f"with {fmt_hours(totals[worst])} lost."
           + (f" {older} older weeks with findings are not drawn." if older else ""))
    left, height = 78, 300
    svg = Svg(WIDTH, height, title, alt)
    ys = Scale(0, nice_max(max(totals, default=0)), height - BOTTOM, TOP)
    for t in nice_ticks(ys.lo, ys.hi):
        svg.line(left, ys(t), WIDTH - RIGHT, ys(t), "grid")
        svg.text(left - 5, ys(t) + 4, fmt_hours(t), "tick", "end")
    svg.text(14, (ys.p0 + ys.p1) / 2, "core-hours lost", "label", "middle", rotate=True)
    step = (WIDTH - RIGHT - left) / max(len(weeks), 1)
    for i, week in enumerate(weeks):
        base = 0.0
        for k, (name, values) in enumerate(series.items()):
            if values[i] > 0:
                svg.rect(left + i * step + step * 0.1, ys(base + values[i]), step * 0.8,
                         ys(base) - ys(base + values[i]), PALETTE[k % len(PALETTE)],
                         f"week of {week}: {name} {fmt_hours(values[i])}")
            base += values[i]
    for i in _label_every(len(weeks)):
        svg.text(left + (i + 0.5) * step, height - BOTTOM + 14, weeks[i], "tick", "middle")
    _legend(svg, list(series), left)
    plot = Plot(plot_id, title, svg.markup(plot_id), alt)
    plot.headers = ["week of"] + list(series) + ["total"]
    plot.rows = [[w] + [fmt_hours(series[n][i]) for n in series] + [fmt_hours(totals[i])]
                 for i, w in enumerate(weeks) if totals[i] > 0]
    return plot


def _x_axis(svg: Svg, xs: Scale, y: float, label: str) -> None:
    for t in nice_ticks(xs.lo, xs.hi):
        svg.line(xs(t), TOP, xs(t), y, "grid")
        svg.text(xs(t), y + 14, fmt_hours(t), "tick", "middle")
    svg.line(xs.p0, y, xs.p1, y, "axis")
    svg.text((xs.p0 + xs.p1) / 2, y + 34, label, "label", "middle")


def _legend(svg: Svg, names: list[str], x: float) -> None:
    for k, name in enumerate(names):
        svg.rect(x, 10, 10, 10, PALETTE[k % len(PALETTE)])
        svg.text(x + 14, 19, name, "legend")
        x += 24 + 7 * len(name)


def _label_every(n: int, most: int = 8) -> list[int]:
    step = max(1, -(-n // most))
    return list(range(0, n, step))


def _clip(text: str, most: int) -> str:
    return text if len(text) <= most else text[: max(1, most - 1)] + "\u2026"
