"""Job-level facts: run time, processes, bytes, I/O time and its share of the run
(totals from :func:`advisor.metrics.summarize`, base layer: POSIX + STDIO)."""

from __future__ import annotations

from advisor.facts import FactContext, Missing, fact
from advisor.facts._darshan import darshan_like, data_files, maybe, nprocs, summary


@fact("runtime_s", "s", "Wall-clock run time of the job.")
def runtime_s(ctx: FactContext) -> float:
    job = ctx.profile.job
    if job.runtime_s and job.runtime_s > 0:
        return float(job.runtime_s)
    if job.start_time and job.end_time and job.end_time > job.start_time:
        return float(job.end_time - job.start_time)
    raise Missing("the log records no run time")


@fact("nprocs", "count", "Number of processes (MPI ranks) of the job.")
def nprocs_fact(ctx: FactContext) -> int:
    return nprocs(ctx)


def _base(ctx: FactContext):
    s = summary(ctx)
    if not s.base_modules:
        raise Missing("no POSIX, STDIO or MPI-IO records in the log")
    return s


@fact("bytes_read", "bytes", "Bytes read at the base layer (POSIX + STDIO, else MPI-IO).")
def bytes_read(ctx: FactContext) -> int:
    return int(_base(ctx).bytes_read)


@fact("bytes_written", "bytes", "Bytes written at the base layer (POSIX + STDIO, else MPI-IO).")
def bytes_written(ctx: FactContext) -> int:
    return int(_base(ctx).bytes_written)


def _time(ctx: FactContext, attr: str) -> float:
    s = _base(ctx)
    return sum(getattr(s.modules[m], attr) for m in s.base_modules) / nprocs(ctx)


@fact("read_time_s", "s", "Read time per process (base-layer seconds of all ranks / ranks).")
def read_time_s(ctx: FactContext) -> float:
    return _time(ctx, "read_time")


@fact("write_time_s", "s", "Write time per process (base-layer seconds of all ranks / ranks).")
def write_time_s(ctx: FactContext) -> float:
    return _time(ctx, "write_time")


@fact("meta_time_s", "s", "Metadata time (open, stat, seek, sync ...) per process.")
def meta_time_s(ctx: FactContext) -> float:
    return _time(ctx, "meta_time")


@fact("io_time_s", "s", "I/O time per process: read + write + metadata seconds of all ranks / ranks.")
def io_time_s(ctx: FactContext) -> float:
    return _base(ctx).io_time_s / nprocs(ctx)


@fact("io_share", "ratio", "Share of the run time each process spent in I/O on average.")
def io_share(ctx: FactContext) -> float:
    return min(ctx.get("io_time_s") / ctx.get("runtime_s"), 1.0)


@fact("files_accessed", "count", "Distinct files (not standard streams) the job touched.")
def files_accessed(ctx: FactContext) -> int:
    return len(data_files(ctx))


@fact("modules", "list", "Darshan modules present in the log.")
def modules(ctx: FactContext) -> list[str]:
    darshan_like(ctx)
    return sorted(ctx.profile.modules)


@fact("interfaces", "list", "I/O interfaces the job used (POSIX, STDIO, MPI-IO, HDF5, PnetCDF).")
def interfaces(ctx: FactContext) -> list[str]:
    darshan_like(ctx)
    used = [m for m in ("POSIX", "STDIO", "MPI-IO") if maybe(ctx, m) is not None]
    if any(m.startswith("H5") for m in ctx.profile.records):
        used.append("HDF5")
    if any(m.startswith("PNETCDF") for m in ctx.profile.records):
        used.append("PnetCDF")
    return used
