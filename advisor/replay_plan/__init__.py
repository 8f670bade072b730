"""Job profile -> replay plan (advisor side; the plan itself lives in :mod:`replay`).

Three sources, best first: DXT traces (exact per-rank offsets, lengths and order),
IOR parameters (the exact IOR pattern), Darshan counters (a synthesized stream
consistent with them). ``scale`` shrinks bytes and operation counts and ``np``
folds ranks; both are always recorded in ``plan.meta``.
"""

from __future__ import annotations

import numpy

from advisor.errors import InputError
from advisor.ingest.ior.model import IorProfile
from advisor.profile import JobProfile
from advisor.replay_plan.counters import synthesize
from advisor.replay_plan.dxt import add_dxt, traced, usable_traces
from advisor.replay_plan.ior import add_ior, ior_bytes_ops
from advisor.replay_plan.stream import FileTable, StreamBuilder
from replay.plan import Plan
from replay.reshape import fold
from replay.reshape import scale as scale_plan

SOURCES = ("dxt", "counters", "ior")
AUTO_MAX_BYTES = 1 << 30  # an automatic scale keeps a replay under 1 GiB ...
AUTO_MAX_OPS = 500_000  # ... and half a million data operations


def choose_source(profile: JobProfile) -> str:
    """The best plan source this profile offers, or InputError when it has none."""
    if traced(profile):
        return "dxt"
    if any(m in profile.records and len(profile.records[m]) for m in ("POSIX", "STDIO", "MPI-IO")):
        return "counters"
    if isinstance(profile, IorProfile):
        return "ior"
    raise InputError(profile.source.path, "nothing to replay: no DXT trace, no POSIX/STDIO/MPI-IO "
                                          "counters and no IOR parameters")


def source_size(profile: JobProfile, source: str) -> tuple[int, int]:
    """(bytes, data operations) the source would replay at scale 1."""
    if source == "dxt":
        traces = usable_traces(profile)
        return (int(sum(int(t.length.sum()) for t in traces.values())),
                int(sum(len(t) for t in traces.values())))
    if source == "ior":
        return ior_bytes_ops(profile)
    from advisor.metrics import summarize

    s = summarize(profile)
    ops = sum(m.reads + m.writes for name, m in s.modules.items() if name in s.base_modules)
    return s.bytes_read + s.bytes_written, ops


def auto_scale(profile: JobProfile, source: str, max_bytes: int = AUTO_MAX_BYTES,
               max_ops: int = AUTO_MAX_OPS) -> float:
    """The largest scale <= 1 that keeps the replay within `max_bytes` and `max_ops`."""
    nbytes, nops = source_size(profile, source)
    factor = min(1.0, max_bytes / max(nbytes, 1), max_ops / max(nops, 1))
    return float(f"{factor:.3g}")


def build_plan(profile: JobProfile, *, source: str = "auto", scale: float | None = None,
               np: int | None = None, think_time: bool = False, max_bytes: int = AUTO_MAX_BYTES,
               max_ops: int = AUTO_MAX_OPS) -> Plan:
    """The replay plan of a job, from the requested source (or the best one)."""
    src = choose_source(profile) if source == "auto" else source
    if src not in SOURCES:
        raise InputError(profile.source.path, f"unknown plan source {src!r} (one of {', '.join(SOURCES)})")
    scale_reason = "given"
    if scale is None:
        scale, scale_reason = auto_scale(profile, src, max_bytes, max_ops), "automatic"
    if not 0 < scale <= 1:
        raise InputError(profile.source.path, f"--scale must be in (0, 1], got {scale}")
    nranks = _nranks(profile, src)
    files = FileTable()
    builder = StreamBuilder(nranks, files)
    if src == "dxt":
        if not traced(profile):
            raise InputError(profile.source.path, "no readable DXT trace in this log")
        notes = add_dxt(profile, builder, files, think_time=think_time)
    elif src == "ior":
        if not isinstance(profile, IorProfile):
            raise InputError(profile.source.path, "not an IOR output: no IOR parameters to replay")
        notes = add_ior(profile, builder, files, scale=scale)
    else:
        synthesize(profile, builder, files, scale=scale)
        notes = ["stream synthesized from counters: sizes, offsets and order are consistent with "
                 "them, not recorded"]
    meta = {"source": src, "scale": scale, "scale_reason": scale_reason, "nprocs_source": nranks,
            "np": nranks, "think_time": bool(think_time and src == "dxt"), "notes": notes,
            "input": profile.source.path}
    plan = builder.build(meta)
    if src == "ior" and scale < 1:  # IOR scales by whole transfers and segments: say what it became
        full, _ = ior_bytes_ops(profile)
        done = plan.summary()
        plan.meta["scale"] = (done["bytes_read"] + done["bytes_written"]) / max(full, 1)
    if plan.nops == 0:
        raise InputError(profile.source.path, "nothing to replay: the job moved no data and opened no files")
    if src == "dxt" and scale < 1:
        plan = scale_plan(plan, scale)
        plan.meta["scale"] = scale
    if np and np < plan.nranks:
        plan = fold(plan, np)
    return plan


def _nranks(profile: JobProfile, source: str) -> int:
    n = profile.job.nprocs
    if source == "ior":
        n = max(n, profile.run.tasks or 0)
    for trace in usable_traces(profile).values():
        n = max(n, int(numpy.max(trace.rank)) + 1)
    return max(n, 1)
