"""Counters checked before they are believed: I/O times no process could have spent.

Darshan's F_*_TIME counters sum the time inside every call. Calls that overlap (threads,
asynchronous I/O, a FIFO's open blocking while others run) make that sum exceed the wall
time a process had: 8 threads writing for 0.85 s sum to 6.6 s in a 0.9 s run. A time is
therefore bounded by what is consistent with the rest of the log:

- the wall clock: a process cannot spend more than the run time;
- the union of the intervals the calls happened in: each record's first-start and
  last-end timestamps of reads, writes and its whole life (open to close);
- the DXT trace, when complete: the union of its segments is the exact wall time in
  reads and writes.

The bounded time is what the facts use; `counter_notes` says in one line each where the
counters were not believed, so the report never states an impossible share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.facts import FactContext, Missing, fact
from advisor.facts._darshan import darshan_like, dxt, nprocs, summary
from advisor.formatting import fmt_secs
from advisor.metrics import SPECS, Columns
from advisor.profile import DXT_READ, DXT_WRITE, SHARED_RANK, ModuleRecords

KINDS = ("read", "write", "meta")
# Old logs (Darshan 2.x, 3.0) store the job's start and end in whole seconds: a timestamp up
# to one second past the recorded run time is the rounding, not clock skew.
CLOCK_ROUNDING_S = 1.0
# Times are printed to the millisecond: an excess below this is float noise, not a contradiction.
RESOLUTION_S = 1e-3


def union_length(group: np.ndarray, start: np.ndarray, end: np.ndarray, groups: int) -> np.ndarray:
    """Per group (0..groups-1), the length of the union of the intervals [start, end]."""
    keep = end > start
    out = np.zeros(groups)
    if not keep.any():
        return out
    g, s, e = group[keep].astype(np.int64), start[keep], end[keep]
    low = s.min()
    span = float(e.max() - low) + 1.0  # groups laid end to end never overlap
    s, e = s - low + g * span, e - low + g * span
    order = np.argsort(s, kind="stable")
    g, s, e = g[order], s[order], e[order]
    frontier = np.concatenate(([-np.inf], np.maximum.accumulate(e)[:-1]))
    covered = np.clip(e - np.maximum(s, frontier), 0.0, None)
    return np.bincount(g, weights=covered, minlength=groups)


@dataclass
class Bounded:
    """Seconds per process of one set of records: as the counters sum them, and as possible.

    Compared as means over the ranks: a shared record's time is known only as a sum over the
    ranks, so splitting it evenly and bounding rank by rank would blame the wrong rank.
    """

    summed: dict[str, float]  # kind -> mean seconds per process
    bound: dict[str, float]  # kind -> mean upper bound per process (intervals, DXT, wall clock)
    life: float  # mean union of the records' whole lives (open to close), capped at the run
    outside: int  # records with timestamps outside the run

    def consistent(self, kind: str) -> float:
        return min(self.summed[kind], self.bound[kind])

    def total(self) -> float:
        return min(sum(self.consistent(k) for k in KINDS), self.life)


def _stamp(rec: ModuleRecords, prefix: str, what: str, edge: str) -> np.ndarray | None:
    name = f"{prefix}_F_{what}_{edge}_TIMESTAMP"
    return np.asarray(rec.get(name), np.float64) if rec.has(name) else None


def _windows(rec: ModuleRecords, prefix: str, runtime: float) -> tuple[dict, int]:
    """Per record and kind, the [start, end] its calls happened in (None when not recorded)."""
    edges = {w: (_stamp(rec, prefix, w, "START"), _stamp(rec, prefix, w, "END"))
             for w in ("OPEN", "READ", "WRITE", "CLOSE")}
    if any(a is None or b is None for a, b in edges.values()):
        return {}, 0
    ends = np.stack([b for _a, b in edges.values()])
    outside = int(((ends > runtime + CLOCK_ROUNDING_S) | (np.stack([a for a, _b in edges.values()]) < 0)).any(0).sum())
    starts = np.stack([np.where(a > 0, a, np.inf) for a, _b in edges.values()])
    life = (np.minimum(starts.min(0), ends.max(0)), ends.max(0))
    clip = lambda pair: (np.clip(pair[0], 0, runtime), np.clip(pair[1], 0, runtime))  # noqa: E731
    return {"read": clip(edges["READ"]), "write": clip(edges["WRITE"]), "meta": clip(life),
            "life": clip(life)}, outside


def bounded(ctx: FactContext, module: str, keep: np.ndarray | None = None) -> Bounded:
    """Per-rank read, write and metadata seconds of `module`'s records (`keep`: a subset)."""
    rec = ctx.profile.records[module]
    spec = SPECS[module]
    keep = np.ones(len(rec), bool) if keep is None else keep
    runtime = float(ctx.value("runtime_s") or 0.0) or np.inf
    n = max(nprocs(ctx), int(rec.ranks.max()) + 1 if len(rec) else 0)
    cols = Columns.of(rec, spec)
    own, shared = keep & (rec.ranks >= 0), keep & (rec.ranks == SHARED_RANK)
    seconds = {"read": cols.read_time, "write": cols.write_time, "meta": cols.meta_time}
    summed = {k: (float(v[own].sum()) + float(v[shared].sum())) / n for k, v in seconds.items()}
    windows, outside = _windows(rec, spec.prefix, runtime)
    bound = {k: runtime for k in KINDS}
    life = runtime
    if windows:
        for k in (*KINDS, "life"):
            start, end = windows[k]
            times = seconds[k] if k != "life" else cols.read_time + cols.write_time + cols.meta_time
            if ((times > 0) & keep & ~(end > start)).any():
                continue  # a record spent time here without a window: only the wall clock bounds it
            per_rank = np.minimum(_rank_union(rec.ranks, own, shared, start, end, n), runtime)
            if k == "life":
                life = float(per_rank.mean())
            else:
                bound[k] = float(per_rank.mean())
    if module == "POSIX":
        _dxt_bound(ctx, bound, n, keep_ids=rec.ids[keep])
    return Bounded(summed, bound, life, outside)


def rank_bound(ctx: FactContext, module: str, n: int) -> np.ndarray:
    """Per rank, the most seconds it could have spent in `module`'s calls: the union of its records'
    lives (open to close) and of the shared records' lives, never more than the run time."""
    rec = ctx.profile.records[module]
    runtime = float(ctx.value("runtime_s") or 0.0) or np.inf
    windows, _ = _windows(rec, SPECS[module].prefix, runtime)
    if not windows:
        return np.full(n, runtime)
    start, end = windows["life"]
    own, shared = rec.ranks >= 0, rec.ranks == SHARED_RANK
    return np.minimum(_rank_union(rec.ranks, own, shared, start, end, n), runtime)


def _rank_union(ranks, own, shared, start, end, n) -> np.ndarray:
    """Per rank, the union of its own records' windows plus (an upper bound) the shared records' union."""
    mine = union_length(ranks[own], start[own], end[own], n)
    everyone = union_length(np.zeros(int(shared.sum()), np.int64), start[shared], end[shared], 1)[0]
    return mine + everyone


def _dxt_bound(ctx: FactContext, bound: dict, n: int, keep_ids: np.ndarray) -> None:
    """Tighten the read and write bounds with the complete DXT trace's segment union."""
    try:
        trace = dxt(ctx, "DXT_POSIX")
    except Missing:
        return
    mine = np.isin(trace.record_id, keep_ids) & (trace.rank < n) & (trace.rank >= 0)
    for kind, op in (("read", DXT_READ), ("write", DXT_WRITE)):
        sel = mine & (trace.op == op)
        bound[kind] = min(bound[kind], float(union_length(trace.rank[sel], trace.start[sel], trace.end[sel], n).mean()))


@dataclass
class LayerTime:
    """I/O seconds per process of the layer the job used, and how far the counters were believed."""

    layer: str  # "POSIX + STDIO", "MPI-IO" ...
    read: float
    write: float
    meta: float
    total: float
    summed: float  # the same as the counters sum it
    outside: int


def _layer(ctx: FactContext, parts: list[tuple[str, np.ndarray | None]], name: str) -> LayerTime:
    runtime = float(ctx.value("runtime_s") or 0.0) or np.inf
    kinds = {k: 0.0 for k in KINDS}
    total = summed = 0.0
    outside = 0
    for module, keep in parts:
        b = bounded(ctx, module, keep)
        total += b.total()
        for k in KINDS:
            kinds[k] += b.consistent(k)
        summed += sum(b.summed.values())
        outside += b.outside
    kinds = {k: min(v, runtime) for k, v in kinds.items()}  # modules' calls may overlap each other too
    return LayerTime(name, kinds["read"], kinds["write"], kinds["meta"], min(total, runtime), summed, outside)


def base_time(ctx: FactContext) -> LayerTime:
    """Seconds per process at the base layer (POSIX + STDIO: what reaches the file system), bounded."""

    def build() -> LayerTime:
        base = summary(ctx).base_modules
        if not base:
            raise Missing("no POSIX, STDIO or MPI-IO records in the log")
        return _layer(ctx, [(m, None) for m in base], " + ".join(base))

    return ctx.memo("sanity.base", build)


def job_time(ctx: FactContext) -> LayerTime:
    """I/O seconds per process at the layer the job called: MPI-IO for the files it opened with
    MPI-IO (its time includes the POSIX time below and the collective communication), the base
    layer for the others."""

    def build() -> LayerTime:
        base = base_time(ctx)
        mpi = ctx.profile.records.get("MPI-IO")
        if mpi is None or len(mpi) == 0 or "MPI-IO" in summary(ctx).base_modules:
            return base
        parts: list[tuple[str, np.ndarray | None]] = [("MPI-IO", None)]
        for m in summary(ctx).base_modules:
            parts.append((m, ~np.isin(ctx.profile.records[m].ids, mpi.ids)))
        names = ["MPI-IO"] + [m for m, keep in parts[1:] if keep.any()]
        return _layer(ctx, parts, " + ".join(names))

    return ctx.memo("sanity.job", build)


@fact("io_layer", "text", "The I/O layer the job's I/O time is measured at: MPI-IO when the job used it "
      "(for the files it opened with MPI-IO), else POSIX + STDIO.")
def io_layer(ctx: FactContext) -> str:
    return job_time(ctx).layer


@fact("counter_notes", "list", "One line per counter the diagnosis did not believe as recorded "
      "(times no process could spend, timestamps outside the run, bytes without operations).")
def counter_notes(ctx: FactContext) -> list[str]:
    darshan_like(ctx)
    notes = []
    runtime = ctx.value("runtime_s")
    for t in {id(t): t for t in _layers(ctx)}.values():
        if t.summed > t.total + max(RESOLUTION_S, 0.01 * t.total):
            where = "the run time" if runtime and t.total >= 0.999 * runtime else "the union of the calls' intervals"
            notes.append(f"{t.layer} times summed over files and calls give {fmt_secs(t.summed)} per process"
                         + (f" in a {fmt_secs(runtime)} run" if runtime else "")
                         + f": calls overlapped (threads, asynchronous I/O); {fmt_secs(t.total)} is used"
                         f" ({where})")
        if t.outside:
            notes.append(f"{t.outside} {t.layer} record(s) have timestamps outside the run (clock skew): "
                         "clipped to the run")
    notes.extend(_bytes_without_ops(ctx))
    return notes


def _layers(ctx: FactContext) -> list[LayerTime]:
    out = []
    for build in (base_time, job_time):
        try:
            out.append(build(ctx))
        except Missing:
            pass
    return out


def _bytes_without_ops(ctx: FactContext) -> list[str]:
    """Byte counts that contradict operation counts: bytes that no read or write call moved."""
    notes = []
    for module in ("POSIX", "STDIO", "MPI-IO"):
        rec = ctx.profile.records.get(module)
        if rec is None or not len(rec):
            continue
        cols = Columns.of(rec, SPECS[module])
        for op, moved, calls in (("read", cols.bytes_read, cols.reads), ("written", cols.bytes_written, cols.writes)):
            orphan = int(((moved > 0) & (calls <= 0)).sum())
            if orphan:
                notes.append(f"{orphan} {module} record(s) have bytes {op} but no {op.replace('written', 'write')}"
                             " operation: their request sizes are unknown")
    return notes
