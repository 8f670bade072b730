"""What a fix itself costs, so that the time it recovers can be told from the time its finding loses.

A finding's cost is what its problem loses. The fix it proposes does not always win all of that
back: collective buffering (and POSIX aggregation) hand every rank's bytes to a few aggregators,
each of which then moves its share of the job's bytes alone. Merging small requests saves their
latencies, but the aggregators stream their bytes one process each instead of every rank in
parallel. On the corpus's IOR runs of 4 ranks that funnel made the collective fix (one
aggregator) measure 0.1x-0.5x while coalescing each rank's own requests measured 1.0x-4.3x
(advisor/models/default/replays.csv.gz): without a model or a replay, the fixes are ordered by
what each would recover (:func:`recovered_s`), not by what its finding costs.
"""

from __future__ import annotations

from typing import Any

from advisor.facts import FactContext, Missing, NotApplicable

# transform -> the fix's key naming the processes that move the bytes afterwards
FUNNELS = {"collective": "cb_nodes", "aggregate": "aggregators"}


def funnel_s(ctx: FactContext, fix: dict[str, Any] | None) -> float:
    """Seconds the processes a fix funnels the bytes through need beyond what every rank needed:
    the job's bytes over `movers` processes at one process's streaming rate, less the same bytes
    over all the ranks. 0 for fixes that keep every rank moving its own bytes."""
    key = FUNNELS.get(str((fix or {}).get("transform")))
    movers = (fix or {}).get(key) if key else None
    if not isinstance(movers, (int, float)) or movers <= 0:
        return 0.0
    try:
        ranks = int(ctx.get("nprocs"))
        moved = float(ctx.get("bytes_read")) + float(ctx.get("bytes_written"))
        rate = float(ctx.get("stream_rate"))
    except (Missing, NotApplicable):
        return 0.0
    if ranks <= movers or rate <= 0:
        return 0.0
    return moved / rate * (1 / movers - 1 / ranks)


def changes_nothing(ctx: FactContext, fix: dict[str, Any] | None) -> bool:
    """POSIX aggregation through as many ranks as the job has: every rank still moves its own bytes
    (a 4-rank job offered "aggregate I/O through 4 ranks")."""
    if str((fix or {}).get("transform")) != "aggregate":
        return False
    try:
        return int((fix or {}).get("aggregators") or 0) >= int(ctx.get("nprocs"))
    except (Missing, NotApplicable, TypeError, ValueError):
        return False


def recovered_s(ctx: FactContext, cost_s: float, fix: dict[str, Any] | None) -> float:
    """Seconds a finding's fix would win back: what the finding loses, less what the fix costs;
    nothing for a fix that changes nothing."""
    if changes_nothing(ctx, fix):
        return 0.0
    return max(0.0, cost_s - funnel_s(ctx, fix))
