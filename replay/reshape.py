"""Reshaping a plan to the machine it replays on: fold ranks, scale down, remap reads.

- :func:`fold` puts the ranks of a big job on fewer replay ranks (``--np``);
- :func:`scale` keeps a fraction of every rank's requests per file and phase (``--scale``);
- :func:`neighbour_reads` moves each rank's reads to a rank on another node, so data
  written on a node is not read back from that node's page cache.
"""

from __future__ import annotations

import numpy as np

from replay.collective import SEC_READ, independent, open_close_frame, subkey
from replay.edit import add_transform, data_mask, merge, phase_end_anchor, take
from replay.plan import COMM_WORLD, FLAG_PAD, FSYNC, MPIIO_COLL, OPEN, POSIX, READ, STDIO, WRITE, Plan


def fold(plan: Plan, nranks: int) -> Plan:
    """Replay on `nranks` ranks: original rank r runs on rank r * nranks // R, after the
    earlier original ranks it shares a replay rank with, phase by phase."""
    R = plan.nranks
    if nranks >= R:
        return plan
    if nranks <= 0:
        raise ValueError("fold: the number of replay ranks must be positive")
    ops = plan.ops
    new_rank = (ops["rank"].astype(np.int64) * nranks // R).astype(np.int32)
    order = np.lexsort((np.arange(len(new_rank)), ops["rank"], ops["phase"], new_rank))
    out = take(ops, order)
    out["rank"] = new_rank[order]
    peer = out["peer"]
    out["peer"] = np.where(peer >= 0, peer.astype(np.int64) * nranks // R, peer).astype(np.int32)
    meta = dict(plan.meta, np=nranks, folded_from=R)
    try:
        if (out["api"] == MPIIO_COLL).any():
            out = _merge_collectives(out, ops["rank"][order])
        return Plan.build(nranks, out, plan.files, hints=plan.hints, meta=meta)
    except ValueError as exc:
        if "collective" not in str(exc):
            raise
        flat = Plan(nranks=nranks, ops=out, files=plan.files, hints=plan.hints, meta=meta)
        return independent(flat, f"collective calls could not be matched after folding {R} ranks "
                                 f"onto {nranks}: replayed as independent MPI-IO")


def _merge_collectives(out: dict[str, np.ndarray], orig: np.ndarray) -> dict[str, np.ndarray]:
    """Folded ranks share their collective calls: the i-th collective call of every original
    rank folded onto one replay rank becomes one call over all their pieces (a file view),
    inside one collective open/close per session, as many calls as one original rank made."""
    coll = out["api"] == MPIIO_COLL
    data = coll & np.isin(out["op"], (READ, WRITE))
    meta = coll & ~data
    n = len(orig)
    # per original rank, phase and file: session number (opens so far) and call number
    key = np.stack([orig, out["phase"], out["file"]]).astype(np.int64)
    order = np.lexsort((np.arange(n), *key[::-1]))
    k = key[:, order]
    grp = np.concatenate([[True], np.any(k[:, 1:] != k[:, :-1], axis=0)]) if n else np.zeros(0, bool)
    is_open = (meta & (out["op"] == OPEN))[order]
    sess_sorted = _cumsum_within(is_open.astype(np.int64), grp)
    call_sorted = _cumsum_within((data[order] & ~(out["batch"][order] >= 0)).astype(np.int64)
                                 + _batch_starts(out, order, data), grp) - 1
    sess, call = np.empty(n, np.int64), np.empty(n, np.int64)
    sess[order], call[order] = sess_sorted, call_sorted
    first_orig = np.zeros(n, bool)  # the lowest original rank of each replay rank keeps the opens
    first_orig[coll] = orig[coll] == _min_within(orig[coll], out["rank"][coll])
    keep = ~meta | first_orig
    part = np.select([out["op"] == OPEN, data, out["op"] == FSYNC], [0, 1, 2], 3)
    rows = np.flatnonzero(coll & keep)
    sort = np.lexsort((out["offset"][rows], call[rows], part[rows], sess[rows], out["file"][rows],
                       out["phase"][rows], out["rank"][rows]))
    merged = {c: v.copy() for c, v in out.items()}
    for c in merged:
        merged[c][rows] = out[c][rows[sort]]
    moved_data = data[rows[sort]]
    ident = np.stack([merged["rank"][rows], merged["phase"][rows], merged["file"][rows],
                      sess[rows[sort]], call[rows[sort]]]).astype(np.int64)
    new_call = np.concatenate([[True], np.any(ident[:, 1:] != ident[:, :-1], axis=0)]) if len(rows) else \
        np.zeros(0, bool)
    merged["batch"][rows] = np.where(moved_data, np.cumsum(new_call) - 1, -1)
    result = take(merged, keep)
    result = _contiguous_batches(result)
    _check_batches(result)
    return result


def _contiguous_batches(ops: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Move each batch's rows together, where its first row is (rows of other files may sit
    between pieces a merge brought together)."""
    n = len(ops["op"])
    b = ops["batch"]
    pos = np.arange(n, dtype=np.float64)
    inb = b >= 0
    if not inb.any():
        return ops
    first = np.full(int(b.max()) + 1, n, np.int64)
    np.minimum.at(first, b[inb], np.flatnonzero(inb))
    pos[inb] = first[b[inb]] + np.arange(n)[inb] / (n + 1.0)
    order = np.lexsort((pos, ops["rank"]))
    return take(ops, order)


def _check_batches(ops: dict[str, np.ndarray]) -> None:
    """A merged call must be one kind of access over disjoint pieces (a valid file view)."""
    b = ops["batch"]
    same = (b[1:] >= 0) & (b[1:] == b[:-1])
    real = (ops["flags"] & FLAG_PAD) == 0
    both = same & real[1:] & real[:-1]
    if np.any(same & (ops["op"][1:] != ops["op"][:-1])) or \
            np.any(both & (ops["offset"][1:] < ops["offset"][:-1] + ops["length"][:-1])):
        raise ValueError("collective calls of folded ranks overlap or mix reads and writes")


def _cumsum_within(values: np.ndarray, group_start: np.ndarray) -> np.ndarray:
    c = np.cumsum(values)
    base = (c - values)[np.flatnonzero(group_start)]
    return c - base[np.cumsum(group_start) - 1]


def _batch_starts(out: dict[str, np.ndarray], order: np.ndarray, data: np.ndarray) -> np.ndarray:
    """1 at the first row of each existing batch (a batch counts as one call)."""
    b = out["batch"][order]
    d = data[order]
    start = np.concatenate([[True], b[1:] != b[:-1]]) if len(b) else np.zeros(0, bool)
    return (d & (b >= 0) & start).astype(np.int64)


def _min_within(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per element: the minimum of `values` over its group."""
    lo = np.full(int(groups.max()) + 1 if len(groups) else 0, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(lo, groups, values)
    return lo[groups]


def scale(plan: Plan, factor: float) -> Plan:
    """Keep the first ceil(factor * n) requests (and fsyncs) of every rank, file, phase and
    operation; of files without data, keep the first ceil(factor * n) of every rank."""
    if not 0 < factor <= 1:
        raise ValueError("scale must be in (0, 1]")
    if factor == 1:
        return plan
    ops = plan.ops
    n = len(ops["op"])
    counted = data_mask(ops) | (ops["op"] == FSYNC) | ((ops["flags"] & FLAG_PAD) != 0)
    key = np.stack([ops["rank"], ops["file"], ops["phase"], ops["op"]]).astype(np.int64)
    order = np.lexsort((np.arange(n), *key[::-1]))
    k = key[:, order]
    grp = np.concatenate([[True], np.any(k[:, 1:] != k[:, :-1], axis=0)]) if n else np.zeros(0, bool)
    start = np.flatnonzero(grp)
    gid = np.cumsum(grp) - 1
    idx_sorted = np.arange(n) - start[gid]
    size = np.diff(np.append(start, n))[gid]
    keep_sorted = idx_sorted < np.ceil(size * factor)
    keep = np.ones(n, bool)
    keep[order] = keep_sorted | ~counted[order]
    keep &= _keep_metadata_files(plan, factor)
    out = take(ops, keep)
    files = {k2: v.copy() for k2, v in plan.files.items()}
    files["prefill"] = np.minimum(files["prefill"], _read_extent(out, plan.nfiles))
    meta = add_transform(plan.meta, {"transform": "scale", "factor": factor})
    meta["scale"] = factor * plan.meta.get("scale", 1.0)
    return plan.replace(ops=out, files=files, meta=meta)


def _keep_metadata_files(plan: Plan, factor: float) -> np.ndarray:
    """Rows to keep among files that carry no data (e.g. mdtest's empty files)."""
    ops = plan.ops
    has_data = np.bincount(ops["file"][data_mask(ops)], minlength=plan.nfiles) > 0
    meta_rows = ~has_data[ops["file"]]
    keep = np.ones(len(ops["op"]), bool)
    if not meta_rows.any():
        return keep
    pairs, first = np.unique(np.stack([ops["rank"][meta_rows], ops["file"][meta_rows]]), axis=1,
                             return_index=True)
    rows = np.flatnonzero(meta_rows)
    order = np.lexsort((rows[first], pairs[0]))  # per rank, files by first appearance
    ranks = pairs[0][order]
    grp = np.concatenate([[True], ranks[1:] != ranks[:-1]])
    idx = np.arange(len(ranks)) - np.flatnonzero(grp)[np.cumsum(grp) - 1]
    total = np.bincount(ranks, minlength=plan.nranks)[ranks]
    drop_pairs = pairs[:, order][:, idx >= np.ceil(total * factor)]
    code = ops["rank"].astype(np.int64) * (plan.nfiles + 1) + ops["file"]
    dropped = np.isin(code, drop_pairs[0].astype(np.int64) * (plan.nfiles + 1) + drop_pairs[1])
    return ~(dropped & meta_rows)


def _read_extent(ops: dict[str, np.ndarray], nfiles: int) -> np.ndarray:
    ext = np.zeros(nfiles, np.int64)
    r = ops["op"] == READ
    np.maximum.at(ext, ops["file"][r], ops["offset"][r] + ops["length"][r])
    return ext


def neighbour_reads(plan: Plan, shift: int) -> Plan:
    """Move each rank's POSIX/STDIO reads to rank (r + shift) % N (the same position on the next
    node), each moved batch in its own open/close, at the end of the phase."""
    N = plan.nranks
    ops = plan.ops
    world = plan.files["comm"][ops["file"]] == COMM_WORLD
    moved = data_mask(ops) & (ops["op"] == READ) & np.isin(ops["api"], (POSIX, STDIO)) & ~world
    if shift % N == 0 or not moved.any():
        return plan
    rows = take(ops, moved)
    rows["rank"] = ((rows["rank"].astype(np.int64) + shift) % N).astype(np.int32)
    frame = open_close_frame(rows)
    rows_sub = subkey(rows["file"], SEC_READ, np.arange(len(rows["op"])))
    new = {k: np.concatenate([rows[k], frame[k]]) for k in ("rank", "op", "file", "offset", "length",
                                                         "api", "phase")}
    sub = np.concatenate([rows_sub, frame["sub"]])
    anchors = phase_end_anchor(ops, new["rank"], new["phase"])
    out = merge(ops, new, anchors, sub, keep=~moved)
    meta = add_transform(plan.meta, {"transform": "neighbour-reads", "shift": int(shift)})
    return plan.replace(ops=out, meta=meta)


__all__ = ["fold", "neighbour_reads", "scale"]
