"""Derived metrics of a job profile, the same for every Darshan-like source.

`summarize(profile)` gives per-module totals and the job-level view of the base
I/O layer; `per_file(profile)` gives one summary per file. Both are vector
operations over the profile's counter columns. Facts, `show` and the
dump-vs-log equivalence test read these instead of recomputing.

Darshan semantics kept here (and nowhere else):
- a record with rank -1 is a shared file reduced over all ranks;
- counter value -1 means "not monitored": it never enters a sum;
- F_*_TIME counters are cumulative seconds summed over ranks, not wall time;
- access-size bins are (lower, upper]: SIZE_*_100K_1M includes exactly 1 MiB;
- POSIX and STDIO see the system calls; MPI-IO, HDF5 and PnetCDF traffic is
  seen again at POSIX, so job totals come from the base layer only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from advisor import arrays
from advisor.profile import SHARED_RANK, JobProfile, LustreLayout, ModuleRecords
from advisor.records import Frozen
from replay.plan import SIZE_BIN_EDGES, SIZE_BIN_NAMES

# Darshan's access-size bins: counter suffix and inclusive upper bound in bytes (their one
# definition is the replayer's, which imports nothing of ours).
SIZE_BINS: tuple[tuple[str, float], ...] = tuple(zip(SIZE_BIN_NAMES, [*SIZE_BIN_EDGES.tolist(), float("inf")]))


class ModuleSpec(Frozen):
    """How a module names its bytes, operations and times."""

    prefix: str
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    meta: tuple[str, ...] = ()
    file_key: str = ""  # column naming the file a record belongs to (datasets, variables)


SPECS: dict[str, ModuleSpec] = {
    "POSIX": ModuleSpec("POSIX", ("READS",), ("WRITES",), ("OPENS", "STATS", "SEEKS", "FSYNCS", "FDSYNCS")),
    "STDIO": ModuleSpec("STDIO", ("READS",), ("WRITES",), ("OPENS", "FDOPENS", "SEEKS", "FLUSHES")),
    "MPI-IO": ModuleSpec("MPIIO", ("INDEP_READS", "COLL_READS", "SPLIT_READS", "NB_READS"),
                         ("INDEP_WRITES", "COLL_WRITES", "SPLIT_WRITES", "NB_WRITES"),
                         ("INDEP_OPENS", "COLL_OPENS", "SYNCS", "VIEWS")),
    "H5F": ModuleSpec("H5F", (), (), ("OPENS", "FLUSHES")),
    "H5D": ModuleSpec("H5D", ("READS",), ("WRITES",), ("OPENS", "FLUSHES"), "H5D_FILE_REC_ID"),
    "PNETCDF_FILE": ModuleSpec("PNETCDF_FILE", (), (), ("CREATES", "OPENS", "REDEFS", "SYNCS")),
    "PNETCDF_VAR": ModuleSpec("PNETCDF_VAR", ("INDEP_READS", "COLL_READS", "NB_READS"),
                              ("INDEP_WRITES", "COLL_WRITES", "NB_WRITES"), ("OPENS",),
                              "PNETCDF_VAR_FILE_REC_ID"),
    "DFS": ModuleSpec("DFS", ("READS", "READXS", "NB_READS"), ("WRITES", "WRITEXS", "NB_WRITES"),
                      ("OPENS", "GLOBAL_OPENS", "LOOKUPS", "GET_SIZES", "PUNCHES", "REMOVES", "STATS")),
    "DAOS": ModuleSpec("DAOS", ("OBJ_FETCHES", "ARRAY_READS", "KV_GETS"),
                       ("OBJ_UPDATES", "ARRAY_WRITES", "KV_PUTS"),
                       ("OBJ_OPENS", "ARRAY_OPENS", "KV_OPENS", "ARRAY_GET_SIZES", "ARRAY_SET_SIZES",
                        "ARRAY_STATS", "OBJ_PUNCHES", "ARRAY_PUNCHES", "KV_REMOVES")),
}
# The layers that see each byte once, most preferred first: the first group with
# records gives the job totals (POSIX+STDIO+DFS are disjoint interfaces).
BASE_LAYERS: tuple[tuple[str, ...], ...] = (
    ("POSIX", "STDIO", "DFS"), ("DAOS",), ("MPI-IO",), ("H5D", "PNETCDF_VAR"))
# Which module's numbers describe a file at its lowest level.
FILE_LAYER_ORDER = ("POSIX", "STDIO", "DFS", "DAOS", "MPI-IO", "H5D", "PNETCDF_VAR", "H5F", "PNETCDF_FILE")


def _pos(col: np.ndarray) -> np.ndarray:
    """A counter column with Darshan's -1 ("not monitored") and other negatives as 0."""
    return np.where(col > 0, col, 0)


def _sum(recs: ModuleRecords, spec: ModuleSpec, names: tuple[str, ...], rows=slice(None)) -> np.ndarray:
    total = np.zeros(len(recs), dtype=np.float64)
    for name in names:
        full = f"{spec.prefix}_{name}"
        if recs.has(full):
            total += _pos(recs.get(full))
    return total[rows]


@dataclass
class Columns:
    """Per-record derived columns of one module (row i = record i)."""

    bytes_read: np.ndarray
    bytes_written: np.ndarray
    reads: np.ndarray
    writes: np.ndarray
    meta_ops: np.ndarray
    read_time: np.ndarray
    write_time: np.ndarray
    meta_time: np.ndarray

    @classmethod
    def of(cls, recs: ModuleRecords, spec: ModuleSpec) -> Columns:
        def one(name: str) -> np.ndarray:
            full = f"{spec.prefix}_{name}"
            return _pos(recs.get(full)).astype(np.float64) if recs.has(full) else np.zeros(len(recs))

        return cls(one("BYTES_READ"), one("BYTES_WRITTEN"), _sum(recs, spec, spec.reads),
                   _sum(recs, spec, spec.writes), _sum(recs, spec, spec.meta),
                   one("F_READ_TIME"), one("F_WRITE_TIME"), one("F_META_TIME"))


class _Totals:
    """Bytes moved and I/O time of a summary with read/write/meta fields."""

    bytes_read: int
    bytes_written: int
    read_time: float
    write_time: float
    meta_time: float

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def io_time(self) -> float:
        return self.read_time + self.write_time + self.meta_time


@dataclass
class ModuleSummary(_Totals):
    """Totals of one module over all its records (times: cumulative seconds over ranks)."""

    module: str
    records: int = 0
    files: int = 0  # distinct files (datasets/variables count toward their file)
    shared_files: int = 0  # files with a rank -1 record
    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0
    writes: int = 0
    meta_ops: int = 0  # opens, stats, seeks, syncs ... as listed in SPECS
    read_time: float = 0.0
    write_time: float = 0.0
    meta_time: float = 0.0
    size_hist_read: dict[str, int] = field(default_factory=dict)  # bin suffix -> operations
    size_hist_write: dict[str, int] = field(default_factory=dict)
    common_sizes: list[tuple[int, int]] = field(default_factory=list)  # (bytes, count), top 4
    seq_read_frac: float | None = None  # reads at a higher offset than the previous one
    consec_read_frac: float | None = None  # reads starting exactly where the previous ended
    seq_write_frac: float | None = None
    consec_write_frac: float | None = None
    file_not_aligned: int | None = None  # operations not aligned to the file alignment
    mem_not_aligned: int | None = None  # operations on buffers not aligned in memory
    file_alignment: int | None = None  # most common recorded file alignment (bytes)
    mem_alignment: int | None = None
    rw_switches: int = 0  # alternations between reading and writing
    # Per rank: its own records plus an even share of the shared-file (rank -1) records.
    rank_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rank_time: np.ndarray = field(default_factory=lambda: np.zeros(0))
    shared_bytes: int = 0  # bytes in shared-file (rank -1) records
    shared_time: float = 0.0
    rank_time_imbalance: float | None = None  # max/mean of rank_time over all ranks
    rank_bytes_imbalance: float | None = None  # max/mean of rank_bytes over all ranks
    shared_time_imbalance: float | None = None  # busiest shared file: slowest rank time / mean rank time


@dataclass
class ProfileSummary:
    """Job-level view: per-module totals plus the base layer's totals."""

    nprocs: int
    runtime_s: float
    modules: dict[str, ModuleSummary] = field(default_factory=dict)
    base_modules: list[str] = field(default_factory=list)  # modules the job totals come from
    bytes_read: int = 0
    bytes_written: int = 0
    io_time_s: float = 0.0  # cumulative I/O seconds over all ranks (base layer)
    files: int = 0  # distinct files with records in any file module
    rank_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rank_time: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rank_time_imbalance: float | None = None
    dxt_segments: dict[str, int | None] = field(default_factory=dict)  # None: trace unreadable

    @property
    def io_time_per_rank_s(self) -> float:
        """Mean I/O seconds per rank (cumulative time / nprocs)."""
        return self.io_time_s / self.nprocs if self.nprocs > 0 else self.io_time_s

    @property
    def io_fraction(self) -> float | None:
        """Share of the run time a rank spent in I/O on average."""
        return self.io_time_per_rank_s / self.runtime_s if self.runtime_s > 0 else None


def _file_keys(recs: ModuleRecords, spec: ModuleSpec) -> np.ndarray:
    return recs.counters[spec.file_key] if spec.file_key and spec.file_key in recs.counters else recs.ids


def _histogram(recs: ModuleRecords, spec: ModuleSpec, kind: str) -> dict[str, int]:
    hist = {}
    for suffix, _ in SIZE_BINS:
        for name in (f"{spec.prefix}_SIZE_{kind}_{suffix}", f"{spec.prefix}_SIZE_{kind}_AGG_{suffix}"):
            if recs.has(name):
                hist[suffix] = int(_pos(recs.get(name)).sum())
    return hist


def common_sizes(recs: ModuleRecords, prefix: str, top: int = 4) -> list[tuple[int, int]]:
    """Most frequent access sizes from the ACCESS1..4 counters, summed over records."""
    sizes, counts = [], []
    for k in range(1, 5):
        s, c = f"{prefix}_ACCESS{k}_ACCESS", f"{prefix}_ACCESS{k}_COUNT"
        if recs.has(s) and recs.has(c):
            sizes.append(recs.get(s))
            counts.append(recs.get(c))
    if not sizes:
        return []
    s, c = np.concatenate(sizes), np.concatenate(counts)
    keep = (c > 0) & (s >= 0)
    uniq, inv = np.unique(s[keep], return_inverse=True)
    totals = np.bincount(inv, weights=c[keep], minlength=len(uniq))
    order = np.lexsort((uniq, -totals))[:top]
    return [(int(uniq[i]), int(totals[i])) for i in order]


def _mode_positive(col: np.ndarray) -> int | None:
    vals = col[col > 0]
    if not len(vals):
        return None
    uniq, counts = np.unique(vals, return_counts=True)
    return int(uniq[np.argmax(counts)])


def _frac(num: float, den: float) -> float | None:
    return float(num) / float(den) if den > 0 else None


def _imbalance(per_rank: np.ndarray) -> float | None:
    mean = per_rank.mean() if len(per_rank) else 0.0
    return float(per_rank.max() / mean) if mean > 0 else None


def _nranks(profile: JobProfile, ranks: np.ndarray) -> int:
    top = int(ranks.max()) + 1 if len(ranks) else 0
    return max(profile.job.nprocs, top, 0)


def summarize_module(profile: JobProfile, module: str) -> ModuleSummary | None:
    """Totals of one module, or None for modules without byte/operation counters."""
    spec, recs = SPECS.get(module), profile.records.get(module)
    if spec is None or recs is None:
        return None
    cols = Columns.of(recs, spec)
    keys, ranks = _file_keys(recs, spec), recs.ranks
    shared = ranks == SHARED_RANK
    out = ModuleSummary(
        module=module, records=len(recs), files=len(arrays.unique(keys)),
        shared_files=len(arrays.unique(keys[shared])),
        bytes_read=int(cols.bytes_read.sum()), bytes_written=int(cols.bytes_written.sum()),
        reads=int(cols.reads.sum()), writes=int(cols.writes.sum()), meta_ops=int(cols.meta_ops.sum()),
        read_time=float(cols.read_time.sum()), write_time=float(cols.write_time.sum()),
        meta_time=float(cols.meta_time.sum()),
        size_hist_read=_histogram(recs, spec, "READ"), size_hist_write=_histogram(recs, spec, "WRITE"),
        common_sizes=common_sizes(recs, spec.prefix),
        rw_switches=int(_sum(recs, spec, ("RW_SWITCHES",)).sum()),
    )
    _sequentiality(out, recs, spec)
    _alignment(out, recs, spec)
    _ranks(out, profile, cols, recs, spec)
    return out


def _sequentiality(out: ModuleSummary, recs: ModuleRecords, spec: ModuleSpec) -> None:
    p = spec.prefix
    if recs.has(f"{p}_SEQ_READS"):
        out.seq_read_frac = _frac(_pos(recs.get(f"{p}_SEQ_READS")).sum(), out.reads)
        out.consec_read_frac = _frac(_pos(recs.get(f"{p}_CONSEC_READS")).sum(), out.reads)
        out.seq_write_frac = _frac(_pos(recs.get(f"{p}_SEQ_WRITES")).sum(), out.writes)
        out.consec_write_frac = _frac(_pos(recs.get(f"{p}_CONSEC_WRITES")).sum(), out.writes)


def _alignment(out: ModuleSummary, recs: ModuleRecords, spec: ModuleSpec) -> None:
    p = spec.prefix
    if recs.has(f"{p}_FILE_NOT_ALIGNED"):
        out.file_not_aligned = int(_pos(recs.get(f"{p}_FILE_NOT_ALIGNED")).sum())
        out.mem_not_aligned = int(_pos(recs.get(f"{p}_MEM_NOT_ALIGNED")).sum())
        out.file_alignment = _mode_positive(recs.get(f"{p}_FILE_ALIGNMENT"))
        out.mem_alignment = _mode_positive(recs.get(f"{p}_MEM_ALIGNMENT"))


def _ranks(out: ModuleSummary, profile: JobProfile, cols: Columns, recs: ModuleRecords,
           spec: ModuleSpec) -> None:
    ranks = recs.ranks
    moved = cols.bytes_read + cols.bytes_written
    busy = cols.read_time + cols.write_time + cols.meta_time
    own, shared = ranks >= 0, ranks == SHARED_RANK
    n = _nranks(profile, ranks)
    out.shared_bytes = int(moved[shared].sum())
    out.shared_time = float(busy[shared].sum())
    # Darshan keeps only the slowest/fastest rank of a shared file: its total is
    # split evenly here, and its skew is measured by shared_time_imbalance.
    out.rank_bytes = np.bincount(ranks[own], weights=moved[own], minlength=n) + out.shared_bytes / max(n, 1)
    out.rank_time = np.bincount(ranks[own], weights=busy[own], minlength=n) + out.shared_time / max(n, 1)
    out.rank_time_imbalance = _imbalance(out.rank_time)
    out.rank_bytes_imbalance = _imbalance(out.rank_bytes)
    slowest = f"{spec.prefix}_F_SLOWEST_RANK_TIME"
    active = shared & (busy > 0)
    if recs.has(slowest) and active.any() and n > 0:
        # The shared file with the most I/O time speaks for the job; tiny helper
        # files (MPI-IO shared-pointer files ...) would only add noise.
        i = np.flatnonzero(active)[np.argmax(busy[active])]
        out.shared_time_imbalance = float(_pos(recs.get(slowest)[i:i + 1])[0] / (busy[i] / n))


def base_modules(profile: JobProfile) -> list[str]:
    """The modules whose records together count each byte once (see BASE_LAYERS)."""
    for group in BASE_LAYERS:
        present = [m for m in group if m in profile.records and len(profile.records[m])]
        if present:
            return present
    return []


T = TypeVar("T")
_scope = threading.local()  # per thread: a Dask worker diagnoses logs on several threads at once


@contextmanager
def shared_tables() -> Iterator[None]:
    """Within: :func:`summarize` and :func:`per_file` of a profile are computed once and shared.

    The engine's facts, the figures and the fleet's model features each ask for the same tables
    of one profile (each computed them again, for every log of a fleet).
    Nothing may change the profile's records within (they are the ingested log); nested
    scopes share the outer one.
    """
    if getattr(_scope, "tables", None) is not None:
        yield
        return
    _scope.tables = {}
    try:
        yield
    finally:
        _scope.tables = None


def _once(profile: JobProfile, name: str, build: Callable[[], T]) -> T:
    tables = getattr(_scope, "tables", None)
    if tables is None:
        return build()
    # keyed by id(): the profile is kept beside its tables, so its id cannot be reused meanwhile
    _, built = tables.setdefault(id(profile), (profile, {}))
    if name not in built:
        built[name] = build()
    return built[name]


def summarize(profile: JobProfile) -> ProfileSummary:
    """Per-module totals and the job totals of the base layer."""
    return _once(profile, "summary", lambda: _summarize(profile))


def _summarize(profile: JobProfile) -> ProfileSummary:
    out = ProfileSummary(nprocs=profile.job.nprocs, runtime_s=profile.job.runtime_s)
    for module in profile.records:
        ms = summarize_module(profile, module)
        if ms is not None:
            out.modules[module] = ms
    out.base_modules = [m for m in base_modules(profile) if m in out.modules]
    base = [out.modules[m] for m in out.base_modules]
    out.bytes_read = sum(m.bytes_read for m in base)
    out.bytes_written = sum(m.bytes_written for m in base)
    out.io_time_s = sum(m.io_time for m in base)
    if base:
        n = max(len(m.rank_time) for m in base)
        out.rank_bytes = sum((np.pad(m.rank_bytes, (0, n - len(m.rank_bytes))) for m in base), np.zeros(n))
        out.rank_time = sum((np.pad(m.rank_time, (0, n - len(m.rank_time))) for m in base), np.zeros(n))
        out.rank_time_imbalance = _imbalance(out.rank_time)
    keys = [_file_keys(profile.records[m], SPECS[m]) for m in out.modules]
    out.files = len(arrays.unique(np.concatenate(keys))) if keys else 0
    out.dxt_segments = {m: (len(t) if t.readable else None) for m, t in profile.dxt.items()}
    return out


_STAT_FIELDS = ("bytes_read", "bytes_written", "reads", "writes", "meta_ops",
                "read_time", "write_time", "meta_time")


@dataclass
class FileModuleStats(_Totals):
    """What one module saw of one file (times: cumulative seconds over ranks)."""

    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0
    writes: int = 0
    meta_ops: int = 0
    read_time: float = 0.0
    write_time: float = 0.0
    meta_time: float = 0.0
    ranks: int = 0  # ranks with a record for the file (nprocs when shared)
    shared: bool = False  # reduced over all ranks (a rank -1 record)
    slowest_rank_time: float | None = None  # shared files: Darshan's slowest/fastest rank
    fastest_rank_time: float | None = None
    slowest_rank_bytes: int | None = None
    fastest_rank_bytes: int | None = None


@dataclass
class FileSummary:
    """One file: its lowest-layer numbers (`stats`), every module's view, its layout."""

    record_id: int
    path: str
    modules: list[str]
    stats: FileModuleStats  # from the first module of FILE_LAYER_ORDER that saw the file
    by_module: dict[str, FileModuleStats] = field(default_factory=dict)
    layout: LustreLayout | None = None
    fstype: str = ""

    @property
    def shared(self) -> bool:
        return self.stats.shared

    @property
    def ranks(self) -> int:
        return self.stats.ranks

    @property
    def bytes(self) -> int:
        return self.stats.bytes


_EXTREMES = (("slowest_rank_time", "F_SLOWEST_RANK_TIME"), ("fastest_rank_time", "F_FASTEST_RANK_TIME"),
             ("slowest_rank_bytes", "SLOWEST_RANK_BYTES"), ("fastest_rank_bytes", "FASTEST_RANK_BYTES"))


def _rank_extremes(recs: ModuleRecords, spec: ModuleSpec, inv: np.ndarray, nfiles: int) -> list[list]:
    """Darshan's slowest/fastest rank time and bytes of each shared file (None elsewhere)."""
    shared = recs.ranks == SHARED_RANK
    out = []
    for attr, name in _EXTREMES:
        col: list = [None] * nfiles
        full = f"{spec.prefix}_{name}"
        if recs.has(full) and shared.any():
            values = recs.get(full)[shared]
            cast = float if attr.endswith("_time") else int
            for i, v in zip(inv[shared].tolist(), values.tolist()):
                col[i] = cast(v) if v >= 0 else None
        out.append(col)
    return out


def _module_files(profile: JobProfile, module: str) -> dict[int, FileModuleStats]:
    """File id -> what `module` saw of it, aggregated over its records."""
    recs, spec = profile.records[module], SPECS[module]
    cols = Columns.of(recs, spec)
    uniq, inv = np.unique(_file_keys(recs, spec), return_inverse=True)
    n = len(uniq)
    sums = []
    for f in _STAT_FIELDS:
        total = np.bincount(inv, weights=getattr(cols, f), minlength=n)
        sums.append(total.tolist() if f.endswith("_time") else np.rint(total).astype(np.int64).tolist())
    shared = np.bincount(inv, weights=(recs.ranks == SHARED_RANK), minlength=n) > 0
    # distinct (file, rank) pairs as one integer each (np.unique over axis=1 sorts rows, 20x slower)
    ranks = recs.ranks.astype(np.int64) - SHARED_RANK
    files_of_pairs = arrays.unique(inv.astype(np.int64) * (int(ranks.max(initial=0)) + 1) + ranks)
    files_of_pairs //= int(ranks.max(initial=0)) + 1
    nranks = np.where(shared, max(profile.job.nprocs, 1), np.bincount(files_of_pairs, minlength=n))
    columns = [*sums, nranks.tolist(), shared.tolist(), *_rank_extremes(recs, spec, inv, n)]
    return {rid: FileModuleStats(*values) for rid, values in zip(uniq.tolist(), zip(*columns))}


def per_file(profile: JobProfile, limit: int | None = None) -> list[FileSummary]:
    """One summary per file seen by a file-level module, most bytes first (`limit`: top N only)."""
    if limit is None:
        return _once(profile, "per_file", lambda: _per_file(profile, None))
    return _per_file(profile, limit)


def _per_file(profile: JobProfile, limit: int | None) -> list[FileSummary]:
    views = {m: _module_files(profile, m) for m in FILE_LAYER_ORDER if m in profile.records}
    lowest: dict[int, FileModuleStats] = {}
    for files in views.values():
        for rid, stats in files.items():
            lowest.setdefault(rid, stats)
    ranked = sorted(lowest, key=lambda rid: (-lowest[rid].bytes, profile.name_of(rid)))
    out = []
    for rid in ranked if limit is None else ranked[:limit]:
        by_module = {m: files[rid] for m, files in views.items() if rid in files}
        path = profile.name_of(rid)
        out.append(FileSummary(record_id=rid, path=path, modules=list(by_module), stats=lowest[rid],
                               by_module=by_module, layout=profile.lustre.get(rid),
                               fstype=profile.fstype_of_record(rid)))
    return out
