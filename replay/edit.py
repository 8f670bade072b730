"""Vectorized editing of plan op columns, shared by the transforms.

Rows keep their execution order through a position key: an existing row ``i`` sits
at position ``i``; new rows are inserted at fractional positions (an anchor) with
a tie-breaking sub-key, and :func:`merge` sorts everything by (rank, position,
sub-key). Nothing here loops over operations in Python.
"""

from __future__ import annotations

import numpy as np

from replay.plan import DATA_OPS, FLAG_PAD, OP_COLUMNS, op_columns


def take(ops: dict[str, np.ndarray], index) -> dict[str, np.ndarray]:
    """The rows `index` (mask or indices) of every column."""
    return {k: v[index] for k, v in ops.items()}


def data_mask(ops: dict[str, np.ndarray]) -> np.ndarray:
    return np.isin(ops["op"], DATA_OPS) & ((ops["flags"] & FLAG_PAD) == 0)


def same_as_previous(ops: dict[str, np.ndarray], keys: tuple[str, ...]) -> np.ndarray:
    """For rows 1..n-1: whether the row equals the previous one in all `keys` columns."""
    n = len(ops["op"])
    same = np.ones(max(n - 1, 0), bool)
    for k in keys:
        same &= ops[k][1:] == ops[k][:-1]
    return same


def stream_runs(ops: dict[str, np.ndarray], eligible: np.ndarray, *, contiguous: bool,
                cap: int = 0) -> np.ndarray:
    """Run id of each row: consecutive eligible rows of one rank on one file, op, interface and
    phase (and, with `contiguous`, each starting where the previous ended) share a run.
    With `cap`, a run is cut where its cumulative length crosses a multiple of `cap`.
    Ineligible rows are runs of their own."""
    n = len(ops["op"])
    if n == 0:
        return np.zeros(0, np.int64)
    cont = eligible[1:] & eligible[:-1] & same_as_previous(ops, ("rank", "file", "op", "api", "phase"))
    if contiguous:
        cont &= ops["offset"][1:] == ops["offset"][:-1] + ops["length"][:-1]
    run = np.cumsum(np.concatenate([[True], ~cont])) - 1
    if cap:
        csum = np.cumsum(ops["length"])
        before = csum - ops["length"]
        start_of_run = before[np.searchsorted(run, run, side="left")]
        chunk = (before - start_of_run) // cap
        brk = np.concatenate([[True], (run[1:] != run[:-1]) | (chunk[1:] != chunk[:-1])])
        run = np.cumsum(brk) - 1
    return run


def collapse(ops: dict[str, np.ndarray], run: np.ndarray) -> dict[str, np.ndarray]:
    """One row per run: the first row's columns, the summed length and gap."""
    first = np.flatnonzero(np.concatenate([[True], run[1:] != run[:-1]]))
    out = take(ops, first)
    out["length"] = np.add.reduceat(ops["length"], first) if len(first) else ops["length"][:0]
    out["gap"] = np.add.reduceat(ops["gap"], first).astype(np.float32) if len(first) else ops["gap"][:0]
    return out


def phase_end_anchor(ops: dict[str, np.ndarray], ranks: np.ndarray, phases: np.ndarray) -> np.ndarray:
    """Position just after rank r's last row of phase <= p (before any row of a later phase)."""
    n = len(ops["op"])
    key = ops["rank"].astype(np.int64) * (1 << 31) + ops["phase"]
    want = ranks.astype(np.int64) * (1 << 31) + phases
    # rows are sorted by (rank, phase): the first row with a larger key is the insertion point
    return np.searchsorted(key, want, side="right").astype(np.float64) - 0.5 if n else \
        np.zeros(len(ranks))


def merge(ops: dict[str, np.ndarray], new: dict[str, np.ndarray] | None = None,
          anchors: np.ndarray | None = None, subkeys: np.ndarray | None = None,
          keep: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Existing rows (those in `keep`) plus `new` rows at `anchors`, in execution order."""
    n = len(ops["op"])
    keep = np.ones(n, bool) if keep is None else keep
    pos = np.arange(n, dtype=np.float64)[keep]
    old = take(ops, keep)
    if new is None or len(new["op"]) == 0:
        return old
    m = len(new["op"])
    new = op_columns(m, **new)
    allops = {k: np.concatenate([old[k], new[k]]) for k in OP_COLUMNS}
    allpos = np.concatenate([pos, anchors])
    sub = np.concatenate([np.zeros(len(pos), np.int64),
                          np.asarray(subkeys if subkeys is not None else np.arange(m), np.int64) + 1])
    # phase before position: a phase-p open and a phase p-1 close may share an anchor
    order = np.lexsort((sub, allpos, allops["phase"], allops["rank"]))
    return take(allops, order)


def ranks_per_file(ops: dict[str, np.ndarray], nranks: int, nfiles: int) -> np.ndarray:
    """How many distinct ranks touch each file."""
    if len(ops["op"]) == 0:
        return np.zeros(nfiles, np.int64)
    pairs = np.unique(ops["file"].astype(np.int64) * (nranks + 1) + ops["rank"])
    return np.bincount(pairs // (nranks + 1), minlength=nfiles)


def add_transform(meta: dict, entry: dict) -> dict:
    out = dict(meta)
    out["transforms"] = list(meta.get("transforms", [])) + [entry]
    return out
