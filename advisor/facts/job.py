"""Job-level facts: run time, processes, bytes, I/O time and its share of the run
(totals from :func:`advisor.metrics.summarize`, base layer: POSIX + STDIO)."""

from __future__ import annotations

from advisor.facts import FactContext, Missing, fact
from advisor.facts._darshan import darshan_like, data_files, maybe, nprocs, summary
from advisor.facts.layers import account
from advisor.facts.sanity import LayerTime


@fact("runtime_s", "seconds", "Wall-clock run time of the job.", label="run time")
def runtime_s(ctx: FactContext) -> float:
    job = ctx.profile.job
    if job.runtime_s and job.runtime_s > 0:
        return float(job.runtime_s)
    if job.start_time and job.end_time and job.end_time > job.start_time:
        return float(job.end_time - job.start_time)
    raise Missing("the log records no run time")


@fact("nprocs", "count", "Number of processes (MPI ranks) of the job.", label="processes")
def nprocs_fact(ctx: FactContext) -> int:
    return nprocs(ctx)


def _base(ctx: FactContext):
    s = summary(ctx)
    if not s.base_modules:
        raise Missing("no POSIX, STDIO or MPI-IO records in the log")
    return s


@fact("bytes_read", "bytes", "Bytes read at the base layer (POSIX + STDIO, else MPI-IO).", label="bytes read")
def bytes_read(ctx: FactContext) -> int:
    return int(_base(ctx).bytes_read)


@fact("bytes_written", "bytes", "Bytes written at the base layer (POSIX + STDIO, else MPI-IO).", label="bytes written")
def bytes_written(ctx: FactContext) -> int:
    return int(_base(ctx).bytes_written)


@fact("read_time_s", "seconds", "Read time per process at the base layer (POSIX + STDIO), bounded by what a "
      "process could spend (facts/sanity.py).", label="read time per process")
def read_time_s(ctx: FactContext) -> float:
    return _time(ctx, "base_time").read


@fact("write_time_s", "seconds", "Write time per process at the base layer, bounded like read_time_s.",
      label="write time per process")
def write_time_s(ctx: FactContext) -> float:
    return _time(ctx, "base_time").write


@fact("meta_time_s", "seconds", "Metadata time (open, stat, seek, sync ...) per process, bounded like read_time_s.",
      label="metadata time per process")
def meta_time_s(ctx: FactContext) -> float:
    return _time(ctx, "base_time").meta


@fact("io_time_s", "seconds", "I/O time per process in the calls the job made (io_layer: MPI-IO for its "
      "MPI-IO files, POSIX + STDIO for the rest, plus HDF5's and PnetCDF's own time above them), bounded by what a "
      "process could spend.", label="I/O time per process")
def io_time_s(ctx: FactContext) -> float:
    return _time(ctx, "io_time").total


@fact("io_layer", "enum", "The I/O layers the job's I/O time is measured at: MPI-IO when the job used it "
      "(for the files it opened with MPI-IO), else POSIX + STDIO; led by HDF5 or PnetCDF when their calls spent "
      "time above those.", label="I/O time measured at")
def io_layer(ctx: FactContext) -> str:
    return _time(ctx, "io_time").layer


@fact("base_layer", "enum", "The I/O layer read_time_s, write_time_s and meta_time_s are measured at: "
      "POSIX + STDIO (what reached the file system), else the lowest layer the log has.",
      label="read, write and metadata time measured at")
def base_layer(ctx: FactContext) -> str:
    return _time(ctx, "base_time").layer


def _time(ctx: FactContext, which: str) -> LayerTime:
    """The summary's times come from the layer account (advisor/facts/layers.py), which names their layer."""
    value = getattr(account(ctx), which)
    if value is None:
        raise Missing("no POSIX, STDIO or MPI-IO records in the log")
    return value


@fact("io_share", "fraction", "Share of the run time each process spent in I/O on average (io_time_s / run time).",
      label="share of the run in I/O")
def io_share(ctx: FactContext) -> float:
    return min(ctx.get("io_time_s") / ctx.get("runtime_s"), 1.0)


@fact("files_accessed", "count", "Distinct files (not standard streams) the job touched.", label="files")
def files_accessed(ctx: FactContext) -> int:
    return len(data_files(ctx))


@fact("modules", "enum", "Darshan modules present in the log.", label="Darshan modules")
def modules(ctx: FactContext) -> list[str]:
    darshan_like(ctx)
    return sorted(ctx.profile.modules)


@fact("interfaces", "enum", "I/O interfaces the job used (POSIX, STDIO, MPI-IO, HDF5, PnetCDF).",
      label="I/O interfaces")
def interfaces(ctx: FactContext) -> list[str]:
    darshan_like(ctx)
    used = [m for m in ("POSIX", "STDIO", "MPI-IO") if maybe(ctx, m) is not None]
    if any(m.startswith("H5") for m in ctx.profile.records):
        used.append("HDF5")
    if any(m.startswith("PNETCDF") for m in ctx.profile.records):
        used.append("PnetCDF")
    return used
