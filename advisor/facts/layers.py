"""The layer account: where a job's I/O time went, layer by layer (docs/layers.md).

An application calls HDF5 or PnetCDF, which call MPI-IO, which calls POSIX (or DFS, which
calls DAOS); STDIO sits beside POSIX. Darshan times each layer's calls, and an upper layer's
time includes the time of the calls it made below. For each layer present the account gives
its time per process (summed over ranks / processes, bounded as :mod:`advisor.facts.sanity`
bounds every time), bytes and operations; the time it spent above the layer below on the
same files (the middleware's own cost: collective exchange, synchronisation, the library's
own work); and how many more bytes and operations the layer below moved.

Computed once per profile (:func:`account`); the job summary's ``layers`` section is its
:meth:`LayerAccount.to_dict`, and `show`, the terminal header and the HTML page all print that
section, so they cannot disagree.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from advisor.facts import FactContext, Missing, NotApplicable
from advisor.facts._darshan import darshan_like, nprocs
from advisor.facts.aggregation import mpiio_modes
from advisor.facts.sanity import LayerTime, base_time, bounded, combine, job_time, lives
from advisor.metrics import SPECS, Columns
from advisor.profile import SHARED_RANK, STD_STREAMS

FILE_ROWS = 10  # files listed in the account, most time first
NO_FILE = 0  # the file id of dataset records that name none (older H5D records: a 2020 MACSio log)


@dataclass(frozen=True)
class Layer:
    """One I/O layer: the Darshan modules that time its calls and the layers that carry them."""

    name: str
    modules: tuple[str, ...]
    below: tuple[str, ...] = ()  # nearest first: the first present on the layer's files carries them
    own: str = ""  # what its time above the layer below is spent on


# Top first. STDIO is beside POSIX, not below anything Darshan sees; DAOS records objects, not files.
LAYERS = (
    Layer("HDF5", ("H5F", "H5D"), ("MPI-IO", "POSIX"),
          "HDF5's own work: metadata, chunking, type conversion, waits in collective calls"),
    Layer("PnetCDF", ("PNETCDF_FILE", "PNETCDF_VAR"), ("MPI-IO",),
          "PnetCDF's own work: header, request aggregation, waits in collective calls"),
    Layer("MPI-IO", ("MPI-IO",), ("POSIX", "DFS"),
          "collective buffering's data exchange, synchronisation, waits for the aggregators"),
    Layer("DFS", ("DFS",), ("DAOS",), "DFS's own work: path lookup, object mapping"),
    Layer("POSIX", ("POSIX",)),
    Layer("STDIO", ("STDIO",)),
    Layer("DAOS", ("DAOS",)),
)
BY_NAME = {layer.name: layer for layer in LAYERS}
LIBRARY_LAYERS = ("HDF5", "PnetCDF")  # what the application calls, above MPI-IO (or POSIX)
# Time counters beyond read, write and metadata: PnetCDF carries out nonblocking requests in ncmpi_wait.
EXTRA_TIMES = {"PNETCDF_FILE": ("wait", "PNETCDF_FILE_F_WAIT_TIME")}


@dataclass
class LayerRow:
    """One layer of the job: seconds per process (None: not timed by this log), bytes, operations,
    and its cost above the layer below on the same files."""

    layer: str
    modules: list[str]
    time_s: float | None
    summed_s: float | None  # as the counters sum it (before the bounds)
    read_s: float | None
    write_s: float | None
    meta_s: float | None
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    meta_ops: int
    files: int
    below: str = ""  # the layer that carried its calls
    below_time_s: float | None = None  # that layer's time on this layer's files
    own_time_s: float | None = None  # time_s - below_time_s, never negative
    own: str = ""  # what the own time is spent on
    byte_amplification: float | None = None  # bytes below / bytes here, same files
    op_amplification: float | None = None  # reads + writes below / here, same files
    notes: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written


@dataclass
class FileLayer:
    """What one layer did on one file (seconds per process, bounded by the file's own calls)."""

    layer: str
    time_s: float | None
    bytes: int
    ops: int
    own_time_s: float | None = None
    below: str = ""


@dataclass
class FileRow:
    """One file and the layers that counted its I/O."""
    path: str
    layers: list[FileLayer]


@dataclass
class LayerAccount:
    """Every layer of one job, and the two figures the summary states with the layer of each:
    `io_time` (io_time_s: the layer the job called) and `base_time` (read/write/meta_time_s)."""

    nprocs: int
    runtime_s: float
    io_time: LayerTime | None
    base_time: LayerTime | None
    rows: list[LayerRow]
    files: list[FileRow]
    files_total: int
    basis: str = "seconds per process: summed over ranks / processes, bounded by what a process could spend"

    def row(self, name: str) -> LayerRow | None:
        return next((r for r in self.rows if r.layer == name), None)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Module:
    """Per record of one module: the file it belongs to, its seconds, life, bytes and operations."""

    keys: np.ndarray  # file id (a dataset's or variable's file)
    seconds: dict[str, np.ndarray]  # kind -> seconds summed over the record's ranks
    life: np.ndarray | None  # first open to last close, None without timestamps
    shared: np.ndarray
    cols: Columns
    timed: bool  # some time counter was monitored (Darshan writes -1 where not)
    n: int  # processes the sums are divided by


_FIELDS = ("time", "bytes_read", "bytes_written", "reads", "writes", "meta_ops")


@dataclass
class _Files:
    """One layer's figures per file, as arrays aligned with `keys` (sorted file ids): seconds per
    process (bounded by the file's records' lives), bytes and operations."""

    keys: np.ndarray
    time: np.ndarray
    bytes_read: np.ndarray
    bytes_written: np.ndarray
    reads: np.ndarray
    writes: np.ndarray
    meta_ops: np.ndarray

    @property
    def bytes(self) -> np.ndarray:
        return self.bytes_read + self.bytes_written

    @property
    def ops(self) -> np.ndarray:
        return self.reads + self.writes

    def on(self, files: np.ndarray) -> np.ndarray:
        """Which of the layer's files are in `files`."""
        return np.isin(self.keys, files, assume_unique=True, kind="sort")

    def index(self, key: int) -> int | None:
        i = int(np.searchsorted(self.keys, np.uint64(key)))
        return i if i < len(self.keys) and self.keys[i] == key else None


def account(ctx: FactContext) -> LayerAccount:
    """The layer account of the profile (once per profile); NotApplicable for non-Darshan inputs."""
    darshan_like(ctx)
    return ctx.memo("layers.account", lambda: _build(ctx))


def layer_section(ctx: FactContext) -> dict | None:
    """The account as the job summary's ``layers`` section; None for inputs without Darshan layers."""
    try:
        found = account(ctx)
    except (Missing, NotApplicable):
        return None
    return found.to_dict() if found.rows else None


def _views(ctx: FactContext) -> tuple[list[Layer], dict[str, _Module], dict[str, _Files], float]:
    """The layers present, their modules' records, each layer's figures per file, and the run time
    (once per profile: the account and time_above share them)."""
    def build():
        runtime = float(ctx.value("runtime_s") or 0.0)
        present = [layer for layer in LAYERS if any(_has(ctx, m) for m in layer.modules)]
        views = {m: _module(ctx, m, runtime) for layer in present for m in layer.modules if _has(ctx, m)}
        return present, views, {layer.name: _layer_files(layer, views, runtime) for layer in present}, runtime
    return ctx.memo("layers.views", build)


def layer_files(ctx: FactContext) -> dict[str, _Files]:
    """Layer name -> its figures per file (sorted file ids): bytes, operations, seconds per process."""
    darshan_like(ctx)
    return _views(ctx)[2]


def _build(ctx: FactContext) -> LayerAccount:
    present, views, per_file, runtime = _views(ctx)
    rows = [_row(ctx, layer, views, per_file, runtime) for layer in present]
    if not rows:  # Darshan modules, none of them an I/O layer (BG/Q, HEATMAP only)
        return LayerAccount(nprocs(ctx), runtime, None, None, [], [], 0)
    listed = _listed_files(ctx, per_file)[0]
    return LayerAccount(nprocs(ctx), runtime, _as_called(_maybe(job_time, ctx), rows, runtime),
                        _maybe(base_time, ctx), rows, _file_rows(ctx, present, views, per_file), len(listed))


def _as_called(io: LayerTime | None, rows: list[LayerRow], runtime: float) -> LayerTime | None:
    """The job's I/O time as its processes spent it in the calls they made: the time of the layer below
    the libraries (MPI-IO for its files, else POSIX + STDIO) plus what HDF5's and PnetCDF's calls spent
    above it on the same files (their own time). Without it the headline time of an HDF5 job was its
    MPI-IO time, less than the time its H5Dwrite calls took (FLASH: 34.4 s beside HDF5's 42.6 s). A
    library whose counters time less than the layer below (HDF5's attribute and metadata-cache calls
    move data H5F/H5D do not time) adds nothing: the layer below's time is then the larger, and is kept."""
    if io is None:
        return None
    own = [(r.layer, r.own_time_s) for r in rows if r.layer in LIBRARY_LAYERS and r.own_time_s]
    if not own:
        return io
    extra = sum(t for _, t in own)
    return replace(io, layer=" + ".join([*(name for name, _ in own), io.layer]),
                   total=min(io.total + extra, runtime or np.inf), summed=io.summed + extra)


@dataclass
class Above:
    """A layer's time above the layer below it (:func:`time_above`), seconds per process: per file
    both saw (`keys`, sorted), and over those files as the account bounds every layer's time."""

    layer: str
    below: str  # "" when no layer below has records
    keys: np.ndarray
    upper: np.ndarray  # the layer's seconds per file, bounded by the file's records' lives
    lower: np.ndarray  # the layer below's: its mean per process, or what the ranks waited for
    upper_total: float | None = None  # None: not timed
    lower_total: float | None = None

    @property
    def per_file(self) -> np.ndarray:
        return np.maximum(self.upper - self.lower, 0.0)

    @property
    def total(self) -> float | None:
        if self.upper_total is None or self.lower_total is None:
            return None
        return max(0.0, self.upper_total - self.lower_total)

    def of(self, key: int) -> float | None:
        i = int(np.searchsorted(self.keys, np.uint64(key)))
        return float(self.per_file[i]) if i < len(self.keys) and self.keys[i] == key else None


def time_above(ctx: FactContext, layer: str, kinds: tuple[str, ...] | None = None, waited: bool = False) -> Above:
    """The one definition of a layer's time above the layer below (docs/layers.md, "Own time"): on the
    files both saw, the layer's seconds per process less the layer below's (of `kinds`: all by default).

    What is subtracted depends on the question. The layer account asks where the mean process's time
    went: both sides are means per process, so their difference is the time a process spent inside
    the layer's calls and not inside its own calls below (`waited=False`; its totals are bounded like
    every layer's time). MPI008 asks what fewer, larger collective calls would save: with collective
    buffering only the aggregators call POSIX and every rank waits inside the collective call for
    the slowest of them, so what the ranks waited for the file system (the slowest rank's time on a
    shared file when Darshan kept it, never less than the mean) is data movement that larger calls
    do not remove (`waited=True`); subtracting the mean would count that wait as per-call overhead."""
    darshan_like(ctx)
    _present, views, per_file, runtime = _views(ctx)
    if layer not in per_file:
        raise Missing(f"no {layer} records in the log")
    spec = BY_NAME[layer]
    below, same, matched = _below(spec, per_file)
    if not below:
        return Above(layer, "", same, np.zeros(0), np.zeros(0))
    here = _layer_files(spec, views, runtime, kinds)
    there = _layer_files(BY_NAME[below], views, runtime, kinds)
    on = same if matched else same[:0]
    upper = here.time[np.searchsorted(here.keys, on)]
    lower = there.time[np.searchsorted(there.keys, on)]
    if waited:
        lower = np.maximum(lower, _slowest_rank(ctx, BY_NAME[below], views, on))
    unplaced = per_file[layer].index(NO_FILE) is not None  # records naming no file: whole layers compared
    top = _time(ctx, spec, views, None if unplaced or not matched else same, runtime)
    bottom = _time(ctx, BY_NAME[below], views, same, runtime)
    return Above(layer, below, on, upper, lower, _kinds(top, kinds), _kinds(bottom, kinds))


def _kinds(t: LayerTime | None, kinds: tuple[str, ...] | None) -> float | None:
    if t is None:
        return None
    return t.total if kinds is None else sum(getattr(t, k) for k in kinds)


def _slowest_rank(ctx: FactContext, layer: Layer, views: dict[str, _Module], files: np.ndarray) -> np.ndarray:
    """Per file of `files`, the slowest rank's seconds on it where a shared record kept them."""
    out = np.zeros(len(files))
    for module in layer.modules:
        view, rec = views.get(module), ctx.profile.records.get(module)
        name = f"{SPECS[module].prefix}_F_SLOWEST_RANK_TIME"
        if view is None or not rec.has(name):
            continue
        at = np.searchsorted(files, view.keys)
        hit = view.shared & (at < len(files)) & (files[np.minimum(at, len(files) - 1)] == view.keys)
        np.maximum.at(out, at[hit], np.clip(np.asarray(rec.get(name), np.float64)[hit], 0, None))
    return out


def _has(ctx: FactContext, module: str) -> bool:
    rec = ctx.profile.records.get(module)
    return rec is not None and len(rec) > 0 and module in SPECS


def _maybe(build, ctx: FactContext) -> LayerTime | None:
    with contextlib.suppress(Missing):
        return build(ctx)
    return None


def _module(ctx: FactContext, module: str, runtime: float) -> _Module:
    rec, spec = ctx.profile.records[module], SPECS[module]
    cols = Columns.of(rec, spec)
    keys = rec.counters.get(spec.file_key, rec.ids) if spec.file_key else rec.ids
    seconds = {"read": cols.read_time, "write": cols.write_time, "meta": cols.meta_time}
    names = [f"{spec.prefix}_F_{k}_TIME" for k in ("READ", "WRITE", "META")]
    if module in EXTRA_TIMES:
        kind, name = EXTRA_TIMES[module]
        seconds[kind] = np.clip(np.asarray(rec.get(name, 0), np.float64), 0, None)
        names.append(name)
    timed = any(rec.has(c) and bool((np.asarray(rec.get(c)) >= 0).any()) for c in names)
    span = lives(rec, spec.prefix, runtime or np.inf)
    life = None if span is None or not runtime else np.clip(span[1] - span[0], 0, runtime)
    n = max(nprocs(ctx), int(rec.ranks.max()) + 1)
    return _Module(np.asarray(keys).astype(np.uint64), seconds, life, rec.ranks == SHARED_RANK, cols, timed, n)


def _layer_files(layer: Layer, views: dict[str, _Module], runtime: float,
                 kinds: tuple[str, ...] | None = None) -> _Files:
    """The layer's figures per file (seconds of `kinds` only, when given). Bytes: the module that
    saw the most of them (PnetCDF's file record counts the header besides the variables' bytes);
    operations and seconds: summed."""
    parts = [_module_files(views[m], kinds) for m in layer.modules if m in views]
    keys = _group(np.concatenate([k for k, _ in parts]))[0]
    out = _Files(keys, *(np.zeros(len(keys), np.float64 if f == "time" else np.int64) for f in _FIELDS))
    for uniq, figs in parts:
        at = np.searchsorted(keys, uniq)
        out.time[at] += figs["time"]
        for f in ("reads", "writes", "meta_ops"):
            getattr(out, f)[at] += figs[f]
        more = figs["bytes_read"] + figs["bytes_written"] > out.bytes[at]
        out.bytes_read[at[more]], out.bytes_written[at[more]] = figs["bytes_read"][more], figs["bytes_written"][more]
    if runtime:
        np.minimum(out.time, runtime, out=out.time)
    return out


def _group(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct keys, index of each key among them), by sorting: numpy's hashing unique is
    several times slower on random 64-bit record ids."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1])) if len(keys) else np.zeros(0, bool)
    inv = np.empty(len(keys), np.int64)
    inv[order] = np.cumsum(first) - 1
    return ordered[first], inv


def _module_files(view: _Module, kinds: tuple[str, ...] | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(file ids, field -> value per file) of one module's records (seconds of `kinds`: all by default)."""
    uniq, inv = _group(view.keys)
    n = len(uniq)
    seconds = sum(v for k, v in view.seconds.items() if kinds is None or k in kinds)
    time = np.bincount(inv, weights=np.broadcast_to(seconds, view.keys.shape), minlength=n) / view.n
    if view.life is not None:  # a rank's calls on a file lie within its records' lives
        own = ~view.shared
        bound = (np.bincount(inv[own], weights=view.life[own], minlength=n) / view.n
                 + np.bincount(inv[view.shared], weights=view.life[view.shared], minlength=n))
        time = np.minimum(time, bound)
    c = view.cols
    figs = {f: np.rint(np.bincount(inv, weights=getattr(c, f), minlength=n)).astype(np.int64) for f in _FIELDS[1:]}
    return uniq, {"time": time, **figs}


def _time(ctx: FactContext, layer: Layer, views: dict[str, _Module], files: np.ndarray | None,
          runtime: float) -> LayerTime | None:
    """The layer's seconds per process on `files` (None: all of them), bounded; None when untimed."""
    keeps = {m: None if files is None else np.isin(views[m].keys, files, kind="sort")
             for m in layer.modules if m in views and views[m].timed}
    if not keeps:
        return None
    if all(keep is None or keep.all() for keep in keeps.values()):  # every file: computed once
        return ctx.memo(f"layers.time.{layer.name}", lambda: _bounded_time(ctx, layer, views, None, runtime))
    return _bounded_time(ctx, layer, views, keeps, runtime)


def _bounded_time(ctx: FactContext, layer: Layer, views: dict[str, _Module],
                  keeps: dict[str, np.ndarray] | None, runtime: float) -> LayerTime:
    parts = []
    for module in layer.modules:
        view = views.get(module)
        if view is None or not view.timed:
            continue
        keep = np.ones(len(view.keys), bool) if keeps is None else keeps[module]
        b = bounded(ctx, module, keep)
        for kind, seconds in view.seconds.items():  # the extra kinds (PnetCDF's wait)
            b.summed.setdefault(kind, float(seconds[keep].sum()) / view.n)
        parts.append(b)
    return combine(layer.name, parts, runtime or np.inf)


def _below(layer: Layer, per_file: dict[str, _Files]) -> tuple[str, np.ndarray, bool]:
    """The layer that carried `layer`'s calls, the files both saw, and whether they name the same
    files (DAOS records objects, not DFS's files: then the whole layers are compared)."""
    mine = per_file[layer.name].keys
    mine = mine[mine != NO_FILE]
    for name in layer.below:
        if name in per_file:
            same = np.intersect1d(mine, per_file[name].keys, assume_unique=True)
            if len(same):
                return name, same, True
    for name in layer.below:
        if name in per_file:
            return name, per_file[name].keys, False
    return "", mine[:0], True


def _row(ctx: FactContext, layer: Layer, views: dict[str, _Module], per_file: dict[str, _Files],
         runtime: float) -> LayerRow:
    files = per_file[layer.name]
    t = _time(ctx, layer, views, None, runtime)
    totals = [int(getattr(files, f).sum()) for f in _FIELDS[1:]]
    row = LayerRow(layer.name, [m for m in layer.modules if m in views], t and t.total, t and t.summed,
                   t and t.read, t and t.write, t and t.meta, *totals, files=int((files.keys != NO_FILE).sum()))
    if t is None:
        row.notes.append("not timed in this log: its time counters hold -1 (not monitored by this Darshan)")
    below, same, matched = _below(layer, per_file)
    if below:
        _compare(ctx, row, layer, below, same, matched, views, per_file, runtime)
    return row


def _compare(ctx: FactContext, row: LayerRow, layer: Layer, below: str, same: np.ndarray, matched: bool,
             views: dict[str, _Module], per_file: dict[str, _Files], runtime: float) -> None:
    """The layer's time above `below` and the amplification, on the files both saw."""
    row.below, row.own = below, _own_work(ctx, layer, same)
    here, there = per_file[layer.name], per_file[below]
    unplaced = here.index(NO_FILE) is not None  # then its whole time and bytes are compared
    above = time_above(ctx, layer.name)
    row.below_time_s = above.lower_total
    mine = (here.on(same) if matched else np.ones(len(here.keys), bool)) | (here.keys == NO_FILE)
    if row.time_s is not None and above.total is not None:
        top, lower = above.upper_total, above.lower_total
        row.own_time_s = above.total
        if lower > top * 1.01 + 1e-3:
            row.notes.append(f"{below} spent more time on these files than {layer.name}: calls {layer.name}'s "
                             "counters do not time moved data below it")
    under = there.on(same)
    up_bytes, down_bytes = int(here.bytes[mine].sum()), int(there.bytes[under].sum())
    up_ops, down_ops = int(here.ops[mine].sum()), int(there.ops[under].sum())
    row.byte_amplification = down_bytes / up_bytes if up_bytes else None
    row.op_amplification = down_ops / up_ops if up_ops else None
    if unplaced:
        row.notes.append(f"some of its records name no file (this Darshan's {'/'.join(row.modules)}): its whole "
                         f"time is compared with {below}'s on the files it names")
    if not matched:
        row.notes.append(f"{below} records name other objects than {layer.name}'s files: the whole layers are compared")
    elif len(same) < row.files:
        row.notes.append(f"{row.files - len(same)} of its {row.files} files were not seen by {below}")


INDEPENDENT_OWN = ("independent calls, no collective exchange: the MPI library's work around its POSIX calls, "
                   "such as the byte-range locks ROMIO and OMPIO take on NFS and packing non-contiguous buffers")


def _own_work(ctx: FactContext, layer: Layer, same: np.ndarray) -> str:
    """What the layer's time above the layer below is spent on. MPI-IO's is collective buffering's exchange
    and waits only where its calls were collective: a job of independent calls has none (mpi-io-test on
    NFS: 5.4 s per process above POSIX, all of it independent writes, none of it collective buffering)."""
    if layer.name != "MPI-IO":
        return layer.own
    modes = mpiio_modes(ctx)
    collective = [modes[i] for i in same.tolist() if i in modes]
    return INDEPENDENT_OWN if collective and not any(collective) else layer.own


def _listed_files(ctx: FactContext, per_file: dict[str, _Files]) -> tuple[np.ndarray, np.ndarray]:
    """(file ids, most seconds per process in a timed layer) of the files the per-file account
    lists: named by a record, not a standard stream."""
    keys, inv = _group(np.concatenate([f.keys for f in per_file.values()]))
    times = np.zeros(len(keys))
    np.maximum.at(times, inv, np.concatenate([f.time for f in per_file.values()]))
    skip = [NO_FILE, *(i for i, name in ctx.profile.names.items() if name in STD_STREAMS)]
    keep = ~np.isin(keys, np.asarray(skip, np.uint64), kind="sort")
    return keys[keep], times[keep]


def _file_rows(ctx: FactContext, present: list[Layer], views: dict[str, _Module],
               per_file: dict[str, _Files]) -> list[FileRow]:
    """The FILE_ROWS files with the most time in a timed layer, each layer's figures on them."""
    timed = {layer.name for layer in present if any(views[m].timed for m in layer.modules if m in views)}
    keys, times = _listed_files(ctx, {n: f for n, f in per_file.items() if n in timed} or per_file)
    top = np.lexsort((keys, -times))[:FILE_ROWS]
    aboves = {layer.name: time_above(ctx, layer.name) for layer in present if layer.below}
    rows = []
    for key in keys[top].tolist():
        cells = []
        for layer in present:
            i = per_file[layer.name].index(key)
            if i is None:
                continue
            below = next((b for b in layer.below if b in per_file and per_file[b].index(key) is not None), "")
            t = float(per_file[layer.name].time[i]) if layer.name in timed else None
            own = aboves[layer.name].of(key) if t is not None and below in timed and layer.below else None
            cells.append(FileLayer(layer.name, t, int(per_file[layer.name].bytes[i]),
                                   int(per_file[layer.name].ops[i]), own, below))
        rows.append(FileRow(ctx.profile.name_of(key) or f"<unnamed record {key:#x}>", cells))  # DFS, DAOS
    return rows
