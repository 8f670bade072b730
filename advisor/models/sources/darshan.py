"""Parts of a Darshan job profile (logs and parser dumps): its write side and its read side.

Counts come from the base layer (POSIX + STDIO records, standard streams left out);
MPI-IO counters say which share of the bytes went through MPI-IO and how many MPI-IO
calls (independent or collective) carried them. Darshan has no phases, so a job is
split by direction. Timing counters never enter a part: they only give the measured
side (:func:`measured_parts`), the target a model is trained on or compared with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.models.features import FEATURES_VERSION, Part, features
from advisor.profile import DATA_MODULES, STD_STREAMS, JobProfile, ModuleRecords, shared_mask
from advisor.units import MiB

DIRECTIONS = ("write", "read")
_OP = {"write": "WRITE", "read": "READ"}
_BYTES = {"write": "BYTES_WRITTEN", "read": "BYTES_READ"}
_MPI_CALLS = {d: tuple(f"{k}_{_OP[d]}S" for k in ("INDEP", "COLL", "SPLIT", "NB")) for d in DIRECTIONS}


@dataclass
class Measured:
    """What one direction of the job took (seconds of its slowest rank) and moved."""

    direction: str
    bytes: float
    seconds: float

    @property
    def mib_s(self) -> float:
        return self.bytes / self.seconds / MiB if self.seconds > 0 else math.nan


def _col(rec: ModuleRecords, name: str, rows: np.ndarray) -> np.ndarray:
    prefix = "MPIIO" if rec.module == "MPI-IO" else rec.module
    full = f"{prefix}_{name}"
    if not rec.has(full):
        return np.zeros(int(rows.sum()))
    col = np.asarray(rec.get(full), dtype=np.float64)[rows]
    return np.where(col > 0, col, 0.0)  # -1: not monitored


def _data_rows(profile: JobProfile, rec: ModuleRecords) -> np.ndarray:
    std = [i for i, n in profile.names.items() if n in STD_STREAMS]
    return ~np.isin(rec.ids, np.asarray(std, np.uint64)) if std else np.ones(len(rec), bool)


def _base(profile: JobProfile) -> list[tuple[ModuleRecords, np.ndarray]]:
    return [(profile.records[m], _data_rows(profile, profile.records[m]))
            for m in DATA_MODULES if m in profile.records and len(profile.records[m])]


def profile_parts(profile: JobProfile) -> dict[str, Part]:
    """"write"/"read" -> part, for the directions that moved bytes."""
    base = _base(profile)
    opens = sum(float(_col(r, n, rows).sum()) for r, rows in base for n in ("OPENS", "FOPENS", "FDOPENS"))
    fstype = _main_fstype(profile)  # once: it looks up the mount of every file the job named
    parts = {d: _direction(profile, base, d, fstype) for d in DIRECTIONS}
    calls = sum(p.calls for p in parts.values())
    for p in parts.values():
        p.opens = opens * p.calls / calls if calls else 0.0
    return {d: p for d, p in parts.items() if p.bytes > 0}


def job_part(profile: JobProfile) -> Part:
    """Both directions as one part (a job described as a whole, e.g. in the fleet)."""
    parts = list(profile_parts(profile).values())
    if not parts:
        return Part(max(profile.job.nprocs, 1), fstype=_main_fstype(profile))
    return parts[0].merged(parts[1]) if len(parts) == 2 else parts[0]


def _direction(profile: JobProfile, base, d: str, fstype: str) -> Part:
    nbytes = calls = consec = seq = posix_calls = not_aligned = seen_aligned = shared = stdio = 0.0
    touched: list[np.ndarray] = []
    movers: set[int] = set()  # ranks whose own records moved bytes (-1: a record shared by all)
    for rec, rows in base:
        moved = _col(rec, _BYTES[d], rows)
        n = _col(rec, f"{_OP[d]}S", rows)
        nbytes += float(moved.sum())
        calls += float(n.sum())
        shared += float(moved[shared_mask(rec)[rows]].sum())
        touched.append(rec.ids[rows][moved > 0])
        movers.update(np.asarray(rec.ranks)[rows][moved > 0].tolist())
        if rec.module == "STDIO":
            stdio += float(moved.sum())
            consec += float(n.sum())  # buffered streams: sequential by construction
            seq += float(n.sum())
            continue
        posix_calls += float(n.sum())
        consec += float(_col(rec, f"CONSEC_{_OP[d]}S", rows).sum())
        seq += float(_col(rec, f"SEQ_{_OP[d]}S", rows).sum())  # forward: consecutive or past a hole
        if rec.has("POSIX_FILE_NOT_ALIGNED"):
            seen_aligned += float((_col(rec, "READS", rows) + _col(rec, "WRITES", rows)).sum())
            not_aligned += float(_col(rec, "FILE_NOT_ALIGNED", rows).sum())
    part = Part(max(profile.job.nprocs, 1), label=d, fstype=fstype)
    # a record reduced over ranks (-1) hides who moved its bytes: count every rank then
    part.io_ranks = float(part.nprocs if -1 in movers else min(len(movers), part.nprocs))
    consec_frac = consec / calls if calls else math.nan
    seq_frac = seq / calls if calls else math.nan
    calls, mpi_bytes, mpi_calls, coll = _mpiio(profile, d, calls, nbytes)
    part.calls = part.pieces = calls
    part.consecutive = consec_frac * calls if calls else 0.0
    part.forward = seq_frac * calls if calls else 0.0
    part.unaligned = not_aligned / seen_aligned * calls if seen_aligned else math.nan
    part.shared_bytes, part.stdio_bytes = shared, stdio
    part.mpiio_bytes, part.mpiio_calls, part.collective_calls = mpi_bytes, mpi_calls, coll
    setattr(part, f"bytes_{'written' if d == 'write' else 'read'}", nbytes)
    if d == "write":
        part.write_calls = calls
        part.fsyncs = sum(float(_col(r, n, rows).sum()) for r, rows in base for n in ("FSYNCS", "FDSYNCS"))
    else:
        part.reread_bytes = _reread(base)
    _layout(profile, part, np.unique(np.concatenate(touched)).tolist() if touched else [])
    return part


def _mpiio(profile: JobProfile, d: str, calls: float, nbytes: float) -> tuple[float, float, float, float]:
    """(calls, MPI-IO bytes, MPI-IO calls, collective calls): the POSIX calls under MPI-IO are
    replaced by the MPI-IO calls that caused them (the calls the application made)."""
    rec = profile.records.get("MPI-IO")
    if rec is None or not len(rec) or nbytes <= 0:
        return calls, 0.0, 0.0, 0.0
    rows = _data_rows(profile, rec)
    mpi_bytes = min(float(_col(rec, _BYTES[d], rows).sum()), nbytes)
    mpi_calls = sum(float(_col(rec, n, rows).sum()) for n in _MPI_CALLS[d])
    coll = float(_col(rec, f"COLL_{_OP[d]}S", rows).sum())
    return mpi_calls + calls * (1 - mpi_bytes / nbytes), mpi_bytes, mpi_calls, coll


def _reread(base) -> float:
    """Bytes read from files the job also wrote (at most what it wrote to each)."""
    if not base:
        return 0.0
    ids = np.concatenate([rec.ids[rows] for rec, rows in base])
    read = np.concatenate([_col(rec, "BYTES_READ", rows) for rec, rows in base])
    written = np.concatenate([_col(rec, "BYTES_WRITTEN", rows) for rec, rows in base])
    _, inv = np.unique(ids, return_inverse=True)
    per_read, per_written = np.bincount(inv, weights=read), np.bincount(inv, weights=written)
    return float(np.minimum(per_read, per_written).sum())


def _layout(profile: JobProfile, part: Part, record_ids: list[int]) -> None:
    layouts = [profile.lustre[r] for r in record_ids if r in profile.lustre]
    if layouts:
        widest = max(layouts, key=lambda lay: lay.stripe_count)
        part.stripe_count, part.stripe_size = float(widest.stripe_count), float(widest.stripe_size)


def _main_fstype(profile: JobProfile) -> str:
    counts: dict[str, int] = {}
    for name in profile.names.values():
        fstype = profile.fstype_of(name)
        if fstype and name not in STD_STREAMS:
            counts[fstype] = counts.get(fstype, 0) + 1
    return max(counts, key=counts.get) if counts else ""


def measured_parts(profile: JobProfile) -> dict[str, Measured]:
    """Per direction: bytes and the seconds its slowest rank spent (Darshan's timing counters).

    Read/write seconds are the direction's own counters; metadata seconds are shared out
    by metadata operations (opens by calls, every fsync to the write side); the mean per
    rank is scaled by the ranks' time imbalance (slowest / mean) from advisor.metrics.
    """
    from advisor.metrics import summarize

    base = _base(profile)
    parts = profile_parts(profile)
    if not parts:
        return {}
    nprocs = max(profile.job.nprocs, 1)
    summary = summarize(profile)
    slowest = summary.rank_time_imbalance or 1.0
    meta = sum(float(_col(r, "F_META_TIME", rows).sum()) for r, rows in base)
    meta_ops = {d: p.opens + p.fsyncs for d, p in parts.items()}
    total_meta_ops = sum(meta_ops.values())
    out = {}
    for d, part in parts.items():
        own = sum(float(_col(r, f"F_{_OP[d]}_TIME", rows).sum()) for r, rows in base)
        share = meta_ops[d] / total_meta_ops if total_meta_ops else 1.0 / len(parts)
        seconds = (own + meta * share) / nprocs * slowest
        out[d] = Measured(d, part.bytes, seconds)
    return out


def job_features(profile: JobProfile) -> dict[str, float]:
    """Features of a whole Darshan job (both directions as one part), with their version.

    The fleet stores this per job; :mod:`advisor.models.bandwidth` learns from it.
    """
    out = features(job_part(profile))
    out["features_version"] = float(FEATURES_VERSION)
    return out
