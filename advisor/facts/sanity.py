"""Counters checked before they are believed: I/O times no process could have spent.

Darshan's F_*_TIME counters sum the time inside every call. Calls that overlap (threads,
asynchronous I/O, a FIFO's open blocking while others run) make that sum exceed the wall
time a process had: 8 threads writing for 0.85 s sum to 6.6 s in a 0.9 s run. A time is
therefore bounded by what is consistent with the rest of the log:

- the wall clock: a process cannot spend more than the run time;
- the union of the records' lives: every call on a file happens between its first open
  and its last close (F_OPEN_START / F_CLOSE_END timestamps; -1 means unknown). The
  per-kind windows cannot bound the per-kind times: F_WRITE_TIME includes fsync, which
  moves no WRITE timestamp, and DXT traces only reads and writes.

Where the sum is bounded, read, write and metadata time are scaled alike. `counter_notes`
says in one line each where the counters were not believed, so the report never states
an impossible share.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from advisor.facts import FactContext, Missing, fact
from advisor.facts._darshan import darshan_like, nprocs, summary
from advisor.formatting import fmt_secs
from advisor.metrics import SPECS, Columns
from advisor.profile import SHARED_RANK, ModuleRecords

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
    life: float  # mean union of the records' lives (first open to last close), at most the run

    def total(self) -> float:
        return min(sum(self.summed.values()), self.life)

    def consistent(self, kind: str) -> float:
        """The kind's share of the bounded total (the overlap is shared alike)."""
        summed = sum(self.summed.values())
        return self.summed[kind] * (self.total() / summed) if summed > 0 else 0.0


def _stamp(rec: ModuleRecords, prefix: str, what: str, edge: str) -> np.ndarray | None:
    name = f"{prefix}_F_{what}_{edge}_TIMESTAMP"
    return np.asarray(rec.get(name), np.float64) if rec.has(name) else None


def lives(rec: ModuleRecords, prefix: str, runtime: float) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Per record, [first call start, last close end], and how many records have
    timestamps after the run; None when the log has no timestamps. A record never closed (or
    whose close is unknown) may have calls after its last recorded end: it lives to the end."""
    edges = [(_stamp(rec, prefix, w, "START"), _stamp(rec, prefix, w, "END"))
             for w in ("OPEN", "READ", "WRITE", "CLOSE")]
    if any(a is None or b is None for a, b in edges):
        return None
    valid = [(a >= 0) & (b > 0) for a, b in edges]
    start = np.min([np.where(v, a, np.inf) for v, (a, _b) in zip(valid, edges)], axis=0)
    closed = valid[-1]
    end = np.where(closed, edges[-1][1], np.where(np.isfinite(runtime), runtime, np.inf))
    outside = int((np.max([b for _a, b in edges], axis=0) > runtime + CLOCK_ROUNDING_S).sum())
    start = np.where(np.isfinite(start), start, 0.0)  # no call recorded: the whole run
    # not clipped at the run's end: the run time may be rounded (or measured apart) while the
    # lives are exact; their union is bounded by the run time afterwards
    return np.maximum(start, 0), np.maximum(end, 0), outside


def bounded(ctx: FactContext, module: str, keep: np.ndarray | None = None) -> Bounded:
    """Read, write and metadata seconds per process of `module`'s records (`keep`: a subset)."""
    rec = ctx.profile.records[module]
    spec = SPECS[module]
    keep = np.ones(len(rec), bool) if keep is None else keep
    runtime = float(ctx.value("runtime_s") or 0.0) or np.inf
    n = max(nprocs(ctx), int(rec.ranks.max()) + 1 if len(rec) else 0)
    cols = Columns.of(rec, spec)
    own, shared = keep & (rec.ranks >= 0), keep & (rec.ranks == SHARED_RANK)
    seconds = {"read": cols.read_time, "write": cols.write_time, "meta": cols.meta_time}
    summed = {k: (float(v[own].sum()) + float(v[shared].sum())) / n for k, v in seconds.items()}
    span = lives(rec, spec.prefix, runtime)
    if span is None or not np.isfinite(runtime):
        return Bounded(summed, runtime)
    start, end, _ = span
    per_rank = np.minimum(_rank_union(rec.ranks, own, shared, start, end, n), runtime)
    return Bounded(summed, float(per_rank.mean()))


def rank_bound(ctx: FactContext, module: str, n: int) -> np.ndarray:
    """Per rank, the most seconds it could have spent in `module`'s calls: the union of its records'
    lives and of the shared records' lives, never more than the run time."""
    rec = ctx.profile.records[module]
    runtime = float(ctx.value("runtime_s") or 0.0) or np.inf
    span = lives(rec, SPECS[module].prefix, runtime)
    if span is None:
        return np.full(n, runtime)
    start, end, _ = span
    own, shared = rec.ranks >= 0, rec.ranks == SHARED_RANK
    return np.minimum(_rank_union(rec.ranks, own, shared, start, end, n), runtime)


def _rank_union(ranks, own, shared, start, end, n) -> np.ndarray:
    """Per rank, the union of its own records' lives plus (an upper bound) the shared records' union."""
    mine = union_length(ranks[own], start[own], end[own], n)
    everyone = union_length(np.zeros(int(shared.sum()), np.int64), start[shared], end[shared], 1)[0]
    return mine + everyone


@dataclass
class LayerTime:
    """I/O seconds per process of the layer the job used, and how far the counters were believed."""

    layer: str  # "POSIX + STDIO", "MPI-IO" ...
    read: float
    write: float
    meta: float
    total: float
    summed: float  # the same as the counters sum it


def _layer(ctx: FactContext, parts: list[tuple[str, np.ndarray | None]], name: str) -> LayerTime:
    runtime = float(ctx.value("runtime_s") or 0.0) or np.inf
    return combine(name, [bounded(ctx, module, keep) for module, keep in parts], runtime)


def combine(name: str, parts: list[Bounded], runtime: float) -> LayerTime:
    """The seconds per process of several modules' calls together (each bounded on its own), never
    more than the run time (`runtime`: inf when unknown). A kind outside KINDS (PnetCDF's wait)
    counts in the total only."""
    kinds = {k: 0.0 for k in KINDS}
    total = summed = 0.0
    for b in parts:
        total += b.total()
        for k in KINDS:
            kinds[k] += b.consistent(k) if k in b.summed else 0.0
        summed += sum(b.summed.values())
    kinds = {k: min(v, runtime) for k, v in kinds.items()}  # modules' calls may overlap each other too
    return LayerTime(name, kinds["read"], kinds["write"], kinds["meta"], min(total, runtime), summed)


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


@fact("counter_notes", "text", "One line per counter the diagnosis did not believe as recorded "
      "(times no process could spend, timestamps outside the run, bytes without operations).",
      label="counters not believed")
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
    notes.extend(_outside_the_run(ctx))
    notes.extend(_negative_times(ctx))
    notes.extend(_bytes_without_ops(ctx))
    return notes


def _layers(ctx: FactContext) -> list[LayerTime]:
    out = []
    for build in (base_time, job_time):
        with contextlib.suppress(Missing):
            out.append(build(ctx))
    return out


def _outside_the_run(ctx: FactContext) -> list[str]:
    runtime = ctx.value("runtime_s")
    notes = []
    for module, rec in ctx.profile.records.items():
        span = lives(rec, SPECS[module].prefix, runtime) if module in SPECS and runtime else None
        if span is not None and span[2]:
            notes.append(f"{span[2]} {module} record(s) have timestamps more than"
                         f" {fmt_secs(CLOCK_ROUNDING_S)} after the end of the run ({fmt_secs(runtime)}; clock skew?)")
    return notes


def _negative_times(ctx: FactContext) -> list[str]:
    """Time counters below zero other than Darshan's -1 (not monitored): no call takes negative time, so
    they count as 0, and the report says so rather than dropping them unseen (mpi-io-test 3.1.5 on BG/Q:
    POSIX_F_META_TIME -221.5 s on a 2 s run)."""
    notes = []
    for module, rec in ctx.profile.records.items():
        spec = SPECS.get(module)
        if spec is None or not len(rec):
            continue
        for kind in ("READ", "WRITE", "META"):
            name = f"{spec.prefix}_F_{kind}_TIME"
            if not rec.has(name):
                continue
            col = rec.get(name).astype(np.float64)
            bad = (col < 0) & (col != -1)
            if bad.any():
                what = {"META": "metadata"}.get(kind, kind.lower())
                notes.append(f"{int(bad.sum())} {module} record(s) hold a negative {what} time ({name}"
                             f" -{fmt_secs(-float(col[bad].sum()))} in all): no call takes negative time; counted as 0")
    return notes


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
