"""How much of a measured time is noise: the timing difference a job shows by chance.

A finding whose evidence is a comparison of timings (a slow rank, a slow OST, metadata
time) is only as good as those timings. Three things bound what chance alone produces:

- an absolute floor: scheduler time slices, MPI start-up skew and timer overhead make
  ranks differ by tens of milliseconds on any node (``timing_floor_s``);
- the operations behind the time: a rank's time is a sum of n operation times, each with
  a spread s (measured from the DXT trace, else taken as the mean operation time, i.e. a
  coefficient of variation of 1); the slowest of P ranks exceeds the mean by about
  s * sqrt(n) * sqrt(2 ln P) with no cause at all;
- the page-cache regime: a run of under a second that moves far less than memory only
  copies into the client's page cache; those copies stall together (a descheduled rank
  loses a whole time slice), so their jitter does not average out and is of the order of
  the data time itself.

An effect measured as the mean over all ranks (the time MPI-IO spent above its POSIX calls, per
process) is not the slowest of P ranks: chance moves a mean of P ranks' sums by about
s * sqrt(n) / sqrt(P) (``mean_seconds``), the floor and the page-cache jitter still apply.
"""

from __future__ import annotations

import math

import numpy as np

from advisor.facts import FactContext, Missing, fact, param
from advisor.facts._darshan import dxt, nprocs, summary
from advisor.formatting import fmt_bytes, fmt_secs

FLOOR = param("timing_floor_s", 0.05, "timing differences below this many seconds are noise on any node",
              kind="seconds")
CACHE_BYTES = param("cache_regime_bytes", 1 << 30,
                    "a run moving less than this per process, and shorter than cache_regime_runtime_s, "
                    "runs in the page cache", kind="bytes")
CACHE_RUNTIME = param("cache_regime_runtime_s", 1.0, "runs shorter than this (and small) run in the page cache",
                      kind="seconds")


@fact("timing_noise", "record",
      "Seconds of timing difference expected by chance ('seconds'), the term that sets it ('why'): "
      "the floor, the operations' spread or page-cache jitter, and whether the run is in the page cache.",
      label="timing noise",
      fields={"seconds": "seconds", "why": "text", "page_cache": "flag", "mean_seconds": "seconds",
              "mean_why": "text"})
def timing_noise(ctx: FactContext) -> dict:
    cache = _page_cache(ctx)
    floor = [(float(ctx.param(FLOOR)), "the floor")] + ([cache] if cache is not None else [])
    slowest, mean = _operations(ctx) or (None, None)
    seconds, why = max(floor + ([slowest] if slowest else []), key=lambda t: t[0])
    mean_seconds, mean_why = max(floor + ([mean] if mean else []), key=lambda t: t[0])
    return {"seconds": seconds, "why": why, "page_cache": cache is not None,
            "mean_seconds": mean_seconds, "mean_why": mean_why}


def _per_process(ctx: FactContext) -> tuple[float, float, float] | None:
    """Operations, data seconds (read + write) and I/O seconds per process, base layer."""
    try:
        s = summary(ctx)
    except Missing:
        return None
    mods = [s.modules[m] for m in s.base_modules]
    if not mods:
        return None
    n = nprocs(ctx)
    runtime = ctx.value("runtime_s") or math.inf
    ops = sum(m.reads + m.writes + m.meta_ops for m in mods) / n
    data_s = min(sum(m.read_time + m.write_time for m in mods) / n, runtime)  # threads can sum past it
    io_s = min(sum(m.io_time for m in mods) / n, runtime)
    return ops, data_s, io_s


def _operations(ctx: FactContext) -> tuple[tuple[float, str], tuple[float, str]] | None:
    """The chance spread of the operations' time: of the slowest rank's over the mean, and of the
    mean over the ranks (one DXT pass for both)."""
    per = _per_process(ctx)
    if per is None or per[0] < 1:
        return None
    ops, _, io_s = per
    ranks = nprocs(ctx)
    spread = _dxt_spread(ctx)
    if spread is not None:
        sigma, how = spread, f"spread {fmt_secs(spread)} in DXT"
    else:
        sigma, how = io_s / ops, f"mean {fmt_secs(io_s / ops)}, no DXT"
    one_rank = sigma * math.sqrt(ops)
    return ((one_rank * math.sqrt(2 * math.log(max(ranks, 2))),
             f"chance spread of {ops:,.0f} operations per rank over {ranks:,} ranks ({how})"),
            (one_rank / math.sqrt(ranks),
             f"chance spread of the mean over {ranks:,} ranks of {ops:,.0f} operations each ({how})"))


def _dxt_spread(ctx: FactContext) -> float | None:
    try:
        trace = dxt(ctx, "DXT_POSIX")
    except Missing:
        return None
    if trace is None or len(trace.start) < 2:
        return None
    return float(np.std(trace.end - trace.start))


def _page_cache(ctx: FactContext) -> tuple[float, str] | None:
    per = _per_process(ctx)
    runtime = ctx.value("runtime_s")
    if per is None or runtime is None:
        return None
    moved = ((ctx.value("bytes_read") or 0) + (ctx.value("bytes_written") or 0)) / nprocs(ctx)
    if moved <= 0 or moved >= ctx.param(CACHE_BYTES) or runtime >= ctx.param(CACHE_RUNTIME):
        return None
    return per[1], f"page-cache jitter: {fmt_bytes(moved)} per process in a {fmt_secs(runtime)} run"
