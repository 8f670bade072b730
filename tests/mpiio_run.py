"""A real collective MPI-IO run with the project's MPI, profiled as Darshan would count it.

There is no Darshan runtime here, so the run measures what Darshan's MPI-IO and POSIX modules
would record: every rank opens one shared file collectively and writes its block with
``MPI_File_write_at_all`` calls of `xfer` bytes (IOR ``-a MPIIO -c`` layout: rank r's block at
r * block), each call timed (MPI-IO F_WRITE_TIME), then issues the same pieces with ``pwrite``
to a file of its own layer below (POSIX F_WRITE_TIME, the slowest rank's time). The POSIX layer
is measured apart because only Darshan can time ROMIO's own system calls; under these calls
ROMIO issues the same pieces (ranks' blocks do not interleave, so collective buffering is not
engaged and each rank writes its piece itself: strace shows one 4 KiB pwrite64 per rank and call).
The counters are put into a JobProfile with
tests/profiles.py, so the diagnosis and the replay read them as they read a log's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from advisor.profile import JobProfile
from replay.launch import launcher
from tests.profiles import SHARED, job, module

PROGRAM = r"""
import json, os, sys, time
import numpy as np
from mpi4py import MPI

target, xfer, calls, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
comm = MPI.COMM_WORLD
rank, block = comm.rank, xfer * calls
buf = np.full(xfer, rank + 1, np.uint8)
comm.Barrier()
t_start = time.perf_counter()
t = time.perf_counter()
fh = MPI.File.Open(comm, f"{target}/shared", MPI.MODE_CREATE | MPI.MODE_WRONLY)
meta = time.perf_counter() - t
mpi_write = 0.0
for i in range(calls):
    t = time.perf_counter()
    fh.Write_at_all(rank * block + i * xfer, buf)
    mpi_write += time.perf_counter() - t
t = time.perf_counter()
fh.Close()
meta += time.perf_counter() - t
comm.Barrier()
fd = os.open(f"{target}/below.{rank}", os.O_CREAT | os.O_WRONLY, 0o600)
posix_write = 0.0
for i in range(calls):
    t = time.perf_counter()
    os.pwrite(fd, buf, rank * block + i * xfer)
    posix_write += time.perf_counter() - t
os.close(fd)
comm.Barrier()
wall = time.perf_counter() - t_start
rows = comm.gather({"mpi_write": mpi_write, "meta": meta, "posix_write": posix_write, "wall": wall})
if rank == 0:
    with open(out, "w") as f:
        json.dump({"nprocs": comm.size, "xfer": xfer, "calls": calls, "ranks": rows}, f)
"""

FILE_ID = 1


def run(target: Path, np_: int, xfer: int, calls: int) -> dict:
    """Run the program on `np_` ranks writing into `target`; the per-rank measurements."""
    script, out = target / "mpiio_run.py", target / "measured.json"
    script.write_text(PROGRAM)
    cmd = launcher(np_) + [sys.executable, str(script), str(target), str(xfer), str(calls), str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    measured = json.loads(out.read_text())
    for leftover in (script, out, target / "shared", *target.glob("below.*")):
        leftover.unlink()
    return measured


def profile(measured: dict, path: str) -> JobProfile:
    """The counters Darshan's MPI-IO and POSIX modules keep for the run's shared file (rank -1)."""
    ranks, n = measured["ranks"], measured["nprocs"]
    xfer, calls = measured["xfer"], measured["calls"]
    ops, nbytes = n * calls, n * calls * xfer
    mpiio = module("MPI-IO", [(FILE_ID, SHARED, {
        "MPIIO_COLL_OPENS": n, "MPIIO_COLL_WRITES": ops, "MPIIO_BYTES_WRITTEN": nbytes,
        "MPIIO_SIZE_WRITE_AGG_1K_10K": ops, "MPIIO_ACCESS1_ACCESS": xfer, "MPIIO_ACCESS1_COUNT": ops,
        "MPIIO_F_WRITE_TIME": sum(r["mpi_write"] for r in ranks),
        "MPIIO_F_META_TIME": sum(r["meta"] for r in ranks)})])
    posix = module("POSIX", [(FILE_ID, SHARED, {
        "POSIX_OPENS": n, "POSIX_WRITES": ops, "POSIX_BYTES_WRITTEN": nbytes,
        "POSIX_MAX_BYTE_WRITTEN": nbytes - 1, "POSIX_SIZE_WRITE_1K_10K": ops,
        "POSIX_CONSEC_WRITES": ops - n, "POSIX_SEQ_WRITES": ops - n,
        "POSIX_ACCESS1_ACCESS": xfer, "POSIX_ACCESS1_COUNT": ops,
        "POSIX_F_WRITE_TIME": sum(r["posix_write"] for r in ranks),
        "POSIX_F_SLOWEST_RANK_TIME": max(r["posix_write"] for r in ranks)})])
    return job(mpiio, posix, nprocs=n, runtime_s=max(r["wall"] for r in ranks), names={FILE_ID: path},
               mounts=[("/", "ext4")])
