"""A replay stream from DXT traces: each rank's recorded offsets, lengths and order.

Files with MPI-IO records replay at the MPI-IO level (DXT_MPIIO); their POSIX
segments are what the MPI library did underneath and are not replayed again.
DXT does not trace opens, fsyncs or stats: those come from the counters, as do
the streams of files the trace does not cover (STDIO, files without data, files
past the trace buffer).
"""

from __future__ import annotations

import numpy as np

from advisor.profile import CALL_OPS, DXT_WRITE, SHARED_RANK, DxtTrace, JobProfile
from advisor.replay_plan.counters import VIEWS, RecordCounters, mpiio_ids, split_even, synthesize
from advisor.replay_plan.stream import (SUB_CLOSE, SUB_FSYNC, SUB_OPEN, SUB_STAT, FileTable, StreamBuilder,
                                        is_pseudo_file)
from replay.plan import (CLOSE, FSYNC, LINK, MKDIR, MPIIO, MPIIO_COLL, OPEN, POSIX, READ, RENAME, RMDIR, STAT,
                         TRUNCATE, UNLINK, WRITE)


def usable_traces(profile: JobProfile) -> dict[str, DxtTrace]:
    return {m: t for m, t in profile.dxt.items()
            if m in ("DXT_POSIX", "DXT_MPIIO") and t.readable and len(t)}


def traced(profile: JobProfile) -> bool:
    """The profile has per-call data (DXT segments) or metadata calls (a call trace) to replay."""
    return bool(usable_traces(profile)) or bool(profile.calls is not None and len(profile.calls))


def add_dxt(profile: JobProfile, builder: StreamBuilder, files: FileTable, *, think_time: bool) -> list[str]:
    """Add every traced operation; returns notes (derived offsets, partial traces)."""
    notes: list[str] = []
    traces = usable_traces(profile)
    via_mpiio = mpiio_ids(profile)
    traced: set[int] = set()  # record ids whose data the trace replays
    for module, trace in traces.items():
        mpi = module == "DXT_MPIIO"
        keep = np.isin(trace.record_id, np.fromiter(via_mpiio, np.uint64, len(via_mpiio)))
        keep = keep if mpi else ~keep
        names = {int(r): profile.name_of(int(r)) for r in np.unique(trace.record_id[keep])}
        keep &= ~np.isin(trace.record_id, [r for r, n in names.items() if is_pseudo_file(n)])
        if not keep.any():
            continue
        rid = trace.record_id[keep]
        ops = np.where(trace.op[keep] == DXT_WRITE, WRITE, READ).astype(np.int8)
        offset = trace.offset[keep].copy()
        length = trace.length[keep]
        rank = trace.rank[keep].astype(np.int32)
        urid, inv = np.unique(rid, return_inverse=True)
        ufid = np.array([files.add(int(r), names[int(r)], world=mpi and _collective_open(profile, int(r)))
                         for r in urid.tolist()], np.int32)
        fids = ufid[inv.reshape(-1)]
        api = np.full(len(rid), POSIX, np.int8)
        if mpi:
            offset, n_derived = _mpi_offsets(profile, traces.get("DXT_POSIX"), rank, rid, ops, offset, length)
            if n_derived:
                notes.append(f"{n_derived} MPI-IO operations without a traced offset: offsets taken "
                             "from the POSIX trace or laid out per rank")
            api = _mpi_apis(profile, rank, rid, ops, length)
        start, end = trace.start[keep], trace.end[keep]
        gap = _gaps(rank, start, end) if think_time else None
        builder.add_data(rank, ops, fids, offset, length, api, start, gap)
        traced.update(int(r) for r in np.unique(rid))
        if trace.note:
            notes.append(f"{module}: {trace.note}")
    called = _add_calls(profile, builder, files)
    if called:
        notes.append(f"{len(profile.calls)} metadata calls on {len(called)} files and directories replayed "
                     "one by one as traced (open, close, stat, fsync, unlink, mkdir, rmdir, rename, link, "
                     "truncate)")
    _add_metadata(profile, builder, files, traced - called)
    synthesize(profile, builder, files, skip=traced | called)  # what the trace does not cover
    return notes


# CALL_OPS (advisor.profile) -> the replay's op and its place among ops of the same instant
_CALL_ROWS = {"open": (OPEN, SUB_OPEN), "close": (CLOSE, SUB_CLOSE), "stat": (STAT, SUB_STAT),
              "fsync": (FSYNC, SUB_FSYNC), "unlink": (UNLINK, SUB_CLOSE), "mkdir": (MKDIR, SUB_OPEN),
              "rmdir": (RMDIR, SUB_CLOSE), "rename": (RENAME, SUB_CLOSE), "link": (LINK, SUB_CLOSE),
              "truncate": (TRUNCATE, SUB_FSYNC)}


def _add_calls(profile: JobProfile, builder: StreamBuilder, files: FileTable) -> set[int]:
    """A call trace's metadata calls, one row each at its time, on the files and directories
    not opened through MPI-IO (those replay at the MPI-IO level); returns their record ids."""
    calls = profile.calls
    if calls is None or not len(calls):
        return set()
    via_mpiio = np.fromiter(mpiio_ids(profile), np.uint64)
    # renames, links and truncates act on the file system whatever interface opened the file
    naming = np.isin(calls.op, [CALL_OPS.index(n) for n in ("rename", "link", "truncate")])
    on_mpiio = np.isin(calls.record_id, via_mpiio)
    keep = ~on_mpiio | naming
    rid = calls.record_id[keep]
    target = calls.target[keep] if calls.target is not None else np.zeros(rid.size, np.uint64)
    urid, inv = np.unique(np.concatenate((rid, target[target != 0])), return_inverse=True)
    fids = np.array([files.add(int(r), profile.name_of(int(r))) for r in urid.tolist()], np.int32)[inv.reshape(-1)]
    peer = np.full(rid.size, -1, np.int32)
    peer[target != 0] = fids[rid.size:]
    length = calls.length[keep] if calls.length is not None else np.full(rid.size, -1, np.int64)
    op = np.array([_CALL_ROWS[name][0] for name in CALL_OPS], np.int8)[calls.op[keep]]
    sub = np.array([_CALL_ROWS[name][1] for name in CALL_OPS], np.int64)[calls.op[keep]]
    builder.add_rows(calls.rank[keep], op, fids[:rid.size], calls.start[keep], sub, POSIX, peer=peer,
                     length=np.maximum(length, 0))
    return {int(r) for r in np.unique(rid[~on_mpiio[keep]]).tolist()}  # MPI-IO files: opens from counters


def _gaps(rank: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Think time before each op: idle time since the rank's previous op ended (not negative)."""
    order = np.lexsort((start, rank))
    gap = np.zeros(len(rank), np.float32)
    s, e, r = start[order], end[order], rank[order]
    g = np.maximum(s[1:] - np.maximum.accumulate(e)[:-1], 0)
    gap[order[1:]] = np.where(r[1:] == r[:-1], g, 0)
    return gap


def _collective_open(profile: JobProfile, record_id: int) -> bool:
    recs = profile.records.get("MPI-IO")
    if recs is None or "MPIIO_COLL_OPENS" not in recs.counters:
        return False
    rows = recs.ids == np.uint64(record_id)
    return bool((recs.counters["MPIIO_COLL_OPENS"][rows] > 0).any())


def _groups(rank: np.ndarray, rid: np.ndarray, ops: np.ndarray) -> dict[tuple[int, int, int], np.ndarray]:
    """Row indices (in trace order) of every (rank, record, op)."""
    order = np.lexsort((np.arange(len(rank)), ops, rid, rank))
    r, f, o = rank[order], rid[order], ops[order]
    cut = np.flatnonzero(np.concatenate([[True], (r[1:] != r[:-1]) | (f[1:] != f[:-1]) | (o[1:] != o[:-1]),
                                         [True]]))
    return {(int(r[a]), int(f[a]), int(o[a])): order[a:b] for a, b in zip(cut[:-1], cut[1:])}


def _mpi_offsets(profile, posix: DxtTrace | None, rank, rid, ops, offset, length):
    """MPI-IO offsets the trace left at -1 (non-explicit-offset calls): the matching POSIX
    operations of the same rank and file when they correspond one to one, otherwise each
    rank's operations laid out contiguously, rank after rank."""
    missing = offset < 0
    if not missing.any():
        return offset, 0
    out = offset.copy()
    groups = _groups(rank, rid, ops)
    stride: dict[int, int] = {}  # per file: the most any rank moves in one direction
    for (_rank, f, _op), sel in groups.items():
        stride[f] = max(stride.get(f, 0), int(length[sel].sum()))
    for (r, f, op), sel in groups.items():
        if not missing[sel].any():
            continue
        lens = length[sel]
        px = _posix_match(posix, r, f, op, lens)
        out[sel] = px if px is not None else r * stride[f] + np.concatenate([[0], np.cumsum(lens)[:-1]])
    return out, int(missing.sum())


def _posix_match(posix: DxtTrace | None, rank: int, rid: int, op: int, lens: np.ndarray):
    if posix is None:
        return None
    dxt_op = 1 if op == WRITE else 0
    sel = (posix.rank == rank) & (posix.record_id == np.uint64(rid)) & (posix.op == dxt_op)
    if int(sel.sum()) != len(lens) or not np.array_equal(posix.length[sel], lens):
        return None
    return posix.offset[sel]


def _mpi_apis(profile: JobProfile, rank, rid, ops, length) -> np.ndarray:
    """Collective or independent per operation, from the MPI-IO counters: per rank its share
    of the collective calls, given to its largest requests (data is collective, metadata not)."""
    api = np.full(len(rank), MPIIO, np.int8)
    recs = profile.records.get("MPI-IO")
    if recs is None:
        return api
    rc = RecordCounters(recs, VIEWS[2])
    nprocs = max(profile.job.nprocs, 1)
    rows = {(int(recs.ids[i]), int(recs.ranks[i])): i for i in range(len(recs))}
    for (r, f, code), sel in _groups(rank, rid, ops).items():
        row, shared = rows.get((f, r)), False
        if row is None:
            row, shared = rows.get((f, SHARED_RANK)), True
        if row is None:
            continue
        kind = "WRITE" if code == WRITE else "READ"
        coll = rc.get(row, f"COLL_{kind}S") + rc.get(row, f"SPLIT_{kind}S")
        n = split_even(coll, nprocs, r) if shared else coll
        api[sel[np.argsort(-length[sel], kind="stable")[:n]]] = MPIIO_COLL
    return api


def _add_metadata(profile: JobProfile, builder: StreamBuilder, files: FileTable, traced: set[int]) -> None:
    """Opens, fsyncs and stats of traced files, from the counters of their replay level."""
    via_mpiio = mpiio_ids(profile)
    nprocs = max(profile.job.nprocs, 1)
    for view in VIEWS:
        recs = profile.records.get(view.module)
        if recs is None or view.module == "STDIO":
            continue
        rc = RecordCounters(recs, view)
        for row in range(len(recs)):
            rid, owner = int(recs.ids[row]), int(recs.ranks[row])
            if rid not in traced or (view.module == "POSIX" and rid in via_mpiio):
                continue
            fid = files.add(rid, profile.name_of(rid))
            ranks = list(range(nprocs)) if owner == SHARED_RANK else [owner]
            for k, r in enumerate(ranks):
                fm = builder.file_meta(r, fid)
                fm.api = view.api
                fm.time = rc.fget(row, "OPEN_START_TIMESTAMP")
                if files.world[fid]:
                    fm.indep_opens = split_even(rc.get(row, "INDEP_OPENS"), len(ranks), k)
                else:
                    fm.opens = split_even(rc.total(row, view.opens), len(ranks), k)
                fm.fsyncs = split_even(rc.total(row, view.fsyncs), len(ranks), k)
                fm.stats = split_even(rc.total(row, view.stats), len(ranks), k)
