"""The counted calls of every rank, resolved with array operations: which file each call is on,
at what offset, how many bytes it moves.

Calls are kept only where a plan counts them (POSIX/STDIO on a traced path, MPI-IO, HDF5), in
rank then call order. What a call does depends on the calls before it on the same rank and file
(the file position after ``open``/``lseek``/``read``, the MPI-IO handle bound by
``MPI_File_open``, the view set by ``MPI_File_set_view``): each is a scan within the calls of one
(rank, file) or (rank, handle), done as a sorted segment with cumulative sums. HDF5 ids carry no
names; their binding is a short walk per rank, done once per distinct sequence of HDF5 calls
(ranks of one job usually make the same).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.ingest.recorder import calls as C
from advisor.ingest.recorder.plans import FILES, HDF5, MODES, K, M, MPIIO, PlanTable

_ACCESS = (K[C.READ], K[C.WRITE])


@dataclass
class Calls:
    """Counted calls of all ranks (rank, then call order) and the plan row of each."""

    rank: np.ndarray  # int32
    call: np.ndarray  # int64 call number over the whole trace (rank's first call + index)
    parent: np.ndarray  # int64 call number of the caller (call depth one less), -1 at depth 0
    gid: np.ndarray  # int32 signature
    start: np.ndarray  # float64
    end: np.ndarray

    @classmethod
    def concat(cls, chunks: list[tuple]) -> Calls:
        if not chunks:
            return cls(*(np.zeros(0, t) for t in (np.int32, np.int64, np.int64, np.int32, float, float)))
        return cls(*(np.concatenate(col) for col in zip(*chunks)))

    def __len__(self) -> int:
        return int(self.gid.size)


@dataclass
class Resolved:
    """Per counted call: its record (name id; -1 not counted), offset and bytes."""

    name: np.ndarray  # int64 string id of the file or dataset record, -1 when the call counts nowhere
    module: np.ndarray  # int8 index in plans.MODULES
    kind: np.ndarray  # int8 index in plans.KINDS
    offset: np.ndarray  # int64 byte offset of reads and writes (-1 elsewhere)
    size: np.ndarray  # int64 bytes of reads and writes
    file: np.ndarray  # int64 string id of an H5D record's file (-1 elsewhere)
    via: np.ndarray | None = None  # uint8 per HDF5 call: VIA_MPIIO | VIA_COLLECTIVE of the MPI-IO calls it made
    io_below: np.ndarray | None = None  # float64 per call: seconds its direct callees spent reading, writing, syncing
    # float64 seconds and int64 bytes per H5D open call of its direct callees' fill-value writes (not in io_below)
    fill_below: np.ndarray | None = None
    fill_bytes: np.ndarray | None = None


def resolve(calls: Calls, plans: PlanTable) -> Resolved:
    """Name, offset and bytes of every counted call (docs/ingest.md, "The profile")."""
    gid = calls.gid
    group = plans["group"][gid]
    kind = plans["kind"][gid].astype(np.int8)
    out = Resolved(np.full(len(calls), -1, np.int64), plans["module"][gid].astype(np.int8), kind,
                   np.full(len(calls), -1, np.int64), np.zeros(len(calls), np.int64),
                   np.full(len(calls), -1, np.int64))
    files = np.flatnonzero(group == FILES)
    _files(calls, plans, files, out)
    below = _moved_below(calls, files, out)
    mpiio = np.flatnonzero(group == MPIIO)
    _mpiio(calls, plans, mpiio, below, _placed_below(calls, files, out), out)
    mpi_below = _moved_below(calls, mpiio[out.name[mpiio] >= 0], out)
    hdf5 = np.flatnonzero(group == HDF5)
    _hdf5(calls, plans, hdf5, np.where(mpi_below > 0, mpi_below, below), out)
    out.via = _via_mpiio(calls, plans, mpiio)
    out.io_below, out.fill_below, out.fill_bytes = _io_below(calls, np.concatenate((files, mpiio)), out)
    return out


VIA_MPIIO, VIA_COLLECTIVE = 1, 2
_COLLECTIVE_MODES = [MODES.index("coll"), MODES.index("split")]


def _via_mpiio(calls: Calls, plans: PlanTable, mpiio: np.ndarray) -> np.ndarray:
    """Per call, what its direct callees did in MPI-IO: VIA_MPIIO when one was an MPI-IO call,
    plus VIA_COLLECTIVE when one was a collective access. What HDF5 did beneath its calls is the
    driver and transfer mode the application chose (``H5Pset_fapl_mpio``, ``H5Pset_dxpl_mpio``),
    which Darshan reports as H5F_USE_MPIIO and H5D_USE_MPIIO_COLLECTIVE."""
    ones = np.ones(len(calls), np.int64)
    via = (_children_bytes(calls, mpiio, ones) > 0).astype(np.uint8) * VIA_MPIIO
    collective = mpiio[np.isin(plans["mode"][calls.gid[mpiio]], _COLLECTIVE_MODES)]
    via |= (_children_bytes(calls, collective, ones) > 0).astype(np.uint8) * VIA_COLLECTIVE
    return via


_MOVING = (K[C.READ], K[C.WRITE], K[C.SYNC])


# HDF5's metadata writes are object headers and B-tree nodes (its metadata blocks: 2 KiB by default);
# a write this large beneath H5Dcreate is the dataset's space being filled with its fill value
FILL_MIN = 64 << 10


def _io_below(calls: Calls, below: np.ndarray, out: Resolved) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per call, the seconds its direct callees among `below` (POSIX and MPI-IO calls) spent reading,
    writing and syncing: beneath HDF5's metadata calls, the metadata I/O that collective metadata and
    larger metadata blocks act on, not the file's opens and closes nor HDF5's waits for the other ranks.
    Apart, the seconds and bytes of the writes of FILL_MIN or more beneath a dataset's creation: parallel
    HDF5 allocates a dataset's space when it creates it and writes the fill value into it (a collective
    write of 2 MiB chunks wrote each chunk twice), which H5Pset_fill_time NEVER removes, no metadata setting."""
    sel = below[np.isin(out.kind[below], _MOVING)]
    at, found = _callers(calls, sel)
    caller, callee = at[found], sel[found]
    fill = (out.module[caller] == M["H5D"]) & (out.kind[caller] == K[C.OPEN]) \
        & (out.kind[callee] == K[C.WRITE]) & (out.size[callee] >= FILL_MIN)
    dur = (calls.end - calls.start)[callee]
    seconds, fill_seconds, fill_bytes = np.zeros(len(calls)), np.zeros(len(calls)), np.zeros(len(calls), np.int64)
    np.add.at(seconds, caller[~fill], dur[~fill])
    np.add.at(fill_seconds, caller[fill], dur[fill])
    np.add.at(fill_bytes, caller[fill], out.size[callee[fill]])
    return seconds, fill_seconds, fill_bytes


def stable_order(key: np.ndarray) -> np.ndarray:
    """The order sorting non-negative integer keys, equal keys in their given order: radix passes
    of 16 bits (numpy sorts uint16 stably by radix: several times faster than a merge sort)."""
    top = int(key.max(initial=0))
    if top >= 1 << 48:
        return np.lexsort((np.arange(key.size), key))
    order = np.arange(key.size)
    shift = 0
    while not shift or top >> shift:
        digit = ((key[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
        shift += 16
    return order


def _segments(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An order grouping equal keys with call order kept inside, and where each group starts."""
    order = np.lexsort((np.arange(keys[0].size), *keys[::-1]))
    same = np.zeros(order.size, bool)
    same[1:] = True
    for key in keys:
        k = key[order]
        same[1:] &= k[1:] == k[:-1]
    return order, ~same


def _last_before(first: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """Index of the last `mark`ed call before each call within its segment, -1 when none."""
    idx = np.arange(first.size)
    last = np.maximum.accumulate(np.where(mark, idx, -1)) if first.size else idx
    prev = np.concatenate(([-1], last[:-1]))
    start = np.maximum.accumulate(np.where(first, idx, 0)) if first.size else idx
    return np.where(prev >= start, prev, -1)


def _scan(first: np.ndarray, is_set: np.ndarray, set_value: np.ndarray, step: np.ndarray) -> np.ndarray:
    """A value carried through each segment in order: `is_set` calls set it to `set_value`, every
    call adds its `step` after it acts; returns the value each call finds (segments start at 0)."""
    idx = np.arange(first.size)
    csum = np.concatenate(([0], np.cumsum(step)))  # csum[i]: the steps of calls before i
    prev = _last_before(first, is_set)
    start = np.maximum.accumulate(np.where(first, idx, 0)) if first.size else idx
    at = np.maximum(prev, 0)
    return np.where(prev >= 0, set_value[at] + csum[idx] - csum[at], csum[idx] - csum[start])


def _files(calls: Calls, plans: PlanTable, idx: np.ndarray, out: Resolved) -> None:
    """POSIX and STDIO: reads and writes without an offset are at the file position, which opens
    set to 0, ``lseek`` moves (whence 0 sets, 1 adds, else from the highest byte yet) and which
    advances by the bytes moved. One position per (rank, path), as Darshan follows it."""
    gid = calls.gid[idx]
    path = plans["target"][gid]
    kind = out.kind[idx]
    size = plans["size"][gid]
    offset = plans["offset"][gid]
    tracked = plans["tracked"][gid]
    whence = plans["whence"][gid]
    access = np.isin(kind, _ACCESS)
    order, first = _segments(calls.rank[idx], path)
    k, sz, off, tr, wh, acc = (a[order] for a in (kind, size, offset, tracked, whence, access))
    seek = k == K[C.SEEK]
    is_set = (k == K[C.OPEN]) | (seek & (wh == 0))
    step = np.where(acc & ~tr, sz, 0) + np.where(seek & (wh == 1), off, 0)
    position = _scan(first, is_set, np.where(seek, off, 0), step)
    from_end = seek & (wh >= 2)
    if from_end.any():  # whence SEEK_END and beyond: the position follows the bytes seen, walked
        segment = np.cumsum(first) - 1
        seeks_so = np.zeros(int(segment[-1]) + 1, bool)
        seeks_so[segment[from_end]] = True
        walk = seeks_so[segment]  # only the files that seek so
        position[walk] = _positions_from_end(first[walk], k[walk], sz[walk], off[walk], tr[walk], wh[walk],
                                             acc[walk])
    position = np.maximum(position, 0)  # (a file position is never before the file's start)
    placed = np.where(tr, off, position)
    result = np.empty_like(placed)
    result[order] = placed
    out.name[idx] = path
    out.offset[idx] = np.where(access, result, -1)
    out.size[idx] = np.where(access, size, 0)


def _positions_from_end(first, kind, size, offset, tracked, whence, access) -> np.ndarray:
    """The file position call by call of the files a trace seeks from the end of. Recorder records
    lseek's arguments, not the position it returns, nor the size of a file the job did not write
    (Python seeks 22 bytes before the end of its script): each file is given the smallest size at
    its first open that no seek lands before byte 0 with, so the positions keep their distances
    (a read 4 KiB before the end, then one 8 KiB back: 4096 and 0). Before, such a trace was refused
    for a negative offset."""
    segment = np.cumsum(first) - 1
    start = np.zeros(int(segment[-1]) + 1, np.int64)
    for _ in range(8):  # a size found for one seek can move the file's later seeks from the end
        position = _walk_positions(first, kind, size, offset, tracked, whence, access, start[segment])
        short = np.zeros_like(start)
        np.minimum.at(short, segment, position)
        if not short.any():
            break
        start -= short
    return position


def _walk_positions(first, kind, size, offset, tracked, whence, access, start) -> np.ndarray:
    """The file position call by call, each file `start` bytes long at its first call."""
    position = np.zeros(first.size, np.int64)
    pos = seen = 0
    for i, (f, k, sz, off, tr, wh, acc, s0) in enumerate(zip(
            first.tolist(), kind.tolist(), size.tolist(), offset.tolist(), tracked.tolist(), whence.tolist(),
            access.tolist(), start.tolist())):
        if f:
            pos, seen = 0, s0
        position[i] = pos
        if acc:
            at = off if tr else pos
            seen = max(seen, at + sz)
            if not tr:
                pos = at + sz
        elif k == K[C.OPEN]:
            pos = 0
        elif k == K[C.SEEK] and wh >= 0:
            pos = off + (0 if wh == 0 else pos if wh == 1 else seen)
    return position


def _callers(calls: Calls, children: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each child's caller among the counted calls, whether it was counted)."""
    parent = calls.parent[children]
    at = np.searchsorted(calls.call, parent)
    found = (parent >= 0) & (at < len(calls))
    found[found] = calls.call[at[found]] == parent[found]
    return at, found


def _children_bytes(calls: Calls, children: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per counted call, the bytes its direct callees among `children` moved."""
    total = np.zeros(len(calls), np.int64)
    at, found = _callers(calls, children)
    np.add.at(total, at[found], size[children[found]])
    return total


def _moved_below(calls: Calls, children: np.ndarray, out: Resolved) -> np.ndarray:
    """Per counted call, the bytes its direct callees among `children` moved in the same direction:
    a write's bytes are the writes below it, not the reads ROMIO's read-modify-write makes there
    (a collective write with holes reads each block before writing it: counting both doubled it)."""
    moved = np.zeros(len(calls), np.int64)
    for op in _ACCESS:
        mine = out.kind == op
        moved[mine] = _children_bytes(calls, children[out.kind[children] == op], out.size)[mine]
    return moved


def _placed_below(calls: Calls, children: np.ndarray, out: Resolved) -> np.ndarray:
    """Per counted call, the lowest offset its direct callees among `children` read or wrote in the
    call's own direction, -1 when they moved nothing."""
    lowest = np.full(len(calls), np.iinfo(np.int64).max)
    for op in _ACCESS:
        kids = children[(out.kind[children] == op) & (out.offset[children] >= 0)]
        at, found = _callers(calls, kids)
        at, kids = at[found], kids[found]
        mine = out.kind[at] == op
        np.minimum.at(lowest, at[mine], out.offset[kids[mine]])
    return np.where(lowest == np.iinfo(np.int64).max, -1, lowest)


def _mpiio(calls: Calls, plans: PlanTable, idx: np.ndarray, below: np.ndarray, placed: np.ndarray,
           out: Resolved) -> None:
    """MPI-IO: a handle names the file of the ``MPI_File_open`` that returned it, until closed; an
    access is at its view's displacement plus its offset in etypes, or at the handle's pointer. On a
    view whose filetype is derived (its layout is not traced) an access is where the POSIX calls
    below it start, as Darshan's ``MPI_File_get_byte_offset`` would place it, where it made any."""
    gid = calls.gid[idx]
    kind = out.kind[idx]
    is_open = kind == K[C.OPEN]
    handle = np.where(is_open, plans["handle"][gid], plans["target"][gid])
    order, first = _segments(calls.rank[idx], handle)
    k = kind[order]
    g = gid[order]
    opened, view = k == K[C.OPEN], k == K[C.VIEW]
    # the open or close before each call on its handle: an open binds the handle to its path
    bound = _last_before(first, opened | (k == K[C.CLOSE]))
    at = np.maximum(bound, 0)
    path = np.where(opened, plans["target"][g], np.where((bound >= 0) & opened[at], plans["target"][g[at]], -1))
    access = np.isin(k, _ACCESS)
    size = plans["size"][g]
    size = np.where(access & (size < 0), below[idx][order], size)
    tracked = plans["tracked"][g]
    # the view in force: the last open or set_view before the call (an open's: displacement 0, bytes)
    resets = opened | view
    last_view = _last_before(first, resets)
    at = np.maximum(last_view, 0)
    has_view = (last_view >= 0) & view[at]
    disp = np.where(has_view, plans["offset"][g[at]], 0)
    etype = np.where(has_view, plans["size"][g[at]], 1)
    # MPI_File_seek moves the individual pointer, in etypes of the view (the shared one: not followed)
    seek = (k == K[C.SEEK]) & (plans["mode"][g] != MODES.index("shared"))
    whence, moved = plans["whence"][g], plans["offset"][g] * etype
    seek_set = seek & (whence == 0)
    step = np.where(access & ~tracked, size, 0) + np.where(seek & (whence == 1), moved, 0)
    pointer = _scan(first, resets | seek_set, np.where(seek_set, moved, 0), step)
    offset = np.where(tracked, disp + plans["offset"][g] * etype, disp + pointer)
    lowest = placed[idx][order]
    offset = np.where(has_view & plans["derived"][g[at]] & (lowest >= 0), lowest, offset)
    n = order.size
    counted = path >= 0
    unsort = np.empty_like(order)
    unsort[order] = np.arange(n)
    out.name[idx] = np.where(counted, path, -1)[unsort]
    out.offset[idx] = np.where(access & counted, offset, -1)[unsort]
    out.size[idx] = np.where(access & counted, size, 0)[unsort]


def _hdf5(calls: Calls, plans: PlanTable, idx: np.ndarray, below: np.ndarray, out: Resolved) -> None:
    """HDF5 ids are not names: a file is the one ``H5Fcreate``/``H5Fopen`` opened last and not yet
    closed on the rank; a dataset id is bound to the name of the ``H5Dcreate``/``H5Dopen`` before
    its first use. The walk is done once per distinct sequence of HDF5 signatures."""
    if not idx.size:
        return
    rank = calls.rank[idx]
    cuts = np.flatnonzero(np.diff(rank)) + 1
    bounds = zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [idx.size])).tolist())
    walks: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
    names = np.full(idx.size, -1, np.int64)
    files = np.full(idx.size, -1, np.int64)
    gid = calls.gid[idx]
    for lo, hi in bounds:
        key = gid[lo:hi].tobytes()
        if key not in walks:
            walks[key] = _bind_hdf5(gid[lo:hi].tolist(), plans)
        names[lo:hi], files[lo:hi] = walks[key]
    kind = out.kind[idx]
    access = np.isin(kind, _ACCESS) & (out.module[idx] == M["H5D"]) & (names >= 0)
    out.name[idx] = names
    out.file[idx] = files
    out.size[idx] = np.where(access, below[idx], 0)


def _bind_hdf5(gids: list[int], plans: PlanTable) -> tuple[np.ndarray, np.ndarray]:
    """(record name id, file name id) of each HDF5 call of one rank; -1 where it counts nowhere."""
    module, kind, target = plans["module"], plans["kind"], plans["target"]
    strings = plans.strings
    h5f, opened, closed = M["H5F"], K[C.OPEN], K[C.CLOSE]
    stack: list[int] = []
    datasets: dict[int, int] = {}  # open dataset id -> its record name
    pending = -1
    names, files = [-1] * len(gids), [-1] * len(gids)
    for i, g in enumerate(gids):
        mod, k, t = module[g], kind[g], target[g]
        if mod == h5f:
            if k == opened and strings[t]:
                stack.append(t)
            if stack:
                names[i] = stack[-1]
                if k == K[C.CLOSE]:
                    stack.pop()
                    datasets.clear()
            continue
        if not stack:
            continue
        file = stack[-1]
        files[i] = file
        if k == opened:
            pending = names[i] = plans.intern(f"{strings[file]}:/{strings[t]}")
            continue
        record = datasets.get(t)
        if record is None:
            record = datasets[t] = pending if pending >= 0 else plans.intern(f"{strings[file]}:/?")
            pending = -1
        names[i] = record
        if k == closed:
            datasets.pop(t, None)
    return np.array(names, np.int64), np.array(files, np.int64)
