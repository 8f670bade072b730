"""Job-level facts: run time, processes, bytes, I/O time and its share of the run."""

from __future__ import annotations

from advisor.facts import FactContext, Missing, fact
from advisor.facts._darshan import DATA_MODULES, darshan_like, io_seconds, maybe, nprocs, total


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


@fact("bytes_read", "bytes", "Bytes read through POSIX and STDIO (MPI-IO when neither is recorded).")
def bytes_read(ctx: FactContext) -> int:
    return int(_data_total(ctx, "BYTES_READ"))


@fact("bytes_written", "bytes", "Bytes written through POSIX and STDIO (MPI-IO when neither is recorded).")
def bytes_written(ctx: FactContext) -> int:
    return int(_data_total(ctx, "BYTES_WRITTEN"))


def _data_total(ctx: FactContext, counter: str) -> float:
    darshan_like(ctx)
    recs = [r for m in DATA_MODULES if (r := maybe(ctx, m)) is not None]
    if not recs:
        recs = [r for r in (maybe(ctx, "MPI-IO"),) if r is not None]
    if not recs:
        raise Missing("no POSIX, STDIO or MPI-IO records in the log")
    return sum(total(r, counter) for r in recs)


def _time(ctx: FactContext, counter: str) -> float:
    darshan_like(ctx)
    recs = [r for m in DATA_MODULES if (r := maybe(ctx, m)) is not None]
    if not recs:
        raise Missing("no POSIX or STDIO records in the log")
    return sum(total(r, counter) for r in recs) / nprocs(ctx)


@fact("read_time_s", "s", "Read time per process (POSIX + STDIO seconds over all ranks / ranks).")
def read_time_s(ctx: FactContext) -> float:
    return _time(ctx, "F_READ_TIME")


@fact("write_time_s", "s", "Write time per process (POSIX + STDIO seconds over all ranks / ranks).")
def write_time_s(ctx: FactContext) -> float:
    return _time(ctx, "F_WRITE_TIME")


@fact("meta_time_s", "s", "Metadata time (open, stat, seek, close ...) per process.")
def meta_time_s(ctx: FactContext) -> float:
    return _time(ctx, "F_META_TIME")


@fact("io_time_s", "s", "I/O time per process: read + write + metadata seconds of all ranks / ranks.")
def io_time_s(ctx: FactContext) -> float:
    darshan_like(ctx)
    recs = [r for m in DATA_MODULES if (r := maybe(ctx, m)) is not None]
    if not recs:
        raise Missing("no POSIX or STDIO records in the log")
    return float(sum(io_seconds(r).sum() for r in recs)) / nprocs(ctx)


@fact("io_share", "ratio", "Share of the run time each process spent in I/O on average.")
def io_share(ctx: FactContext) -> float:
    return min(ctx.get("io_time_s") / ctx.get("runtime_s"), 1.0)


@fact("files_accessed", "count", "Distinct files (not standard streams) with a POSIX or STDIO record.")
def files_accessed(ctx: FactContext) -> int:
    from advisor.facts._darshan import data_mask

    darshan_like(ctx)
    ids = set()
    for m in DATA_MODULES:
        rec = maybe(ctx, m)
        if rec is not None:
            ids.update(int(i) for i in rec.ids[data_mask(ctx, rec)])
    return len(ids)


@fact("modules", "list", "Darshan modules present in the log.")
def modules(ctx: FactContext) -> list[str]:
    darshan_like(ctx)
    return sorted(ctx.profile.modules)


@fact("interfaces", "list", "I/O interfaces the job used with data (POSIX, STDIO, MPI-IO, HDF5, PnetCDF).")
def interfaces(ctx: FactContext) -> list[str]:
    darshan_like(ctx)
    used = [m for m in ("POSIX", "STDIO", "MPI-IO") if maybe(ctx, m) is not None]
    if any(m.startswith("H5") for m in ctx.profile.records):
        used.append("HDF5")
    if any(m.startswith("PNETCDF") for m in ctx.profile.records):
        used.append("PnetCDF")
    return used
