"""A tune result (schema ioadvisor/tune/v1) as reporters show it: terminal lines, and an HTML
section with the best configuration, the settings to apply and a picture of the search (each
measured configuration's speedup against the job as recorded, with its 95 % interval), from the
Jinja2 template ``_tune.html.j2`` like the report's other sections. `ioadvisor tune` writes the
result; `diagnose --tune-json` shows a saved one in the diagnosis's reports."""

from __future__ import annotations

from typing import Any

from advisor.fixes import place
from advisor.formatting import fmt_secs, fmt_speedup, fmt_speedup_range
from advisor.report.plots import Plot, with_table
from advisor.report.svg import Scale, Svg, text_width

# the statuses of a candidate in a tune result
UNTRIED, RACING, RULED_OUT, SET_ASIDE = "untried", "racing", "ruled-out", "set-aside"
NOT_VERIFIABLE, IDENTICAL, BEST, RUNNER_UP = "not-verifiable", "identical", "best", "runner-up"
PRUNED = "pruned"

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
    """What the template shows: the input, and as ``section`` (the macro ``tune_section``'s one
    argument) the document's tune object, its plot, its times in words and whether its best is
    advice."""
    return {"input": doc["input"], "section": _section(doc["tune"])}


def _section(t: dict[str, Any]) -> dict[str, Any]:
    runners_up = {c["label"]: _measured(c) for c in t["candidates"] if c["status"] == RUNNER_UP}
    best = t["best"] or {}
    reason = best.get("reason", "")
    verdict = f"{best.get('verdict')}: "
    return {"t": t, "plot": search_plot(t), "replay": fmt_secs(t["replay_s"]),
            "budget": fmt_secs(t["budget_s"]), "shown": SHOWN, "runners_up": runners_up,
            "worth": bool(best) and worth_applying(best), "not_worth": NOT_WORTH,
            "reason": reason[len(verdict):] if reason.startswith(verdict) else reason}


def text(t: dict[str, Any], name: str) -> list[str]:
    """The result for the terminal: the best, the runners-up, what was ruled out and why."""
    where = place(t["target"], t["fstype"], t["load"])
    out = [f"tune {name} on {where}: {t['measured']} of {t['space']} configurations measured in "
           f"{t['rungs']} rung{'' if t['rungs'] == 1 else 's'}, {fmt_secs(t['replay_s'])} of replay "
           f"(budget {fmt_secs(t['budget_s'])}, "
           f"{t['stop_reason']}); {t['np']} ranks, scale {t['scale']}"]
    best = t["best"]
    if best is None:
        return out + ["no configuration could be measured here"]
    if worth_applying(best):
        out += [f"best: {best['label']}", f"  {best['reason']}"]
        out += [f"  apply: {line}" for line in best["apply"]]
    else:
        out += [f"fastest measured: {best['label']} ({NOT_WORTH})", f"  {best['reason']}"]
        out += [f"  its settings: {line}" for line in best["apply"]]
    groups = {RUNNER_UP: "cannot be told apart from the best", RULED_OUT: "ruled out",
              SET_ASIDE: "set aside (halving)", NOT_VERIFIABLE: "not verifiable here"}
    for status, title in groups.items():
        rows = [c for c in t["candidates"] if c["status"] == status]
        if rows:
            out.append(f"{title}:")
            out += [f"  {c['label']}: {_measured(c)}" for c in rows]
    untried = [c for c in t["candidates"] if c["status"] in (UNTRIED, IDENTICAL, PRUNED)]
    if untried:
        out.append(f"not measured: {len(untried)} (the search did not reach them, or their replay is identical "
                   "to one measured; the JSON lists them)")
    return out


NOT_WORTH = "not shown faster than the job as recorded: nothing to apply yet"


def worth_applying(best: dict[str, Any]) -> bool:
    """Whether the best's settings are advice: only a best measured faster than the job with
    confidence. The fastest of candidates the job matches is reported, not recommended."""
    return best.get("verdict") == "improved"


def _measured(c: dict[str, Any]) -> str:
    if c["status"] == NOT_VERIFIABLE:
        return c["why"]
    said = f"{fmt_speedup(c['speedup'])} ({fmt_speedup_range(c['ci95']) or 'no interval'}, {_sampled(c)})" \
        if c["speedup"] else "not measured"
    return f"{said}; {c['why']}" if c["status"] != RUNNER_UP else said


def _sampled(c: dict[str, Any]) -> str:
    """'3 pairs' beside the job; a candidate measured only beside another one is chained to the
    job through it ('2 rounds, chained'), not a measurement of 0 pairs."""
    if c["pairs"] or not c.get("rounds"):
        return f"{c['pairs']} pair{'' if c['pairs'] == 1 else 's'}"
    return f"{c['rounds']} round{'' if c['rounds'] == 1 else 's'} beside another candidate, chained"

