"""Transforms that change who issues I/O: collective MPI-IO and aggregation (subsetting).

Collective calls must match on every rank of the file's communicator, so these
transforms build the calls of every rank for every (phase, file) together and pad
ranks that have less to do with zero-length calls (flagged, never counted as I/O).
"""

from __future__ import annotations

import numpy as np

from replay.edit import add_transform, data_mask, merge, phase_end_anchor, ranks_per_file, take
from replay.plan import (CLOSE, COMM_SELF, COMM_WORLD, CREATE, FLAG_PAD, FSYNC, MPIIO, MPIIO_COLL,
                         OPEN, POSIX, READ, RECV, SEND, STDIO, WRITE, Plan, op_columns)

MiB = 1 << 20
BATCH_BYTES = 64 * MiB  # one collective call per rank carries at most this much
AGGREGATE_BYTES = 16 * MiB  # an aggregator's writes are merged up to this size

# Order of the rows a transform appends for one (rank, phase, file).
SEC_OPEN, SEC_WRITE, SEC_READ, SEC_RECV, SEC_MERGED, SEC_FSYNC, SEC_CLOSE = range(7)  # 3 bits


def subkey(file: np.ndarray, section: np.ndarray | int, k: np.ndarray | int) -> np.ndarray:
    """Where an appended row sorts within its (rank, phase): by file, then section (SEC_*), then k."""
    return (np.asarray(file, np.int64) << 35) | (np.asarray(section, np.int64) << 32) | np.asarray(k, np.int64)


def collective(plan: Plan, cb_nodes: int | None = None, batch_bytes: int = BATCH_BYTES) -> Plan:
    """Issue the data of every shared file as collective MPI-IO (two-phase I/O with
    `cb_nodes` aggregators): per rank and phase, one ``MPI_File_write_all``/``read_all``
    per `batch_bytes` through a file view, as an application describing its pattern with
    a derived datatype would."""
    ops, nr = plan.ops, plan.nranks
    shared = ranks_per_file(ops, nr, plan.nfiles) > 1
    data = data_mask(ops) & shared[ops["file"]]
    # files already written through MPI-IO are the ones to switch; plain POSIX shared files
    # only when the job has no MPI-IO at all
    mpi = data & np.isin(ops["api"], (MPIIO, MPIIO_COLL))
    conv_files = np.unique(ops["file"][mpi if mpi.any() else data & (ops["api"] == POSIX)])
    if conv_files.size == 0:
        raise ValueError("collective: the plan has no shared file with data")
    conv = np.isin(ops["file"], conv_files)
    synced = np.unique(ops["phase"][conv & (ops["op"] == FSYNC)].astype(np.int64) * (1 << 31)
                       + ops["file"][conv & (ops["op"] == FSYNC)])
    batches = _batches(take(ops, conv & data), int(batch_bytes))
    used = np.unique(np.stack([batches["phase"], batches["file"]]), axis=1)  # (phase, file) pairs
    frame = _frame(nr, used, synced)
    pads = _pads(batches, nr)
    new = {k: np.concatenate([frame[k], batches[k], pads[k]]) for k in ("rank", "op", "file", "offset",
                                                                       "length", "api", "phase",
                                                                       "batch", "flags")}
    sub = np.concatenate([frame["sub"], batches["sub"], pads["sub"]])
    anchors = phase_end_anchor(ops, new["rank"], new["phase"])
    keep = ~conv | ~np.isin(ops["op"], (OPEN, CREATE, CLOSE, FSYNC, READ, WRITE))
    out = merge(ops, new, anchors, sub, keep=keep)
    files = {k: v.copy() for k, v in plan.files.items()}
    files["comm"][conv_files] = COMM_WORLD
    hints = dict(plan.hints, romio_cb_write="enable", romio_cb_read="enable")
    if cb_nodes:
        hints["cb_nodes"] = str(int(cb_nodes))
    meta = add_transform(plan.meta, {"transform": "collective", "cb_nodes": cb_nodes,
                                     "batch_bytes": int(batch_bytes)})
    return plan.replace(ops=out, files=files, hints=hints, meta=meta)


def _batches(rows: dict[str, np.ndarray], batch_bytes: int) -> dict[str, np.ndarray]:
    """Each rank's pieces per (phase, file, op) in offset order, overlaps merged (a file view
    cannot name a byte twice), cut into collective calls of at most `batch_bytes`."""
    section = np.where(rows["op"] == WRITE, SEC_WRITE, SEC_READ)
    order = np.lexsort((rows["offset"], section, rows["file"], rows["phase"], rows["rank"]))
    r = _union(take(rows, order), section[order])
    sec = np.where(r["op"] == WRITE, SEC_WRITE, SEC_READ)
    n = len(r["op"])
    grp = np.concatenate([[True], (r["rank"][1:] != r["rank"][:-1]) | (r["phase"][1:] != r["phase"][:-1])
                          | (r["file"][1:] != r["file"][:-1]) | (sec[1:] != sec[:-1])]) if n else \
        np.zeros(0, bool)
    gstart = np.flatnonzero(grp)
    gid = np.cumsum(grp) - 1
    csum = np.cumsum(r["length"]) - r["length"]
    within = csum - csum[gstart][gid]
    chunk = within // batch_bytes
    brk = grp | np.concatenate([[False], chunk[1:] != chunk[:-1]])
    batch = np.cumsum(brk) - 1
    k = batch - batch[gstart][gid]  # call number within (rank, phase, file, op)
    return {"rank": r["rank"], "op": r["op"], "file": r["file"], "offset": r["offset"],
            "length": r["length"], "api": np.full(n, MPIIO_COLL, np.int8), "phase": r["phase"],
            "batch": batch, "flags": np.zeros(n, np.int8), "sub": subkey(r["file"], sec, k),
            "k": k, "section": sec}


def _union(r: dict[str, np.ndarray], sec: np.ndarray) -> dict[str, np.ndarray]:
    """Sorted pieces of each (rank, phase, file, op) with overlapping ones merged into one."""
    n = len(r["op"])
    if n == 0:
        return r
    same = (r["rank"][1:] == r["rank"][:-1]) & (r["phase"][1:] == r["phase"][:-1]) & \
        (r["file"][1:] == r["file"][:-1]) & (sec[1:] == sec[:-1])
    grp = np.concatenate([[True], ~same])
    end = r["offset"] + r["length"]
    gid = np.cumsum(grp) - 1
    # running maximum of piece ends within each group: a piece overlaps when it starts before it
    shift = gid.astype(np.int64) * (int(end.max()) + 1)
    run_end = np.maximum.accumulate(end + shift) - shift
    overlap = np.concatenate([[False], (r["offset"][1:] < run_end[:-1]) & same])
    if not overlap.any():
        return r
    first = np.flatnonzero(~overlap)
    out = take(r, first)
    last_end = np.maximum.reduceat(end, first)
    out["length"] = last_end - out["offset"]
    return out


def _pads(b: dict[str, np.ndarray], nranks: int) -> dict[str, np.ndarray]:
    """Zero-length calls so every rank makes as many calls per (phase, file, op) as the busiest."""
    first = np.concatenate([[True], b["batch"][1:] != b["batch"][:-1]]) if len(b["batch"]) else \
        np.zeros(0, bool)
    key = np.stack([b["phase"][first], b["file"][first], b["section"][first]]).astype(np.int64)
    ukey, inv = np.unique(key, axis=1, return_inverse=True)
    inv = inv.reshape(-1)
    calls = np.zeros((ukey.shape[1], nranks), np.int64)
    np.add.at(calls, (inv, b["rank"][first]), 1)
    need = calls.max(axis=1, keepdims=True) - calls
    gi, ranks = np.nonzero(need)
    counts = need[gi, ranks]
    gi, ranks = np.repeat(gi, counts), np.repeat(ranks, counts)
    within = np.arange(len(gi)) - np.repeat(np.cumsum(counts) - counts, counts)
    k = np.repeat(calls[np.nonzero(need)], counts) + within
    m = len(gi)
    phase, file, sec = ukey[0, gi], ukey[1, gi], ukey[2, gi]
    base = int(b["batch"].max()) + 1 if len(b["batch"]) else 0
    return {"rank": ranks, "op": np.where(sec == SEC_WRITE, WRITE, READ).astype(np.int8), "file": file,
            "offset": np.zeros(m, np.int64), "length": np.zeros(m, np.int64),
            "api": np.full(m, MPIIO_COLL, np.int8), "phase": phase, "batch": base + np.arange(m),
            "flags": np.full(m, FLAG_PAD, np.int8), "sub": subkey(file, sec, k)}


def _frame(nranks: int, used: np.ndarray, synced: np.ndarray) -> dict[str, np.ndarray]:
    """Collective open, (fsync) and close of every used (phase, file) on every rank."""
    phases = np.repeat(used[0], nranks)
    files = np.repeat(used[1], nranks)
    ranks = np.tile(np.arange(nranks), used.shape[1])
    parts = [(OPEN, SEC_OPEN, np.ones(len(files), bool)),
             (FSYNC, SEC_FSYNC, np.isin(phases.astype(np.int64) * (1 << 31) + files, synced)),
             (CLOSE, SEC_CLOSE, np.ones(len(files), bool))]
    cols = {k: [] for k in ("rank", "op", "file", "phase", "sub")}
    for code, sec, sel in parts:
        cols["rank"].append(ranks[sel])
        cols["op"].append(np.full(int(sel.sum()), code, np.int8))
        cols["file"].append(files[sel])
        cols["phase"].append(phases[sel])
        cols["sub"].append(subkey(files[sel], sec, 0))
    out = {k: np.concatenate(v) for k, v in cols.items()}
    m = len(out["op"])
    out.update(offset=np.zeros(m, np.int64), length=np.zeros(m, np.int64),
               api=np.full(m, MPIIO_COLL, np.int8), batch=np.full(m, -1, np.int64),
               flags=np.zeros(m, np.int8))
    return out


def frame_world(ops: dict[str, np.ndarray], nranks: int, files: np.ndarray,
                synced: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Make the collective MPI-IO calls on `files` runnable: every rank opens each file
    collectively at the start of every phase in which any rank uses it and closes it at the
    end (after a collective sync where (phase, file) is in `synced`), and ranks with fewer
    collective data calls get zero-length ones. Existing open/close/sync rows of these
    files are replaced."""
    on = np.isin(ops["file"], files)
    data = on & data_mask(ops)
    if not data.any():
        return ops
    used = np.unique(np.stack([ops["phase"][data], ops["file"][data]]), axis=1)
    frame = _frame(nranks, used, synced if synced is not None else np.zeros(0, np.int64))
    coll = data & (ops["api"] == MPIIO_COLL) & (ops["batch"] < 0)
    rows = take(ops, coll)
    rows["section"] = np.where(rows["op"] == WRITE, SEC_WRITE, SEC_READ)
    pads = _pads({**rows, "batch": np.arange(len(rows["op"]))}, nranks)
    pads["batch"] = np.full(len(pads["op"]), -1, np.int64)
    new = {k: np.concatenate([frame[k], pads[k]]) for k in ("rank", "op", "file", "offset", "length",
                                                          "api", "phase", "batch", "flags")}
    sub = np.concatenate([frame["sub"], pads["sub"]])
    opening = new["op"] == OPEN
    anchors = np.where(opening, phase_start_anchor(ops, new["rank"], new["phase"]),
                       phase_end_anchor(ops, new["rank"], new["phase"]))
    keep = ~(on & np.isin(ops["op"], (OPEN, CREATE, CLOSE, FSYNC)) & (ops["api"] == MPIIO_COLL))
    return merge(ops, new, anchors, sub, keep=keep)


def phase_start_anchor(ops: dict[str, np.ndarray], ranks: np.ndarray, phases: np.ndarray) -> np.ndarray:
    """Position just before rank r's first row of phase >= p."""
    key = ops["rank"].astype(np.int64) * (1 << 31) + ops["phase"]
    want = ranks.astype(np.int64) * (1 << 31) + phases
    return np.searchsorted(key, want, side="left").astype(np.float64) - 0.5


def aggregate(plan: Plan, aggregators: int) -> Plan:
    """Subsetting: in each group of ranks one aggregator receives the others' writes to shared
    files (MPI messages) and writes them merged; the others no longer touch those files."""
    nr = plan.nranks
    if aggregators <= 0:
        raise ValueError("aggregate: aggregators must be positive")
    K = min(int(aggregators), nr)
    ops = {k: v.copy() for k, v in plan.ops.items()}
    shared = ranks_per_file(ops, nr, plan.nfiles) > 1
    world = plan.files["comm"] == COMM_WORLD
    agg_of = (np.arange(nr) * K // nr * nr + K - 1) // K  # first rank of each rank's group
    w = data_mask(ops) & (ops["op"] == WRITE) & shared[ops["file"]] & ~world[ops["file"]] & \
        np.isin(ops["api"], (POSIX, STDIO, MPIIO))
    if not w.any():
        raise ValueError("aggregate: the plan has no writes to shared files")
    agg = agg_of[ops["rank"]]
    send = w & (agg != ops["rank"])
    recv_rows = take(ops, send)
    seq = _sequence(recv_rows)
    recv = {"rank": agg[send], "op": np.full(int(send.sum()), RECV, np.int8), "file": recv_rows["file"],
            "offset": np.zeros(int(send.sum()), np.int64), "length": recv_rows["length"],
            "api": recv_rows["api"], "phase": recv_rows["phase"], "peer": recv_rows["rank"],
            "sub": subkey(recv_rows["file"], SEC_RECV, seq * nr + recv_rows["rank"])}
    pieces = take(ops, w)
    pieces["rank"] = agg[w]
    merged = _merge_pieces(pieces)
    frame = _agg_frame(ops, merged, w)
    ops["op"][send] = SEND
    ops["peer"][send] = agg[send]
    keep = ~(w & ~send) & ~_idle_meta(ops, w)
    new = {k: np.concatenate([recv[k], merged[k], frame[k]]) for k in ("rank", "op", "file", "length",
                                                                     "api", "phase", "sub")}
    new["offset"] = np.concatenate([recv["offset"], merged["offset"], frame["offset"]])
    new["peer"] = np.concatenate([recv["peer"], np.full(len(merged["op"]) + len(frame["op"]), -1)])
    anchors = phase_end_anchor(ops, new["rank"], new["phase"])
    sub = new.pop("sub")
    out = merge(ops, new, anchors, sub, keep=keep)
    meta = add_transform(plan.meta, {"transform": "aggregate", "aggregators": K})
    return plan.replace(ops=out, meta=meta)


def _sequence(rows: dict[str, np.ndarray]) -> np.ndarray:
    """Index of each row among its rank's rows of the same (phase, file), in stream order."""
    n = len(rows["op"])
    order = np.lexsort((np.arange(n), rows["file"], rows["phase"], rows["rank"]))
    key = np.stack([rows["rank"], rows["phase"], rows["file"]])[:, order]
    grp = np.concatenate([[True], np.any(key[:, 1:] != key[:, :-1], axis=0)]) if n else np.zeros(0, bool)
    idx = np.arange(n) - np.flatnonzero(grp)[np.cumsum(grp) - 1]
    out = np.empty(n, np.int64)
    out[order] = idx
    return out


def _merge_pieces(p: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """An aggregator's pieces per (phase, file) sorted by offset, contiguous ones merged."""
    order = np.lexsort((p["offset"], p["file"], p["phase"], p["rank"]))
    r = take(p, order)
    n = len(r["op"])
    same = (r["rank"][1:] == r["rank"][:-1]) & (r["phase"][1:] == r["phase"][:-1]) & \
        (r["file"][1:] == r["file"][:-1])
    cont = same & (r["offset"][1:] == r["offset"][:-1] + r["length"][:-1])
    run = np.cumsum(np.concatenate([[True], ~cont])) - 1
    csum = np.cumsum(r["length"]) - r["length"]
    within = csum - csum[np.searchsorted(run, run)]
    brk = np.concatenate([[True], (run[1:] != run[:-1]) | (within[1:] // AGGREGATE_BYTES
                                                             != within[:-1] // AGGREGATE_BYTES)])
    first = np.flatnonzero(brk)
    out = take(r, first)
    out["length"] = np.add.reduceat(r["length"], first) if n else r["length"]
    out["sub"] = subkey(out["file"], SEC_MERGED, np.arange(len(first)))  # after the receives
    out["op"] = np.full(len(first), WRITE, np.int8)
    return out


def _agg_frame(ops, merged, w) -> dict[str, np.ndarray]:
    """Open, fsync (when the source synced) and close around each aggregator's writes."""
    fs = ops["op"] == FSYNC
    synced = np.unique(ops["phase"][fs].astype(np.int64) * (1 << 31) + ops["file"][fs])
    return open_close_frame(merged, synced)


def open_close_frame(rows: dict[str, np.ndarray], synced: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Open, fsync (for (phase, file) keys in `synced`) and close rows around the rows of each
    (rank, phase, file), with the interface of its first row, ordered by section sub-keys."""
    key = np.stack([rows["rank"], rows["phase"], rows["file"]]).astype(np.int64)
    ukey, first = np.unique(key, axis=1, return_index=True)
    rank, phase, fid = ukey
    api = rows["api"][first]
    sync = np.isin(phase * (1 << 31) + fid, synced) if synced is not None else np.zeros(len(fid), bool)
    parts = [(OPEN, SEC_OPEN, np.ones(len(fid), bool)), (FSYNC, SEC_FSYNC, sync),
             (CLOSE, SEC_CLOSE, np.ones(len(fid), bool))]
    out = {k: np.concatenate([v[sel] for _, _, sel in parts]) for k, v in
           (("rank", rank), ("phase", phase), ("file", fid), ("api", api))}
    out["op"] = np.concatenate([np.full(int(sel.sum()), code, np.int8) for code, _, sel in parts])
    out["sub"] = np.concatenate([subkey(fid[sel], sec, 0) for _, sec, sel in parts])
    m = len(out["op"])
    out.update(offset=np.zeros(m, np.int64), length=np.zeros(m, np.int64))
    return out


def _idle_meta(ops: dict[str, np.ndarray], shipped: np.ndarray) -> np.ndarray:
    """Open/close/fsync rows of a (rank, phase, file) whose only data were the writes handed to
    aggregation: sent away, or (an aggregator's own) rewritten inside the aggregator's new session."""
    key = ops["rank"].astype(np.int64) * (1 << 40) + ops["phase"].astype(np.int64) * (1 << 24) + ops["file"]
    other = data_mask(ops) & ~shipped
    idle = np.setdiff1d(np.unique(key[shipped]), np.unique(key[other]))
    return np.isin(ops["op"], (OPEN, CREATE, CLOSE, FSYNC)) & np.isin(key, idle)


def independent(plan: Plan, note: str) -> Plan:
    """Fallback when collective calls cannot be matched: every MPI-IO file opened per rank,
    every call independent (stated in the plan notes)."""
    ops = {k: v.copy() for k, v in plan.ops.items()}
    keep = (ops["flags"] & FLAG_PAD) == 0
    ops["api"][ops["api"] == MPIIO_COLL] = MPIIO
    ops["batch"][:] = -1
    files = {k: v.copy() for k, v in plan.files.items()}
    files["comm"][:] = COMM_SELF
    meta = dict(plan.meta, notes=list(plan.meta.get("notes", [])) + [note])
    return plan.replace(ops=take(ops, keep), files=files, meta=meta)


__all__ = ["aggregate", "collective", "independent", "op_columns"]
