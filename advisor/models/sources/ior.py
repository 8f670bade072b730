"""Parts of an IOR test: its write phase and its read phase, from IOR's parameters.

IOR states its pattern exactly (tasks, transfer, block, segments, file per process
or shared, API, -c, -e, -Y, -z), so the parts follow in closed form; the measured
bandwidth of each phase is IOR's own mean over repetitions (MiB/s).
"""

from __future__ import annotations

import math

from advisor.ingest.ior.model import FPP, IorTest
from advisor.models.features import ALIGNMENT, Part

MPI_APIS = ("MPIIO", "HDF5", "NCMPI", "PNETCDF", "ADIOS")


def ior_parts(test: IorTest) -> dict[str, Part]:
    """"write"/"read" -> part, for the phases the test ran (empty when the pattern is unstated)."""
    p = test.params
    if not (p.transfer_size and p.block_size and p.tasks):
        return {}
    out = {}
    for op, enabled in (("write", p.write is not False), ("read", bool(p.read))):
        if enabled and op in test.operations():
            out[op] = _part(test, op)
    return out


def _part(test: IorTest, op: str) -> Part:
    p = test.params
    tasks, xfer, segments = int(p.tasks), int(p.transfer_size), int(p.segments or 1)
    moved = float(tasks * p.block_size * segments)
    calls = moved / xfer
    per_task = calls / tasks
    mpi = (p.api or "POSIX").upper() in MPI_APIS
    fpp = p.access == FPP
    # a shared file jumps to the next segment; a file per process is one stream
    consecutive = 0.0 if p.random_offsets else tasks * (per_task - (1 if fpp else segments))
    write = op == "write"
    fsyncs = (calls if p.fsync_per_write else tasks if p.fsync else 0.0) if write else 0.0
    return Part(
        nprocs=tasks, label=op,
        bytes_read=0.0 if write else moved, bytes_written=moved if write else 0.0,
        calls=calls, write_calls=calls if write else 0.0, pieces=calls,
        consecutive=max(consecutive, 0.0), forward=max(consecutive, 0.0),
        unaligned=calls * (1 - math.gcd(xfer, ALIGNMENT) / ALIGNMENT),
        shared_bytes=0.0 if fpp or tasks == 1 else moved,
        opens=float(tasks), fsyncs=float(fsyncs),
        mpiio_bytes=moved if mpi else 0.0, mpiio_calls=calls if mpi else 0.0,
        collective_calls=calls if mpi and p.collective else 0.0,
        reread_bytes=moved if not write and p.write is not False else 0.0,
        io_ranks=math.nan if mpi and p.collective else float(tasks),  # aggregators: the run's hints, unknown
        stripe_count=float(p.stripe_count) if p.stripe_count else math.nan,
        stripe_size=float(p.stripe_size) if p.stripe_size else math.nan,
    )


def ior_measured_mib_s(test: IorTest, op: str) -> float | None:
    """IOR's mean bandwidth of `op` over its repetitions (MiB/s), or None."""
    value = test.bandwidth(op, "mean")
    return float(value) if value and value > 0 else None
