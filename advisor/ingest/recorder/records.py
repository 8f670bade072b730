"""Resolved calls -> Darshan-like counters per (module, file, rank) and DXT-like segments.

Counters keep Darshan's names and meaning (POSIX_SEQ_WRITES, MPIIO_COLL_WRITES, H5D_BYTES_WRITTEN,
...) so that every fact and rule reads a Recorder trace as it reads a log. Each counter is one
array operation over the calls of a module grouped by record (bincount, running maxima, sorted
segments), never a Python object per call or per record.
"""

from __future__ import annotations

import hashlib

import numpy as np

from advisor import arrays
from advisor.ingest.recorder import calls as C
from advisor.ingest.recorder.events import VIA_COLLECTIVE, VIA_MPIIO, Calls, Resolved, stable_order
from advisor.ingest.recorder.plans import COUNTERS, KINDS, MODES, K, PlanTable
from advisor.profile import DXT_READ, DXT_WRITE, DxtTrace, ModuleRecords
from replay.plan import SIZE_BIN_EDGES, SIZE_BIN_NAMES

PREFIX = {"POSIX": "POSIX", "STDIO": "STDIO", "MPI-IO": "MPIIO", "H5F": "H5F", "H5D": "H5D"}
# Darshan names the size bins of the calls an application makes to a library "aggregate" (the sizes of
# the whole call, its datatype or selection): MPIIO_SIZE_WRITE_AGG_*, H5D_SIZE_WRITE_AGG_*; POSIX's are plain
AGGREGATE_BINS = ("MPI-IO", "H5D")
_SPANS = {"POSIX": (C.OPEN, C.CLOSE, C.READ, C.WRITE), "STDIO": (C.OPEN, C.CLOSE, C.READ, C.WRITE),
          "MPI-IO": (C.OPEN, C.CLOSE, C.READ, C.WRITE), "H5F": (C.OPEN, C.CLOSE), "H5D": ()}
_OPS = {("POSIX", C.OPEN): "OPENS", ("POSIX", C.SEEK): "SEEKS", ("POSIX", C.STAT): "STATS",
        ("STDIO", C.OPEN): "OPENS", ("STDIO", C.SEEK): "SEEKS", ("MPI-IO", C.SYNC): "SYNCS",
        ("MPI-IO", C.VIEW): "VIEWS", ("H5F", C.OPEN): "OPENS", ("H5F", C.FLUSH): "FLUSHES",
        ("H5D", C.OPEN): "OPENS"}
_TIME = {C.READ: "F_READ_TIME", C.WRITE: "F_WRITE_TIME", C.SYNC: "F_WRITE_TIME"}
_WORD = {C.READ: ("READ", "READS", "BYTES_READ", "MAX_BYTE_READ"),
         C.WRITE: ("WRITE", "WRITES", "BYTES_WRITTEN", "MAX_BYTE_WRITTEN")}


def record_id(name: str) -> int:
    """A stable 64-bit id per file name (Darshan hashes names too; the values differ)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def record_ids(name_ids: np.ndarray, plans: PlanTable, names: dict[int, str] | None = None) -> np.ndarray:
    """uint64 record id of each string id, hashed once per distinct name (and listed in `names`)."""
    # string ids are small integers: a table indexed by them, no sort of the calls
    uniq = np.flatnonzero(np.bincount(name_ids, minlength=1)) if name_ids.size else name_ids
    ids = [record_id(plans.strings[n]) for n in uniq.tolist()]
    if names is not None:
        names.update(zip(ids, (plans.strings[n] for n in uniq.tolist())))
    table = np.zeros(int(uniq[-1]) + 1 if uniq.size else 0, np.uint64)
    table[uniq] = ids
    return table[name_ids]


class Counters:
    """The columns of one module's records, filled counter by counter."""

    def __init__(self, module: str, nrec: int):
        self.prefix, self.nrec = PREFIX[module], nrec
        self.ints: dict[str, np.ndarray] = {}
        self.floats: dict[str, np.ndarray] = {}

    def add(self, name: str, rec: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Sum `weights` (or count calls) per record into counter `name` (F_*: seconds)."""
        floating = name.startswith("F_")
        column = np.bincount(rec, weights=weights, minlength=self.nrec)
        target = self.floats if floating else self.ints
        key = f"{self.prefix}_{name}"
        column = column if floating else np.rint(column).astype(np.int64)
        target[key] = target[key] + column if key in target else column

    def add_column(self, name: str, counts: np.ndarray) -> None:
        """Add counts already made per record to counter `name`."""
        key = f"{self.prefix}_{name}"
        self.ints[key] = self.ints[key] + counts if key in self.ints else counts.astype(np.int64)

    def set(self, name: str, column: np.ndarray) -> None:
        key = f"{self.prefix}_{name}"
        if name.startswith("F_"):
            self.floats[key] = column.astype(np.float64)
        else:
            self.ints[key] = column.astype(np.int64)


def module_records(module: str, calls: Calls, res: Resolved, sel: np.ndarray, plans: PlanTable,
                   names: dict[int, str]) -> ModuleRecords:
    """The records of one module from its counted calls `sel` (indices, in call order)."""
    name, rank = res.name[sel], calls.rank[sel].astype(np.int64)
    key = name * (int(rank.max()) + 1) + rank
    order = stable_order(key)
    new = np.ones(key.size, bool)
    new[1:] = key[order][1:] != key[order][:-1]
    inverse = np.empty(key.size, np.int64)
    inverse[order] = np.cumsum(new) - 1
    first = order[new]  # each (file, rank)'s first call: equal keys keep call order
    by_first = np.argsort(first)  # records in the order their first call came, as Darshan lists them
    rec = np.empty_like(by_first)
    rec[by_first] = np.arange(by_first.size)
    rec = rec[inverse.ravel()]
    heads = sel[first[by_first]]
    out = Counters(module, by_first.size)
    kind = res.kind[sel]
    dur = calls.end[sel] - calls.start[sel]
    _counts(module, out, rec, kind, plans, calls.gid[sel])
    for k in ("F_META_TIME", "F_READ_TIME", "F_WRITE_TIME"):
        mask = _time_mask(k, kind)
        if mask.any():
            out.add(k, rec[mask], dur[mask])
    if module == "MPI-IO" and res.io_below is not None:
        _own_time(out, rec, kind, plans["mode"][calls.gid[sel]], dur - res.io_below[sel])
    for span in _SPANS[module]:
        mask = kind == K[span]
        if mask.any():
            _span(out, span.upper(), rec[mask], calls.start[sel][mask], calls.end[sel][mask])
    access = (kind == K[C.READ]) | (kind == K[C.WRITE])
    if access.any():
        _accesses(module, out, rec[access], kind[access], res.offset[sel][access], res.size[sel][access],
                  dur[access])
    if module == "POSIX":
        _alignment(out, rec[access], res.offset[sel][access])
    _driver(module, out, rec, res.via[sel] if res.via is not None else None)
    if module in ("H5F", "H5D") and res.io_below is not None:
        _meta_io(module, out, rec, kind, dur, res.io_below[sel])
    if module == "H5D" and res.fill_below is not None:  # ours: what creating the datasets filled
        out.add("F_FILL_TIME", rec, res.fill_below[sel])
        out.add("FILL_BYTES", rec, res.fill_bytes[sel])
    ids = record_ids(res.name[heads], plans, names)
    records = ModuleRecords(module, ids, calls.rank[heads].astype(np.int64), out.ints, out.floats)
    if module == "H5D":
        records.counters["H5D_FILE_REC_ID"] = record_ids(res.file[heads], plans)
    return records


# The file alignment a trace's POSIX accesses are checked against. Darshan records the file system's
# block size (1 MiB on Lustre) from the mount table, and 4 KiB where it cannot stat the mount; a trace
# names no file system, so Darshan's fallback, the smallest block any file system has: a request off it
# is misaligned everywhere. The profile says it was assumed (ASSUMED_ALIGNMENT).
FILE_ALIGNMENT = 4096
ASSUMED_ALIGNMENT = {"value": "a file alignment of 4 KiB (Darshan's when it cannot stat the mount; 1 MiB on "
                              "Lustre)",
                     "how": "the trace does not name the file system: a Darshan log of the job records its "
                            "block size"}


def _alignment(out: Counters, rec: np.ndarray, offset: np.ndarray) -> None:
    """POSIX_FILE_NOT_ALIGNED: reads and writes whose offset is not a multiple of FILE_ALIGNMENT."""
    placed = offset >= 0
    out.add("FILE_NOT_ALIGNED", rec[placed], (offset[placed] % FILE_ALIGNMENT != 0).astype(np.float64))
    out.set("FILE_ALIGNMENT", np.full(out.nrec, FILE_ALIGNMENT))


def _meta_io(module: str, out: Counters, rec: np.ndarray, kind: np.ndarray, dur: np.ndarray,
             io_below: np.ndarray) -> None:
    """Ours, not Darshan's (H5F_F_META_TIME does not say what its calls did): F_FLUSH_TIME, the seconds in
    H5Fflush; F_META_IO_TIME, the seconds the other metadata calls' direct callees read, wrote and synced."""
    flush = kind == K[C.FLUSH]
    other = _time_mask("F_META_TIME", kind) & ~flush
    out.add("F_META_IO_TIME", rec[other], io_below[other])
    if module == "H5F":
        out.add("F_FLUSH_TIME", rec[flush], dur[flush])


def _own_time(out: Counters, rec: np.ndarray, kind: np.ndarray, mode: np.ndarray, own: np.ndarray) -> None:
    """Ours, not Darshan's (MPIIO_F_READ_TIME does not split by mode): F_READ_OWN_TIME and
    F_WRITE_OWN_TIME, the seconds reads and writes spent above the calls they made below, and
    F_INDEP_READ_OWN_TIME, F_INDEP_WRITE_OWN_TIME, those of the independent and non-blocking ones, so
    that a file read both ways prices its independent calls by their own time, not its collective calls'."""
    indep = np.isin(mode, [MODES.index("indep"), MODES.index("nb")])
    for k in (C.READ, C.WRITE):
        sel = kind == K[k]
        out.add(f"F_{k.upper()}_OWN_TIME", rec[sel], own[sel])
        out.add(f"F_INDEP_{k.upper()}_OWN_TIME", rec[sel & indep], own[sel & indep])


# what an HDF5 record's calls did beneath them in MPI-IO, as Darshan's flags say it
_VIA_FLAGS = {"H5F": ("USE_MPIIO", VIA_MPIIO), "H5D": ("USE_MPIIO_COLLECTIVE", VIA_COLLECTIVE)}


def _driver(module: str, out: Counters, rec: np.ndarray, via: np.ndarray | None) -> None:
    """H5F_USE_MPIIO (a call on the file went through MPI-IO: the MPI-IO driver) and
    H5D_USE_MPIIO_COLLECTIVE (a read or write of the dataset made a collective MPI-IO call), per
    record, from the calls the trace shows beneath HDF5's: Recorder does not follow property lists."""
    if module not in _VIA_FLAGS or via is None:
        return
    name, bit = _VIA_FLAGS[module]
    flag = np.zeros(out.nrec, np.int64)
    np.maximum.at(flag, rec, (via & bit) > 0)
    out.set(name, flag)


def _time_mask(counter: str, kind: np.ndarray) -> np.ndarray:
    timed = [K[k] for k, name in _TIME.items() if name == counter]
    if counter == "F_META_TIME":
        return ~np.isin(kind, [K[k] for k in _TIME])
    return np.isin(kind, timed)


def _counts(module: str, out: Counters, rec: np.ndarray, kind: np.ndarray, plans: PlanTable,
            gid: np.ndarray) -> None:
    """Operation counters: one per distinct (kind, mode, counter, communicator) of the calls,
    all counted per record in one bincount."""
    self_open = (plans["size"][gid] == 1) & (kind == K[C.OPEN])
    combos = ((kind.astype(np.int64) * len(MODES) + plans["mode"][gid]) * 2 + self_open) * len(COUNTERS) \
        + plans["counter"][gid]
    present = np.flatnonzero(np.bincount(combos))
    column = np.zeros(present[-1] + 1, np.int64)
    column[present] = np.arange(present.size)
    table = np.bincount(rec * present.size + column[combos], minlength=out.nrec * present.size)
    table = table.reshape(out.nrec, present.size)
    for j, combo in enumerate(present.tolist()):
        combo, counter = divmod(combo, len(COUNTERS))
        combo, self_comm = divmod(combo, 2)
        k, md = KINDS[combo // len(MODES)], MODES[combo % len(MODES)]
        if module == "MPI-IO" and k == C.OPEN:
            name = "INDEP_OPENS" if self_comm else "COLL_OPENS"
        elif k in _WORD:
            past = _WORD[k][1]
            name = f"{md.upper()}_{past}" if md else past
        else:
            name = _OPS.get((module, k), "")
            if k == C.SYNC and module != "MPI-IO" and counter:
                out.add_column(COUNTERS[counter], table[:, j])
        if k == C.OPEN and module == "H5D" and counter:
            out.add_column(COUNTERS[counter], table[:, j])
        if name:
            out.add_column(name, table[:, j])


def _span(out: Counters, what: str, rec: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
    """First start and last end per record (Darshan's F_*_START/END_TIMESTAMP; 0 when none)."""
    first = np.full(out.nrec, np.inf)
    np.minimum.at(first, rec, start)
    last = np.zeros(out.nrec)
    np.maximum.at(last, rec, end)
    out.set(f"F_{what}_START_TIMESTAMP", np.where(np.isinf(first), 0.0, first))
    out.set(f"F_{what}_END_TIMESTAMP", last)


def _accesses(module: str, out: Counters, rec: np.ndarray, kind: np.ndarray, offset: np.ndarray,
              size: np.ndarray, dur: np.ndarray) -> None:
    """Bytes, size bins, sequential/consecutive accesses, slowest access, read/write switches and
    the four commonest sizes, as Darshan counts them per record."""
    agg = "AGG_" if module in AGGREGATE_BINS else ""
    order = stable_order(rec)  # per record, in call order
    for op, (word, _, moved, max_byte) in _WORD.items():
        mask = kind == K[op]
        if not mask.any():
            continue
        r, sz, off, t = rec[mask], size[mask], offset[mask], dur[mask]
        out.add(moved, r, sz.astype(np.float64))
        bins = np.searchsorted(SIZE_BIN_EDGES, sz, side="left")
        for b in arrays.unique(bins).tolist():
            out.add(f"SIZE_{word}_{agg}{SIZE_BIN_NAMES[b]}", r[bins == b])
        _slowest(out, word, r, sz, t)
        if module != "MPI-IO" and (off >= 0).any():
            _sequential(out, word, max_byte, r[off >= 0], off[off >= 0], sz[off >= 0])
    r, op = rec[order], kind[order]
    switch = np.zeros(r.size, np.int64)
    switch[1:] = (r[1:] == r[:-1]) & (op[1:] != op[:-1])
    if switch.any():
        out.add("RW_SWITCHES", r, switch.astype(np.float64))
    _common_sizes(out, rec, size)


def _slowest(out: Counters, word: str, rec: np.ndarray, size: np.ndarray, dur: np.ndarray) -> None:
    """F_MAX_*_TIME and the size of the first access that took it (none when all took 0 s)."""
    order = stable_order(rec)
    r, d = rec[order], dur[order]
    head = np.concatenate(([True], r[1:] != r[:-1]))
    heads, group = np.flatnonzero(head), np.cumsum(head) - 1
    slowest = np.maximum.reduceat(d, heads)
    # the first access (in call order) that took the record's longest time
    first = np.minimum.reduceat(np.where(d == slowest[group], np.arange(r.size), r.size), heads)
    pick = order[first]
    longest = np.zeros(out.nrec)
    longest[rec[pick]] = np.maximum(dur[pick], 0.0)
    at_size = np.zeros(out.nrec, np.int64)
    at_size[rec[pick]] = np.where(dur[pick] > 0, size[pick], 0)
    out.set(f"F_MAX_{word}_TIME", longest)
    out.set(f"MAX_{word}_TIME_SIZE", at_size)


def _sequential(out: Counters, word: str, max_byte: str, rec: np.ndarray, offset: np.ndarray,
                size: np.ndarray) -> None:
    """An access is sequential when it starts past the last byte of the one before on the same
    record (the first: past byte 0), consecutive when it starts right after it."""
    order = stable_order(rec)
    r, off, last = rec[order], offset[order], offset[order] + size[order] - 1
    before = np.zeros(r.size, np.int64)
    before[1:] = np.where(r[1:] == r[:-1], last[:-1], 0)
    out.add(f"SEQ_{word}S", r, (before < off).astype(np.float64))
    out.add(f"CONSEC_{word}S", r, (before + 1 == off).astype(np.float64))
    highest = np.zeros(out.nrec, np.int64)
    np.maximum.at(highest, r, last)
    out.set(max_byte, highest)


def _common_sizes(out: Counters, rec: np.ndarray, size: np.ndarray) -> None:
    """ACCESS1-4: the commonest sizes per record, ties to the size seen first (Counter.most_common)."""
    order = np.lexsort((np.arange(rec.size), size, rec))
    r, s = rec[order], size[order]
    new = np.ones(r.size, bool)
    new[1:] = (r[1:] != r[:-1]) | (s[1:] != s[:-1])
    starts = np.flatnonzero(new)
    count = np.diff(np.append(starts, r.size))
    first_seen = order[starts]  # the lexsort keeps call order inside equal (record, size)
    gr, gs = r[starts], s[starts]
    rank_order = np.lexsort((first_seen, -count, gr))
    gr, gs, count = gr[rank_order], gs[rank_order], count[rank_order]
    head = np.ones(gr.size, bool)
    head[1:] = gr[1:] != gr[:-1]
    place = np.arange(gr.size) - np.maximum.accumulate(np.where(head, np.arange(gr.size), 0))
    for k in range(4):
        pick = place == k
        if not pick.any():
            break
        access, counts = np.zeros(out.nrec, np.int64), np.zeros(out.nrec, np.int64)
        access[gr[pick]], counts[gr[pick]] = gs[pick], count[pick]
        out.set(f"ACCESS{k + 1}_ACCESS", access)
        out.set(f"ACCESS{k + 1}_COUNT", counts)


def segments(module: str, calls: Calls, res: Resolved, sel: np.ndarray, plans: PlanTable) -> DxtTrace:
    """One DXT-like segment per read or write call of `sel`, sorted by rank then start."""
    kind = res.kind[sel]
    access = sel[(kind == K[C.READ]) | (kind == K[C.WRITE])]
    ids = record_ids(res.name[access], plans)
    op = np.where(res.kind[access] == K[C.READ], DXT_READ, DXT_WRITE).astype(np.int8)
    trace = DxtTrace(module, calls.rank[access].astype(np.int32), ids, op, res.offset[access],
                     res.size[access], calls.start[access], calls.end[access])
    return trace.subset(np.lexsort((trace.start, trace.rank)))

