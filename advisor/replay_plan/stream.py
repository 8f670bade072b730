"""Turning per-rank data operations into a complete replay plan.

Every plan source (DXT, counters, IOR) produces data operations with a time key;
:class:`StreamBuilder` adds what the source knows about the rest (opens and closes
split into sessions, fsyncs after writes, stats), cuts the streams into phases,
frames collective MPI-IO files and computes what must be prefilled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
import posixpath

import numpy as np

from replay.collective import frame_world
from replay.plan import (CLOSE, COMM_WORLD, CREATE, DATA_OPS, FSYNC, MPIIO, MPIIO_COLL, OPEN, READ, STAT,
                         STDIO, UNLINK, WRITE, Plan, file_columns, op_columns)

MAX_PHASES = 64  # more read/write alternations than this run without barriers in between
_EPS = 1e-9
# Order of rows that share a time key: stat, open, data, fsync, close.
SUB_STAT, SUB_OPEN, SUB_DATA, SUB_FSYNC, SUB_CLOSE, SUB_EMPTY = -3, -2, 0, 1, 2, 3


def is_pseudo_file(name: str) -> bool:
    """Darshan's stream and heatmap records are not files to replay."""
    return name.startswith("<") or name.startswith("heatmap:")


@dataclass
class FileTable:
    """Neutral file ids for source records: directory ids and file-per-process groups come
    from the source paths; the paths themselves are never kept."""

    record_ids: list[int] = field(default_factory=list)
    dirs: list[int] = field(default_factory=list)
    stems: list[str] = field(default_factory=list)
    world: list[bool] = field(default_factory=list)
    _index: dict[int, int] = field(default_factory=dict)
    _dir_index: dict[str, int] = field(default_factory=dict)

    def add(self, record_id: int, path: str, *, world: bool = False) -> int:
        fid = self._index.get(record_id)
        if fid is not None:
            self.world[fid] = self.world[fid] or world
            return fid
        fid = self._index[record_id] = len(self.record_ids)
        parent = posixpath.dirname(path)
        self.record_ids.append(int(record_id))
        self.dirs.append(self._dir_index.setdefault(parent, len(self._dir_index)))
        self.stems.append(re.sub(r"\d+", "#", path))
        self.world.append(world)
        return fid

    def __len__(self) -> int:
        return len(self.record_ids)

    def groups(self, ranks_per_file: np.ndarray) -> np.ndarray:
        """File-per-process siblings: single-rank files whose paths differ only in digits."""
        out = np.full(len(self), -1, np.int32)
        by_stem: dict[str, list[int]] = {}
        for fid, stem in enumerate(self.stems):
            if ranks_per_file[fid] == 1:
                by_stem.setdefault(stem, []).append(fid)
        for g, members in enumerate(m for m in by_stem.values() if len(m) > 1):
            out[members] = g
        return out


@dataclass
class FileMeta:
    """What the source says about one (rank, file) besides its data operations."""

    opens: int = 0
    fsyncs: int = 0
    stats: int = 0
    indep_opens: int = 0  # MPI-IO opens on COMM_SELF (world files)
    api: int = 0  # interface of the opens (the data ops carry their own)
    time: float = 0.0  # when the file was first touched, for files without data


class StreamBuilder:
    """Collects data ops (with time keys) and per (rank, file) metadata, then builds the plan."""

    def __init__(self, nranks: int, files: FileTable):
        self.nranks, self.files = nranks, files
        self._parts: list[dict[str, np.ndarray]] = []
        self.meta: dict[tuple[int, int], FileMeta] = {}

    def add_data(self, rank, op, file, offset, length, api, time, gap=None, phase=None) -> None:
        """Data ops with time keys; `phase` (all or none of a source's ops) when the source
        knows its phases (IOR), otherwise phases come from the runs of reads and writes."""
        n = len(np.atleast_1d(op))
        part = op_columns(n, rank=rank, op=op, file=file, offset=offset, length=length, api=api,
                          gap=0.0 if gap is None else gap, phase=-1 if phase is None else phase)
        part["time"] = np.broadcast_to(np.asarray(time, np.float64), (n,)).copy()
        part["sub"] = np.full(n, SUB_DATA, np.int64)
        self._parts.append(part)

    def add_rows(self, rank, op, file, time, sub, api, phase=-1, **cols) -> None:
        """Metadata rows the source states explicitly (e.g. IOR's unlinks, in their own phase);
        `cols`: other op columns (a rename's new file in "peer", a truncate's "length")."""
        rows = _rows(rank, file, op, time, sub, api)
        rows["phase"][:] = phase
        for name, values in cols.items():
            rows[name][:] = values
        self._parts.append(rows)

    def file_meta(self, rank: int, fid: int, stdio: bool = False) -> FileMeta:
        """Metadata of (rank, file) through STDIO or through the other interfaces (a file can
        be opened both ways; each keeps its own sessions)."""
        return self.meta.setdefault((rank, fid, stdio), FileMeta())

    # -- assembly -------------------------------------------------------------------------
    def build(self, meta: dict) -> Plan:
        everything = _concat(self._parts)
        is_data = np.isin(everything["op"], DATA_OPS)
        data = _sorted({k: v[is_data] for k, v in everything.items()})
        if not len(data["phase"]) or data["phase"].min() < 0:
            data["phase"] = _data_phases(data)
        rows = [data, {k: v[~is_data] for k, v in everything.items()}] + self._metadata(data)
        ops = _sorted(_concat(rows))
        ops["phase"] = _removals_last(ops, _inherit_phases(ops))
        for k in ("time", "sub"):
            ops.pop(k)
        world = np.flatnonzero(np.asarray(self.files.world, bool))
        if world.size:
            ops = frame_world(ops, self.nranks, world, self._synced(ops, world))
        nfiles = len(self.files)
        rpf = _ranks_per_file(ops, self.nranks, nfiles)
        files = file_columns(
            nfiles, dir=np.asarray(self.files.dirs, np.int32),
            comm=np.where(np.asarray(self.files.world, bool), COMM_WORLD, 0),
            prefill=prefill_bytes(ops, nfiles), group=self.files.groups(rpf),
            source=np.asarray(self.files.record_ids, np.uint64))
        return Plan.build(self.nranks, ops, files, meta=meta)

    def _synced(self, ops: dict, world: np.ndarray) -> np.ndarray:
        """(phase, file) keys of world files whose source called MPI_File_sync: the last phase."""
        keys = []
        for fid in world.tolist():
            if any(m.fsyncs for (r, f, _), m in self.meta.items() if f == fid):
                sel = ops["file"] == fid
                if sel.any():
                    keys.append(int(ops["phase"][sel].max()) * (1 << 31) + fid)
        return np.asarray(keys, np.int64)

    def _metadata(self, data: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """Open/close sessions, fsyncs and stats of every (rank, file)."""
        key = (data["rank"].astype(np.int64) << 33) + (data["file"].astype(np.int64) << 1) + \
            (data["api"] == STDIO)
        order = np.argsort(key, kind="stable")  # data is time-ordered within each rank
        skey = key[order]
        where: dict[int, np.ndarray] = {}
        if len(skey):
            bounds = np.flatnonzero(np.concatenate([[True], skey[1:] != skey[:-1], [True]]))
            where = {int(skey[bounds[i]]): order[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)}
        acc = MetaRows()
        empty = np.zeros(0, np.int64)
        for (rank, fid, stdio), fm in self.meta.items():
            idx = where.get((rank << 33) + (fid << 1) + int(stdio), empty)
            if self.files.world[fid]:
                _independent_opens(acc, rank, fid, fm, data, idx)
            else:
                _sessions(acc, rank, fid, fm, data, idx)
        return [acc.columns()]


class MetaRows:
    """Metadata rows collected as Python lists (many small files make numpy per row slow)."""

    def __init__(self):
        self.cols: dict[str, list] = {k: [] for k in ("rank", "op", "file", "api", "time", "sub")}
        self.chunks: list[dict[str, np.ndarray]] = []

    def add(self, rank: int, fid: int, op: int, time: float, sub: int, api: int) -> None:
        c = self.cols
        c["rank"].append(rank)
        c["op"].append(op)
        c["file"].append(fid)
        c["api"].append(api)
        c["time"].append(time)
        c["sub"].append(sub)

    def add_many(self, rank: int, fid: int, op: int, times: np.ndarray, sub: int, api: int) -> None:
        self.chunks.append(_rows(rank, fid, np.full(len(times), op), times, sub, api))

    def columns(self) -> dict[str, np.ndarray]:
        c = self.cols
        n = len(c["op"])
        base = op_columns(n, rank=np.array(c["rank"], np.int32), op=np.array(c["op"], np.int8),
                          file=np.array(c["file"], np.int32), api=np.array(c["api"], np.int8))
        base["time"] = np.array(c["time"], np.float64)
        base["sub"] = np.array(c["sub"], np.int64)
        return _concat([base] + self.chunks)


def _concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    parts = [p for p in parts if len(p["op"])]
    if not parts:
        out = op_columns(0)
        out.update(time=np.zeros(0), sub=np.zeros(0, np.int64))
        return out
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _sorted(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    order = np.lexsort((cols["sub"], cols["time"], cols["rank"]))
    return {k: v[order] for k, v in cols.items()}


def _data_phases(data: dict[str, np.ndarray]) -> np.ndarray:
    """Per rank, phase k = the k-th run of reads or of writes, counting only runs that carry at
    least 1 % of the rank's bytes or operations (a few small writes to a helper file between
    reads do not start a phase); capped at MAX_PHASES - 1."""
    n = len(data["op"])
    if n == 0:
        return np.zeros(0, np.int32)
    rank = data["rank"]
    new_rank = np.concatenate([[True], rank[1:] != rank[:-1]])
    switch = np.concatenate([[False], data["op"][1:] != data["op"][:-1]]) | new_rank
    run = np.cumsum(switch) - 1
    starts = np.flatnonzero(switch)
    run_rank = rank[starts]
    run_bytes = np.bincount(run, weights=data["length"])
    run_ops = np.bincount(run)
    rank_bytes = np.bincount(run_rank, weights=run_bytes)[run_rank]
    rank_ops = np.bincount(run_rank, weights=run_ops)[run_rank]
    major = (run_bytes >= 0.01 * rank_bytes) | (run_ops >= 0.01 * rank_ops)
    kind = np.where(major, data["op"][starts], -1).astype(np.int64)
    kind = _fill_within(kind, run_rank)
    first_of_rank = np.concatenate([[True], run_rank[1:] != run_rank[:-1]])
    change = np.concatenate([[False], kind[1:] != kind[:-1]]) & ~first_of_rank
    count = np.cumsum(change)
    phase_of_run = count - count[np.flatnonzero(first_of_rank)][np.cumsum(first_of_rank) - 1]
    return np.minimum(phase_of_run[run], MAX_PHASES - 1).astype(np.int32)


def _fill_within(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Replace -1 by the previous valid value of the same group, else the next one."""
    n = len(values)
    idx = np.arange(n)
    prev = np.maximum.accumulate(np.where(values >= 0, idx, -1))
    nxt = np.minimum.accumulate(np.where(values >= 0, idx, n)[::-1])[::-1]
    ok_prev = (prev >= 0) & (group[np.maximum(prev, 0)] == group)
    ok_next = (nxt < n) & (group[np.minimum(nxt, n - 1)] == group)
    out = values.copy()
    out = np.where(values >= 0, values,
                   np.where(ok_prev, values[np.maximum(prev, 0)],
                            np.where(ok_next, values[np.minimum(nxt, n - 1)], 0)))
    return out


def _inherit_phases(ops: dict[str, np.ndarray]) -> np.ndarray:
    """Metadata rows take the phase of the next data row (opens, stats) or the previous one
    (fsyncs, closes) of their rank; phases never go backwards within a rank."""
    n = len(ops["op"])
    if n == 0:
        return np.zeros(0, np.int32)
    is_data = np.isin(ops["op"], DATA_OPS)
    idx = np.arange(n)
    prev = np.maximum.accumulate(np.where(is_data, idx, -1))
    nxt = np.minimum.accumulate(np.where(is_data, idx, n)[::-1])[::-1]
    rank = ops["rank"]
    phase = ops["phase"].astype(np.int64)
    ok_prev = (prev >= 0) & (rank[np.maximum(prev, 0)] == rank)
    ok_next = (nxt < n) & (rank[np.minimum(nxt, n - 1)] == rank)
    before = np.where(ok_prev, phase[np.maximum(prev, 0)], -1)
    after = np.where(ok_next, phase[np.minimum(nxt, n - 1)], -1)
    forward = np.isin(ops["op"], (OPEN, CREATE, STAT))
    guess = np.where(forward, np.where(after >= 0, after, before), np.where(before >= 0, before, after))
    stated = ~is_data & (phase >= 0) & (ops["op"] == UNLINK)  # a source's own cleanup phase
    out = np.where(is_data | stated, phase, np.maximum(guess, 0))
    # monotone within each rank
    start = np.concatenate([[True], rank[1:] != rank[:-1]])
    grp = np.cumsum(start) - 1
    offset = grp.astype(np.int64) * (int(out.max()) + 1)
    return (np.maximum.accumulate(out + offset) - offset).astype(np.int32)


def _removals_last(ops: dict[str, np.ndarray], phase: np.ndarray) -> np.ndarray:
    """A traced unlink of a file other ranks move data in comes after all of their data (the
    source removed it once they were done: IOR's barrier before its remove), so it gets a phase
    of its own past the file's last data phase; the rank's later rows follow it."""
    removal = np.flatnonzero(ops["op"] == UNLINK)
    if not removal.size:
        return phase
    is_data = np.isin(ops["op"], DATA_OPS)
    out = phase.astype(np.int64)
    last = {}
    for fid in np.unique(ops["file"][removal]).tolist():
        sel = is_data & (ops["file"] == fid)
        if np.unique(ops["rank"][sel]).size > 1:
            last[fid] = int(phase[sel].max())
    for i in removal.tolist():
        fid = int(ops["file"][i])
        if fid in last:
            out[i] = max(out[i], last[fid] + 1)
    start = np.concatenate([[True], ops["rank"][1:] != ops["rank"][:-1]])
    offset = (np.cumsum(start) - 1) * (int(out.max()) + 1)
    return (np.maximum.accumulate(out + offset) - offset).astype(np.int32)


def _ranks_per_file(ops: dict[str, np.ndarray], nranks: int, nfiles: int) -> np.ndarray:
    if not len(ops["op"]):
        return np.zeros(nfiles, np.int64)
    pairs = np.unique(ops["file"].astype(np.int64) * (nranks + 1) + ops["rank"])
    return np.bincount(pairs // (nranks + 1), minlength=nfiles)


def prefill_bytes(ops: dict[str, np.ndarray], nfiles: int) -> np.ndarray:
    """Bytes to write before the timed run: data a file's reads need that no earlier phase
    wrote (input files, or reads in the phase of the first writes)."""
    w = ops["op"] == WRITE
    r = ops["op"] == READ
    first_write = np.full(nfiles, np.iinfo(np.int32).max, np.int64)
    np.minimum.at(first_write, ops["file"][w], ops["phase"][w])
    written = np.zeros(nfiles, np.int64)
    np.maximum.at(written, ops["file"][w], ops["offset"][w] + ops["length"][w])
    end = ops["offset"] + ops["length"]
    early = r & (ops["phase"] <= first_write[ops["file"]])
    beyond = r & (end > written[ops["file"]])
    need = np.zeros(nfiles, np.int64)
    sel = early | beyond
    np.maximum.at(need, ops["file"][sel], end[sel])
    return need


def _rows(rank: int, fid: int, op, time, sub, api: int) -> dict[str, np.ndarray]:
    op = np.atleast_1d(np.asarray(op, np.int8))
    n = len(op)
    out = op_columns(n, rank=rank, op=op, file=fid, api=api)
    out["time"] = np.broadcast_to(np.asarray(time, np.float64), (n,)).copy()
    out["sub"] = np.broadcast_to(np.asarray(sub, np.int64), (n,)).copy()
    return out


def split_sessions(phases: np.ndarray, opens: int) -> list[tuple[int, int]]:
    """Cut a (rank, file)'s data ops (their phases, in order) into `opens` sessions: at phase
    changes first, then evenly; (start, end) index pairs, empty sessions last."""
    n = len(phases)
    if opens <= 0:
        return []
    if n == 0:
        return [(0, 0)] * opens
    cuts = np.flatnonzero(phases[1:] != phases[:-1]) + 1
    segs = list(zip(np.concatenate([[0], cuts]).tolist(), np.concatenate([cuts, [n]]).tolist()))
    if opens < len(segs):  # merge consecutive phase segments into `opens` groups
        groups = np.array_split(np.arange(len(segs)), opens)
        return [(segs[g[0]][0], segs[g[-1]][1]) for g in groups]
    if opens >= n:
        return [(i, i + 1) for i in range(n)] + [(n, n)] * (opens - n)
    sizes = np.array([e - s for s, e in segs], float)
    share = np.maximum(1, np.floor(sizes / sizes.sum() * opens)).astype(int)
    share = np.minimum(share, sizes.astype(int))
    while share.sum() < opens:  # hand out the rest to the segments with most ops per session
        i = int(np.argmax(sizes / share - (share >= sizes) * 1e18))
        share[i] += 1
    out = []
    for (s, e), k in zip(segs, share.tolist()):
        edges = np.linspace(s, e, k + 1).round().astype(int)
        out += list(zip(edges[:-1].tolist(), edges[1:].tolist()))
    return out


def _sessions(acc: MetaRows, rank: int, fid: int, fm: FileMeta, data: dict, idx: np.ndarray) -> None:
    """Opens/closes, fsyncs after writes and stats of one (rank, file) outside MPI collectives."""
    n = len(idx)
    api = int(data["api"][idx[0]]) if n else fm.api
    if api == MPIIO_COLL:
        api = MPIIO  # an MPI-IO file opened per rank
    times = data["time"][idx] if n else None
    t0 = float(times[0]) if n else fm.time
    t_end = float(times[-1]) if n else fm.time
    for _ in range(fm.stats):
        acc.add(rank, fid, STAT, t0 - _EPS, SUB_STAT, api)
    sessions = split_sessions(data["phase"][idx], fm.opens) if n else [(0, 0)] * fm.opens
    for s, e in sessions:
        if s < e:
            acc.add(rank, fid, OPEN, float(times[s]), SUB_OPEN, api)
            acc.add(rank, fid, CLOSE, float(times[e - 1]), SUB_CLOSE, api)
        else:  # an open without data: after the last data op
            acc.add(rank, fid, OPEN, t_end + _EPS, SUB_EMPTY, api)
            acc.add(rank, fid, CLOSE, t_end + _EPS, SUB_EMPTY + 1, api)
    _fsyncs(acc, rank, fid, fm, data, idx, api)


def _fsyncs(acc: MetaRows, rank: int, fid: int, fm: FileMeta, data: dict, idx: np.ndarray, api: int) -> None:
    """fsyncs spread over the writes (k after write i when the source synced that often)."""
    F = fm.fsyncs
    if F <= 0:
        return
    writes = idx[data["op"][idx] == WRITE] if len(idx) else idx
    W = len(writes)
    if W == 0:
        t = float(data["time"][idx[-1]]) if len(idx) else fm.time
        for _ in range(F):
            acc.add(rank, fid, FSYNC, t, SUB_FSYNC, api)
        return
    i = np.arange(W)
    per = (i + 1) * F // W - i * F // W
    acc.add_many(rank, fid, FSYNC, np.repeat(data["time"][writes], per), SUB_FSYNC, api)


def _independent_opens(acc: MetaRows, rank: int, fid: int, fm: FileMeta, data: dict, idx: np.ndarray) -> None:
    """Per-rank (COMM_SELF) opens of a collectively opened file, as empty sessions."""
    t = float(data["time"][idx[0]]) if len(idx) else fm.time
    for _ in range(fm.indep_opens):
        acc.add(rank, fid, OPEN, t - _EPS, SUB_OPEN, MPIIO)
        acc.add(rank, fid, CLOSE, t - _EPS, SUB_OPEN, MPIIO)
