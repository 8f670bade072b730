"""Load imbalance and stragglers.

A parallel phase finishes when its slowest rank does: its realised rate is the slowest
rank's rate times the number of ranks, not the sum of the ranks' rates. Per-rank bytes
and times come from the DXT trace when there is a complete one (exact, including time
between calls), else from the per-rank records (file-per-process) and Darshan's
slowest/fastest rank counters of shared files.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor import arrays
from advisor.facts import FactContext, Missing, fact, param
from advisor.facts._darshan import col, data_files, data_mask, dxt, maybe, nprocs
from advisor.facts.aggregation import aggregator_count, all_collective, collective_ids
from advisor.facts.requests import table as request_sizes
from advisor.profile import DXT_READ, DXT_WRITE, DxtTrace

SPAN_TRIM = 0.01  # a rank's phase span leaves out the requests of its first and last 1 % of bytes
SLOW = param("straggler_factor", 2.0, "a rank slower than the median rank by this factor is a straggler", kind="ratio")


@dataclass
class RankTable:
    """Per-rank bytes and seconds of the job's data I/O."""
    bytes: np.ndarray  # per rank
    seconds: np.ndarray  # per rank: busy span (DXT) or I/O seconds (counters)
    source: str  # "dxt" or "counters"
    collective_bytes: np.ndarray  # per rank: its bytes on files moved with collective MPI-IO
    busy: np.ndarray  # per rank: seconds inside its read and write calls (DXT: their durations)


def _application_trace(ctx: FactContext) -> DxtTrace | None:
    """DXT segments as the application issued them: POSIX, except for files accessed with
    collective MPI-IO, whose POSIX segments are the aggregators' and are replaced by the
    ranks' MPI-IO calls (DXT_MPIIO) when that trace exists."""
    try:
        trace = dxt(ctx, "DXT_POSIX")
    except Missing:
        return None
    collective = collective_ids(ctx)
    if not collective:
        return trace
    ids = np.fromiter(collective, np.uint64, len(collective))
    parts = [trace.subset(~np.isin(trace.record_id, ids))]
    try:
        mpiio = dxt(ctx, "DXT_MPIIO")
        parts.append(mpiio.subset(np.isin(mpiio.record_id, ids)))
    except Missing:
        pass
    return DxtTrace.concat("DXT_POSIX", parts)


def _rank_table(ctx: FactContext) -> RankTable:
    trace = _application_trace(ctx)
    if trace is not None and len(trace) == 0:
        trace = None
    if trace is not None:
        # one table per phase (writes, reads): a rank's span in one phase is its time in it
        inside = np.isin(trace.record_id, np.fromiter(collective_ids(ctx), np.uint64))
        tables = [_dxt_phase(ctx, trace, trace.op == op, inside) for op in (DXT_WRITE, DXT_READ)]
        tables = [t for t in tables if t is not None]
        if tables:
            return max(tables, key=_spread)
    return _counter_table(ctx)


def _counter_table(ctx: FactContext) -> RankTable:
    """Per rank, bytes and read + write seconds of its own POSIX and STDIO records (STDIO's of data
    files, not the standard streams): a rank's fread and fwrite calls are its I/O as much as its read
    and write calls, and a job that reads its inputs through STDIO has few POSIX bytes to compare.
    Files moved with collective MPI-IO count by the ranks' MPI-IO records, as in the DXT table: their
    POSIX records are the aggregators'."""
    collective = np.fromiter(collective_ids(ctx), np.uint64)
    parts = []
    for module in ("POSIX", "STDIO", "MPI-IO"):
        rec = maybe(ctx, module) if module != "MPI-IO" or len(collective) else None
        if rec is not None:
            on = np.isin(rec.ids, collective)
            keep = (rec.ranks >= 0) & (data_mask(ctx, rec) if module == "STDIO" else True)
            parts.append((rec, keep & (on if module == "MPI-IO" else ~on), module == "MPI-IO"))
    if not parts:
        raise Missing("no POSIX or STDIO records in the log")
    if not any(keep.any() for _, keep, _ in parts):
        raise Missing("per-rank I/O is unknown: only shared-file records and no DXT trace")
    n = max(nprocs(ctx), *(int(rec.ranks[keep].max()) + 1 for rec, keep, _ in parts if keep.any()))

    def per_rank(rec, keep, a: str, b: str) -> np.ndarray:
        return np.bincount(rec.ranks[keep], weights=(col(rec, a) + col(rec, b))[keep], minlength=n)

    moved = sum(per_rank(rec, keep, "BYTES_READ", "BYTES_WRITTEN") for rec, keep, _ in parts)
    busy = sum(per_rank(rec, keep, "F_READ_TIME", "F_WRITE_TIME") for rec, keep, _ in parts)
    inside = sum((per_rank(rec, keep, "BYTES_READ", "BYTES_WRITTEN") for rec, keep, mpi in parts if mpi),
                 np.zeros(n))
    return RankTable(moved, busy, "counters", inside, busy)


def _dxt_phase(ctx: FactContext, trace, sel: np.ndarray, inside: np.ndarray) -> RankTable | None:
    if sel.sum() == 0:
        return None
    rank, length, start, end = trace.rank[sel], trace.length[sel], trace.start[sel], trace.end[sel]
    n = max(nprocs(ctx), int(rank.max()) + 1)
    moved = np.bincount(rank, weights=length, minlength=n)
    first, last = _byte_span(rank, length, start, end, n)
    span = np.where(np.isfinite(first), last - first, 0.0)
    collective = np.bincount(rank[inside[sel]], weights=length[inside[sel]], minlength=n)
    return RankTable(moved, span, "dxt", collective, np.bincount(rank, weights=end - start, minlength=n))


def _byte_span(rank: np.ndarray, length: np.ndarray, start: np.ndarray, end: np.ndarray,
               n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per rank, from the request that moves its first SPAN_TRIM of bytes to the one that moves
    its last: the time over which it moved its data. A few bytes far from the rest do not stretch
    it: OMPIO's aggregator writes 40 bytes to its shared-file-pointer file when the file is
    closed, after the data, and its write span doubled (a false straggler). A rank that moved no
    bytes keeps its whole span."""
    order = np.lexsort((start, rank))
    rank, length, start, end = rank[order], length[order].astype(np.float64), start[order], end[order]
    total = np.bincount(rank, weights=length, minlength=n)
    before = np.cumsum(length) - length  # bytes of the rank's earlier requests (and of lower ranks)
    before -= np.concatenate([[0.0], np.cumsum(total)[:-1]])[rank]
    share = np.divide(before, total[rank], out=np.zeros_like(before), where=total[rank] > 0)
    upto = np.divide(before + length, total[rank], out=np.ones_like(before), where=total[rank] > 0)
    carries = (upto > SPAN_TRIM) & (share < 1 - SPAN_TRIM)  # holds bytes inside the trimmed span
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    np.minimum.at(first, rank[carries], start[carries])
    np.maximum.at(last, rank[carries], end[carries])
    return first, last


def _spread(t: RankTable) -> float:
    """Seconds the slowest rank of a phase takes beyond the median rank."""
    busy = t.seconds[t.seconds > 0]
    return float(busy.max() - arrays.median(busy)) if len(busy) > 1 else 0.0


def table(ctx: FactContext) -> RankTable:
    return ctx.memo("rank_table", lambda: _rank_table(ctx))


def _active(t: RankTable) -> np.ndarray:
    return (t.bytes > 0) & (t.seconds > 0)


def _rates(ctx: FactContext) -> tuple[np.ndarray, np.ndarray]:
    t = table(ctx)
    active = np.flatnonzero(_active(t))
    if len(active) < 2:
        raise Missing("fewer than two ranks moved data")
    return active, t.bytes[active] / t.seconds[active]


@fact("rank_source", "enum", "Where per-rank bytes and times come from: 'dxt' or 'counters'.",
      label="per-rank numbers from")
def rank_source(ctx: FactContext) -> str:
    return table(ctx).source


@fact("straggler_ranks", "index", "Ranks whose I/O rate is below the median rank's by straggler_factor.",
      label="straggler ranks")
def straggler_ranks(ctx: FactContext) -> list[int]:
    active, rates = _rates(ctx)
    slow = rates < arrays.median(rates) / ctx.param(SLOW)
    order = np.argsort(rates[slow])
    return [int(r) for r in active[slow][order]]


@fact("median_rank_rate", "rate", "I/O rate of the median rank (bytes / busy seconds).", label="median rank's rate")
def median_rank_rate(ctx: FactContext) -> float:
    return float(arrays.median(_rates(ctx)[1]))


@fact("slowest_rank_rate", "rate", "I/O rate of the slowest rank.", label="slowest rank's rate")
def slowest_rank_rate(ctx: FactContext) -> float:
    return float(_rates(ctx)[1].min())


@fact("realised_rate", "rate", "Slowest rank's rate x ranks: what the phase delivered.",
      label="rate delivered (slowest rank x ranks)")
def realised_rate(ctx: FactContext) -> float:
    active, rates = _rates(ctx)
    return float(rates.min() * len(active))


@fact("ideal_rate", "rate", "Median rank's rate x ranks: what the phase would deliver without stragglers.",
      label="rate without stragglers (median rank x ranks)")
def ideal_rate(ctx: FactContext) -> float:
    active, rates = _rates(ctx)
    return float(arrays.median(rates) * len(active))


@fact("straggler_cost_s", "seconds", "Seconds the job waits for the stragglers: their time beyond the median rank's.",
      label="time waiting for stragglers")
def straggler_cost_s(ctx: FactContext) -> float:
    t = table(ctx)
    slow = ctx.get("straggler_ranks")
    if not slow:
        return 0.0
    active = _active(t)
    median = float(arrays.median(t.seconds[active]))
    return max(0.0, float(t.seconds[slow].max()) - median)


@fact("rank_bytes_imbalance", "ratio", "Bytes of the busiest rank / the median active rank's.",
      label="busiest rank's bytes / median rank's")
def rank_bytes_imbalance(ctx: FactContext) -> float:
    return ctx.get("busiest_rank_bytes") / ctx.get("median_rank_bytes")


@fact("busiest_rank_bytes", "bytes", "Bytes the busiest rank moved.", label="busiest rank's bytes")
def busiest_rank_bytes(ctx: FactContext) -> float:
    return float(_moved(ctx).max())


@fact("median_rank_bytes", "bytes", "Bytes the median rank moved (of the ranks that moved any).",
      label="median rank's bytes")
def median_rank_bytes(ctx: FactContext) -> float:
    return float(arrays.median(_moved(ctx)))


def _moved(ctx: FactContext) -> np.ndarray:
    moved = table(ctx).bytes
    moved = moved[moved > 0]
    if len(moved) < 2:
        raise Missing("fewer than two ranks moved data")
    return moved


@fact("heavy_ranks", "index", "Ranks that moved more than twice the median rank's bytes.",
      label="ranks with over twice the median bytes")
def heavy_ranks(ctx: FactContext) -> list[int]:
    t = table(ctx)
    moved = t.bytes
    median = arrays.median(moved[moved > 0]) if (moved > 0).any() else 0
    return [int(r) for r in np.flatnonzero(moved > 2 * median)]


@fact("heavy_bytes_collective", "flag", "Most of the heavy ranks' bytes were moved with collective MPI-IO "
      "calls: the aggregators wrote or read them, as every rank's (collective buffering is aggregation), so "
      "aggregating them again is a fix the job already applies.", label="heavy ranks' bytes moved collectively")
def heavy_bytes_collective(ctx: FactContext) -> bool:
    t = table(ctx)
    heavy = ctx.get("heavy_ranks")
    return bool(heavy) and float(t.collective_bytes[heavy].sum()) > 0.5 * float(t.bytes[heavy].sum())


@fact("data_imbalance_cost_s", "seconds", "Seconds the heavy ranks (else the busiest) spend inside their read "
      "and write calls beyond the median rank: what moving more data costs them (DXT: the calls' durations, "
      "every call of a collective counted on every rank, whatever its bytes; else the per-rank counters' times).",
      label="busiest rank's time beyond the median rank")
def data_imbalance_cost_s(ctx: FactContext) -> float:
    t = table(ctx)
    active = _active(t)
    if active.sum() < 2:
        raise Missing("fewer than two ranks moved data")
    # not the span from first to last byte: a rank writing a log through the run (FLASH's rank 0) would
    # count the computation between its writes, and a rank bringing no bytes to a collective call (the
    # others, in FLASH's seven collective writes of the grid's tree that rank 0 alone fills) is still
    # inside it, waiting as long: by spans rank 0 was 1.9 s behind the median rank, by calls 0.08 s
    heavy = ctx.get("heavy_ranks") or [int(np.argmax(t.bytes))]
    return max(0.0, float(t.busy[heavy].max() - arrays.median(t.busy[active])))


def _shared_skew(ctx: FactContext, posix_only: bool = False) -> list[dict]:
    """Shared files whose slowest rank took much longer than the average rank.

    A file accessed with collective MPI-IO (unless `posix_only`) has two balances, and the worse
    one speaks for it: the application's, in its MPI-IO record, and the aggregators', in its POSIX
    record against the mean aggregator. Below collective buffering only the aggregators do POSIX
    I/O, so comparing them with the ranks that do none would call the configuration (cb_nodes)
    an imbalance.
    """
    out = []
    n = nprocs(ctx)
    if n < 2:
        return out
    collective = set() if posix_only else collective_ids(ctx)
    for f in data_files(ctx):
        if f.record_id in collective:
            views = [_skew(f, f.by_module.get("MPI-IO"), n, "ranks"),
                     _aggregator_skew(ctx, f)]
        else:
            views = [_skew(f, f.by_module.get("POSIX"), n, "ranks")]
        views = [v for v in views if v is not None]
        if views:
            out.append(max(views, key=lambda d: d["excess_s"]))
    out.sort(key=lambda d: -d["excess_s"])
    return out


def _skew(f, s, among: int, who: str, counted: bool = True) -> dict | None:
    """The slowest rank of a shared record against the mean of `among` ranks."""
    if s is None or not s.shared or s.slowest_rank_time is None:
        return None
    mean = s.io_time / among
    fastest = s.fastest_rank_time or 0.0 if who == "ranks" else mean
    return {"path": f.path, "record_id": f.record_id, "slowest_s": s.slowest_rank_time, "fastest_s": fastest,
            "mean_s": mean, "slowest_bytes": s.slowest_rank_bytes or 0,
            "fastest_bytes": s.fastest_rank_bytes or 0, "bytes": s.bytes,
            "excess_s": max(0.0, s.slowest_rank_time - mean), "among": who, "count": among, "counted": counted}


def _aggregator_skew(ctx: FactContext, f) -> dict | None:
    """The slowest aggregator of a collectively accessed file against the mean aggregator."""
    posix = f.by_module.get("POSIX")
    if posix is None or not posix.shared or not posix.slowest_rank_bytes:
        return None
    count, counted = aggregator_count(ctx, f.record_id, posix)
    return _skew(f, posix, count, "aggregators", counted)


@fact("shared_imbalance_among", "enum", "Whom the worst shared file's imbalance is measured among: "
      "'ranks' (POSIX, or MPI-IO for collective files) or 'aggregators' (POSIX below collective MPI-IO).",
      label="imbalance measured among")
def shared_imbalance_among(ctx: FactContext) -> str:
    skew = ctx.memo("shared_skew", lambda: _shared_skew(ctx))
    return skew[0]["among"] if skew else "ranks"


@fact("shared_imbalance_count_exact", "flag", "The aggregators of shared_imbalance_count were counted "
      "(DXT), not estimated.", label="aggregators counted (not estimated)")
def shared_imbalance_count_exact(ctx: FactContext) -> bool:
    skew = ctx.memo("shared_skew", lambda: _shared_skew(ctx))
    return bool(skew[0]["counted"]) if skew else True


@fact("shared_imbalance_count", "count", "Ranks or aggregators the worst shared file's slowest one is "
      "compared with (aggregators: the ranks of DXT that moved at least half the busiest rank's bytes, else "
      "the nearest whole number of the slowest rank's shares in the file's bytes).",
      label="ranks or aggregators compared")
def shared_imbalance_count(ctx: FactContext) -> int:
    skew = ctx.memo("shared_skew", lambda: _shared_skew(ctx))
    if not skew:
        return nprocs(ctx)
    worst = skew[0]
    if not worst["counted"]:
        ctx.assume(f"{worst['count']} aggregators on {worst['path']}, estimated as the file's bytes over the "
                   f"slowest rank's bytes", how="run with DXT_ENABLE_IO_TRACE=1 so that the log shows the "
                   "ranks that did the POSIX I/O")
    return int(worst["count"])


@fact("shared_time_imbalance", "fraction", "Worst shared file: (slowest - fastest rank time) / slowest.",
      label="time imbalance on the worst shared file")
def shared_time_imbalance(ctx: FactContext) -> float:
    skew = [d for d in ctx.memo("shared_skew", lambda: _shared_skew(ctx)) if d["slowest_s"] > 0]
    if not skew:
        return 0.0
    return max((d["slowest_s"] - d["fastest_s"]) / d["slowest_s"] for d in skew)


@fact("shared_imbalance_cost_s", "seconds", "Seconds the slowest rank of each shared file spent beyond the mean rank.",
      label="slowest rank's time beyond the mean rank")
def shared_imbalance_cost_s(ctx: FactContext) -> float:
    return float(sum(d["excess_s"] for d in ctx.memo("shared_skew", lambda: _shared_skew(ctx))))


@fact("shared_imbalance_files", "path", "Shared files with the largest slowest-rank excess time.",
      label="shared files with the largest imbalance")
def shared_imbalance_files(ctx: FactContext) -> list[str]:
    return [d["path"] for d in ctx.memo("shared_skew", lambda: _shared_skew(ctx)) if d["excess_s"] > 0]


@fact("shared_imbalance_collective", "flag", "Every shared file of shared_imbalance_files was moved with "
      "collective MPI-IO: switching to collective calls would change nothing, the aggregation is what to tune.",
      label="imbalanced files already collective")
def shared_imbalance_collective(ctx: FactContext) -> bool:
    return all_collective(ctx, _imbalanced_ids(ctx))


def _imbalanced_ids(ctx: FactContext) -> list[int]:
    """Record ids of the shared files whose slowest rank spent time beyond the mean."""
    return [d["record_id"] for d in ctx.memo("shared_skew", lambda: _shared_skew(ctx)) if d["excess_s"] > 0]


@fact("shared_imbalance_requests_large", "flag", "Every shared file of shared_imbalance_files was moved with POSIX "
      "requests none of which is small (small_request_bytes) or off the file's alignment (POSIX_FILE_NOT_ALIGNED 0): "
      "the large aligned requests collective buffering's aggregators would make, so collective calls would not "
      "change them; with even bytes per rank the slowest rank is a node or OST to find.",
      label="imbalanced files' requests already large and aligned")
def shared_imbalance_requests_large(ctx: FactContext) -> bool:
    ids = _imbalanced_ids(ctx)
    if not ids:
        return False
    try:
        small = request_sizes(ctx)
    except Missing:
        return False
    rows = arrays.isin(small.rec.ids, np.array(ids, np.uint64))
    if not rows.any():
        return False
    requests = small.small["read"][rows].sum() + small.small["write"][rows].sum()
    return bool(requests == 0 and (col(small.rec, "FILE_NOT_ALIGNED")[rows] == 0).all())


@fact("shared_bytes_imbalance", "fraction", "Worst shared file: (slowest - fastest rank bytes) / slowest rank bytes.",
      label="bytes imbalance on the worst shared file")
def shared_bytes_imbalance(ctx: FactContext) -> float:
    skew = [d for d in ctx.memo("shared_skew", lambda: _shared_skew(ctx)) if d["slowest_bytes"] > 0]
    if not skew:
        return 0.0
    return max((d["slowest_bytes"] - d["fastest_bytes"]) / max(d["slowest_bytes"], d["fastest_bytes"]) for d in skew)


@fact("single_writer_shared", "record", "The shared file where one rank moved most of the bytes (POSIX layer).",
      label="shared file written mostly by one rank",
      fields={"path": "path", "bytes": "bytes", "share": "fraction", "excess_s": "seconds"})
def single_writer_shared(ctx: FactContext) -> dict:
    best = None
    for d in ctx.memo("shared_skew.posix", lambda: _shared_skew(ctx, posix_only=True)):
        one_writer = d["bytes"] > 0 and d["slowest_bytes"] >= 0.5 * d["bytes"]
        if one_writer and (best is None or d["bytes"] > best["bytes"]):
            best = d
    if best is None:
        return {"path": "", "bytes": 0, "share": 0.0, "excess_s": 0.0}
    return {"path": best["path"], "bytes": best["bytes"], "share": best["slowest_bytes"] / best["bytes"],
            "excess_s": best["excess_s"]}
