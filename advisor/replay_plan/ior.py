"""A replay stream from IOR parameters: the exact IOR access pattern.

Per repetition, a write phase then a read phase (as enabled): task r moves
``segments x block`` bytes in ``transfer``-sized requests, at
``segment * tasks * block + r * block`` in a shared file or ``segment * block`` in
its own file; ``-z`` shuffles each task's requests, ``-C``/``-Q`` make task r read
what task ``r + shift`` wrote, ``-e`` syncs before close, ``-Y`` after every write,
``-c`` makes MPI-IO calls collective; files are removed after each repetition
unless ``-k``.
"""

from __future__ import annotations

import numpy as np

from advisor.errors import InputError
from advisor.ingest.ior.model import IorProfile
from advisor.profile import JobProfile
from advisor.replay_plan.stream import SUB_EMPTY, FileTable, StreamBuilder
from replay.plan import MPIIO, MPIIO_COLL, POSIX, READ, UNLINK, WRITE

MPI_APIS = {"MPIIO", "HDF5", "NCMPI", "PNETCDF", "ADIOS"}


def ior_test(profile: JobProfile):
    run_tests = profile.run.tests if isinstance(profile, IorProfile) else []
    tests = [t for t in run_tests if t.params.transfer_size and t.params.block_size]
    if not tests:
        raise InputError(profile.source.path, "the IOR output states no transfer and block size to replay")
    return tests[0], len(run_tests)


def ior_bytes_ops(profile: JobProfile) -> tuple[int, int]:
    """Bytes and data operations of the IOR test at full scale."""
    test, _ = ior_test(profile)
    p = test.params
    tasks, reps = p.tasks or max(profile.job.nprocs, 1), p.repetitions or 1
    phases = int(p.write is not False) + int(bool(p.read))
    total = tasks * p.block_size * (p.segments or 1) * phases * reps
    return total, total // p.transfer_size


def add_ior(profile: JobProfile, builder: StreamBuilder, files: FileTable, *, scale: float) -> list[str]:
    test, ntests = ior_test(profile)
    p = test.params
    notes = [f"IOR test 1 of {ntests} replayed"] if ntests > 1 else []
    N = builder.nranks
    xfer = p.transfer_size
    block, segments = _scaled(p.block_size, p.segments or 1, xfer, scale)
    if (block, segments) != (p.block_size, p.segments or 1):
        notes.append(f"scaled: block {p.block_size} -> {block} bytes, segments {p.segments or 1} -> {segments}")
    api_name = (p.api or "POSIX").upper()
    mpi = api_name in MPI_APIS
    if not mpi and api_name not in ("POSIX", ""):
        notes.append(f"IOR API {api_name} replayed as POSIX")
    data_api = (MPIIO_COLL if p.collective else MPIIO) if mpi else POSIX
    fpp = p.access == "fpp"
    name = p.test_file or "testfile"
    fids = [files.add(r, f"{name}.{r:08d}", world=False) for r in range(N)] if fpp else \
        [files.add(0, name, world=mpi)] * N
    per_block = block // xfer
    k = np.arange(segments * per_block, dtype=np.int64)
    seg, x = k // per_block, k % per_block
    shift = (p.task_offset or 1) * (p.tasks_per_node or N) % N if p.reorder_tasks else 0
    readers = _read_partners(N, shift, bool(p.reorder_random))
    reps = p.repetitions or 1
    t = 0.0
    for rep in range(reps):
        for step, (code, enabled) in enumerate(((WRITE, p.write is not False), (READ, bool(p.read)))):
            if not enabled:
                continue
            for r in range(N):
                owner = r if code == WRITE else readers[r]  # whose data task r touches
                offs = (seg * block + x * xfer) if fpp else (seg * N * block + owner * block + x * xfer)
                if p.random_offsets:
                    offs = offs[np.random.default_rng(owner * 7919 + rep).permutation(len(offs))]
                fid = fids[owner]
                times = t + np.arange(len(offs)) * 1e-6
                builder.add_data(r, np.full(len(offs), code, np.int8), fid, offs, np.full(len(offs), xfer),
                                 data_api, times, phase=3 * rep + step)
                fm = builder.file_meta(r, fid)
                fm.api = data_api
                if not (mpi and not fpp):
                    fm.opens += 1
                if code == WRITE:
                    fm.fsyncs += len(offs) if p.fsync_per_write else int(bool(p.fsync))
            t += 1.0
        if not p.keep_file:  # after a barrier: nobody may still be reading the file
            _unlinks(builder, fids, fpp, t, POSIX, phase=3 * rep + 2)
            t += 1.0
    if p.stonewall_s:
        notes.append("IOR stonewalling (-D) not replayed: every task moves its whole block")
    return notes


def _scaled(block: int, segments: int, xfer: int, scale: float) -> tuple[int, int]:
    """Block and segment count moving about `scale` of the bytes: fewer transfers per block
    first, then fewer segments (a block is at least one transfer)."""
    if scale >= 1:
        return block, segments
    new_block = max(xfer, int(round(block * scale / xfer)) * xfer)
    rest = scale * block / new_block
    return new_block, max(1, int(round(segments * rest)))


def _read_partners(n: int, shift: int, random: bool) -> list[int]:
    """Task r reads what task partners[r] wrote (-C: constant shift, -Z: a random permutation)."""
    if random:
        return np.random.default_rng(12345).permutation(n).tolist()
    return [(r + shift) % n for r in range(n)]


def _unlinks(builder: StreamBuilder, fids: list[int], fpp: bool, t: float, api: int, phase: int) -> None:
    owners = range(len(fids)) if fpp else [0]
    for r in owners:
        builder.add_rows(r, [UNLINK], fids[r], t, SUB_EMPTY + 2, api, phase=phase)
