"""Shared access to the Darshan-like records of a profile (POSIX, STDIO, MPI-IO ...).

Not a fact module (its name starts with "_"): the helpers here let the fact modules ask
"the POSIX records", "which records are shared", "time per process" the same way.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from advisor import arrays
from advisor.facts import FactContext, Missing, NotApplicable
from advisor.profile import STD_STREAMS, DxtTrace, ModuleRecords

def darshan_like(ctx: FactContext) -> None:
    """NotApplicable unless the profile holds Darshan module records (logs and parser dumps)."""
    profile = ctx.profile
    if not profile.records and not profile.modules:
        raise NotApplicable("not a Darshan-like input")


def records(ctx: FactContext, module: str) -> ModuleRecords:
    """Records of `module`; Missing saying why when the log has none."""
    darshan_like(ctx)
    rec = ctx.profile.records.get(module)
    if rec is None or len(rec) == 0:
        info = ctx.profile.modules.get(module)
        if info is not None and not info.supported:
            raise Missing(f"the {module} module could not be read: {info.note or 'unsupported version'}")
        raise Missing(f"no {module} records in the log")
    return rec


def maybe(ctx: FactContext, module: str) -> ModuleRecords | None:
    try:
        return records(ctx, module)
    except NotApplicable:
        raise
    except Missing:
        return None


def nprocs(ctx: FactContext) -> int:
    return max(int(ctx.profile.job.nprocs or 0), 1)


# Files a job touches that are not its data: the program loading itself (shared libraries,
# Python modules and their byte code, site-packages) and the kernel's and the system's own
# files. Their I/O is real, but no data finding (small requests, alignment, file-per-process,
# striping) may rest on them: H5Pset_alignment cannot align a .pyc import.
_NOT_DATA_PREFIXES = ("/proc/", "/sys/", "/dev/", "/etc/", "/usr/lib/", "/usr/lib64/", "/lib/", "/lib64/",
                      "/usr/share/")
# Open MPI's MPI-IO (OMPIO) opens files of its own beside the application's: the backing file of a
# file's shared file pointer ('<file>_cid-<communicator>-<job>.sm' in its session directory) and a
# probe of the file system's locking per rank ('<file>.locktest.<rank>'); their bytes are the library's.
_NOT_DATA = re.compile(r"(\.pyc|\.pyo|\.py|\.pth|\.so(\.\d+)*)$|/(site-packages|dist-packages|__pycache__)/"
                       r"|_cid-\d+-\d+\.sm$|\.locktest\.\d+$")


def is_data_path(path: str) -> bool:
    """Whether `path` can hold the job's data (not a standard stream, library, import or system file)."""
    return path not in STD_STREAMS and not path.startswith(_NOT_DATA_PREFIXES) and not _NOT_DATA.search(path)


def not_data_ids(ctx: FactContext) -> np.ndarray:
    def build() -> np.ndarray:
        ids = [i for i, n in ctx.profile.names.items() if not is_data_path(n)]
        return np.fromiter(ids, np.uint64, len(ids))

    return ctx.memo("darshan.not_data_ids", build)


def data_mask(ctx: FactContext, rec: ModuleRecords) -> np.ndarray:
    """Records of the job's data files (see :func:`is_data_path`)."""
    not_data = not_data_ids(ctx)
    if not len(not_data):
        return np.ones(len(rec), bool)
    return ~arrays.isin(rec.ids, not_data)


def data_records(ctx: FactContext, module: str) -> ModuleRecords:
    """`module`'s records of data files only; Missing when there are none."""
    def build() -> ModuleRecords:
        rec = records(ctx, module)
        keep = data_mask(ctx, rec)
        if keep.all():
            return rec
        return ModuleRecords(rec.module, rec.ids[keep], rec.ranks[keep],
                             {k: v[keep] for k, v in rec.counters.items()},
                             {k: v[keep] for k, v in rec.fcounters.items()})

    rec = ctx.memo(f"darshan.data_records.{module}", build)
    if len(rec) == 0:
        raise Missing(f"no {module} records of data files (only libraries, imports or system files)")
    return rec


def data_summary(ctx: FactContext, module: str):
    """advisor.metrics.summarize_module of `module`'s data-file records, once per profile."""
    from advisor.metrics import summarize_module

    def build():
        view = dataclasses.replace(ctx.profile, records={**ctx.profile.records, module: data_records(ctx, module)})
        return summarize_module(view, module)

    return ctx.memo(f"darshan.data_summary.{module}", build)


def col(rec: ModuleRecords, name: str) -> np.ndarray:
    return np.asarray(rec.get(f"{rec.module if rec.module != 'MPI-IO' else 'MPIIO'}_{name}", 0),
                      dtype=np.float64)


def total(rec: ModuleRecords | None, name: str) -> float:
    return 0.0 if rec is None else float(col(rec, name).sum())


def io_seconds(rec: ModuleRecords) -> np.ndarray:
    """Read + write + metadata seconds per record (summed over ranks for shared records)."""
    return col(rec, "F_READ_TIME") + col(rec, "F_WRITE_TIME") + col(rec, "F_META_TIME")


def paths(ctx: FactContext, ids) -> list[str]:
    return [ctx.profile.name_of(i) for i in ids]


def top_files(ctx: FactContext, rec: ModuleRecords, weight: np.ndarray, limit: int = 10) -> list[str]:
    """Paths of the records with the largest `weight`, heaviest first, each path once."""
    order = np.argsort(-weight, kind="stable")
    out: list[str] = []
    for i in order:
        if weight[i] <= 0 or len(out) >= limit:
            break
        path = ctx.profile.name_of(rec.ids[i])
        if path not in out:
            out.append(path)
    return out


def dxt(ctx: FactContext, module: str = "DXT_POSIX") -> DxtTrace:
    """A complete, readable DXT trace, or Missing saying why there is none."""
    darshan_like(ctx)
    trace = ctx.profile.dxt.get(module)
    info = ctx.profile.modules.get(module)
    if trace is None:
        if info is not None and not info.supported:
            raise Missing(f"the {module} trace could not be read: {info.note or 'unsupported version'}")
        raise Missing(f"no {module} trace (run with DXT_ENABLE_IO_TRACE=1)")
    if not trace.readable:
        raise Missing(f"the {module} trace could not be read: {trace.note or 'unreadable'}")
    if len(trace) == 0:
        raise Missing(f"the {module} trace is empty")
    if info is not None and info.partial:
        raise Missing(f"the {module} trace is incomplete (trace buffer full)")
    return trace


def summary(ctx: FactContext):
    """advisor.metrics.summarize of the profile, once per profile."""
    from advisor.metrics import summarize

    darshan_like(ctx)
    return ctx.memo("metrics.summary", lambda: summarize(ctx.profile))


def files(ctx: FactContext):
    """advisor.metrics.per_file of the profile (most bytes first), once per profile."""
    from advisor.metrics import per_file

    darshan_like(ctx)
    return ctx.memo("metrics.per_file", lambda: per_file(ctx.profile))


def data_files(ctx: FactContext):
    """Per-file summaries of the job's data files (see :func:`is_data_path`), once per profile
    (a copy: asked for twenty times per log)."""
    return list(ctx.memo("darshan.data_files", lambda: [f for f in files(ctx) if is_data_path(f.path)]))


def mpiio_write_only_ids(ctx: FactContext) -> np.ndarray:
    """Record ids of the files the application wrote through MPI-IO and never read through it.

    Every POSIX read of such a file is ROMIO's, not the application's: the read half of a
    collective buffer's or a sieve buffer's read-modify-write (0 bytes where the file does
    not reach yet). Empty without MPI-IO records.
    """
    from advisor.metrics import SPECS, Columns

    def build() -> np.ndarray:
        rec = maybe(ctx, "MPI-IO")
        if rec is None:
            return np.zeros(0, np.uint64)
        cols = Columns.of(rec, SPECS["MPI-IO"])
        ids, inv = np.unique(rec.ids, return_inverse=True)
        reads = np.bincount(inv, weights=cols.reads + cols.bytes_read, minlength=len(ids))
        writes = np.bincount(inv, weights=cols.writes, minlength=len(ids))
        return ids[(reads == 0) & (writes > 0)]

    return ctx.memo("darshan.mpiio_write_only_ids", build)


def owner_files(ctx: FactContext, rec: ModuleRecords, key: str) -> np.ndarray:
    """Per row of a dataset or variable module (H5D, PNETCDF_VAR), the record id of its file: the
    `key` counter (H5D_FILE_REC_ID ...), else (older logs record 0 there) the file named before
    the ':' of the dataset's or variable's name ('/out.h5:/grid/x', '/out.nc:temp')."""
    files = np.asarray(rec.get(key, 0)).astype(np.uint64)
    if (files != 0).all():
        return files
    by_name = {name: rid for rid, name in ctx.profile.names.items()}
    named = [by_name.get(ctx.profile.name_of(i).rsplit(":", 1)[0], 0) for i in rec.ids]
    return np.where(files != 0, files, np.asarray(named, np.uint64))


def data_fstypes(ctx: FactContext) -> list[str]:
    """The file system types of the job's data files (the log's mount table: ['ext4', 'nfs']); []
    where the input names none (an IOR output, a snapshot, a Recorder trace)."""
    try:
        return sorted({f.fstype for f in data_files(ctx) if f.fstype})
    except Missing:
        return []


def not_lustre(ctx: FactContext) -> str:
    """The job's file systems ('ext4') when they are known and none is Lustre, else '': a value
    assumed as Lustre's default for such a job says so."""
    kinds = data_fstypes(ctx)
    return ", ".join(kinds) if kinds and "lustre" not in kinds else ""
