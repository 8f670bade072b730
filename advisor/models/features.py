"""Model inputs from one job profile: what the job asked of the file system, never how long it took.

:func:`job_features` turns a profile into a flat ``name -> float`` dict (NaN where a
value does not apply, e.g. stripe counts without a LUSTRE module); the fleet stores
it per job and :mod:`advisor.models.bandwidth` trains on it. Time-derived values
(I/O time, bandwidth, shares of run time) are left out on purpose: they are what the
model predicts. Add a feature by adding an entry to :data:`FEATURES`; bump
:data:`FEATURES_VERSION` so old datasets are not mixed with new ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from advisor.facts import Missing
from advisor.facts._darshan import DATA_MODULES, shared_mask
from advisor.profile import JobProfile

FEATURES_VERSION = 1

_SMALL_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K")  # requests below 100 KiB
_LARGE_BINS = ("1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS")
_FS_TYPES = ("lustre", "gpfs", "nfs", "xfs", "ext4", "tmpfs", "beegfs", "fuse.glusterfs")


class _Totals:
    """Sums of counters over the data modules (POSIX + STDIO), computed once per profile."""

    def __init__(self, profile: JobProfile):
        self.profile = profile
        self.recs = [profile.records[m] for m in DATA_MODULES if m in profile.records]

    def sum(self, *names: str) -> float:
        total = 0.0
        for rec in self.recs:
            for name in names:
                full = f"{rec.module}_{name}"
                if rec.has(full):
                    total += float(np.sum(rec.get(full)))
        return total

    def shared_bytes(self) -> float:
        total = 0.0
        for rec in self.recs:
            moved = rec.get(f"{rec.module}_BYTES_READ") + rec.get(f"{rec.module}_BYTES_WRITTEN")
            total += float(np.sum(moved[shared_mask(rec)]))
        return total


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else math.nan


def _log(value: float) -> float:
    return math.log10(value + 1.0)


def _bins(t: _Totals, bins: tuple[str, ...]) -> float:
    return t.sum(*(f"SIZE_{op}_{b}" for op in ("READ", "WRITE") for b in bins))


def _mpiio(t: _Totals, *names: str) -> float:
    rec = t.profile.records.get("MPI-IO")
    return sum(float(np.sum(rec.get(f"MPIIO_{n}"))) for n in names) if rec is not None else 0.0


def _ops(t: _Totals) -> float:
    return t.sum("READS", "WRITES")


def _bytes(t: _Totals) -> float:
    return t.sum("BYTES_READ", "BYTES_WRITTEN")


def _stripe(t: _Totals, attr: str) -> float:
    layouts = t.profile.lustre.values()
    return float(max((getattr(layout, attr) for layout in layouts), default=math.nan))


def _main_fs(t: _Totals) -> str:
    counts: dict[str, int] = {}
    for name in t.profile.names.values():
        fstype = t.profile.fstype_of(name)
        if fstype:
            counts[fstype] = counts.get(fstype, 0) + 1
    return max(counts, key=counts.get) if counts else ""


FEATURES: dict[str, Callable[[_Totals], float]] = {
    "log_nprocs": lambda t: _log(t.profile.job.nprocs or 0),
    "log_bytes": lambda t: _log(_bytes(t)),
    "read_fraction": lambda t: _ratio(t.sum("BYTES_READ"), _bytes(t)),
    "log_ops": lambda t: _log(_ops(t)),
    "log_mean_request": lambda t: _log(_ratio(_bytes(t), _ops(t))) if _ops(t) else math.nan,
    "small_fraction": lambda t: _ratio(_bins(t, _SMALL_BINS), _ops(t)),
    "large_fraction": lambda t: _ratio(_bins(t, _LARGE_BINS), _ops(t)),
    "seq_fraction": lambda t: _ratio(t.sum("SEQ_READS", "SEQ_WRITES"), _ops(t)),
    "consec_fraction": lambda t: _ratio(t.sum("CONSEC_READS", "CONSEC_WRITES"), _ops(t)),
    "unaligned_fraction": lambda t: _ratio(t.sum("FILE_NOT_ALIGNED"), _ops(t)),
    "rw_switch_fraction": lambda t: _ratio(t.sum("RW_SWITCHES"), _ops(t)),
    "log_files": lambda t: _log(len({int(i) for rec in t.recs for i in rec.ids})),
    "shared_fraction": lambda t: _ratio(t.shared_bytes(), _bytes(t)),
    "log_meta_ops_per_rank": lambda t: _log(t.sum("OPENS", "STATS", "SEEKS", "FOPENS")
                                            / max(t.profile.job.nprocs or 1, 1)),
    "fsync_per_write": lambda t: _ratio(t.sum("FSYNCS", "FDSYNCS", "FLUSHES"), t.sum("WRITES")),
    "stdio_fraction": lambda t: _ratio(t.sum("BYTES_READ", "BYTES_WRITTEN") - _posix_bytes(t), _bytes(t)),
    "mpiio_fraction": lambda t: _ratio(_mpiio(t, "BYTES_READ", "BYTES_WRITTEN"), _bytes(t)),
    "collective_fraction": lambda t: _ratio(_mpiio(t, "COLL_READS", "COLL_WRITES"),
                                            _mpiio(t, "COLL_READS", "COLL_WRITES", "INDEP_READS",
                                                   "INDEP_WRITES")),
    "stripe_count": lambda t: _stripe(t, "stripe_count"),
    "log_stripe_size": lambda t: _log(_stripe(t, "stripe_size")),
    **{f"fs_{fs}": (lambda t, fs=fs: float(_main_fs(t) == fs)) for fs in _FS_TYPES},
}


def _posix_bytes(t: _Totals) -> float:
    rec = t.profile.records.get("POSIX")
    if rec is None:
        return 0.0
    return float(np.sum(rec.get("POSIX_BYTES_READ")) + np.sum(rec.get("POSIX_BYTES_WRITTEN")))


def job_features(profile: JobProfile) -> dict[str, float]:
    """Every feature of :data:`FEATURES` for one job (NaN where it does not apply)."""
    totals = _Totals(profile)
    out = {}
    for name, compute in FEATURES.items():
        try:
            value = float(compute(totals))
        except (ArithmeticError, ValueError, TypeError, Missing):
            value = math.nan
        out[name] = value if math.isfinite(value) else math.nan
    return out


def bandwidth_mib_s(bytes_moved: float, io_time_s: float) -> float:
    """What the model predicts: bytes moved per second of (per-process) I/O time, in MiB/s."""
    return bytes_moved / io_time_s / (1 << 20) if io_time_s > 0 and bytes_moved > 0 else math.nan
