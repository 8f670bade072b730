"""Plausibility bounds every loaded profile must meet, whatever its input format.

A log, dump or IOR output is untrusted text: a value no real job can have (2^40
processes, an infinite byte count, a job that starts in the year 10^22) is not a
finding to report but a broken input, and left in it reaches numpy allocations
sized by ranks (terabytes) or conversions that overflow. :func:`check` refuses such
a profile with one line naming the field and its value; it runs on every profile
right after its loader (in the parsing child, see :func:`advisor.ingest.start_profile`).

The bounds are physical, not tuned to any log: the largest MPI jobs run a few
million ranks; no file or transfer reaches an exbibyte; no job runs for decades;
Darshan writes -1 for a value it could not record, and NaN stands for a counter a
dump did not print.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable

import numpy as np

from advisor.errors import InputError
from advisor.metrics import SPECS, Columns
from advisor.profile import JobProfile

MAX_RANKS = 1 << 24
"""16,777,216 ranks: several times the largest MPI jobs run (a few million ranks)."""
MAX_BYTES = 1 << 60
"""1 EiB: above any file, transfer or file system of a single job."""
MAX_DECLARED_BYTES = (1 << 63) - 1
"""IOR's declared sizes are int64 in IOR itself: IO500 asks for exabytes and stops on a deadline."""
MAX_SECONDS = 1e9
"""About 31 years: above any job's run time or any cumulative per-record time."""
MAX_EPOCH = 1 << 33
"""POSIX seconds in the year 2242: above any real start or end time."""
MAX_COUNT = 1 << 48
"""Operations, segments or repetitions: 2.8e14, beyond what any job issues."""
MAX_TOTAL = float(1 << 62)
"""A module's bytes or operations summed over its records (4.6e18): within int64 with room to
spare, so that no sum or integer conversion after ingest overflows (each counter alone may be
up to int64, and two of them were already past it)."""
UNKNOWN = -1
"""Darshan's value for "could not be recorded"."""


class Implausible(InputError):
    """A value of an input outside what any real job can have."""


def check(profile: JobProfile) -> JobProfile:
    """`profile` unchanged if every value is plausible; :class:`Implausible` (one line) otherwise."""
    path = profile.source.path
    for field, value, low, high in _job_fields(profile):
        _within(path, field, value, low, high)
    for name, recs in profile.records.items():
        _array(path, f"{name} rank", recs.ranks, UNKNOWN, MAX_RANKS - 1)
        for cname, col in recs.fcounters.items():
            low, high = _fcounter_bounds(cname)
            _array(path, cname, col, low, high, missing_ok=True)
    for field, value, low, high in _module_totals(profile):
        _within(path, field, value, low, high)
    for name, trace in profile.dxt.items():
        _array(path, f"{name} rank", trace.rank, 0, MAX_RANKS - 1)
        _array(path, f"{name} offset", trace.offset, UNKNOWN, MAX_BYTES)
        _array(path, f"{name} length", trace.length, 0, MAX_BYTES)
        _array(path, f"{name} start time", trace.start, -MAX_SECONDS, MAX_SECONDS)
        _array(path, f"{name} end time", trace.end, -MAX_SECONDS, MAX_SECONDS)
    run = getattr(profile, "run", None)  # an IorProfile's run (not imported: it imports us)
    if run is not None:
        for field, value, low, high in _ior_fields(run):
            _within(path, field, value, low, high)
    own = getattr(profile, "plausible_fields", None)  # an input kind's own numbers (IOzone, ...)
    if own is not None:
        for field, value, low, high in own():
            _within(path, field, value, low, high)
    return profile


def _job_fields(profile: JobProfile) -> Iterable[tuple[str, float | None, float, float]]:
    job = profile.job
    yield "nprocs", job.nprocs, UNKNOWN, MAX_RANKS
    yield "start_time", job.start_time, 0, MAX_EPOCH
    yield "end_time", job.end_time, 0, MAX_EPOCH
    yield "run time", job.runtime_s, -MAX_SECONDS, MAX_SECONDS


def _module_totals(profile: JobProfile) -> Iterable[tuple[str, float, float, float]]:
    """Bytes and operations of each module summed over its records, as the metrics sum them."""
    for name, recs in profile.records.items():
        spec = SPECS.get(name)
        if spec is None or not len(recs):
            continue
        cols = Columns.of(recs, spec)
        for field in ("bytes_read", "bytes_written", "reads", "writes", "meta_ops"):
            yield f"{name} {field.replace('_', ' ')} over all records", float(getattr(cols, field).sum()), 0, MAX_TOTAL


def _fcounter_bounds(cname: str) -> tuple[float, float]:
    """Times and timestamps (seconds) are bounded; an integer counter printed as a float
    (it would not fit int64) stays within int64; other float counters (variances) are finite."""
    if "TIME" in cname:
        return -MAX_SECONDS, MAX_SECONDS
    if "_F_" not in cname:
        return -2.0 ** 63, 2.0 ** 63
    return -sys.float_info.max, sys.float_info.max


def _ior_fields(run) -> Iterable[tuple[str, float | None, float, float]]:
    for test in run.tests:
        p, where = test.params, f"test {test.test_id} "
        yield where + "tasks", p.tasks, 0, MAX_RANKS
        yield where + "nodes", p.nodes, 0, MAX_RANKS
        yield where + "tasks per node", p.tasks_per_node, 0, MAX_RANKS
        yield where + "segments", p.segments, 0, MAX_COUNT
        yield where + "repetitions", p.repetitions, 0, MAX_COUNT
        yield where + "transfer size", p.transfer_size, 0, MAX_DECLARED_BYTES
        yield where + "block size", p.block_size, 0, MAX_DECLARED_BYTES
        yield where + "aggregate size", p.aggregate_size, 0, MAX_DECLARED_BYTES
        yield where + "stripe count", p.stripe_count, UNKNOWN, MAX_RANKS
        yield where + "stripe size", p.stripe_size, 0, MAX_BYTES
        yield where + "stonewall deadline (s)", p.stonewall_s, 0, MAX_SECONDS
        for it in test.iterations:
            yield f"{where}{it.operation} bandwidth (MiB/s)", it.bw_mib, 0, MAX_BYTES
            for name in ("iops", "latency_s", "open_s", "wrrd_s", "close_s", "total_s"):
                yield f"{where}{it.operation} {name}", getattr(it, name), -MAX_SECONDS, MAX_BYTES
        for op, s in test.summaries.items():
            for name in ("max_mib", "min_mib", "mean_mib", "stddev_mib"):
                yield f"{where}{op} {name}", getattr(s, name), 0, MAX_BYTES
            yield f"{where}{op} repetitions", s.repetitions, 0, MAX_COUNT


def _within(path: str, field: str, value, low: float, high: float) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Implausible(path, f"{field} is {_shown(value)}, not a number")
    if not (isinstance(value, int) or math.isfinite(value)) or not low <= value <= high:
        raise Implausible(path, f"implausible {field} {_shown(value)} (expected {_shown(low)} to {_shown(high)})")


def _array(path: str, field: str, col: np.ndarray, low: float, high: float, missing_ok: bool = False) -> None:
    if col.size == 0:
        return
    values = col[~np.isnan(col)] if missing_ok and col.dtype.kind == "f" else col
    if values.size == 0:
        return
    with np.errstate(invalid="ignore"):
        bad = ~((values >= low) & (values <= high))
    if bad.any():
        value = values[bad][0]
        raise Implausible(path, f"implausible {field} {_shown(value.item())} "
                                f"(expected {_shown(low)} to {_shown(high)})")


def _shown(value) -> str:
    """A value as the one-line error prints it: huge integers shortened, never thousands of digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) < 10 ** 21:
            return str(value)
        return f"an integer of {int(value.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(value, float):
        return f"{value:g}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
