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

from advisor import arrays
from advisor.errors import InputError
from advisor.ingest import InputFormat, register
from advisor.ingest.recorder import calls as C
from advisor.ingest.recorder.events import Calls, Resolved, resolve
from advisor.ingest.recorder.heap import kept_heap
from advisor.ingest.recorder.format import LAYER_NAMES, USER_FUNCTION, RankCalls, RecorderTrace, TraceError
from advisor.ingest.recorder.plans import MODULES, K, M, PlanTable
from advisor.ingest.recorder.records import ASSUMED_ALIGNMENT, module_records, record_ids, segments
from advisor.ingest.recorder_folder import is_trace
from advisor.profile import CALL_OPS, JobInfo, JobProfile, MetadataCalls, ModuleInfo, Provenance

FORMAT = "recorder"


def _sniff(path: Path, head: bytes) -> bool:
    return is_trace(path)


def load(path: Path) -> JobProfile:
    with kept_heap():
        return _load(path)


def _load(path: Path) -> JobProfile:
    folder = path if path.is_dir() else path.parent
    started = time.perf_counter()
    try:
        trace = RecorderTrace(folder)
        plans = PlanTable(trace.meta.functions)
        chunks, per_signature, runtime, first_call = [], np.zeros(0, np.int64), 0.0, 0
        for batch in trace.batches():
            plans.extend(trace.signatures)
            terminal = np.concatenate([c.terminal for c in batch])
            chunks.append(_counted(batch, terminal, plans, first_call, trace.meta.layers,
                                   trace.meta.time_resolution))
            # calls per signature (cheaper than per function: no gather of the calls)
            seen = np.bincount(terminal, minlength=len(trace.signatures))
            seen[:per_signature.size] += per_signature
            per_signature = seen
            runtime = max(runtime, *(float(c.tend.max(initial=0.0)) for c in batch))
            first_call += terminal.size
    except TraceError as err:
        raise InputError(str(path), str(err).removeprefix(f"{folder}: ")) from None
    counted = Calls.concat(chunks)
    del chunks
    per_function = np.bincount(trace.signatures.func[:per_signature.size], weights=per_signature,
                               minlength=256).astype(np.int64)
    return _profile(trace, path, counted, plans, per_function, runtime, time.perf_counter() - started)


def _counted(batch: list[RankCalls], terminal: np.ndarray, plans: PlanTable, first_call: int,
             layers: np.ndarray, resolution: float) -> tuple:
    """The columns of :class:`Calls` for the calls of a batch of ranks that a plan counts."""
    keep = np.flatnonzero(plans.group[terminal] > 0)
    sizes = np.array([len(c) for c in batch], np.int64)
    rank_start = np.repeat(np.cumsum(sizes) - sizes, sizes)
    level = batch[0].signatures.level
    # RECORDER_LOG_LEVEL=0 writes every call at depth 0: the nesting is then read from the times
    level = level[terminal] if level.any() else depths_from_times(batch, layers, resolution)
    parent = _parents(level, keep, rank_start)
    cuts = np.searchsorted(keep, np.cumsum(sizes)).tolist()  # each rank's kept calls: keep[lo:hi]
    local = [keep[lo:hi] - start for lo, hi, start in zip([0, *cuts], cuts, (np.cumsum(sizes) - sizes).tolist())]
    return (np.repeat(np.array([c.rank for c in batch], np.int32), sizes)[keep], keep + first_call,
            np.where(parent >= 0, parent + first_call, -1), terminal[keep],
            np.concatenate([c.tstart[k] for c, k in zip(batch, local)]),
            np.concatenate([c.tend[k] for c, k in zip(batch, local)]))


def depths_from_times(batch: list[RankCalls], layers: np.ndarray, resolution: float) -> np.ndarray:
    """Each call's depth as its rank's calls nest in time, in ticks: a call of a lower layer (POSIX
    below MPI below MPI-IO below HDF5) that starts before an open call ends and ends no later is
    inside it. Recorder times the caller around its wrapped call, so a traced call's children start
    after it and end before it, and never in its own layer (calls inside a library are not
    interposed). The layer keeps apart neighbours of one layer that overlap by a tick (each time is
    truncated to a tick from the previous call's start: R1 has an lseek at the tick its read ended)."""
    rank_of = np.array([0, 2, 1, 3, 4], np.int8)[layers]  # recorder2text's layer -> nesting rank
    out = []
    for calls in batch:
        starts = np.rint(calls.tstart / resolution).astype(np.int64).tolist()
        ends = np.rint(calls.tend / resolution).astype(np.int64).tolist()
        depth, stack = [0] * len(starts), []
        for i, (start, end, rank) in enumerate(zip(starts, ends, rank_of[calls.func].tolist())):
            while stack and not (start < stack[-1][0] and end <= stack[-1][0] and rank < stack[-1][1]):
                stack.pop()
            depth[i] = min(len(stack), 255)
            stack.append((end, rank))
        out.append(np.array(depth, np.uint8))
    return np.concatenate(out) if out else np.zeros(0, np.uint8)


def _parents(level: np.ndarray, keep: np.ndarray, rank_start: np.ndarray) -> np.ndarray:
    """Index of the caller of each call `keep` (the last earlier call of its rank one level up),
    -1 at depth 0."""
    parent = np.full(keep.size, -1, np.int64)
    depth = level[keep]
    for d in range(1, int(depth.max(initial=0)) + 1):
        here = np.flatnonzero(depth == d)
        above = np.flatnonzero(level == d - 1)
        k = np.searchsorted(above, keep[here]) - 1
        found = above[np.maximum(k, 0)]
        parent[here] = np.where((k >= 0) & (found >= rank_start[keep[here]]), found, -1)
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
    kinds: dict[str, str] = {}
    for fid in np.flatnonzero(per_function).tolist():
        name = meta.functions[fid] if fid < len(meta.functions) else f"func{fid}"
        calls_per[LAYER_NAMES[int(meta.layers[fid])]][name] = int(per_function[fid])
        kinds[name] = "user function" if fid == USER_FUNCTION else C.kind_of(name)
    profile.extras["recorder"] = {
        "ranks": meta.ranks, "interprocess_compression": meta.interprocess,
        "time_resolution_s": meta.time_resolution, "calls": dict(calls_per), "kinds": kinds,
        # functions this reader does not know: counted per function, their arguments not read
        "unknown": {name: n for funcs in calls_per.values() for name, n in funcs.items() if kinds[name] == "unknown"},
        "directories": _directories(calls, res, directory, plans)}
    if "POSIX" in profile.records:
        profile.extras["assumed"] = {"POSIX_FILE_ALIGNMENT": ASSUMED_ALIGNMENT}
    profile.ingest = {"seconds": round(seconds, 3)}
    return profile


# POSIX functions whose calls are replayed one by one (docs/replay.md), by their CALL_OPS name
_CALL_OP = {**dict.fromkeys(("open", "open64", "creat", "creat64"), "open"), "close": "close",
            **dict.fromkeys(("__xstat", "__xstat64", "__lxstat", "__lxstat64", "__fxstat", "__fxstat64",
                             "access"), "stat"),
            "fsync": "fsync", "fdatasync": "fsync", "unlink": "unlink", "remove": "unlink", "mkdir": "mkdir",
            "rmdir": "rmdir", "rename": "rename", "link": "link", "linkat": "link", "faccessat": "stat",
            "truncate": "truncate", "ftruncate": "truncate"}


def _metadata_calls(trace: RecorderTrace, calls: Calls, res: Resolved, plans: PlanTable,
                    names: dict[int, str]) -> MetadataCalls:
    """The POSIX metadata calls on traced paths (files and directories), in call order."""
    op_of = np.full(256, -1, np.int8)
    for fid, name in enumerate(trace.meta.functions[:256]):
        if name in _CALL_OP:
            op_of[fid] = CALL_OPS.index(_CALL_OP[name])
    op = op_of[trace.signatures.func[calls.gid]]
    # (an MPI-IO or HDF5 call's effect on the file system is the POSIX call the trace shows below
    # it: MPI_File_set_size's ftruncate on the one rank that makes it, MPI_File_sync's fsync)
    sel = np.flatnonzero((op >= 0) & (res.module == M["POSIX"]) & (res.name >= 0))
    gid = calls.gid[sel]
    other = plans["other"][gid]
    target = np.zeros(sel.size, np.uint64)
    if (other >= 0).any():
        target[other >= 0] = record_ids(other[other >= 0], plans, names)
    length = np.where(op[sel] == CALL_OPS.index("truncate"), plans["size"][gid], -1)
    return MetadataCalls(calls.rank[sel].astype(np.int32), record_ids(res.name[sel], plans, names),
                         op[sel], calls.start[sel], target, length)


def _directories(calls: Calls, res: Resolved, directory: np.ndarray, plans: PlanTable) -> dict:
    """The job's calls on directories (made, removed, stat'ed): metadata of the job, not files."""
    sel = np.flatnonzero(directory)
    return {"paths": int(arrays.unique(res.name[sel]).size), "calls": int(sel.size),
            "meta_time_s": float((calls.end[sel] - calls.start[sel]).sum())}


register(InputFormat(FORMAT, _sniff, load, folder=is_trace))
