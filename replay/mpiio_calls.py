"""Fewer, larger MPI-IO calls: the fix for MPI-IO's per-call overhead.

Each rank's consecutive MPI-IO data calls on one file (same phase and direction) are merged
into calls of up to `call_bytes`. Collective calls stay collective: pieces that follow each
other in the file become one ``MPI_File_write_at_all`` of their summed length, scattered
pieces one ``MPI_File_write_all`` through a file view (what ``MPI_File_set_view`` with the
rank's pattern does). Independent calls merge only where their pieces are contiguous (one
``MPI_File_write_at``). Ranks that end with fewer collective calls than others get zero-length
ones, so every rank still makes the same calls.
"""

from __future__ import annotations

import numpy as np

from replay.collective import SEC_READ, SEC_WRITE, _pads, _union, phase_end_anchor
from replay.edit import add_transform, collapse, data_mask, merge, stream_runs, take
from replay.plan import FLAG_PAD, MPIIO, MPIIO_COLL, OP_COLUMNS, READ, WRITE, Plan

MiB = 1 << 20


def mpiio_calls(plan: Plan, call_bytes: int = 4 * MiB) -> Plan:
    """Merge each rank's consecutive MPI-IO calls on a file into calls of up to `call_bytes`."""
    if call_bytes <= 0:
        raise ValueError("mpiio_calls: call_bytes must be positive")
    ops = plan.ops
    data = data_mask(ops)  # a collective call may already be several pieces (a batch): merged too
    indep, coll = data & (ops["api"] == MPIIO) & (ops["batch"] < 0), data & (ops["api"] == MPIIO_COLL)
    if not (indep.any() or coll.any()):
        raise ValueError("mpiio_calls: the plan has no MPI-IO data calls to merge")
    run = _calls(ops, indep, coll, int(call_bytes))
    merged = _merged(ops, run, coll)
    out = _repad(merged, plan.nranks)
    meta = add_transform(plan.meta, {"transform": "mpiio_calls", "call_bytes": int(call_bytes)})
    return plan.replace(ops=out, meta=meta)


def _calls(ops: dict[str, np.ndarray], indep: np.ndarray, coll: np.ndarray, cap: int) -> np.ndarray:
    """Call id of each row: independent rows merge while contiguous, collective rows while
    consecutive (a file view takes scattered pieces), each call up to `cap` bytes."""
    by_indep = stream_runs(ops, indep, contiguous=True, cap=cap)
    by_coll = stream_runs(ops, coll, contiguous=False, cap=cap)
    n = len(ops["op"])
    new = np.ones(n, bool)
    new[1:] = np.where(indep[1:], by_indep[1:] != by_indep[:-1],
                       np.where(coll[1:], by_coll[1:] != by_coll[:-1], True))
    return np.cumsum(new) - 1


def _merged(ops: dict[str, np.ndarray], run: np.ndarray, coll: np.ndarray) -> dict[str, np.ndarray]:
    """One row per contiguous call; the pieces of a scattered collective call in offset order
    (overlaps joined: a file view names each byte once), sharing a new batch id."""
    n = len(run)
    first = np.flatnonzero(np.concatenate([[True], run[1:] != run[:-1]]))
    follows = np.concatenate([[True], ops["offset"][1:] == ops["offset"][:-1] + ops["length"][:-1]])
    breaks = np.bincount(run, weights=~follows & (np.arange(n) != first[run]), minlength=len(first))
    view = (breaks > 0) & coll[first]  # per call: scattered collective pieces, written through a view
    scattered = view[run]
    whole = collapse(take(ops, ~scattered), run[~scattered]) if not scattered.all() else take(ops, ~scattered)
    whole["batch"] = np.where(coll[first][~view], -1, whole["batch"])  # one piece: a plain collective call
    whole_pos = first[~view].astype(np.float64)
    rows = take(ops, scattered)
    rid = run[scattered]
    order = np.lexsort((rows["offset"], rid))
    rows, rid = take(rows, order), rid[order]
    pieces = _union({**rows, "run": rid}, rid)
    pid = pieces.pop("run")
    base = int(ops["batch"].max()) + 1 if n else 0
    pieces["batch"] = (base + pid).astype(np.int64)
    pos = np.concatenate([whole_pos, first[pid].astype(np.float64)])
    within = np.concatenate([np.zeros(len(whole_pos)), np.arange(len(pid), dtype=np.float64)])
    both = {k: np.concatenate([whole[k], pieces[k]]) for k in OP_COLUMNS}
    return take(both, np.lexsort((within, pos)))


def _repad(ops: dict[str, np.ndarray], nranks: int) -> dict[str, np.ndarray]:
    """Drop the old zero-length collective data calls, then give each rank as many collective
    calls per (phase, file, direction) as the busiest, right after its own last one."""
    data = (ops["api"] == MPIIO_COLL) & np.isin(ops["op"], (READ, WRITE))
    old_pads = data & ((ops["flags"] & FLAG_PAD) != 0)
    ops = take(ops, ~old_pads)
    data = data[~old_pads]
    rows = take(ops, data)
    sec = np.where(rows["op"] == WRITE, SEC_WRITE, SEC_READ)
    call = np.where(rows["batch"] >= 0, rows["batch"], int(rows["batch"].max(initial=0)) + 1 + np.arange(len(sec)))
    order = np.lexsort((call, rows["rank"]))
    b = {**take(rows, order), "section": sec[order], "batch": call[order]}
    pads = _pads(b, nranks)
    if not len(pads["op"]):
        return ops
    pads["batch"] = np.full(len(pads["op"]), -1, np.int64)
    anchors = _after_last(ops, data, pads)
    sub = pads.pop("sub")
    return merge(ops, pads, anchors, sub)


def _after_last(ops: dict[str, np.ndarray], data: np.ndarray, pads: dict[str, np.ndarray]) -> np.ndarray:
    """Position just after the rank's last collective call of the pad's (phase, file, direction),
    else at the end of the rank's phase."""
    def key(rank, phase, file, op):
        return ((rank.astype(np.int64) * (1 << 20) + phase) * (1 << 24) + file) * 2 + (op == WRITE)

    end = phase_end_anchor(ops, pads["rank"], pads["phase"])
    idx = np.flatnonzero(data)
    if not len(idx):
        return end
    k = key(ops["rank"][idx], ops["phase"][idx], ops["file"][idx], ops["op"][idx])
    uk, last = np.unique(k[::-1], return_index=True)  # reversed: the first hit is the last row
    last_row = idx[::-1][last]
    want = key(pads["rank"], pads["phase"], pads["file"], pads["op"])
    at = np.minimum(np.searchsorted(uk, want), len(uk) - 1)
    return np.where(uk[at] == want, last_row[at] + 0.5, end)


__all__ = ["mpiio_calls"]
