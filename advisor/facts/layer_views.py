"""The I/O layers and each layer's figures per file, the ground the layer account (advisor.facts.layers)
and the time above a layer (advisor.facts.layer_above) both stand on (docs/layers.md).

A layer is the Darshan modules that time its calls (HDF5: H5F and H5D) and the layers that carry them
below. Its figures per file are seconds per process (bounded by the file's records' lives, as
:mod:`advisor.facts.sanity` bounds every time), bytes and operations, computed once per profile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.facts import FactContext
from advisor.facts._darshan import darshan_like, nprocs
from advisor.facts.sanity import LayerTime, bounded, combine, lives
from advisor.metrics import SPECS, Columns
from advisor.profile import SHARED_RANK

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
          "HDF5's own work: metadata, chunking, type conversion"),
    Layer("PnetCDF", ("PNETCDF_FILE", "PNETCDF_VAR"), ("MPI-IO",),
          "PnetCDF's own work: header, request aggregation"),
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
class ModuleView:
    """Per record of one module: the file it belongs to, its seconds, life, bytes and operations."""

    keys: np.ndarray  # file id (a dataset's or variable's file)
    seconds: dict[str, np.ndarray]  # kind -> seconds summed over the record's ranks
    life: np.ndarray | None  # first open to last close, None without timestamps
    shared: np.ndarray
    cols: Columns
    timed: bool  # some time counter was monitored (Darshan writes -1 where not)
    n: int  # processes the sums are divided by


FIELDS = ("time", "bytes_read", "bytes_written", "reads", "writes", "meta_ops")


@dataclass
class LayerFiles:
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


def views_of(ctx: FactContext) -> tuple[list[Layer], dict[str, ModuleView], dict[str, LayerFiles], float]:
    """The layers present, their modules' records, each layer's figures per file, and the run time
    (once per profile: the account and time_above share them)."""
    def build():
        runtime = float(ctx.value("runtime_s") or 0.0)
        present = [layer for layer in LAYERS if any(has_records(ctx, m) for m in layer.modules)]
        views = {m: module_view(ctx, m, runtime) for layer in present for m in layer.modules if has_records(ctx, m)}
        return present, views, {layer.name: files_of(layer, views, runtime) for layer in present}, runtime
    return ctx.memo("layers.views", build)


def layer_files(ctx: FactContext) -> dict[str, LayerFiles]:
    """Layer name -> its figures per file (sorted file ids): bytes, operations, seconds per process."""
    darshan_like(ctx)
    return views_of(ctx)[2]


def has_records(ctx: FactContext, module: str) -> bool:
    rec = ctx.profile.records.get(module)
    return rec is not None and len(rec) > 0 and module in SPECS


def module_view(ctx: FactContext, module: str, runtime: float) -> ModuleView:
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
    return ModuleView(np.asarray(keys).astype(np.uint64), seconds, life, rec.ranks == SHARED_RANK, cols, timed, n)


def files_of(layer: Layer, views: dict[str, ModuleView], runtime: float,
                 kinds: tuple[str, ...] | None = None) -> LayerFiles:
    """The layer's figures per file (seconds of `kinds` only, when given). Bytes: the module that
    saw the most of them (PnetCDF's file record counts the header besides the variables' bytes);
    operations and seconds: summed."""
    parts = [module_files(views[m], kinds) for m in layer.modules if m in views]
    keys = group_keys(np.concatenate([k for k, _ in parts]))[0]
    out = LayerFiles(keys, *(np.zeros(len(keys), np.float64 if f == "time" else np.int64) for f in FIELDS))
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


def group_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct keys, index of each key among them), by sorting: numpy's hashing unique is
    several times slower on random 64-bit record ids."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1])) if len(keys) else np.zeros(0, bool)
    inv = np.empty(len(keys), np.int64)
    inv[order] = np.cumsum(first) - 1
    return ordered[first], inv


def module_files(view: ModuleView, kinds: tuple[str, ...] | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(file ids, field -> value per file) of one module's records (seconds of `kinds`: all by default)."""
    uniq, inv = group_keys(view.keys)
    n = len(uniq)
    seconds = sum(v for k, v in view.seconds.items() if kinds is None or k in kinds)
    time = np.bincount(inv, weights=np.broadcast_to(seconds, view.keys.shape), minlength=n) / view.n
    if view.life is not None:  # a rank's calls on a file lie within its records' lives
        own = ~view.shared
        bound = (np.bincount(inv[own], weights=view.life[own], minlength=n) / view.n
                 + np.bincount(inv[view.shared], weights=view.life[view.shared], minlength=n))
        time = np.minimum(time, bound)
    c = view.cols
    figs = {f: np.rint(np.bincount(inv, weights=getattr(c, f), minlength=n)).astype(np.int64) for f in FIELDS[1:]}
    return uniq, {"time": time, **figs}


def layer_time(ctx: FactContext, layer: Layer, views: dict[str, ModuleView], files: np.ndarray | None,
          runtime: float) -> LayerTime | None:
    """The layer's seconds per process on `files` (None: all of them), bounded; None when untimed."""
    keeps = {m: None if files is None else np.isin(views[m].keys, files, kind="sort")
             for m in layer.modules if m in views and views[m].timed}
    if not keeps:
        return None
    if all(keep is None or keep.all() for keep in keeps.values()):  # every file: computed once
        return ctx.memo(f"layers.time.{layer.name}", lambda: bounded_layer_time(ctx, layer, views, None, runtime))
    return bounded_layer_time(ctx, layer, views, keeps, runtime)


def bounded_layer_time(ctx: FactContext, layer: Layer, views: dict[str, ModuleView],
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


def carrier(layer: Layer, per_file: dict[str, LayerFiles]) -> tuple[str, np.ndarray, bool]:
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
