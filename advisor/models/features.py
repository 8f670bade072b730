"""Model inputs: what a workload asked of the file system, never how long it took.

Every source is first reduced to :class:`Part` records (one per phase or per direction
of a workload): a replay plan (:mod:`advisor.models.sources.plan`: calibration patterns
and patterns with a fix applied), an IOR run (:mod:`advisor.models.sources.ior`) and a
Darshan job profile (:mod:`advisor.models.sources.darshan`). :func:`features` turns a
part into the same named numbers whatever its source, so one model reads all three.

Time-derived values (I/O time, bandwidth, shares of run time) are left out on purpose:
they are what the model predicts (leakage). Add a feature by adding an entry to
:data:`FEATURES` (and to :data:`MONOTONE` when physics fixes its direction); bump
:data:`FEATURES_VERSION` so data sets and models of another version are refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


FEATURES_VERSION = 3  # 3: fsync frequency, aggregators, forward streams, objects per call
ALIGNMENT = 4096  # a request is aligned when its offset is a multiple of the page size
SMALL_CALL = 100 * 1024  # Darshan's "small" bins end at 100 KiB
NEVER_SYNCED = 40.0  # log2 bytes per fsync of a part that writes without syncing (1 TiB: "never")

_FS_TYPES = ("lustre", "gpfs", "nfs", "beegfs", "fuse.glusterfs", "tmpfs")
_LOCAL_FS = ("ext4", "xfs", "btrfs", "zfs", "ext3", "overlay")


@dataclass
class Part:
    """One phase (or one direction) of a workload, in counts and bytes only.

    ``calls`` are the I/O calls the ranks issued: a POSIX read, an MPI-IO call (a
    collective call through a file view is one call, whatever it describes);
    ``pieces`` are the contiguous requests those calls carried (>= calls).
    """

    nprocs: int
    bytes_read: float = 0.0
    bytes_written: float = 0.0
    calls: float = 0.0
    write_calls: float = 0.0
    pieces: float = 0.0
    consecutive: float = 0.0  # pieces starting where the same rank's previous one on that file ended
    forward: float = math.nan  # pieces starting at or after that end (consecutive, or a hole skipped)
    unaligned: float = math.nan  # pieces at an offset that is not a multiple of ALIGNMENT (NaN: unknown)
    shared_bytes: float = 0.0  # bytes on files that more than one rank touches
    opens: float = 0.0
    fsyncs: float = 0.0
    stdio_bytes: float = 0.0
    mpiio_bytes: float = 0.0
    mpiio_calls: float = 0.0
    collective_calls: float = 0.0
    reread_bytes: float = 0.0  # bytes read that the workload itself wrote earlier (page cache)
    io_ranks: float = math.nan  # ranks that issue the file system requests (collective I/O: the aggregators)
    stripe_count: float = math.nan  # NaN: no layout recorded or settable
    stripe_size: float = math.nan
    fstype: str = ""
    label: str = ""  # what the part is ("write", "read", "phase 1"), for messages only
    notes: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written

    def merged(self, other: Part) -> Part:
        """Both parts as one (counts add up; layout and file system of the first)."""
        out = Part(self.nprocs, label=f"{self.label}+{other.label}", fstype=self.fstype or other.fstype,
                   stripe_count=self.stripe_count, stripe_size=self.stripe_size)
        for name in _ADDITIVE:
            setattr(out, name, getattr(self, name) + getattr(other, name))
        out.io_ranks = float(np.fmax(self.io_ranks, other.io_ranks))  # NaN only when both are unknown
        return out


_ADDITIVE = ("bytes_read", "bytes_written", "calls", "write_calls", "pieces", "consecutive", "forward",
             "unaligned", "shared_bytes", "opens", "fsyncs", "stdio_bytes", "mpiio_bytes",
             "mpiio_calls", "collective_calls", "reread_bytes")


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else math.nan


def _log2(value: float) -> float:
    return math.log2(value) if value > 0 else math.nan


def _bytes_per_fsync(p: Part) -> float:
    """log2 of the bytes written between two syncs: the dirty data each fsync waits for (per
    write call, the fsyncs' frequency); a part that writes and never syncs leaves its data to
    writeback (:data:`NEVER_SYNCED`)."""
    if not p.bytes_written:
        return math.nan
    return _log2(p.bytes_written / p.fsyncs) if p.fsyncs > 0 else NEVER_SYNCED


def _objects_per_call(p: Part) -> float:
    """Storage objects (OST stripes, CephFS objects) one call spans: its bytes in stripe units,
    at most the stripe count; NaN without a layout. Above one, a call is served in parallel."""
    if not (p.stripe_count > 0 and p.stripe_size > 0):
        return math.nan
    return min(p.stripe_count, max(1.0, _ratio(p.bytes, p.calls) / p.stripe_size))


def _fs(p: Part, kind: str) -> float:
    if not p.fstype:
        return math.nan  # unknown (an IOR run states no file system type): not "not lustre"
    if kind == "local":
        return float(p.fstype in _LOCAL_FS)
    return float(p.fstype == kind)


FEATURES: dict[str, Callable[[Part], float]] = {
    "read_fraction": lambda p: _ratio(p.bytes_read, p.bytes),
    "log2_nprocs": lambda p: _log2(max(p.nprocs, 1)),
    "log2_bytes_per_rank": lambda p: _log2(p.bytes / max(p.nprocs, 1)),
    "log2_call_bytes": lambda p: _log2(_ratio(p.bytes, p.calls)),
    "log2_pieces_per_call": lambda p: _log2(_ratio(p.pieces, p.calls)),
    "consecutive_fraction": lambda p: _ratio(p.consecutive, p.pieces),
    "forward_fraction": lambda p: _ratio(p.forward, p.pieces),
    "unaligned_fraction": lambda p: _ratio(p.unaligned, p.pieces),
    "shared_fraction": lambda p: _ratio(p.shared_bytes, p.bytes),
    "opens_per_call": lambda p: _ratio(p.opens, p.calls),
    "fsync_per_write": lambda p: _ratio(p.fsyncs, p.write_calls) if p.write_calls else 0.0,
    "log2_write_bytes_per_fsync": _bytes_per_fsync,
    "io_rank_fraction": lambda p: _ratio(p.io_ranks, max(p.nprocs, 1)),
    "stdio_fraction": lambda p: _ratio(p.stdio_bytes, p.bytes),
    "mpiio_fraction": lambda p: _ratio(p.mpiio_bytes, p.bytes),
    "collective_fraction": lambda p: _ratio(p.collective_calls, p.mpiio_calls) if p.mpiio_calls else 0.0,
    "reread_fraction": lambda p: _ratio(p.reread_bytes, p.bytes_read) if p.bytes_read else 0.0,
    "stripe_count": lambda p: p.stripe_count,
    "log2_stripe_size": lambda p: _log2(p.stripe_size),  # Lustre stripe size, CephFS stripe unit
    "log2_objects_per_call": lambda p: _log2(_objects_per_call(p)),
    **{f"fs_{kind}": (lambda p, kind=kind: _fs(p, kind)) for kind in (*_FS_TYPES, "local")},
}

MONOTONE: dict[str, int] = {
    "log2_call_bytes": 1,  # larger calls never lower the bandwidth (fewer round trips per byte)
    "consecutive_fraction": 1,  # sequential streams read ahead and write behind
    "forward_fraction": 1,  # so do streams that skip holes forward, more than random ones
    "unaligned_fraction": -1,  # unaligned requests touch extra pages, locks and RPCs
    "fsync_per_write": -1,  # every sync waits for the storage
    "log2_write_bytes_per_fsync": 1,  # rarer syncs (more bytes each) never cost more
}
"""Direction physics fixes for a feature (+1 bandwidth non-decreasing, -1 non-increasing)."""


def names() -> list[str]:
    return list(FEATURES)


def monotonic_cst(feature_names: list[str]) -> list[int]:
    """scikit-learn's monotonic_cst for `feature_names`."""
    return [MONOTONE.get(name, 0) for name in feature_names]


def features(part: Part) -> dict[str, float]:
    """Every feature of :data:`FEATURES` for one part (NaN where it does not apply)."""
    out = {}
    for name, compute in FEATURES.items():
        try:
            value = float(compute(part))
        except (ArithmeticError, ValueError, TypeError):
            value = math.nan
        out[name] = value if math.isfinite(value) else math.nan
    return out


def matrix(rows: list[dict[str, float]], feature_names: list[str]) -> np.ndarray:
    """Feature dicts -> a float matrix in the order of `feature_names` (NaN where absent)."""
    out = np.full((len(rows), len(feature_names)), np.nan)
    for i, row in enumerate(rows):
        for j, name in enumerate(feature_names):
            value = row.get(name) if row else None
            if value is not None:
                out[i, j] = value
    return out
