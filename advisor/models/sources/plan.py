"""Parts of a replay plan: one per phase that moves data (the executor times each phase).

Calibration patterns and a job's pattern with a fix applied are both replay plans,
so the model sees exactly what the replayer runs.
"""

from __future__ import annotations

import math

import numpy as np

from advisor.models.features import ALIGNMENT, Part
from replay.edit import data_mask, ranks_per_file
from replay.plan import (CREATE, FSYNC, MPIIO, MPIIO_COLL, OPEN, READ, STDIO, WRITE, Plan)


def plan_parts(plan: Plan, fstype: str = "") -> dict[int, Part]:
    """Phase number -> its part, for every phase that moves data."""
    ops = {k: np.asarray(v) for k, v in plan.ops.items()}
    data = data_mask(ops)
    shared_file = ranks_per_file(ops, plan.nranks, plan.nfiles) > 1
    first_write = _first_write_phase(ops, data, plan.nfiles)
    consecutive, forward = _consecutive(ops, data)
    out: dict[int, Part] = {}
    for p in np.unique(ops["phase"][data]).tolist():
        sel = ops["phase"] == p
        part = _part(plan, ops, sel, data & sel, shared_file, first_write, (consecutive, forward), fstype)
        part.label = f"phase {p}"
        out[int(p)] = part
    return out


def _part(plan: Plan, ops: dict, sel: np.ndarray, d: np.ndarray, shared_file: np.ndarray,
          first_write: np.ndarray, streams: tuple[np.ndarray, np.ndarray], fstype: str) -> Part:
    length, api, op, fid = ops["length"], ops["api"], ops["op"], ops["file"]
    consecutive, forward = streams
    rd, wr = d & (op == READ), d & (op == WRITE)
    calls = _calls(ops, d)
    mpi = d & np.isin(api, (MPIIO, MPIIO_COLL))
    files = np.unique(fid[d])
    count = plan.files["stripe_count"][files]
    layout = count > 0
    phase = int(ops["phase"][d][0])
    return Part(
        nprocs=plan.nranks,
        bytes_read=float(length[rd].sum()), bytes_written=float(length[wr].sum()),
        calls=float(calls.sum()), write_calls=float(calls[wr].sum()),
        pieces=float(d.sum()), consecutive=float(consecutive[d].sum()), forward=float(forward[d].sum()),
        unaligned=float((ops["offset"][d] % ALIGNMENT != 0).sum()),
        shared_bytes=float(length[d & shared_file[fid]].sum()),
        opens=float((sel & np.isin(op, (OPEN, CREATE))).sum()),
        fsyncs=float((sel & (op == FSYNC)).sum()),
        stdio_bytes=float(length[d & (api == STDIO)].sum()),
        mpiio_bytes=float(length[mpi].sum()), mpiio_calls=float(calls[mpi].sum()),
        collective_calls=float(calls[d & (api == MPIIO_COLL)].sum()),
        reread_bytes=float(length[rd & (first_write[fid] < phase)].sum()),
        io_ranks=_io_ranks(plan, ops, d),
        stripe_count=float(count[layout].max()) if layout.any() else math.nan,
        stripe_size=float(plan.files["stripe_size"][files][layout].max()) if layout.any() else math.nan,
        fstype=fstype,
    )


def _io_ranks(plan: Plan, ops: dict, d: np.ndarray) -> float:
    """Ranks that send requests to the file system: those issuing independent I/O, and for
    collective calls the aggregators (the ``cb_nodes`` hint; ROMIO's default on one node is one)."""
    coll = d & (ops["api"] == MPIIO_COLL)
    independent = len(np.unique(ops["rank"][d & ~coll]))
    aggregators = min(int(plan.hints.get("cb_nodes", 1)), plan.nranks) if coll.any() else 0
    return float(max(independent, aggregators))


def _calls(ops: dict, d: np.ndarray) -> np.ndarray:
    """1.0 on the row that issues a call: every unbatched data op, the first op of each batch."""
    batch, rank = ops["batch"], ops["rank"]
    first = np.ones(len(batch), bool)
    if len(batch) > 1:
        same = (batch[1:] >= 0) & (batch[1:] == batch[:-1]) & (rank[1:] == rank[:-1])
        first[1:] = ~same
    return (first & d).astype(np.float64)


def _first_write_phase(ops: dict, d: np.ndarray, nfiles: int) -> np.ndarray:
    w = d & (ops["op"] == WRITE)
    first = np.full(nfiles, np.iinfo(np.int32).max, np.int64)
    np.minimum.at(first, ops["file"][w], ops["phase"][w])
    return first


def _consecutive(ops: dict, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Data rows that start where the same rank's previous data row on that file ended, and
    those that start at or after that end (forward, over a hole or not)."""
    idx = np.flatnonzero(d)
    out, fwd = np.zeros(len(d), bool), np.zeros(len(d), bool)
    if len(idx) < 2:
        return out, fwd
    rank, fid, off, ln = (ops[k][idx] for k in ("rank", "file", "offset", "length"))
    order = np.lexsort((np.arange(len(idx)), fid, rank))  # execution order within (rank, file)
    r, f, o, n = rank[order], fid[order], off[order], ln[order]
    same = np.concatenate([[False], (r[1:] == r[:-1]) & (f[1:] == f[:-1])])
    end = np.concatenate([[0], o[:-1] + n[:-1]])
    out[idx[order]] = same & (o == end)
    fwd[idx[order]] = same & (o >= end)
    return out, fwd
