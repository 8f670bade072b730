"""Recorder 2.5 trace folders as an input format: every call of every rank -> a job profile.

A folder holding ``recorder.mt`` and ``VERSION`` is a Recorder trace. Its calls become the
records the Darshan path gives (POSIX, STDIO, MPI-IO, H5F, H5D counters per file and rank, with
ranks never reduced), DXT_POSIX and DXT_MPIIO segments per call, and a count of calls per
function and layer (``extras["recorder"]``, for ``show``).
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from advisor.errors import InputError
from advisor.ingest import InputFormat, register
from advisor.ingest.recorder.format import LAYER_NAMES, RecorderTrace, TraceError
from advisor.ingest.recorder.records import PREFIX, FileRecord, RankState
from advisor.profile import DxtTrace, JobInfo, JobProfile, ModuleInfo, ModuleRecords, Provenance

FORMAT = "recorder"


def is_trace(path: Path) -> bool:
    """A Recorder trace folder, or its recorder.mt."""
    try:
        folder = path if path.is_dir() else path.parent
        return (folder / "recorder.mt").is_file() and (folder / "VERSION").is_file() and (
            path.is_dir() or path.name == "recorder.mt")
    except OSError:  # an unreadable directory: the callers say why when they list or open it
        return False


def _sniff(path: Path, head: bytes) -> bool:
    return is_trace(path)


def load(path: Path) -> JobProfile:
    folder = path if path.is_dir() else path.parent
    started = time.perf_counter()
    try:
        trace = RecorderTrace(folder)
        records: dict = {}
        segments: dict[str, list] = defaultdict(list)
        state = RankState(records, segments)
        per_function = np.zeros(256, np.int64)
        runtime = 0.0
        for rank in range(trace.meta.ranks):
            calls = trace.rank(rank)
            state.rank(calls, trace.meta.functions, trace.meta.layers)
            per_function += np.bincount(calls.func, minlength=256)
            runtime = max(runtime, float(calls.tend.max(initial=0.0)))
    except TraceError as err:
        raise InputError(str(path), str(err).removeprefix(f"{folder}: ")) from None
    return _profile(trace, path, records, segments, per_function, runtime, time.perf_counter() - started)


def record_id(name: str) -> int:
    """A stable 64-bit id per file name (Darshan hashes names too; the values differ)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def _profile(trace: RecorderTrace, path: Path, records: dict, segments: dict, per_function: np.ndarray,
             runtime: float, seconds: float) -> JobProfile:
    meta = trace.meta
    job = JobInfo(nprocs=meta.ranks, start_time=meta.start_ts, end_time=meta.start_ts + runtime,
                  runtime_s=runtime, library_version=f"Recorder {meta.version}")
    profile = JobProfile(Provenance(str(path), FORMAT, "ioadvisor Recorder 2.5 reader", meta.version), job)
    by_module: dict[str, list[FileRecord]] = defaultdict(list)
    for rec in records.values():
        by_module[rec.module].append(rec)
    for module, recs in by_module.items():
        profile.records[module] = _columns(module, recs, profile.names)
        profile.modules[module] = ModuleInfo(module, records=len(recs))
    for module, dxt in (("POSIX", "DXT_POSIX"), ("MPI-IO", "DXT_MPIIO")):
        if segments.get(module):
            profile.dxt[dxt] = _segments(dxt, segments[module])
            profile.modules[dxt] = ModuleInfo(dxt, records=len(profile.dxt[dxt]))
    calls: dict[str, dict[str, int]] = defaultdict(dict)
    for fid in np.flatnonzero(per_function).tolist():
        name = meta.functions[fid] if fid < len(meta.functions) else f"func{fid}"
        calls[LAYER_NAMES[int(meta.layers[fid])]][name] = int(per_function[fid])
    profile.extras["recorder"] = {"ranks": meta.ranks, "interprocess_compression": meta.interprocess,
                                  "time_resolution_s": meta.time_resolution, "calls": dict(calls)}
    profile.ingest = {"seconds": round(seconds, 3)}
    return profile


def _columns(module: str, recs: list[FileRecord], names: dict[int, str]) -> ModuleRecords:
    """FileRecords -> one column per Darshan counter (absent: 0), ACCESS1-4 from the sizes."""
    prefix = PREFIX[module]
    for rec in recs:
        for k, (size, count) in enumerate(rec.sizes.most_common(4), start=1):
            rec.counters[f"ACCESS{k}_ACCESS"] = size
            rec.counters[f"ACCESS{k}_COUNT"] = count
    keys = sorted({k for rec in recs for k in rec.counters})
    ids = np.array([record_id(rec.name) for rec in recs], np.uint64)
    for rec, rid in zip(recs, ids.tolist()):
        names[rid] = rec.name
    out = ModuleRecords(module, ids, np.array([rec.rank for rec in recs], np.int64))
    for key in keys:
        values = [rec.counters.get(key, 0) for rec in recs]
        if key.startswith("F_"):
            out.fcounters[f"{prefix}_{key}"] = np.array(values, np.float64)
        else:
            out.counters[f"{prefix}_{key}"] = np.array(values, np.int64)
    if module == "H5D":
        out.counters["H5D_FILE_REC_ID"] = np.array([record_id(rec.file) for rec in recs], np.uint64)
    return out


def _segments(module: str, rows: list[tuple]) -> DxtTrace:
    rank, name, op, offset, length, start, end = zip(*rows)
    ids = {n: record_id(n) for n in set(name)}
    trace = DxtTrace(module, np.array(rank, np.int32), np.array([ids[n] for n in name], np.uint64),
                     np.array(op, np.int8), np.array(offset, np.int64), np.array(length, np.int64),
                     np.array(start, np.float64), np.array(end, np.float64))
    order = np.lexsort((trace.start, trace.rank))
    return trace.subset(order)


register(InputFormat(FORMAT, _sniff, load, folder=is_trace))
