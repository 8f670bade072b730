"""MPI-IO per-call overhead: collective calls too small for their synchronisation and exchange.

Every collective MPI-IO call synchronises the ranks of the file's communicator and exchanges
their offsets (and, with collective buffering, their data) before any byte reaches the file
system. On calls of a few KiB that fixed part is the whole cost: the MPI-IO layer's time is
far above the POSIX time below it on the same files. Fewer, larger calls pay it fewer times.

The time above POSIX is the layer account's (advisor.facts.layer_above.time_above, the one place it is
computed): per file, the MPI-IO read + write time per process (bounded by the file's records'
lives) less what the ranks waited for the POSIX layer below: the larger of its mean per process
and its slowest rank, since with collective buffering a few aggregators do the POSIX I/O and
everyone waits for them (the account itself subtracts the mean: it asks where the mean process's
time went). Only the collective calls' share of a file's excess is counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.facts import FactContext, Missing, fact, param
from advisor.facts._darshan import col, data_mask, nprocs, records
from advisor.facts.layer_above import time_above
from advisor.profile import SHARED_RANK

MiB = 1 << 20
CALL_BYTES = param("mpiio_call_bytes", 4 * MiB, "bytes per rank a larger MPI-IO call would move "
                   "(the size the per-call overhead cost and the mpiio_calls fix use)", kind="bytes")
KINDS = (("READ", "BYTES_READ"), ("WRITE", "BYTES_WRITTEN"))


@dataclass(frozen=True)
class CallCost:
    """The job's collective MPI-IO data calls, per process (means over the ranks)."""

    calls: float  # collective read and write calls
    bytes: float  # bytes they moved
    above_s: float  # seconds they spent above the POSIX time below
    calls_after: float  # calls of up to mpiio_call_bytes moving the same bytes
    largest_rank_bytes: float  # the most one rank moved collectively on one file in one direction
    files: tuple[str, ...]  # files with collective calls, most time above POSIX first

    def per_call(self, value: float) -> float:
        return value / self.calls if self.calls else 0.0


def _above_posix(ctx: FactContext, ids: np.ndarray) -> np.ndarray:
    """Per MPI-IO file of `ids`, its read + write seconds per process above what the ranks waited
    for POSIX below (layers.time_above, waited: with collective buffering every rank waits for the
    aggregators, so the slowest rank's POSIX time is data movement, not per-call overhead). A file
    POSIX never saw has no time above it to measure: 0."""
    above = time_above(ctx, "MPI-IO", ("read", "write"), waited=True)
    if not len(above.keys):
        return np.zeros(len(ids))
    at = np.minimum(np.searchsorted(above.keys, ids), len(above.keys) - 1)
    return np.where(above.keys[at] == ids, above.per_file[at], 0.0)


def _cost(ctx: FactContext) -> CallCost:
    rec = records(ctx, "MPI-IO")
    n = nprocs(ctx)
    keep = data_mask(ctx, rec)
    ranks = np.where(rec.ranks == SHARED_RANK, n, 1).astype(np.float64)
    target = float(ctx.param(CALL_BYTES))
    coll = np.zeros(len(rec))
    every = np.zeros(len(rec))
    moved = np.zeros(len(rec))
    after = np.zeros(len(rec))
    largest = 0.0
    for kind, nbytes in KINDS:
        c = col(rec, f"COLL_{kind}S") + col(rec, f"SPLIT_{kind}S")
        e = c + col(rec, f"INDEP_{kind}S") + col(rec, f"NB_{kind}S")
        b = col(rec, nbytes) * c / np.maximum(e, 1)  # the collective calls' share of the bytes
        coll, every, moved = coll + c, every + e, moved + b
        after += np.where(c > 0, ranks * np.maximum(1, np.ceil(b / ranks / target)), 0)
        if (keep & (c > 0)).any():
            largest = max(largest, float((b / ranks)[keep & (c > 0)].max()))
    sel = keep & (coll > 0)
    if not sel.any():
        raise Missing("no collective MPI-IO data calls in the log")
    ids, inv = np.unique(rec.ids[sel], return_inverse=True)
    share = np.bincount(inv, weights=coll[sel], minlength=len(ids)) / \
        np.maximum(np.bincount(inv, weights=every[sel], minlength=len(ids)), 1)
    above = _above_posix(ctx, ids) * share
    order = np.argsort(-above, kind="stable")
    return CallCost(float(coll[sel].sum()) / n, float(moved[sel].sum()) / n, float(above.sum()),
                    float(after[sel].sum()) / n, largest,
                    tuple(ctx.profile.name_of(int(ids[i])) for i in order))


def call_cost(ctx: FactContext) -> CallCost:
    return ctx.memo("mpiio_calls.cost", lambda: _cost(ctx))


@fact("mpiio_coll_calls_per_rank", "ops", "Collective MPI-IO read and write calls per process.",
      label="collective MPI-IO calls per process")
def mpiio_coll_calls_per_rank(ctx: FactContext) -> float:
    return round(call_cost(ctx).calls, 1)


@fact("mpiio_coll_call_size", "bytes", "Mean bytes one rank moves in one collective MPI-IO call.",
      label="mean bytes per collective MPI-IO call")
def mpiio_coll_call_size(ctx: FactContext) -> float:
    c = call_cost(ctx)
    return c.per_call(c.bytes)


@fact("mpiio_coll_above_posix_s", "seconds", "Seconds per process the collective MPI-IO calls spent beyond "
      "the POSIX time the ranks waited for below them on the same files (layers.time_above: the slowest "
      "rank's, since only the aggregators touch the file system and everyone waits for them; the layer "
      "account, asking where the mean process's time went, subtracts the mean): synchronisation, offset "
      "and data exchange.",
      label="collective MPI-IO time beyond the POSIX time waited for, per process")
def mpiio_coll_above_posix_s(ctx: FactContext) -> float:
    return call_cost(ctx).above_s


@fact("mpiio_coll_call_overhead_s", "seconds", "Seconds above POSIX per collective MPI-IO call "
      "(the time above POSIX over the calls).", label="time above POSIX per collective call")
def mpiio_coll_call_overhead_s(ctx: FactContext) -> float:
    c = call_cost(ctx)
    return c.per_call(c.above_s)


@fact("mpiio_coll_calls_after", "ops", "Collective MPI-IO calls per process if each rank moved up to "
      "mpiio_call_bytes per call (at least one per rank, file and direction).",
      label="collective calls per process with larger calls")
def mpiio_coll_calls_after(ctx: FactContext) -> float:
    return round(call_cost(ctx).calls_after, 1)


@fact("mpiio_call_overhead_cost_s", "seconds", "Seconds per process larger collective MPI-IO calls would "
      "save: the time above POSIX per call times the calls they remove.",
      label="time larger MPI-IO calls would save per process")
def mpiio_call_overhead_cost_s(ctx: FactContext) -> float:
    c = call_cost(ctx)
    return c.per_call(c.above_s) * max(c.calls - c.calls_after, 0.0)


@fact("mpiio_suggested_call_bytes", "bytes", "Bytes per rank and call to move instead: mpiio_call_bytes, or "
      "less when no rank moves that much on one file in one direction.", label="bytes per call to move")
def mpiio_suggested_call_bytes(ctx: FactContext) -> int:
    c = call_cost(ctx)
    target = int(ctx.param(CALL_BYTES))
    return min(target, max(4096, int(-(-c.largest_rank_bytes // 4096) * 4096)))


@fact("mpiio_call_overhead_files", "path", "Files with collective MPI-IO calls, most time above POSIX first.",
      label="files with collective MPI-IO calls")
def mpiio_call_overhead_files(ctx: FactContext) -> list[str]:
    return list(call_cost(ctx).files)
