"""Per-OST bandwidth: a slow storage target shows as the files on it running slower.

Each record's rate (bytes / read+write seconds) is attributed to the OSTs of its file;
an OST whose median rate is below the median OST's by `slow_ost_factor` is an outlier.
`sample-badost.darshan`: the files on OST 14 ran at ~0.5 MiB/s, the others at 18-26 MiB/s.
"""

from __future__ import annotations

from collections import defaultdict

from advisor.facts import FactContext, Missing, fact, param
from advisor.facts._darshan import col, nprocs, records
from advisor.facts.lustre import layouts
from advisor.targets import FACTOR, FACTOR_PARAM, TooFewTargets, slow_targets

SLOW_OST = param(FACTOR_PARAM, FACTOR, "an OST whose files run this many times slower than the median OST's is slow",
                 kind="ratio")
MIN_RECORD_BYTES = 1 << 20  # tiny records time their latency, not the OST's bandwidth


def _per_ost(ctx: FactContext) -> dict:
    layout_of = {f.record_id: f.layout for f in layouts(ctx)}
    rec = records(ctx, "POSIX")
    moved = col(rec, "BYTES_READ") + col(rec, "BYTES_WRITTEN")
    seconds = col(rec, "F_READ_TIME") + col(rec, "F_WRITE_TIME")
    rates: dict[int, list[float]] = defaultdict(list)
    rows: dict[int, list[int]] = defaultdict(list)
    for i, rid in enumerate(rec.ids.tolist()):
        layout = layout_of.get(rid)
        if layout is None or moved[i] < MIN_RECORD_BYTES or seconds[i] <= 0:
            continue
        rate = moved[i] / seconds[i]  # once per file, not per stripe
        for ost in layout.ost_ids:
            rates[ost].append(rate)
            rows[ost].append(i)
    try:
        outliers = slow_targets(rates, ctx.param(SLOW_OST))
    except TooFewTargets:
        raise Missing("fewer than four OSTs with two or more timed files each") from None
    slow, medians, typical = outliers.slow, outliers.medians, outliers.typical
    cost = 0.0
    ranks: set[int] = set()
    files: list[str] = []
    for o in slow:
        for i in rows[o]:
            excess = seconds[i] - moved[i] / typical
            per_process = excess / nprocs(ctx) if rec.ranks[i] < 0 else excess
            cost = max(cost, per_process)  # ranks run in parallel: the worst one sets the pace
            if rec.ranks[i] >= 0:
                ranks.add(int(rec.ranks[i]))
            path = ctx.profile.name_of(rec.ids[i])
            if path not in files:
                files.append(path)
    return {"slow": slow, "medians": medians, "typical": typical, "cost": max(cost, 0.0),
            "ranks": sorted(ranks), "files": files, "osts": len(medians)}


def _get(ctx: FactContext) -> dict:
    return ctx.memo("per_ost", lambda: _per_ost(ctx))


@fact("slow_osts", "index", "OSTs whose files ran slow_ost_factor times slower than the median OST's.",
      label="slow OSTs")
def slow_osts(ctx: FactContext) -> list[int]:
    return _get(ctx)["slow"]


@fact("slow_ost_rate", "rate", "Median per-file rate on the slowest OST.", label="rate of files on the slowest OST")
def slow_ost_rate(ctx: FactContext) -> float:
    d = _get(ctx)
    return d["medians"][d["slow"][0]] if d["slow"] else 0.0


@fact("typical_ost_rate", "rate", "Median per-file rate of the median OST.", label="rate of files on the median OST")
def typical_ost_rate(ctx: FactContext) -> float:
    return _get(ctx)["typical"]


@fact("timed_osts", "count", "OSTs with enough timed files to compare.", label="OSTs compared")
def timed_osts(ctx: FactContext) -> int:
    return _get(ctx)["osts"]


@fact("slow_ost_cost_s", "seconds", "Seconds the slowest rank on a slow OST spent beyond the typical rate.",
      label="time lost on slow OSTs")
def slow_ost_cost_s(ctx: FactContext) -> float:
    return _get(ctx)["cost"]


@fact("slow_ost_ranks", "index", "Ranks whose files sit on a slow OST.", label="ranks with files on a slow OST")
def slow_ost_ranks(ctx: FactContext) -> list[int]:
    return _get(ctx)["ranks"]


@fact("slow_ost_files", "path", "Files on a slow OST.", label="files on a slow OST")
def slow_ost_files(ctx: FactContext) -> list[str]:
    return _get(ctx)["files"]
