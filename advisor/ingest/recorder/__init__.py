"""Recorder 2.5 trace folders as an input format: every call of every rank -> a job profile.

A folder holding ``recorder.mt`` and ``VERSION`` is a Recorder trace. Its calls become the
records the Darshan path gives (POSIX, STDIO, MPI-IO, H5F, H5D counters per file and rank, with
ranks never reduced), DXT_POSIX and DXT_MPIIO segments per call, and a count of calls per
function and layer (``extras["recorder"]``, for ``show``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from advisor.errors import InputError
from advisor.ingest import InputFormat, register
from advisor.ingest.recorder import calls as C
from advisor.ingest.recorder.events import Calls, Resolved, resolve
from advisor.ingest.recorder.format import LAYER_NAMES, RankCalls, RecorderTrace, TraceError
from advisor.ingest.recorder.plans import MODULES, K, M, PlanTable
from advisor.ingest.recorder.records import module_records, record_ids, segments
from advisor.ingest.recorder_folder import is_trace
from advisor.profile import CALL_OPS, JobInfo, JobProfile, MetadataCalls, ModuleInfo, Provenance

FORMAT = "recorder"


def _sniff(path: Path, head: bytes) -> bool:
    return is_trace(path)


def load(path: Path) -> JobProfile:
    folder = path if path.is_dir() else path.parent
    started = time.perf_counter()
    try:
        trace = RecorderTrace(folder)
        plans = PlanTable(trace.meta.functions)
        chunks, per_signature, runtime, first_call = [], np.zeros(0, np.int64), 0.0, 0
        for calls in trace.ranks():
            plans.extend(trace.signatures)
            chunks.append(_counted(calls, plans, first_call))
            # calls per signature (cheaper per rank than per function: no gather of the calls)
            seen = np.bincount(calls.terminal, minlength=len(trace.signatures))
            seen[:per_signature.size] += per_signature
            per_signature = seen
            runtime = max(runtime, float(calls.tend.max(initial=0.0)))
            first_call += len(calls)
    except TraceError as err:
        raise InputError(str(path), str(err).removeprefix(f"{folder}: ")) from None
    counted = Calls.concat(chunks)
    del chunks
    per_function = np.bincount(trace.signatures.func[:per_signature.size], weights=per_signature,
                               minlength=256).astype(np.int64)
    return _profile(trace, path, counted, plans, per_function, runtime, time.perf_counter() - started)


def _counted(calls: RankCalls, plans: PlanTable, first_call: int) -> tuple:
    """The columns of :class:`Calls` for the calls of one rank that a plan counts."""
    keep = np.flatnonzero(plans.group[calls.terminal] > 0)
    parent = _parents(calls.level)[keep]
    return (np.full(keep.size, calls.rank, np.int32), keep + first_call,
            np.where(parent >= 0, parent + first_call, -1), calls.terminal[keep], calls.tstart[keep],
            calls.tend[keep])


def _parents(level: np.ndarray) -> np.ndarray:
    """Index of each call's caller (the last earlier call one level up), -1 at depth 0."""
    parent = np.full(level.size, -1, np.int64)
    for depth in range(1, int(level.max(initial=0)) + 1):
        here = np.flatnonzero(level == depth)
        above = np.flatnonzero(level == depth - 1)
        k = np.searchsorted(above, here) - 1
        parent[here] = np.where(k >= 0, above[np.maximum(k, 0)], -1)
    return parent


def _profile(trace: RecorderTrace, path: Path, calls: Calls, plans: PlanTable, per_function: np.ndarray,
             runtime: float, seconds: float) -> JobProfile:
    meta = trace.meta
    job = JobInfo(nprocs=meta.ranks, start_time=meta.start_ts, end_time=meta.start_ts + runtime,
                  runtime_s=runtime, library_version=f"Recorder {meta.version}")
    profile = JobProfile(Provenance(str(path), FORMAT, "ioadvisor Recorder 2.5 reader", meta.version), job)
    res = resolve(calls, plans)
    directory = np.isin(res.name, np.array(sorted(plans.directories), np.int64)) & (res.module <= M["STDIO"])
    for module in MODULES:
        sel = np.flatnonzero((res.module == M[module]) & (res.name >= 0) & ~directory)
        if sel.size:
            profile.records[module] = module_records(module, calls, res, sel, plans, profile.names)
            profile.modules[module] = ModuleInfo(module, records=len(profile.records[module]))
    for module, dxt in (("POSIX", "DXT_POSIX"), ("MPI-IO", "DXT_MPIIO")):
        sel = np.flatnonzero((res.module == M[module]) & (res.name >= 0) & ~directory
                             & ((res.kind == K[C.READ]) | (res.kind == K[C.WRITE])))
        if sel.size:
            profile.dxt[dxt] = segments(dxt, calls, res, sel, plans)
            profile.modules[dxt] = ModuleInfo(dxt, records=len(profile.dxt[dxt]))
    profile.calls = _metadata_calls(trace, calls, res, plans, profile.names)
    calls_per: dict[str, dict[str, int]] = defaultdict(dict)
    for fid in np.flatnonzero(per_function).tolist():
        name = meta.functions[fid] if fid < len(meta.functions) else f"func{fid}"
        calls_per[LAYER_NAMES[int(meta.layers[fid])]][name] = int(per_function[fid])
    profile.extras["recorder"] = {"ranks": meta.ranks, "interprocess_compression": meta.interprocess,
                                  "time_resolution_s": meta.time_resolution, "calls": dict(calls_per),
                                  "directories": _directories(calls, res, directory, plans)}
    profile.ingest = {"seconds": round(seconds, 3)}
    return profile


# POSIX functions whose calls are replayed one by one (docs/replay.md), by their CALL_OPS name
_CALL_OP = {**dict.fromkeys(("open", "open64", "creat", "creat64"), "open"), "close": "close",
            **dict.fromkeys(("__xstat", "__xstat64", "__lxstat", "__lxstat64", "__fxstat", "__fxstat64",
                             "access"), "stat"),
            "fsync": "fsync", "fdatasync": "fsync", "unlink": "unlink", "remove": "unlink", "mkdir": "mkdir",
            "rmdir": "rmdir"}


def _metadata_calls(trace: RecorderTrace, calls: Calls, res: Resolved, plans: PlanTable,
                    names: dict[int, str]) -> MetadataCalls:
    """The POSIX metadata calls on traced paths (files and directories), in call order."""
    op_of = np.full(256, -1, np.int8)
    for fid, name in enumerate(trace.meta.functions[:256]):
        if name in _CALL_OP:
            op_of[fid] = CALL_OPS.index(_CALL_OP[name])
    op = op_of[trace.signatures.func[calls.gid]]
    sel = np.flatnonzero((op >= 0) & (res.module == M["POSIX"]) & (res.name >= 0))
    return MetadataCalls(calls.rank[sel].astype(np.int32), record_ids(res.name[sel], plans, names),
                         op[sel], calls.start[sel])


def _directories(calls: Calls, res: Resolved, directory: np.ndarray, plans: PlanTable) -> dict:
    """The job's calls on directories (made, removed, stat'ed): metadata of the job, not files."""
    sel = np.flatnonzero(directory)
    return {"paths": int(np.unique(res.name[sel]).size), "calls": int(sel.size),
            "meta_time_s": float((calls.end[sel] - calls.start[sel]).sum())}


register(InputFormat(FORMAT, _sniff, load, folder=is_trace))
