"""MPI-IO aggregation: which files collective buffering funnelled, and what it cost in bytes.

With collective buffering (ROMIO's two-phase I/O) only the aggregator ranks touch the file
system, so the POSIX records of a collectively accessed file describe the aggregators, not
the application: one rank doing all the POSIX I/O is the configuration (cb_nodes), not an
imbalance. The application's own balance is in the MPI-IO record of the file.

The same funnel can multiply the bytes: when the collective buffer of an aggregator holds
holes (the ranks' pieces do not tile it), ROMIO reads the whole buffer, fills in the pieces
and writes it back (read-modify-write); independent I/O with data sieving does the same on
its sieve buffer. The POSIX layer then moves far more bytes than the MPI-IO layer asked for.
The read half shows as POSIX reads of files the application never reads through MPI-IO (0 bytes
while the file does not reach the buffer yet): their time is the time the reads take, not
their share of the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor import arrays
from advisor.facts import FactContext, Missing, fact, requests
from advisor.facts._darshan import col, data_files, data_records, dxt, mpiio_write_only_ids, nprocs, records
from advisor.profile import shared_mask


def collective_ids(ctx: FactContext) -> set[int]:
    """Record ids of the files accessed with collective MPI-IO reads or writes (empty without MPI-IO)."""

    def build() -> set[int]:
        try:
            rec = records(ctx, "MPI-IO")
        except Missing:
            return set()
        coll = col(rec, "COLL_READS") + col(rec, "COLL_WRITES")
        return {int(i) for i in rec.ids[coll > 0]}

    return ctx.memo("aggregation.collective_ids", build)


def mpiio_modes(ctx: FactContext) -> dict[int, bool]:
    """Record id -> True when most of the file's MPI-IO data calls were collective, False when most
    were independent (blocking or not); files without MPI-IO calls are absent. By calls, as the
    counters have no bytes per mode: PnetCDF's few independent header writes do not make a file
    written with 100,000 collective calls an independent one."""

    def build() -> dict[int, bool]:
        try:
            rec = records(ctx, "MPI-IO")
        except Missing:
            return {}
        coll = col(rec, "COLL_READS") + col(rec, "COLL_WRITES")
        indep = sum(col(rec, n) for n in ("INDEP_READS", "INDEP_WRITES", "NB_READS", "NB_WRITES"))
        ids, row = np.unique(rec.ids, return_inverse=True)
        by_coll, by_indep = np.bincount(row, coll, len(ids)), np.bincount(row, indep, len(ids))
        return {int(i): bool(c > n) for i, c, n in zip(ids, by_coll, by_indep) if c + n > 0}

    return ctx.memo("aggregation.mpiio_modes", build)


def indep_own_share(ctx: FactContext, kinds: tuple[str, ...] = ("read", "write")) -> dict[int, float] | None:
    """Record id -> the share of the file's MPI-IO time above the calls below (in reads and writes of
    `kinds`) that its independent calls spent, where the records split it (a Recorder trace's
    MPIIO_F_INDEP_*_OWN_TIME, ours); None without that split (Darshan). A file HDF5 reads with 4
    collective calls of 2 MiB and 15 independent metadata reads is independent by calls, not by time."""
    try:
        rec = records(ctx, "MPI-IO")
    except Missing:
        return None
    if not rec.has("MPIIO_F_INDEP_READ_OWN_TIME"):
        return None
    ids, row = np.unique(rec.ids, return_inverse=True)
    indep = sum(np.bincount(row, col(rec, f"F_INDEP_{k.upper()}_OWN_TIME"), len(ids)) for k in kinds)
    every = sum(np.bincount(row, col(rec, f"F_{k.upper()}_OWN_TIME"), len(ids)) for k in kinds)
    share = np.clip(indep / np.maximum(every, 1e-12), 0.0, 1.0)
    return {int(i): float(x) for i, x, t in zip(ids, share, every) if t > 0}


def _moded_files(ctx: FactContext, collective: bool) -> list[str]:
    modes = mpiio_modes(ctx)
    return [f.path for f in data_files(ctx) if modes.get(f.record_id) is collective]


@fact("collective_files", "path", "Files most of whose MPI-IO calls were collective (MPIIO_COLL_READS + "
      "COLL_WRITES against the independent and non-blocking ones): the POSIX requests on them are the "
      "MPI-IO layer's (aggregators, read-modify-write), sized by its hints.", label="files moved collectively")
def collective_files(ctx: FactContext) -> list[str]:
    return _moded_files(ctx, True)


@fact("independent_files", "path", "Files most of whose MPI-IO calls were independent (blocking or not): "
      "what switching to collective calls would change.", label="files moved with independent MPI-IO")
def independent_files(ctx: FactContext) -> list[str]:
    return _moded_files(ctx, False)


def all_collective(ctx: FactContext, ids) -> bool:
    """Every record id of `ids` (there is one) belongs to a file MPI-IO moved collectively."""
    modes = mpiio_modes(ctx)
    ids = [int(i) for i in ids]
    return bool(ids) and all(modes.get(i) is True for i in ids)


def collective_below(ctx: FactContext, ids) -> bool:
    """The files of `ids` that MPI-IO moved (there is one) were all moved collectively: a library's
    calls on them (HDF5's, PnetCDF's) are collective MPI-IO calls below."""
    modes = mpiio_modes(ctx)
    below = [modes[i] for i in (int(i) for i in ids) if i in modes]
    return bool(below) and all(below)


def aggregator_count(ctx: FactContext, record_id: int, posix) -> tuple[int, bool]:
    """Aggregators that did a collectively accessed file's POSIX I/O, and whether they were counted.

    Collective buffering gives its aggregators even file domains, so an aggregator moves about as many
    bytes as the busiest rank: with DXT, the ranks that moved at least half the busiest rank's bytes
    (HDF5's metadata, written independently by every rank, puts the others in the trace with a few
    bytes each: IOR -a HDF5 -c, one OMPIO aggregator and three ranks of 40-byte writes); without it,
    the nearest whole number of the busiest rank's shares in the file's bytes (never fewer than one,
    never more than the ranks)."""
    try:
        trace = dxt(ctx, "DXT_POSIX")
        mine = trace.record_id == np.uint64(record_id)
        if mine.any():
            ranks, where = np.unique(trace.rank[mine], return_inverse=True)
            moved = np.bincount(where, weights=trace.length[mine].astype(np.float64), minlength=len(ranks))
            return max(1, int((moved >= moved.max() / 2).sum())), True
    except Missing:
        pass
    estimate = int(np.floor(posix.bytes / posix.slowest_rank_bytes + 0.5)) if posix.slowest_rank_bytes else nprocs(ctx)
    return max(1, min(estimate, nprocs(ctx))), False


@fact("aggregated_files", "path", "Shared files accessed with collective MPI-IO: their POSIX I/O is the "
      "aggregators' (rank balance is judged at the MPI-IO layer).", label="collectively accessed shared files")
def aggregated_files(ctx: FactContext) -> list[str]:
    ids = collective_ids(ctx)
    return [f.path for f in data_files(ctx) if f.record_id in ids and "POSIX" in f.by_module]


@dataclass(frozen=True)
class Amplified:
    """One file whose POSIX traffic exceeds what MPI-IO asked for."""

    path: str
    mpiio_read: int
    mpiio_written: int
    posix_read: int
    posix_written: int
    extra_s: float  # wall seconds the job spent on the extra bytes and the read-modify-write reads
    romio_reads: int = 0  # POSIX reads of a file MPI-IO never read: ROMIO's read-modify-write
    romio_read_bytes: int = 0
    romio_read_s: float = 0.0  # their wall seconds

    @property
    def extra_bytes(self) -> int:
        return max(0, self.posix_read - self.mpiio_read) + max(0, self.posix_written - self.mpiio_written)


def _extra_share(posix: int, mpiio: int) -> float:
    return max(0, posix - mpiio) / posix if posix > 0 else 0.0


def _amplified(ctx: FactContext) -> list[Amplified]:
    out = []
    write_only = set(mpiio_write_only_ids(ctx).tolist())
    runtime = _run_time(ctx)
    for f in data_files(ctx):
        mpi, posix = f.by_module.get("MPI-IO"), f.by_module.get("POSIX")
        if mpi is None or posix is None:
            continue
        romio = f.record_id in write_only and posix.reads > 0
        if posix.bytes <= mpi.bytes and not romio:
            continue
        wall = _wall_share(posix)
        # every read of a file MPI-IO never read is ROMIO's, whatever its size (0 bytes past EOF)
        read_s = posix.read_time * (1.0 if romio else _extra_share(posix.bytes_read, mpi.bytes_read)) * wall
        write_s = posix.write_time * _extra_share(posix.bytes_written, mpi.bytes_written) * wall
        out.append(Amplified(f.path, mpi.bytes_read, mpi.bytes_written, posix.bytes_read, posix.bytes_written,
                             min(read_s + write_s, runtime), posix.reads if romio else 0,
                             posix.bytes_read if romio else 0, min(read_s, runtime) if romio else 0.0))
    out.sort(key=lambda a: -a.extra_s)
    return out


def _wall_share(posix) -> float:
    """Wall seconds per summed POSIX second of a file: the ranks that did its I/O worked in parallel.

    Darshan's slowest rank time says how much of the summed time one rank carried: all of it when
    one aggregator did everything (the others wait for it in the collective call).
    """
    if posix.slowest_rank_time is not None and posix.io_time > 0:
        return min(1.0, posix.slowest_rank_time / posix.io_time)
    return 1.0 / max(posix.ranks, 1)


def _run_time(ctx: FactContext) -> float:
    """The run time, the bound of any one rank's seconds (infinite when unknown)."""
    return float(ctx.value("runtime_s") or 0.0) or float("inf")


def amplified(ctx: FactContext) -> list[Amplified]:
    return ctx.memo("aggregation.amplified", lambda: _amplified(ctx))


def _totals(ctx: FactContext) -> tuple[int, int, int, int]:
    files = amplified(ctx)
    if not files:
        raise Missing("no file moved more bytes at the POSIX layer than through MPI-IO")
    return (sum(a.mpiio_read for a in files), sum(a.mpiio_written for a in files),
            sum(a.posix_read for a in files), sum(a.posix_written for a in files))


@fact("amplification_factor", "ratio", "POSIX bytes / MPI-IO bytes of the files where POSIX moved more "
      "(read-modify-write of collective buffers, data sieving).", label="POSIX bytes / MPI-IO bytes")
def amplification_factor(ctx: FactContext) -> float:
    mr, mw, pr, pw = _totals(ctx)
    return (pr + pw) / max(mr + mw, 1)


@fact("amplified_write_factor", "ratio", "POSIX bytes written / MPI-IO bytes written on those files.",
      label="POSIX / MPI-IO bytes written")
def amplified_write_factor(ctx: FactContext) -> float:
    _mr, mw, _pr, pw = _totals(ctx)
    return pw / mw if mw else float(pw > 0)


@fact("amplified_read_factor", "ratio", "POSIX bytes read / MPI-IO bytes read on those files "
      "(reads with no MPI-IO read are the read half of read-modify-write).", label="POSIX / MPI-IO bytes read")
def amplified_read_factor(ctx: FactContext) -> float:
    mr, _mw, pr, _pw = _totals(ctx)
    return pr / mr if mr else float(pr > 0)


@fact("amplified_mpiio_bytes", "bytes", "Bytes MPI-IO asked for on the amplified files.",
      label="bytes MPI-IO asked for")
def amplified_mpiio_bytes(ctx: FactContext) -> int:
    mr, mw, _pr, _pw = _totals(ctx)
    return mr + mw


@fact("amplified_posix_bytes", "bytes", "Bytes the POSIX layer moved on the amplified files.",
      label="bytes POSIX moved")
def amplified_posix_bytes(ctx: FactContext) -> int:
    _mr, _mw, pr, pw = _totals(ctx)
    return pr + pw


@fact("amplified_extra_bytes", "bytes", "POSIX bytes beyond what MPI-IO asked for.", label="extra POSIX bytes")
def amplified_extra_bytes(ctx: FactContext) -> int:
    return sum(a.extra_bytes for a in amplified(ctx))


@fact("amplification_cost_s", "seconds", "Wall seconds the POSIX layer spent on the extra bytes (their share of "
      "the POSIX read and write time) and on every read of a file MPI-IO only wrote, as carried by the slowest "
      "rank of each file (an aggregator), at most the run time.", label="time on the extra bytes")
def amplification_cost_s(ctx: FactContext) -> float:
    return min(float(sum(a.extra_s for a in amplified(ctx))), _run_time(ctx))


@fact("romio_read_count", "ops", "POSIX reads of files the application only writes through MPI-IO: ROMIO reading "
      "its collective or sieve buffer before writing it back (left out of the small-read counts).",
      label="read-modify-write reads")
def romio_read_count(ctx: FactContext) -> int:
    return sum(a.romio_reads for a in amplified(ctx))


@fact("romio_read_mean_size", "bytes", "Mean size of those reads (0: they read past the end of the file).",
      label="mean size of the read-modify-write reads")
def romio_read_mean_size(ctx: FactContext) -> float:
    n = ctx.get("romio_read_count")
    return sum(a.romio_read_bytes for a in amplified(ctx)) / n if n else 0.0


@fact("romio_read_time_s", "seconds", "Wall seconds those reads took, as carried by the slowest rank of each file "
      "(an aggregator).", label="time in read-modify-write reads")
def romio_read_time_s(ctx: FactContext) -> float:
    return min(float(sum(a.romio_read_s for a in amplified(ctx))), _run_time(ctx))


@fact("amplified_files", "path", "Files whose POSIX traffic most exceeds their MPI-IO traffic.",
      label="amplified files")
def amplified_files(ctx: FactContext) -> list[str]:
    return [a.path for a in amplified(ctx)]


@fact("amplified_collective", "flag", "The most amplified file was accessed with collective MPI-IO "
      "(read-modify-write of collective buffers rather than independent data sieving).", label="collective MPI-IO")
def amplified_collective(ctx: FactContext) -> bool:
    top = amplified(ctx)
    if not top:
        raise Missing("no file moved more bytes at the POSIX layer than through MPI-IO")
    return any(f.path == top[0].path for f in data_files(ctx) if f.record_id in collective_ids(ctx))


def _indep_shared_rows(ctx: FactContext) -> np.ndarray:
    """POSIX rows of shared files that MPI-IO accessed independently (ROMIO passes those requests on)."""
    try:
        mpi = records(ctx, "MPI-IO")
    except Missing:
        return np.zeros(0, bool)
    indep = mpi.ids[(col(mpi, "INDEP_READS") + col(mpi, "INDEP_WRITES")) > 0]
    t = requests.table(ctx)
    return shared_mask(t.rec) & np.isin(t.rec.ids, indep)


def _indep_rows(ctx: FactContext) -> np.ndarray:
    return ctx.memo("aggregation.indep_rows", lambda: _indep_shared_rows(ctx))


def _register_per_op(op: str) -> None:
    """The facts of one direction: what small requests lose under independent MPI-IO, and whether
    every small request is below collective MPI-IO."""
    @fact(f"mpiio_indep_small_{op}_cost_s", "seconds", f"Seconds per process small POSIX {op}s lose (against "
          f"rpc_size requests) on shared files MPI-IO accessed independently: what collective buffering "
          f"would merge away, whatever the request size class.",
          label=f"time small {op}s under independent MPI-IO lose per process")
    def cost(ctx: FactContext) -> float:
        rows, t = _indep_rows(ctx), requests.table(ctx)
        if not rows.any() or t.small[op][rows].sum() <= 0:
            return 0.0
        return float(t.small_seconds[op][rows].sum()) * ctx.get(f"small_{op}_saving") / nprocs(ctx)

    cost.__name__ = f"mpiio_indep_small_{op}_cost_s"

    @fact(f"small_{op}s_below_collective", "flag", f"Every file with small POSIX {op}s was moved with collective "
          f"MPI-IO: those {op}s are the MPI-IO layer's below the collective calls (aggregators' file domains, "
          f"read-modify-write of collective buffers), sized by cb_buffer_size, not by the application.",
          label=f"small {op}s made below collective MPI-IO")
    def below(ctx: FactContext) -> bool:
        t = requests.table(ctx)
        return all_collective(ctx, arrays.unique(t.rec.ids[t.small[op] > 0]))

    below.__name__ = f"small_{op}s_below_collective"

    @fact(f"small_shared_{op}s_below_independent", "flag", f"Every shared file with small POSIX {op}s was accessed "
          f"with independent MPI-IO: those {op}s are the application's MPI-IO calls passed on one by one, which "
          f"the independent-MPI-IO rule judges where the application makes them.",
          label=f"small shared {op}s made by independent MPI-IO calls")
    def below_independent(ctx: FactContext) -> bool:
        rows, t = _indep_rows(ctx), requests.table(ctx)
        small = shared_mask(t.rec) & (t.small[op] > 0)
        return bool(len(rows)) and bool(small.any()) and bool(rows[small].all())

    below_independent.__name__ = f"small_shared_{op}s_below_independent"


for _op in ("read", "write"):
    _register_per_op(_op)


@fact("misaligned_below_collective", "flag", "Every file with POSIX requests off the file alignment was moved "
      "with collective MPI-IO: the misaligned requests are the aggregators' file domains (where ROMIO cuts "
      "the collective buffer), which ROMIO's striping hints align, not the application's offsets.",
      label="misaligned requests made below collective MPI-IO")
def misaligned_below_collective(ctx: FactContext) -> bool:
    rec = data_records(ctx, "POSIX")
    return all_collective(ctx, arrays.unique(rec.ids[col(rec, "FILE_NOT_ALIGNED") > 0]))
