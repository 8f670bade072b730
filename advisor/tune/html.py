"""The search as an HTML section: the best configuration, the settings to apply, and a picture of
the search (each measured configuration's speedup against the job as recorded, with its 95 %
interval), from the Jinja2 template ``_tune.html.j2`` like the report's other sections."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.fileio import write_atomic
from advisor.formatting import fmt_secs, fmt_speedup, fmt_speedup_range
from advisor.report.plots import Plot, with_table
from advisor.report.svg import Scale, Svg, text_width

WIDTH, ROW, TOP, BOTTOM, RIGHT = 860, 18, 14, 40, 16
SHOWN = 40  # configurations drawn (best first); the table lists them all
STYLE = {"best": "c-after", "runner-up": "c-before", "ruled-out": "c-hot", "set-aside": "c-faint"}


def search_plot(t: dict[str, Any]) -> Plot | None:
    """Speedup by configuration, with intervals: one row each, best first, a line at 1x."""
    rows = [c for c in t["candidates"] if isinstance(c.get("speedup"), (int, float)) and c["speedup"] > 0]
    if not rows:
        return None
    shown = rows[:SHOWN]
    left = min(360.0, max(text_width(c["label"], 10) for c in shown) + 12)
    height = TOP + ROW * len(shown) + BOTTOM
    speedups = [c["speedup"] for c in shown] + [1.0]
    near = (min(speedups) / 3, max(speedups) * 3)  # an interval of 2 pairs may span 1e6: clipped
    values = [min(max(x, near[0]), near[1]) for c in shown for x in (c["ci95"] or [])] + speedups
    lo, hi = min(values) / 1.1, max(values) * 1.1
    xs = Scale(lo, hi, left, WIDTH - RIGHT, log=True)
    best = f"{shown[0]['label']} at {fmt_speedup(shown[0]['speedup'])}"
    svg = Svg(WIDTH, height, "Speedup of each configuration measured",
              f"{len(rows)} configurations measured; the best is {best}")
    bottom = TOP + ROW * len(shown)
    for tick in _ticks(lo, hi, xs):
        svg.line(xs(tick), TOP, xs(tick), bottom, "grid")
        svg.text(xs(tick), bottom + 14, f"{tick:g}x", "tick", "middle")
    svg.line(xs(1.0), TOP - 4, xs(1.0), bottom, "median")
    svg.text((left + WIDTH - RIGHT) / 2, bottom + 32, "speedup against the job as recorded (log scale)",
             "label", "middle")
    for i, c in enumerate(shown):
        y = TOP + ROW * i + ROW / 2
        tip = f"{c['label']}: {c['reason'] or fmt_speedup(c['speedup'])} ({c['status']})"
        svg.text(left - 6, y + 4, c["label"], "tick", "end", tip=tip)
        if c["ci95"]:
            svg.line(xs(max(c["ci95"][0], lo)), y, xs(min(c["ci95"][1], hi)), y, "whisker", tip=tip)
        svg.circle(xs(c["speedup"]), y, 4.5, STYLE.get(c["status"], "c-faint"), tip=tip)
    plot = Plot("tune-search", "The search", svg.markup("tune-search"),
                f"{len(rows)} configurations measured; best {best}.")
    return with_table(plot, ["configuration", "status", "speedup", "95 % CI", "pairs", "predicted", "why"],
                      [[c["label"], c["status"], fmt_speedup(c["speedup"]), fmt_speedup_range(c["ci95"]) or "-",
                        str(c["pairs"]), fmt_speedup(c["predicted"]) if c["predicted"] else "-", c["why"]]
                       for c in rows])


def _ticks(lo: float, hi: float, xs: Scale, gap: float = 44.0) -> list[float]:
    """1-2-5 steps inside [lo, hi], at least `gap` pixels apart."""
    steps = [m * 10.0 ** e for e in range(-2, 4) for m in (1, 1.5, 2, 3, 5, 7)]
    out: list[float] = []
    for s in (s for s in steps if lo <= s <= hi):
        if not out or xs(s) - xs(out[-1]) >= gap:
            out.append(s)
    return out


def context(doc: dict[str, Any]) -> dict[str, Any]:
    """What the template shows: the document's tune object, its plot and its times in words."""
    t = doc["tune"]
    return {"input": doc["input"], "t": t, "plot": search_plot(t), "replay": fmt_secs(t["replay_s"]),
            "budget": fmt_secs(t["budget_s"]), "shown": SHOWN}


def render(doc: dict[str, Any]) -> str:
    from advisor.report.html import render_page

    return render_page("tune.html.j2", title=f"ioadvisor tune: {Path(doc['input']).name}", **context(doc))


def write_html(path: str | Path, doc: dict[str, Any]) -> None:
    write_atomic(path, render(doc))
