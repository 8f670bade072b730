"""Shared access to the Darshan-like records of a profile (POSIX, STDIO, MPI-IO ...).

Not a fact module (its name starts with "_"): the helpers here let the fact modules ask
"the POSIX records", "which records are shared", "time per process" the same way.
"""

from __future__ import annotations

import numpy as np

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


def data_mask(ctx: FactContext, rec: ModuleRecords) -> np.ndarray:
    """Records of real files (not the standard streams)."""
    std = {i for i, n in ctx.profile.names.items() if n in STD_STREAMS}
    if not std:
        return np.ones(len(rec), bool)
    return ~np.isin(rec.ids, np.fromiter(std, np.uint64, len(std)))


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
    """Per-file summaries without the standard streams."""
    return [f for f in files(ctx) if f.path not in STD_STREAMS]


def not_lustre(ctx: FactContext) -> str:
    """The job's file systems ('ext4') when they are known and none is Lustre, else '': a value
    assumed as Lustre's default for such a job says so."""
    try:
        kinds = sorted({f.fstype for f in data_files(ctx) if f.fstype})
    except Missing:  # not a Darshan log (IOR output, snapshot): nothing says where it ran
        return ""
    return ", ".join(kinds) if kinds and "lustre" not in kinds else ""
