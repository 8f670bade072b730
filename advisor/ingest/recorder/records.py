"""Calls of one rank -> Darshan-like counters per (module, file, rank) and DXT-like segments.

Counters keep Darshan's names and meaning (POSIX_SEQ_WRITES, MPIIO_COLL_WRITES, H5D_BYTES_WRITTEN,
...) so that every fact and rule reads a Recorder trace as it reads a log. Where an argument does
not carry a value Darshan measures, it is derived from the calls nested below (docs/ingest.md):
an MPI-IO call on a derived datatype moves the bytes of its POSIX calls, an H5Dread/H5Dwrite the
bytes of its MPI-IO (or POSIX) calls.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from typing import Any, NamedTuple

import numpy as np

from advisor.ingest.recorder import calls as C
from advisor.ingest.recorder.format import RankCalls
from advisor.profile import DXT_READ, DXT_WRITE
from replay.plan import SIZE_BIN_EDGES, SIZE_BIN_NAMES

PREFIX = {"POSIX": "POSIX", "STDIO": "STDIO", "MPI-IO": "MPIIO", "H5F": "H5F", "H5D": "H5D"}
# Darshan names the size bins of the calls an application makes to a library "aggregate" (the sizes of
# the whole call, its datatype or selection): MPIIO_SIZE_WRITE_AGG_*, H5D_SIZE_WRITE_AGG_*; POSIX's are plain
AGGREGATE_BINS = ("MPI-IO", "H5D")
_TIME = {C.READ: "F_READ_TIME", C.WRITE: "F_WRITE_TIME", C.SYNC: "F_WRITE_TIME"}
_OPS = {("POSIX", C.OPEN): "OPENS", ("POSIX", C.SEEK): "SEEKS", ("POSIX", C.STAT): "STATS",
        ("STDIO", C.OPEN): "OPENS", ("STDIO", C.SEEK): "SEEKS", ("MPI-IO", C.SYNC): "SYNCS",
        ("MPI-IO", C.VIEW): "VIEWS", ("H5F", C.OPEN): "OPENS", ("H5F", C.FLUSH): "FLUSHES",
        ("H5D", C.OPEN): "OPENS"}


class FileRecord:
    """Counters of one file (or dataset) on one rank, and the state Darshan keeps to count them."""

    __slots__ = ("module", "name", "rank", "counters", "last_byte", "last_op", "sizes", "file")

    def __init__(self, module: str, name: str, rank: int, file: str = ""):
        self.module, self.name, self.rank, self.file = module, name, rank, file
        self.counters: dict[str, float] = defaultdict(float)
        self.last_byte = {C.READ: 0, C.WRITE: 0}
        self.last_op = ""
        self.sizes: Counter[int] = Counter()

    def add(self, counter: str, value: float = 1) -> None:
        self.counters[counter] += value

    def span(self, what: str, start: float, end: float) -> None:
        """First start and last end of an operation kind (Darshan's F_*_START/END_TIMESTAMP)."""
        first, last = _SPAN[what]
        c = self.counters
        c[first] = start if first not in c else min(c[first], start)
        if end > c[last]:
            c[last] = end

    def access(self, op: str, offset: int, size: int, seconds: float, mode: str) -> None:
        """One read or write: counts, bytes, sizes, sequentiality and switches as Darshan does."""
        names = _ACCESS[(op, mode, self.module in AGGREGATE_BINS)]
        c = self.counters
        c[names.ops] += 1
        c[names.moved] += size
        self.sizes[size] += 1
        c[names.bins[bisect_left(_EDGES, size)]] += 1
        if offset >= 0 and self.module != "MPI-IO":
            last = self.last_byte[op]
            if last < offset:
                c[names.seq] += 1
                if last + 1 == offset:
                    c[names.consec] += 1
            self.last_byte[op] = end = offset + size - 1
            if end > c[names.max_byte]:
                c[names.max_byte] = end
        if self.last_op and self.last_op != op:
            c["RW_SWITCHES"] += 1
        self.last_op = op
        if seconds > c[names.max_time]:
            c[names.max_time] = seconds
            c[names.max_time_size] = size


class _Names(NamedTuple):
    ops: str
    moved: str
    bins: tuple[str, ...]
    seq: str
    consec: str
    max_byte: str
    max_time: str
    max_time_size: str


def _access_names(op: str, mode: str, aggregate: bool) -> _Names:
    word, past = ("READ", "READS") if op == C.READ else ("WRITE", "WRITES")
    agg = "AGG_" if aggregate else ""
    return _Names(f"{mode.upper()}_{past}" if mode else past,
                  "BYTES_READ" if op == C.READ else "BYTES_WRITTEN",
                  tuple(f"SIZE_{word}_{agg}{b}" for b in SIZE_BIN_NAMES), f"SEQ_{past}", f"CONSEC_{past}",
                  "MAX_BYTE_READ" if op == C.READ else "MAX_BYTE_WRITTEN", f"F_MAX_{word}_TIME",
                  f"MAX_{word}_TIME_SIZE")


_ACCESS = {(op, mode, agg): _access_names(op, mode, agg) for op in (C.READ, C.WRITE)
           for mode in ("", "indep", "coll", "split", "nb") for agg in (False, True)}
_SPAN = {w: (f"F_{w}_START_TIMESTAMP", f"F_{w}_END_TIMESTAMP") for w in ("OPEN", "CLOSE", "READ", "WRITE")}
_EDGES = SIZE_BIN_EDGES.tolist()


class RankState:
    """Walks the calls of one rank; fills :class:`FileRecord` s and segments."""

    def __init__(self, records: dict, segments: dict):
        self.records = records
        self.segments = segments
        self._plans: dict[tuple[int, tuple[str, ...]], Plan | None] = {}  # ranks share most signatures

    def record(self, module: str, name: str, rank: int, file: str = "") -> FileRecord:
        key = (module, name, rank)
        rec = self.records.get(key)
        if rec is None:
            rec = self.records[key] = FileRecord(module, name, rank, file)
        return rec

    def rank(self, calls: RankCalls, names: tuple[str, ...], layers: np.ndarray) -> None:
        """Count one rank's calls; arguments are read once per signature, not per call."""
        sig = calls.signatures
        plans = [self._plan(names, f, args) for f, args in zip(sig.func.tolist(), sig.args)]
        group = np.array([p.group if p else 0 for p in plans], np.int8)[calls.terminal]
        parent = _parents(calls.level)
        nbytes = np.zeros(len(calls), np.int64)
        layer = layers[calls.func]
        self._posix(calls, plans, np.flatnonzero(group == 1), nbytes)
        below = _children_sum(parent, nbytes, layer == C_POSIX)
        self._mpiio(calls, plans, np.flatnonzero(group == 2), nbytes, below)
        mpi_below = _children_sum(parent, nbytes, layer == C_MPIIO)
        self._hdf5(calls, plans, np.flatnonzero(group == 3), np.where(mpi_below > 0, mpi_below, below))

    def _plan(self, names: tuple[str, ...], func: int, args: tuple[str, ...]) -> Plan | None:
        key = (func, args)
        if key not in self._plans:
            self._plans[key] = plan(names[func] if func < len(names) else "", args)
        return self._plans[key]

    def _posix(self, calls: RankCalls, plans: list, idx: np.ndarray, nbytes: np.ndarray) -> None:
        pos: dict[str, int] = {}
        size_seen: dict[str, int] = {}
        rank = calls.rank
        for i, t, start, end in _walk(calls, idx):
            p = plans[t]
            spec, path = p.spec, p.target
            rec = self.record(spec.module, path, rank)
            kind = spec.kind
            if kind in (C.READ, C.WRITE):
                size = p.size
                offset = p.offset if spec.offset >= 0 else pos.get(path, 0)
                if spec.offset < 0:
                    pos[path] = offset + size
                size_seen[path] = max(size_seen.get(path, 0), offset + size)
                nbytes[i] = size
                rec.access(kind, offset, size, end - start, "")
                rec.add(_TIME[kind], end - start)
                rec.span(kind.upper(), start, end)
                self.segments[spec.module].append(
                    (rank, path, DXT_READ if kind == C.READ else DXT_WRITE, offset, size, start, end))
                continue
            if kind == C.SYNC:
                rec.add(_TIME[kind], end - start)
                rec.add(spec.counter)
                continue
            rec.add("F_META_TIME", end - start)
            if (spec.module, kind) in _OPS:
                rec.add(_OPS[(spec.module, kind)])
            if kind == C.OPEN:
                pos[path] = 0
                rec.span("OPEN", start, end)
            elif kind == C.CLOSE:
                rec.span("CLOSE", start, end)
            elif kind == C.SEEK and spec.whence >= 0:
                pos[path] = p.offset + (0 if p.extra == 0 else pos.get(path, 0) if p.extra == 1
                                        else size_seen.get(path, 0))

    def _mpiio(self, calls: RankCalls, plans: list, idx: np.ndarray, nbytes: np.ndarray,
               below: np.ndarray) -> None:
        handles: dict[str, str] = {}
        views: dict[str, tuple[int, int]] = {}
        pointer: dict[str, int] = {}
        rank = calls.rank
        for i, t, start, end in _walk(calls, idx):
            p = plans[t]
            spec = p.spec
            if spec.kind == C.OPEN:
                fh, path = p.extra, p.target
                handles[fh], views[fh], pointer[fh] = path, (0, 1), 0
                rec = self.record("MPI-IO", path, rank)
                rec.add("INDEP_OPENS" if p.size == 1 else "COLL_OPENS")
                rec.add("F_META_TIME", end - start)
                rec.span("OPEN", start, end)
                continue
            fh = p.target
            path = handles.get(fh)
            if path is None:
                continue
            rec = self.record("MPI-IO", path, rank)
            if spec.kind in (C.READ, C.WRITE):
                size = p.size if p.size >= 0 else int(below[i])
                disp, etype = views[fh]
                if spec.offset >= 0:
                    offset = disp + p.offset * etype
                else:
                    offset = disp + pointer[fh]
                    pointer[fh] += size
                nbytes[i] = size
                rec.access(spec.kind, offset, size, end - start, spec.mode)
                rec.add(_TIME[spec.kind], end - start)
                rec.span(spec.kind.upper(), start, end)
                self.segments["MPI-IO"].append(
                    (rank, path, DXT_READ if spec.kind == C.READ else DXT_WRITE, offset, size, start, end))
                continue
            rec.add(_TIME.get(spec.kind, "F_META_TIME"), end - start)
            if (spec.module, spec.kind) in _OPS:
                rec.add(_OPS[(spec.module, spec.kind)])
            if spec.kind == C.VIEW:
                views[fh] = (p.offset, p.size)
                pointer[fh] = 0
            elif spec.kind == C.CLOSE:
                rec.span("CLOSE", start, end)
                handles.pop(fh, None)

    def _hdf5(self, calls: RankCalls, plans: list, idx: np.ndarray, below: np.ndarray) -> None:
        """HDF5 ids are not names: a file is the one H5Fcreate/H5Fopen opened last and not yet
        closed; a dataset id is bound to the name of the H5Dcreate/H5Dopen before its first use."""
        files: list[str] = []
        datasets: dict[str, FileRecord] = {}  # open dataset id -> its record
        pending: FileRecord | None = None
        rank = calls.rank
        for i, t, start, end in _walk(calls, idx):
            p = plans[t]
            spec = p.spec
            if spec.module == "H5F":
                if spec.kind == C.OPEN and p.target:
                    files.append(p.target)
                if not files:
                    continue
                rec = self.record("H5F", files[-1], rank)
                rec.add("F_META_TIME", end - start)
                if (spec.module, spec.kind) in _OPS:
                    rec.add(_OPS[(spec.module, spec.kind)])
                if spec.kind in (C.OPEN, C.CLOSE):
                    rec.span(spec.kind.upper(), start, end)
                if spec.kind == C.CLOSE:
                    files.pop()
                    datasets.clear()
                continue
            if not files:
                continue
            if spec.kind == C.OPEN:
                pending = self.record("H5D", f"{files[-1]}:/{p.target}", rank, files[-1])
                pending.add("OPENS")
                pending.add("F_META_TIME", end - start)
                continue
            rec = datasets.get(p.target)
            if rec is None:
                rec = datasets[p.target] = pending or self.record("H5D", f"{files[-1]}:/?", rank, files[-1])
                pending = None
            if spec.kind in (C.READ, C.WRITE):
                size = int(below[i])
                rec.access(spec.kind, -1, size, end - start, "")
                rec.add(_TIME[spec.kind], end - start)
                continue
            rec.add("F_META_TIME", end - start)
            if spec.kind == C.CLOSE:
                datasets.pop(p.target, None)


class Plan(NamedTuple):
    """One signature's meaning: loop (1 POSIX/STDIO, 2 MPI-IO, 3 HDF5), its call and argument values."""

    group: int
    spec: C.Call
    target: str  # path, MPI file handle, HDF5 id or dataset name
    size: int = 0  # bytes (MPI-IO: -1 when the datatype is derived; view: etype size; open: 1 on COMM_SELF)
    offset: int = -1
    extra: Any = None  # lseek whence; MPI_File_open's handle


def plan(name: str, args: tuple[str, ...]) -> Plan | None:
    """How one call signature counts, or None when it does not (not I/O, not a traced file)."""
    spec = C.CALLS.get(name)
    if spec is None:
        return None

    def arg(k: int) -> str:
        return args[k] if 0 <= k < len(args) else ""

    if spec.module in ("POSIX", "STDIO"):
        path = arg(spec.path)
        if not C.traced_path(path):
            return None
        size = C.integer(arg(spec.size)) * (C.integer(arg(spec.nmemb)) if spec.nmemb >= 0 else 1)
        return Plan(1, spec, path, size, C.integer(arg(spec.offset)) if spec.offset >= 0 else -1,
                    C.integer(arg(spec.whence)) if spec.whence >= 0 else None)
    if spec.module == "MPI-IO":
        if spec.kind == C.OPEN:
            path = arg(1)
            return Plan(2, spec, path, int(arg(0) == "MPI_COMM_SELF"), extra=arg(4)) \
                if C.traced_path(path) else None
        if spec.kind in (C.READ, C.WRITE):
            tsize = C.MPI_TYPE_SIZES.get(arg(spec.size + 1))
            size = C.integer(arg(spec.size)) * tsize if tsize is not None else -1
            return Plan(2, spec, arg(0), size, C.integer(arg(spec.offset)) if spec.offset >= 0 else -1)
        if spec.kind == C.VIEW:
            return Plan(2, spec, arg(0), C.MPI_TYPE_SIZES.get(arg(2), 1), C.integer(arg(1)))
        return Plan(2, spec, arg(0))
    if spec.module == "H5F" and spec.kind == C.OPEN:
        return Plan(3, spec, arg(0) if C.traced_path(arg(0)) else "")
    if spec.module == "H5D" and spec.kind == C.OPEN:
        return Plan(3, spec, arg(1) or "?")
    return Plan(3, spec, arg(0))


C_POSIX, C_MPIIO = 0, 1  # layer numbers of format.POSIX and format.MPIIO


def _walk(calls: RankCalls, idx: np.ndarray):
    """(call index, signature, start, end) of the calls `idx`, as Python numbers."""
    return zip(idx.tolist(), calls.terminal[idx].tolist(), calls.tstart[idx].tolist(), calls.tend[idx].tolist())


def _parents(level: np.ndarray) -> np.ndarray:
    """Index of each call's caller (the last earlier call one level up), -1 at depth 0."""
    parent = np.full(level.size, -1, np.int64)
    for depth in range(1, int(level.max(initial=0)) + 1):
        here = np.flatnonzero(level == depth)
        above = np.flatnonzero(level == depth - 1)
        k = np.searchsorted(above, here) - 1
        parent[here] = np.where(k >= 0, above[np.maximum(k, 0)], -1)
    return parent


def _children_sum(parent: np.ndarray, values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """For each call, the sum of `values` over its direct callees where `mask` holds."""
    out = np.zeros(values.size, np.int64)
    sel = mask & (parent >= 0)
    np.add.at(out, parent[sel], values[sel])
    return out
