"""The replay plan: what every replay rank does, in order, on neutral file ids.

A plan is column-wise (one numpy array per field) because a DXT trace can hold
millions of operations. Row *i* of the op columns is one operation of rank
``rank[i]``; rows are grouped by rank and, within a rank, in execution order.
Files are identified by their index into the file columns; the executor names
them itself (``d<dir>/f<id>``) under a scratch directory, so no path from a trace
ever reaches the file system.

Saved as a directory of ``.npy`` files plus ``plan.json`` (no pickle): every rank
memory-maps only its own slice, which keeps a many-rank replay from reading the
whole plan on every node.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

PLAN_SCHEMA = "ioadvisor/replay-plan/v1"

# Operation codes (column "op").
OPEN, CREATE, READ, WRITE, FSYNC, STAT, CLOSE, UNLINK, SEND, RECV, MKDIR, RMDIR, RENAME, LINK, TRUNCATE = range(15)
OP_NAMES = ("open", "create", "read", "write", "fsync", "stat", "close", "unlink", "send", "recv",
            "mkdir", "rmdir", "rename", "link", "truncate")
NAME_OPS = (RENAME, LINK)  # ops giving their file a second name: the file id of the new name in "peer"
DATA_OPS = (READ, WRITE)

# Interfaces (column "api"): how an operation is issued.
POSIX, STDIO, MPIIO, MPIIO_COLL = range(4)
API_NAMES = ("posix", "stdio", "mpiio", "mpiio-coll")

# File communicators (file column "comm"): MPI-IO files opened by all ranks together.
# The calls themselves say it: an open/close/fsync/read/write with api "mpiio-coll" is a
# collective call over COMM_WORLD; "mpiio" opens are per rank (COMM_SELF).
COMM_SELF, COMM_WORLD = 0, 1

FLAG_PAD = 1  # a zero-length collective call that only keeps ranks matched

OP_COLUMNS: dict[str, Any] = {
    "rank": np.int32,
    "op": np.int8,
    "file": np.int32,
    "offset": np.int64,
    "length": np.int64,
    "api": np.int8,
    "phase": np.int32,
    "gap": np.float32,  # think time before the op (seconds), used with --think-time
    "peer": np.int32,  # SEND/RECV partner rank; RENAME/LINK: the file id of the new name
    "batch": np.int64,  # ops of one rank sharing a batch >= 0 form one collective call
    "flags": np.int8,
}
OP_DEFAULTS = {"peer": -1, "batch": -1, "api": POSIX}

FILE_COLUMNS: dict[str, Any] = {
    "dir": np.int32,  # neutral directory id: files of one source directory share it
    "comm": np.int8,
    "stripe_count": np.int32,  # layout wish (0: file system default; -1: every storage target)
    "stripe_size": np.int64,  # (0: file system default)
    "object_size": np.int64,  # CephFS object size (0: default; Lustre has none)
    "layout_scope": np.int8,  # LAYOUT_FILE: the wish is the file's; LAYOUT_DIR: its directory's default
    "avoid": np.int8,  # 1: placed off the storage targets meta["avoid_targets"] names
    "prefill": np.int64,  # bytes that must exist before the timed run (data read, never written first)
    "group": np.int32,  # files that are one logical data set (file per process siblings)
    "source": np.uint64,  # source record id (for fidelity checks; never a path)
}
FILE_DEFAULTS = {"group": -1}
LAYOUT_FILE, LAYOUT_DIR = 0, 1  # where a layout wish is set (file column "layout_scope")

# Darshan's access-size bins: a size s falls in bin i when EDGES[i-1] < s <= EDGES[i].
SIZE_BIN_EDGES = np.array([100, 1024, 10240, 102400, 1048576, 4194304, 10485760,
                           104857600, 1073741824], dtype=np.int64)
SIZE_BIN_NAMES = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M",
                  "10M_100M", "100M_1G", "1G_PLUS")


def size_bins(sizes: np.ndarray) -> np.ndarray:
    """Darshan access-size bin of each size (0..9)."""
    return np.searchsorted(SIZE_BIN_EDGES, np.asarray(sizes, dtype=np.int64), side="left")


def _column(name: str, values, n: int, table: dict, defaults: dict) -> np.ndarray:
    dtype = table[name]
    if values is None:
        return np.full(n, defaults.get(name, 0), dtype=dtype)
    arr = np.asarray(values, dtype=dtype)
    if arr.ndim == 0:
        return np.full(n, arr, dtype=dtype)
    if arr.shape != (n,):
        raise ValueError(f"plan column {name!r} has {arr.shape[0]} rows, expected {n}")
    return arr


def op_columns(n: int, **cols) -> dict[str, np.ndarray]:
    """A full set of op columns for `n` ops: given columns, defaults for the rest."""
    unknown = set(cols) - set(OP_COLUMNS)
    if unknown:
        raise ValueError(f"unknown plan op columns: {sorted(unknown)}")
    return {k: _column(k, cols.get(k), n, OP_COLUMNS, OP_DEFAULTS) for k in OP_COLUMNS}


def file_columns(n: int, **cols) -> dict[str, np.ndarray]:
    unknown = set(cols) - set(FILE_COLUMNS)
    if unknown:
        raise ValueError(f"unknown plan file columns: {sorted(unknown)}")
    return {k: _column(k, cols.get(k), n, FILE_COLUMNS, FILE_DEFAULTS) for k in FILE_COLUMNS}


@dataclass
class Plan:
    """Per-rank ordered operations on neutral files, plus per-file layout wishes."""

    nranks: int
    ops: dict[str, np.ndarray]
    files: dict[str, np.ndarray]
    hints: dict[str, str] = field(default_factory=dict)  # MPI-IO hints for every MPI-IO file
    meta: dict[str, Any] = field(default_factory=dict)  # source, scale, np, notes, transforms

    # -- construction -------------------------------------------------------------------
    @classmethod
    def build(cls, nranks: int, ops: dict, files: dict, *, hints=None, meta=None,
              order: np.ndarray | None = None) -> Plan:
        """A plan from op and file columns; ops are stably grouped by rank.

        `order` is an optional per-op sort key within a rank (e.g. a timestamp);
        without it the given row order is the execution order.
        """
        n = len(ops["op"])
        ops = op_columns(n, **ops)
        files = file_columns(len(files["dir"]), **files)
        keys = (ops["rank"],) if order is None else (order, ops["rank"])
        idx = np.lexsort(keys)
        ops = {k: v[idx] for k, v in ops.items()}
        plan = cls(nranks=int(nranks), ops=ops, files=files, hints=dict(hints or {}),
                   meta=dict(meta or {}))
        plan.validate()
        return plan

    def replace(self, *, ops=None, files=None, hints=None, meta=None, nranks=None) -> Plan:
        """A new plan with some parts replaced (ops re-grouped by rank, order kept)."""
        return Plan.build(self.nranks if nranks is None else nranks,
                          self.ops if ops is None else ops,
                          self.files if files is None else files,
                          hints=self.hints if hints is None else hints,
                          meta=self.meta if meta is None else meta)

    # -- queries ------------------------------------------------------------------------
    @property
    def nops(self) -> int:
        return int(self.ops["op"].shape[0])

    @property
    def nfiles(self) -> int:
        return int(self.files["dir"].shape[0])

    @property
    def nphases(self) -> int:
        return int(self.ops["phase"].max()) + 1 if self.nops else 0

    def rank_bounds(self) -> np.ndarray:
        """Row range of each rank: rank r owns rows bounds[r]:bounds[r+1]."""
        return np.searchsorted(self.ops["rank"], np.arange(self.nranks + 1), side="left")

    def rank_ops(self, rank: int) -> dict[str, np.ndarray]:
        lo, hi = self.rank_bounds()[rank:rank + 2]
        return {k: v[lo:hi] for k, v in self.ops.items()}

    def data_mask(self) -> np.ndarray:
        return np.isin(self.ops["op"], DATA_OPS) & (self.ops["flags"] & FLAG_PAD == 0)

    def planned_bytes(self) -> int:
        """Bytes the plan needs on disk at most: per file, prefill or written extent."""
        w = (self.ops["op"] == WRITE)
        files, lens, ends = self.ops["file"][w], self.ops["length"][w], \
            self.ops["offset"][w] + self.ops["length"][w]
        written = np.bincount(files, weights=lens, minlength=self.nfiles)
        extent = np.zeros(self.nfiles, np.int64)
        np.maximum.at(extent, files, ends)
        need = np.maximum(np.minimum(written, extent), self.files["prefill"])
        return int(need.sum())

    def max_request(self, mpi_only: bool = False) -> int:
        """The largest single buffer a rank needs (one op, or one collective batch); with
        `mpi_only`, of MPI-IO calls, which need it in one piece."""
        ops = self.ops
        if mpi_only:
            sel = np.isin(ops["api"], (MPIIO, MPIIO_COLL))
            ops = {k: v[sel] for k, v in ops.items()}
        if not len(ops["op"]):
            return 0
        size = int(ops["length"].max())
        b = ops["batch"] >= 0
        if b.any():
            _, inv = np.unique(ops["batch"][b], return_inverse=True)
            size = max(size, int(np.bincount(inv.reshape(-1), weights=ops["length"][b]).max()))
        return size

    def summary(self) -> dict[str, Any]:
        """A compact description of the plan for `--plan-only` and for results."""
        ops = self.ops
        data = self.data_mask()
        real = (ops["flags"] & FLAG_PAD) == 0
        by_op = {OP_NAMES[c]: int(np.count_nonzero(real & (ops["op"] == c))) for c in range(len(OP_NAMES))}
        by_api = {API_NAMES[a]: int(np.count_nonzero(data & (ops["api"] == a)))
                  for a in range(len(API_NAMES))}
        hist = {}
        for code in DATA_OPS:
            m = data & (ops["op"] == code)
            counts = np.bincount(size_bins(ops["length"][m]), minlength=len(SIZE_BIN_NAMES))
            hist[OP_NAMES[code]] = {SIZE_BIN_NAMES[i]: int(c) for i, c in enumerate(counts) if c}
        ranks_per_file = self._ranks_per_file()
        return {
            "schema": PLAN_SCHEMA,
            "nranks": self.nranks,
            "nfiles": self.nfiles,
            "shared_files": int(np.count_nonzero(ranks_per_file > 1)),
            "directories": int(np.unique(self.files["dir"]).size) if self.nfiles else 0,
            "phases": self.nphases,
            "ops": {k: v for k, v in by_op.items() if v},
            "data_ops_by_api": {k: v for k, v in by_api.items() if v},
            "pad_calls": int(np.count_nonzero(~real)),
            "bytes_read": int(ops["length"][data & (ops["op"] == READ)].sum()),
            "bytes_written": int(ops["length"][data & (ops["op"] == WRITE)].sum()),
            "planned_bytes": self.planned_bytes(),
            "prefill_bytes": int(self.files["prefill"].sum()),
            "access_sizes": hist,
            "layout_wishes": int(np.count_nonzero((self.files["stripe_count"] != 0) | (self.files["avoid"] > 0)
                                                  | (self.files["object_size"] > 0))),
            "hints": dict(self.hints),
            **{k: v for k, v in self.meta.items() if k in ("source", "scale", "np", "nprocs_source",
                                                             "think_time", "transforms", "notes")},
        }

    def _ranks_per_file(self) -> np.ndarray:
        if not self.nops:
            return np.zeros(self.nfiles, np.int64)
        pairs = np.unique(self.ops["file"].astype(np.int64) * (self.nranks + 1) + self.ops["rank"])
        return np.bincount(pairs // (self.nranks + 1), minlength=self.nfiles)

    # -- checks ---------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ValueError when the plan cannot run (bad ids, unmatched collectives)."""
        ops = self.ops
        if self.nops == 0:
            return
        if ops["rank"].min() < 0 or ops["rank"].max() >= self.nranks:
            raise ValueError("plan op rank outside 0..nranks-1")
        if ops["file"].min() < 0 or ops["file"].max() >= self.nfiles:
            raise ValueError("plan op refers to a file id outside the file table")
        if (ops["offset"] < 0).any() or (ops["length"] < 0).any():
            raise ValueError("plan op with a negative offset or length")
        if np.any(np.diff(ops["rank"]) < 0):
            raise ValueError("plan ops are not grouped by rank")
        same_rank = ops["rank"][1:] == ops["rank"][:-1]
        if np.any(same_rank & (np.diff(ops["phase"]) < 0)):
            raise ValueError("plan phases go backwards within a rank")
        bad = np.isin(ops["op"], (SEND, RECV)) & ((ops["peer"] < 0) | (ops["peer"] >= self.nranks))
        if bad.any():
            raise ValueError("plan send/receive without a valid peer rank")
        bad = np.isin(ops["op"], NAME_OPS) & ((ops["peer"] < 0) | (ops["peer"] >= self.nfiles))
        if bad.any():
            raise ValueError("plan rename/link without a valid new file id")
        self._check_collectives()

    def _check_collectives(self) -> None:
        """Every rank must make the same number of collective calls (api mpiio-coll: opens,
        closes, syncs and data; one call per batch) per (phase, file, kind of call)."""
        ops = self.ops
        coll = ops["api"] == MPIIO_COLL
        if not coll.any():
            return
        b = ops["batch"]
        first = np.ones(self.nops, bool)
        first[1:] = ~((b[1:] >= 0) & (b[1:] == b[:-1]) & (ops["rank"][1:] == ops["rank"][:-1]))
        m = coll & first
        kind = np.select([np.isin(ops["op"], (OPEN, CREATE)), ops["op"] == CLOSE, ops["op"] == FSYNC],
                         [0, 1, 2], 3)[m]
        phase, fid, rank = ops["phase"][m], ops["file"][m], ops["rank"][m]
        order = np.lexsort((rank, kind, fid, phase))
        phase, fid, kind, rank = phase[order], fid[order], kind[order], rank[order]
        new_group = np.concatenate([[True], (phase[1:] != phase[:-1]) | (fid[1:] != fid[:-1])
                                    | (kind[1:] != kind[:-1])])
        new_run = new_group | np.concatenate([[True], rank[1:] != rank[:-1]])
        runs = np.flatnonzero(new_run)
        calls = np.diff(np.append(runs, len(rank)))  # calls of each (group, rank)
        group_of_run = np.cumsum(new_group)[runs] - 1
        ranks_in_group = np.bincount(group_of_run)
        first_calls = calls[np.flatnonzero(new_group[runs])][group_of_run]
        bad = (ranks_in_group[group_of_run] != self.nranks) | (calls != first_calls)
        if bad.any():
            i = runs[np.argmax(bad)]
            raise ValueError(f"collective calls on file {fid[i]} in phase {phase[i]} are not matched "
                             f"on all {self.nranks} ranks")

    # -- storage ----------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the plan as a directory of .npy columns and plan.json."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        for k, v in self.ops.items():
            np.save(path / f"ops.{k}.npy", v, allow_pickle=False)
        for k, v in self.files.items():
            np.save(path / f"files.{k}.npy", v, allow_pickle=False)
        np.save(path / "rank_bounds.npy", self.rank_bounds(), allow_pickle=False)
        doc = {"schema": PLAN_SCHEMA, "nranks": self.nranks, "nops": self.nops,
               "nfiles": self.nfiles, "nphases": self.nphases, "max_request": self.max_request(),
               "max_mpi_request": self.max_request(mpi_only=True),
               "hints": self.hints, "meta": self.meta}
        (path / "plan.json").write_text(json.dumps(doc, indent=1, default=_jsonable))
        return path

    @classmethod
    def load(cls, path: str | Path, *, mmap: bool = True) -> Plan:
        """Read a saved plan; with `mmap` the columns are mapped, not read."""
        path = Path(path)
        doc = json.loads((path / "plan.json").read_text())
        if doc.get("schema") != PLAN_SCHEMA:
            raise ValueError(f"{path}: not a replay plan ({doc.get('schema')!r})")
        mode = "r" if mmap else None
        ops = {k: np.load(path / f"ops.{k}.npy", mmap_mode=mode, allow_pickle=False) for k in OP_COLUMNS}
        files = {k: np.load(path / f"files.{k}.npy", mmap_mode=mode, allow_pickle=False)
                 for k in FILE_COLUMNS if (path / f"files.{k}.npy").exists()}
        files = file_columns(int(doc["nfiles"]), **files)  # columns added since the plan was saved
        return cls(nranks=int(doc["nranks"]), ops=ops, files=files, hints=doc.get("hints", {}),
                   meta=doc.get("meta", {}))


def plan_info(path: str | Path) -> dict[str, Any]:
    """plan.json of a saved plan (counts, phases, largest request) without loading columns."""
    return json.loads((Path(path) / "plan.json").read_text())


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
