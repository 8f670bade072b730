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
from advisor.facts.aggregation import indep_own_share, mpiio_modes
from advisor.facts.layer_above import time_above
from advisor.facts.layer_views import (FIELDS, LAYERS, LIBRARY_LAYERS, NO_FILE, Layer, LayerFiles, ModuleView,
                                       carrier, group_keys, layer_files, layer_time, views_of)
from advisor.facts.sanity import LayerTime, base_time, job_time
from advisor.profile import STD_STREAMS

__all__ = ["LAYERS", "NO_FILE", "account", "layer_files", "layer_section", "time_above"]

FILE_ROWS = 10  # files listed in the account, most time first


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


def _build(ctx: FactContext) -> LayerAccount:
    present, views, per_file, runtime = views_of(ctx)
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


def _maybe(build, ctx: FactContext) -> LayerTime | None:
    with contextlib.suppress(Missing):
        return build(ctx)
    return None


def _row(ctx: FactContext, layer: Layer, views: dict[str, ModuleView], per_file: dict[str, LayerFiles],
         runtime: float) -> LayerRow:
    files = per_file[layer.name]
    t = layer_time(ctx, layer, views, None, runtime)
    totals = [int(getattr(files, f).sum()) for f in FIELDS[1:]]
    row = LayerRow(layer.name, [m for m in layer.modules if m in views], t and t.total, t and t.summed,
                   t and t.read, t and t.write, t and t.meta, *totals, files=int((files.keys != NO_FILE).sum()))
    if t is None:
        row.notes.append("not timed in this log: its time counters hold -1 (not monitored by this Darshan)")
    below, same, matched = carrier(layer, per_file)
    if below:
        _compare(ctx, row, layer, below, same, matched, views, per_file, runtime)
    return row


def _compare(ctx: FactContext, row: LayerRow, layer: Layer, below: str, same: np.ndarray, matched: bool,
             views: dict[str, ModuleView], per_file: dict[str, LayerFiles], runtime: float) -> None:
    """The layer's time above `below` and the amplification, on the files both saw."""
    row.below, row.own = below, _own_work(ctx, layer, below, same)
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
                   "such as {locks}packing non-contiguous buffers")
NFS_LOCKS = "the byte-range locks ROMIO and OMPIO take on NFS and "
COLLECTIVE_WAITS = ", waits in collective calls"


def _own_work(ctx: FactContext, layer: Layer, below: str, same: np.ndarray) -> str:
    """What the layer's time above `below` is spent on, naming only what the job's calls and file systems
    can have. MPI-IO's is collective buffering's exchange and waits only where its calls were collective
    (by the time they spent, where the records say it, else by their count): a job of independent calls
    has none (mpi-io-test on NFS: 5.4 s per process above POSIX, all of it independent writes), and NFS's
    locks only on NFS (review11: mpi-io-test on ext4 was told of them). A library waits in collective
    calls only where MPI-IO carries its files with collective calls (h5py with the sec2 driver on NFS was
    told it did)."""
    share = indep_own_share(ctx)
    if share is not None:
        collective = [share[i] < 0.5 for i in same.tolist() if i in share]
    else:
        modes = mpiio_modes(ctx)
        collective = [modes[i] for i in same.tolist() if i in modes]
    if layer.name == "MPI-IO" and collective and not any(collective):
        nfs = any(ctx.profile.fstype_of_record(i).startswith("nfs") for i in same.tolist())
        return INDEPENDENT_OWN.format(locks=NFS_LOCKS if nfs else "")
    if layer.name in LIBRARY_LAYERS and below == "MPI-IO" and any(collective):
        return layer.own + COLLECTIVE_WAITS
    return layer.own


def _listed_files(ctx: FactContext, per_file: dict[str, LayerFiles]) -> tuple[np.ndarray, np.ndarray]:
    """(file ids, most seconds per process in a timed layer) of the files the per-file account
    lists: named by a record, not a standard stream."""
    keys, inv = group_keys(np.concatenate([f.keys for f in per_file.values()]))
    times = np.zeros(len(keys))
    np.maximum.at(times, inv, np.concatenate([f.time for f in per_file.values()]))
    skip = [NO_FILE, *(i for i, name in ctx.profile.names.items() if name in STD_STREAMS)]
    keep = ~np.isin(keys, np.asarray(skip, np.uint64), kind="sort")
    return keys[keep], times[keep]


def _file_rows(ctx: FactContext, present: list[Layer], views: dict[str, ModuleView],
               per_file: dict[str, LayerFiles]) -> list[FileRow]:
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
