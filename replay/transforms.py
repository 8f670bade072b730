"""Fixes as plan transforms: each a pure function plan -> plan.

The fix dicts of diagnose findings (``{"transform": "coalesce", "transfer_size": N}``,
...) map onto these functions through :func:`apply_fix`. Every transform appends
what it did to ``plan.meta["transforms"]`` so results say exactly which variant ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from replay.collective import aggregate, collective
from replay.edit import add_transform, collapse, data_mask, merge, ranks_per_file, stream_runs, take
from replay.mpiio_calls import mpiio_calls
from replay.plan import (CLOSE, COMM_SELF, CREATE, FLAG_PAD, FSYNC, LAYOUT_DIR, LAYOUT_FILE, MPIIO,
                         MPIIO_COLL, NAME_OPS, OPEN, WRITE, Plan)

MiB = 1 << 20


def coalesce(plan: Plan, transfer_size: int = 4 * MiB) -> Plan:
    """Merge each rank's back-to-back contiguous requests into transfers of up to `transfer_size`."""
    if transfer_size <= 0:
        raise ValueError("coalesce: transfer_size must be positive")
    ops = plan.ops
    eligible = data_mask(ops) & (ops["api"] != MPIIO_COLL) & (ops["batch"] < 0)
    run = stream_runs(ops, eligible, contiguous=True, cap=int(transfer_size))
    out = collapse(ops, run)
    return plan.replace(ops=out, meta=add_transform(plan.meta, {"transform": "coalesce",
                                                                 "transfer_size": int(transfer_size)}))


def sequential(plan: Plan) -> Plan:
    """Sort each rank's consecutive requests on one file by offset (the price of randomness)."""
    ops = plan.ops
    eligible = data_mask(ops) & (ops["batch"] < 0)
    run = stream_runs(ops, eligible, contiguous=False)
    order = np.lexsort((np.arange(len(run)), ops["offset"], run))
    return plan.replace(ops=take(ops, order),
                        meta=add_transform(plan.meta, {"transform": "sequential"}))


def fsync_at_close(plan: Plan, mode: str = "at-close", every_writes: int = 0, every_bytes: int = 0) -> Plan:
    """Replace fsyncs after writes by one fsync before the close of each session that had any;
    with `every_writes` N or `every_bytes` B (an fsync interval), also one after every N-th write
    (or after the write that completes each B bytes) of those sessions."""
    if mode != "at-close":
        raise ValueError(f"fsync: unknown mode {mode!r} (expected 'at-close')")
    if every_writes < 0 or every_bytes < 0 or (every_writes and every_bytes):
        raise ValueError("fsync: give one interval, every_writes or every_bytes, positive")
    ops = plan.ops
    # MPI_File_sync is collective: files with collective calls keep their syncs
    world = np.bincount(ops["file"][ops["api"] == MPIIO_COLL], minlength=plan.nfiles) > 0
    self_file = ~world[ops["file"]]
    session = _sessions(ops)
    fs = (ops["op"] == FSYNC) & self_file
    synced = np.unique(session[fs])
    ends = _session_ends(ops, session)
    need = ends[np.isin(session[ends], synced)]
    after = _interval_ends(ops, session, synced, every_writes, every_bytes) if every_writes or every_bytes \
        else np.zeros(0, np.int64)
    if len(after):  # a session whose last write an interval fsync follows needs none at its close
        writes = np.flatnonzero(ops["op"] == WRITE)
        last_write = np.full(int(session.max()) + 1, -1, np.int64)
        np.maximum.at(last_write, session[writes], writes)
        need = need[~np.isin(last_write[session[need]], after)]
    rows = np.concatenate([need, after])
    new = take(ops, rows)
    new["op"] = np.full(len(rows), FSYNC, np.int8)
    new["length"] = np.zeros(len(rows), np.int64)
    new["offset"] = np.zeros(len(rows), np.int64)
    new["gap"] = np.zeros(len(rows), np.float32)
    closing = ops["op"][need] == CLOSE
    anchors = np.concatenate([np.where(closing, need - 0.5, need + 0.5), after + 0.5])  # before the close
    out = merge(ops, new, anchors, keep=~fs)
    done = {"transform": "fsync", "mode": mode}
    done.update({k: int(v) for k, v in (("every_writes", every_writes), ("every_bytes", every_bytes)) if v})
    return plan.replace(ops=out, meta=add_transform(plan.meta, done))


def _interval_ends(ops: dict[str, np.ndarray], session: np.ndarray, synced: np.ndarray,
                   every_writes: int, every_bytes: int) -> np.ndarray:
    """Rows of the writes after which an interval fsync goes: the N-th write, or the write that
    completes each B bytes, counted within each synced session."""
    rows = np.flatnonzero((ops["op"] == WRITE) & np.isin(session, synced))
    if not len(rows):
        return rows
    order = np.argsort(session[rows], kind="stable")
    rows = rows[order]
    unit = np.ones(len(rows), np.int64) if every_writes else ops["length"][rows].astype(np.int64)
    step = every_writes or every_bytes
    total = np.cumsum(unit)
    first = np.concatenate([[True], session[rows][1:] != session[rows][:-1]])
    start = np.maximum.accumulate(np.where(first, total - unit, 0))  # the total before each session
    done = total - start
    return np.sort(rows[done // step > (done - unit) // step])


def _sessions(ops: dict[str, np.ndarray]) -> np.ndarray:
    """Session id of each row: (rank, file, number of opens of that file by that rank so far)."""
    n = len(ops["op"])
    order = np.lexsort((np.arange(n), ops["file"], ops["rank"]))
    opens = np.isin(ops["op"], (OPEN, CREATE))[order]
    grp = ops["rank"][order].astype(np.int64) * (1 << 32) + ops["file"][order]
    newgrp = np.concatenate([[True], grp[1:] != grp[:-1]]) if n else np.zeros(0, bool)
    sid_sorted = np.cumsum(newgrp | opens)  # a new session at a new (rank, file) or at an open
    sid = np.empty(n, np.int64)
    sid[order] = sid_sorted
    return sid


def _session_ends(ops: dict[str, np.ndarray], session: np.ndarray) -> np.ndarray:
    """Row index of the last row of every session (its close, when it has one)."""
    n = len(session)
    last = np.full(int(session.max()) + 1 if n else 0, -1, np.int64)
    np.maximum.at(last, session, np.arange(n))
    return last[last >= 0]


def align(plan: Plan, boundary: int = MiB) -> Plan:
    """Re-cut each rank's contiguous extents into requests that start and end on `boundary`
    (the stripe size): extent starts move up to the next boundary, request sizes round to
    multiples of it; the bytes moved stay the same."""
    if boundary <= 0:
        raise ValueError("align: boundary must be positive")
    B = int(boundary)
    ops = plan.ops
    eligible = data_mask(ops) & (ops["batch"] < 0) & (ops["api"] != MPIIO_COLL)
    run = stream_runs(ops, eligible, contiguous=True)
    runs = collapse(ops, run)
    first = np.flatnonzero(np.concatenate([[True], run[1:] != run[:-1]]))
    piece = np.maximum(B, (ops["length"][first] + B // 2) // B * B)  # first request size, rounded
    moved = data_mask(runs) & eligible[first]
    runs["offset"] = np.where(moved, _aligned_starts(runs, B), runs["offset"])
    counts = np.where(moved, np.maximum(1, -(-runs["length"] // piece)), 1)
    idx = np.repeat(np.arange(len(counts)), counts)
    k = np.arange(len(idx)) - np.repeat(np.cumsum(counts) - counts, counts)
    out = take(runs, idx)
    size = np.where(moved[idx], piece[idx], out["length"])
    out["offset"] = out["offset"] + k * np.where(moved[idx], piece[idx], 0)
    out["length"] = np.where(moved[idx], np.minimum(size, runs["length"][idx] - k * size), out["length"])
    out["gap"] = np.where(k == 0, out["gap"], 0).astype(np.float32)
    return plan.replace(ops=out, meta=add_transform(plan.meta, {"transform": "align", "boundary": B}))


def _aligned_starts(runs: dict[str, np.ndarray], B: int) -> np.ndarray:
    """Per file, extent starts pushed up to boundaries, keeping their order and gaps
    (the same original start maps to the same new start, so re-reads find the data)."""
    files, starts = runs["file"].astype(np.int64), runs["offset"]
    order = np.lexsort((starts, files))
    f, s = files[order], starts[order]
    first = np.concatenate([[True], (f[1:] != f[:-1]) | (s[1:] != s[:-1])]) if len(f) else \
        np.zeros(0, bool)
    new = np.empty(int(first.sum()), np.int64)
    shift, prev = 0, -1
    for i, (fid, start) in enumerate(zip(f[first].tolist(), s[first].tolist())):  # per extent
        if fid != prev:
            shift, prev = 0, fid
        aligned = -(-(start + shift) // B) * B
        shift = aligned - start
        new[i] = aligned
    out = np.empty_like(starts)
    out[order] = new[np.cumsum(first) - 1]
    return out


def stripe(plan: Plan, count: int, size: int = 0, object_size: int = 0, scope: str = "file") -> Plan:
    """Ask for a striped layout on every file that carries data: `count` storage targets
    (-1: all), stripes of `size` bytes (0: the file system's default), CephFS objects of
    `object_size` bytes (0: default). `scope` "dir" sets it as the default layout of the files'
    directories instead, which the files created there inherit (the stripe-inheritance fix)."""
    if count == 0 or count < -1 or size < 0 or object_size < 0:
        raise ValueError("stripe: count must be positive or -1 (all targets), sizes non-negative")
    scopes = {"file": LAYOUT_FILE, "dir": LAYOUT_DIR}
    if scope not in scopes:
        raise ValueError(f"stripe: unknown scope {scope!r} (expected 'file' or 'dir')")
    files = {k: v.copy() for k, v in plan.files.items()}
    has_data = np.bincount(plan.ops["file"][data_mask(plan.ops)], minlength=plan.nfiles) > 0
    for column, value in (("stripe_count", count), ("stripe_size", size), ("object_size", object_size),
                          ("layout_scope", scopes[scope])):
        files[column] = np.where(has_data, value, files[column]).astype(files[column].dtype)
    done = {"transform": "stripe", "count": int(count), "size": int(size)}
    done.update({k: v for k, v in (("object_size", int(object_size)), ("scope", scope)) if v not in (0, "file")})
    return plan.replace(files=files, meta=add_transform(plan.meta, done))


def target_list(value: Any) -> tuple[int, ...]:
    """Storage targets as a fix names them: [3, 5], 3 or "3,5"; ValueError otherwise."""
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in items:
        if isinstance(item, bool) or not str(item).strip().isdigit():
            raise ValueError(f"not a storage target index: {item!r}")
        out.append(int(str(item).strip()))
    return tuple(sorted(set(out)))


def avoid_targets(plan: Plan, targets: tuple[int, ...] = ()) -> Plan:
    """Lay out every file that carries data without the storage targets `targets` (OST indices
    on Lustre, OSD ids on CephFS): where the target allows it, the replay places them with an
    OST list or in a data pool without those targets (replay.layout)."""
    if not targets:
        raise ValueError("avoid-targets: no storage targets named (ioadvisor probe --target DIR flags them)")
    files = {k: v.copy() for k, v in plan.files.items()}
    has_data = np.bincount(plan.ops["file"][data_mask(plan.ops)], minlength=plan.nfiles) > 0
    files["avoid"] = np.where(has_data, 1, files["avoid"]).astype(files["avoid"].dtype)
    meta = add_transform(plan.meta, {"transform": "avoid-targets", "targets": list(targets)})
    meta["avoid_targets"] = sorted(set(plan.meta.get("avoid_targets", [])) | set(targets))
    return plan.replace(files=files, meta=meta)


def layout(plan: Plan, mode: str) -> Plan:
    """`fpp`: every rank gets its own file instead of a shared one; `shared`: file-per-process
    siblings (one file group) become one shared file with a region per former file."""
    if mode == "fpp":
        return _to_fpp(plan)
    if mode == "shared":
        return _to_shared(plan)
    raise ValueError(f"layout: unknown mode {mode!r} (expected 'shared' or 'fpp')")


def _to_fpp(plan: Plan) -> Plan:
    ops = {k: v.copy() for k, v in plan.ops.items()}
    shared = ranks_per_file(ops, plan.nranks, plan.nfiles) > 1
    moved = shared[ops["file"]] & ((ops["flags"] & FLAG_PAD) == 0)
    keep = ~(shared[ops["file"]] & ((ops["flags"] & FLAG_PAD) != 0))
    pair = ops["file"][moved].astype(np.int64) * plan.nranks + ops["rank"][moved]
    upairs, inv = np.unique(pair, return_inverse=True)
    ops["file"][moved] = plan.nfiles + inv
    data = data_mask(ops) & moved
    ops["offset"][data] = _compact_offsets(ops, data)
    ops["api"][moved & (ops["api"] == MPIIO_COLL)] = MPIIO
    ops["batch"][moved] = -1
    parent = (upairs // plan.nranks).astype(np.int64)
    files = {k: np.concatenate([v, v[parent]]) for k, v in plan.files.items()}
    files["comm"][plan.nfiles:] = COMM_SELF
    files["group"][plan.nfiles:] = parent
    files["prefill"][plan.nfiles:] = 0
    if files["prefill"][parent].any():  # reads of prefilled shared data: prefill each part
        files["prefill"][plan.nfiles:] = _extent(ops, plan.nfiles + len(upairs))[plan.nfiles:] * \
            (files["prefill"][parent] > 0)
    files["prefill"][:plan.nfiles][shared] = 0
    out = take(ops, keep)
    return plan.replace(ops=out, files=files,
                        meta=add_transform(plan.meta, {"transform": "layout", "mode": "fpp"}))


def _compact_offsets(ops: dict[str, np.ndarray], sel: np.ndarray) -> np.ndarray:
    """Offsets of each new file packed: distinct request offsets laid end to end in order."""
    f, off, ln = ops["file"][sel].astype(np.int64), ops["offset"][sel], ops["length"][sel]
    order = np.lexsort((off, f))
    fs, os_, ls = f[order], off[order], ln[order]
    first = np.concatenate([[True], (fs[1:] != fs[:-1]) | (os_[1:] != os_[:-1])]) if len(fs) else \
        np.zeros(0, bool)
    uf, ul = fs[first], ls[first]
    csum = np.cumsum(ul) - ul
    grp_start = np.concatenate([[True], uf[1:] != uf[:-1]]) if len(uf) else np.zeros(0, bool)
    packed = csum - csum[np.flatnonzero(grp_start)][np.cumsum(grp_start) - 1]
    out = np.empty_like(off)
    out[order] = packed[np.cumsum(first) - 1]
    return out


def _extent(ops: dict[str, np.ndarray], nfiles: int) -> np.ndarray:
    ext = np.zeros(nfiles, np.int64)
    np.maximum.at(ext, ops["file"], ops["offset"] + ops["length"])
    return ext


def _to_shared(plan: Plan) -> Plan:
    ops = {k: v.copy() for k, v in plan.ops.items()}
    group = np.asarray(plan.files["group"])
    if not (group >= 0).any():
        raise ValueError("layout shared: the plan has no file-per-process groups to merge")
    fids = np.arange(plan.nfiles)
    ext = _extent(ops, plan.nfiles)
    target = fids.copy()
    base = np.zeros(plan.nfiles, np.int64)
    for g in np.unique(group[group >= 0]).tolist():
        members = fids[group == g]
        stride = -(-max(int(ext[members].max()), 1) // MiB) * MiB  # regions start on 1 MiB
        target[members] = members[0]
        base[members] = np.arange(len(members)) * stride
    data = data_mask(ops)
    ops["offset"] = np.where(data, ops["offset"] + base[ops["file"]], ops["offset"])
    files = {k: v.copy() for k, v in plan.files.items()}
    pf = files["prefill"]
    merged = np.zeros(plan.nfiles, np.int64)
    np.maximum.at(merged, target, np.where(pf > 0, base + pf, 0))
    files["prefill"] = np.where(target == fids, merged, 0).astype(np.int64)
    ops["file"] = target[ops["file"]].astype(np.int32)
    naming = np.isin(ops["op"], NAME_OPS)  # a rename's or link's new name: merged the same way
    ops["peer"] = np.where(naming, target[np.maximum(ops["peer"], 0)], ops["peer"]).astype(np.int32)
    return plan.replace(ops=ops, files=files,
                        meta=add_transform(plan.meta, {"transform": "layout", "mode": "shared"}))


def hint_switch(value: Any) -> str:
    """A ROMIO on/off hint's value: enable, disable or automatic; ValueError otherwise."""
    if value not in SWITCHES:
        raise ValueError(f"not one of {', '.join(SWITCHES)}: {value!r}")
    return str(value)


SWITCHES = ("enable", "disable", "automatic")
HINT_SIZES = ("cb_nodes", "cb_buffer_size", "striping_unit", "striping_factor")


def hints(plan: Plan, **given: Any) -> Plan:
    """Open every MPI-IO file of the replay with these ROMIO hints (cb_nodes, cb_buffer_size,
    romio_cb_read/write, romio_ds_read/write, striping_unit, striping_factor), the calls unchanged:
    the fix for a job already collective, whose aggregation is tuned rather than switched on."""
    if not given:
        raise ValueError("hints: no hint given")
    for key in HINT_SIZES:
        if key in given and int(given[key]) <= 0:
            raise ValueError(f"hints: {key} must be positive")
    if not np.isin(plan.ops["api"], (MPIIO, MPIIO_COLL)).any():
        raise ValueError("hints: the plan has no MPI-IO call, which ROMIO hints could change")
    done = {k: int(v) if k in HINT_SIZES else str(v) for k, v in sorted(given.items())}
    return plan.replace(hints={**plan.hints, **{k: str(v) for k, v in done.items()}},
                        meta=add_transform(plan.meta, {"transform": "hints", **done}))


FIXES: dict[str, tuple[Callable[..., Plan], dict[str, type]]] = {
    "coalesce": (coalesce, {"transfer_size": int}),
    "collective": (collective, {"cb_nodes": int}),
    "aggregate": (aggregate, {"aggregators": int}),
    "fsync": (fsync_at_close, {"mode": str, "every_writes": int, "every_bytes": int}),
    "align": (align, {"boundary": int}),
    "layout": (layout, {"mode": str}),
    "stripe": (stripe, {"count": int, "size": int, "object_size": int, "scope": str}),
    "sequential": (sequential, {}),
    "avoid-targets": (avoid_targets, {"targets": target_list}),
    "hints": (hints, {"cb_nodes": int, "cb_buffer_size": int, "romio_cb_read": hint_switch,
                      "romio_cb_write": hint_switch, "romio_ds_read": hint_switch, "romio_ds_write": hint_switch,
                      "striping_unit": int, "striping_factor": int}),
    "mpiio_calls": (mpiio_calls, {"call_bytes": int}),
}


KINDS = {target_list: "a list of storage target indices", hint_switch: "one of " + ", ".join(SWITCHES)}
"""How a parameter's type reads in an error message (else its type's name)."""


def apply_fix(plan: Plan, fix: dict[str, Any]) -> Plan:
    """Apply one finding's fix dict; ValueError names what is wrong with it."""
    func, kwargs = check_fix(fix)
    return func(plan, **kwargs)


def check_fix(fix: dict[str, Any]) -> tuple[Callable[..., Plan], dict[str, Any]]:
    """The transform of a fix dict and its typed parameters; ValueError when malformed."""
    name = fix.get("transform")
    if name not in FIXES:
        raise ValueError(f"unknown fix transform {name!r} (known: {', '.join(FIXES)})")
    func, params = FIXES[name]
    extra = set(fix) - set(params) - {"transform"}
    if extra:
        raise ValueError(f"fix {name!r}: unknown parameter(s) {sorted(extra)}")
    kwargs = {}
    for key, typ in params.items():
        if key in fix:
            try:
                kwargs[key] = typ(fix[key])
            except (TypeError, ValueError):
                kind = KINDS.get(typ, typ.__name__)
                raise ValueError(f"fix {name!r}: {key} must be {kind}, got {fix[key]!r}") from None
    return func, kwargs


__all__ = ["FIXES", "aggregate", "align", "apply_fix", "avoid_targets", "check_fix", "coalesce", "collective",
           "fsync_at_close", "hint_switch", "hints", "layout", "mpiio_calls", "sequential", "stripe",
           "target_list"]
