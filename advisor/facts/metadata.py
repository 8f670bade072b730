"""Metadata: time in open/stat/seek/sync, the slowest rank's metadata time, files per rank, fsync."""

from __future__ import annotations

import numpy as np

from advisor import arrays
from advisor.facts import FactContext, fact, param
from advisor.facts._darshan import col, data_files, data_mask, nprocs, records
from advisor.facts.sanity import rank_bound
from advisor.profile import shared_mask


META_RANK = param("meta_rank_seconds", 30.0, "metadata seconds above which a rank counts as slow", kind="seconds")
WAIT_OP = param("meta_wait_op_s", 100.0,
                "a file whose metadata calls took longer than this each on average (Lustre's RPC timeout, "
                "obd_timeout) waited for something other than a metadata server at work: a named pipe's other "
                "end, a lock, a server in recovery", kind="seconds")
META_OPS = ("OPENS", "STATS", "SEEKS", "FSYNCS", "FDSYNCS")


def _waited(ctx: FactContext, rec) -> np.ndarray:
    """POSIX records whose metadata calls each lasted longer than meta_wait_op_s on average: an open of a
    named pipe returns when its other end opens it (a COMPSs worker's pipes: 1,462 s in 2-3 opens)."""
    ops = sum(col(rec, name) for name in META_OPS)
    return col(rec, "F_META_TIME") > ctx.param(WAIT_OP) * np.maximum(ops, 1)


@fact("meta_wait_time_s", "seconds", "Metadata seconds per process of calls that waited rather than worked "
      "(files whose metadata calls averaged over meta_wait_op_s): part of meta_time_s, in proportion to the "
      "summed times.", label="metadata time spent waiting per process")
def meta_wait_time_s(ctx: FactContext) -> float:
    rec = records(ctx, "POSIX")
    meta = col(rec, "F_META_TIME")
    stdio = ctx.profile.records.get("STDIO")
    total = float(meta.sum()) + (float(col(stdio, "F_META_TIME").sum()) if stdio is not None else 0.0)
    waited = float(meta[_waited(ctx, rec)].sum())
    return ctx.get("meta_time_s") * waited / total if total > 0 else 0.0


@fact("meta_work_time_s", "seconds", "Metadata seconds per process the file system worked for: meta_time_s "
      "less meta_wait_time_s.", label="metadata time per process (not waiting)")
def meta_work_time_s(ctx: FactContext) -> float:
    return max(0.0, ctx.get("meta_time_s") - ctx.get("meta_wait_time_s"))


@fact("meta_share", "fraction", "Share of the run time a process spent in metadata operations on average "
      "(meta_work_time_s: not the calls that waited).",
      label="share of the run in metadata")
def meta_share(ctx: FactContext) -> float:
    return ctx.get("meta_work_time_s") / ctx.get("runtime_s")


@fact("meta_io_share", "fraction", "Share of the I/O time below the application's libraries (POSIX + STDIO: "
      "read, write and metadata) that went to metadata operations.", label="share of the I/O time in metadata")
def meta_io_share(ctx: FactContext) -> float:
    base = ctx.get("meta_time_s") + ctx.get("read_time_s") + ctx.get("write_time_s")
    return ctx.get("meta_work_time_s") / base if base > 0 else 0.0


def _rank_meta(ctx: FactContext) -> np.ndarray:
    rec = records(ctx, "POSIX")
    own = rec.ranks >= 0
    n = max(nprocs(ctx), int(rec.ranks.max()) + 1 if len(rec) else 0)
    meta = np.where(_waited(ctx, rec), 0.0, col(rec, "F_META_TIME"))  # waits are not metadata work
    per_rank = np.bincount(rec.ranks[own], weights=meta[own], minlength=n)
    shared = rec.ranks == -1
    # overlapping calls (threads) sum to more than a rank has: bound each rank by its files' lives
    return np.minimum(per_rank + meta[shared].sum() / n, rank_bound(ctx, "POSIX", n))


@fact("max_rank_meta_time_s", "seconds", "Metadata seconds of the rank that spent the most in metadata.",
      label="most metadata time of a rank")
def max_rank_meta_time_s(ctx: FactContext) -> float:
    return float(_rank_meta(ctx).max(initial=0.0))


@fact("slow_meta_ranks", "index", "Ranks whose metadata time exceeds meta_rank_seconds (30 s).",
      label="ranks slow in metadata")
def slow_meta_ranks(ctx: FactContext) -> list[int]:
    per_rank = _rank_meta(ctx)
    limit = ctx.param(META_RANK)
    return [int(r) for r in np.flatnonzero(per_rank > limit)]


@fact("own_file_meta_share", "fraction", "Share of the POSIX metadata time spent on files a single rank "
      "opened (file per process); the rest went to shared files.", label="metadata time on per-process files")
def own_file_meta_share(ctx: FactContext) -> float:
    rec = records(ctx, "POSIX")
    meta = col(rec, "F_META_TIME")
    total = float(meta.sum())
    return float(meta[~shared_mask(rec)].sum()) / total if total > 0 else 0.0


@fact("posix_opens", "ops", "POSIX open calls, all ranks.", label="POSIX opens")
def posix_opens(ctx: FactContext) -> int:
    return int(col(records(ctx, "POSIX"), "OPENS").sum())


@fact("files_per_rank", "count", "Mean number of files each active rank opened on its own (not shared).",
      label="files per rank")
def files_per_rank(ctx: FactContext) -> float:
    rec = records(ctx, "POSIX")
    own = (rec.ranks >= 0) & ~shared_mask(rec) & data_mask(ctx, rec)
    if not own.any():
        return 0.0
    ranks = arrays.unique(rec.ranks[own])
    return float(own.sum()) / len(ranks)


@fact("small_file_count", "count", "Files (not shared) smaller than small_request_bytes, data or empty.",
      label="small files")
def small_file_count(ctx: FactContext) -> int:
    limit = ctx.param("small_request_bytes")
    return sum(1 for f in data_files(ctx) if not f.shared and f.ranks <= 1
               and _size(f) < limit)


@fact("empty_file_count", "count", "Files (not shared) the job opened and moved no data in: every call "
      "on them was metadata (create, open, stat, close, remove).", label="files without data")
def empty_file_count(ctx: FactContext) -> int:
    return sum(1 for f in data_files(ctx) if not f.shared and f.ranks <= 1 and _size(f) == 0)


def _size(f) -> int:
    s = f.by_module.get("POSIX") or f.stats
    return max(s.bytes_written, s.bytes_read)


@fact("small_files", "path", "The small files (paths).", label="small files")
def small_files(ctx: FactContext) -> list[str]:
    limit = ctx.param("small_request_bytes")
    return [f.path for f in data_files(ctx) if not f.shared and _size(f) < limit]


def _syncs(rec) -> np.ndarray:
    """fsync + fdatasync calls of each POSIX record."""
    return col(rec, "FSYNCS") + col(rec, "FDSYNCS")


@fact("fsync_count", "ops", "fsync + fdatasync calls, all ranks.", label="fsync calls")
def fsync_count(ctx: FactContext) -> int:
    rec = records(ctx, "POSIX")
    return int(_syncs(rec).sum())


def _fsync_heavy(ctx: FactContext) -> np.ndarray:
    rec = records(ctx, "POSIX")
    syncs = _syncs(rec)
    writes = col(rec, "WRITES")
    return (writes >= 8) & (syncs >= 0.5 * writes)


@fact("fsync_per_write", "count", "fsync calls per write on the files that sync after (almost) every write.",
      label="fsyncs per write")
def fsync_per_write(ctx: FactContext) -> float:
    rec = records(ctx, "POSIX")
    heavy = _fsync_heavy(ctx)
    writes = col(rec, "WRITES")[heavy].sum()
    return float(_syncs(rec)[heavy].sum() / writes) if writes else 0.0


@fact("fsync_heavy_writes", "ops", "Writes to files synced after (almost) every write.",
      label="writes to files synced each write")
def fsync_heavy_writes(ctx: FactContext) -> int:
    return int(col(records(ctx, "POSIX"), "WRITES")[_fsync_heavy(ctx)].sum())


@fact("fsync_cost_s", "seconds", "Seconds per process of write time on files synced after every write (mostly "
      "the syncs).", label="time syncing per process")
def fsync_cost_s(ctx: FactContext) -> float:
    rec = records(ctx, "POSIX")
    # Darshan counts fsync time as write time; with a sync per write nearly all of it is the syncs
    return float(col(rec, "F_WRITE_TIME")[_fsync_heavy(ctx)].sum()) * 0.9 / nprocs(ctx)


@fact("fsync_files", "path", "Files synced after (almost) every write.", label="files synced after every write")
def fsync_files(ctx: FactContext) -> list[str]:
    rec = records(ctx, "POSIX")
    from advisor.facts._darshan import top_files

    return top_files(ctx, rec, col(rec, "WRITES") * _fsync_heavy(ctx))


def _sync_seconds(ctx: FactContext) -> tuple[float, float, list[str]]:
    """(seconds in fsync/fdatasync, write seconds, files) summed over the files that sync. Darshan (and
    our Recorder reader, as Darshan does) adds a sync's time to the file's write time, and DXT times each
    write alone: what the writes' own durations leave of the write time is the syncs'."""
    from advisor.facts._darshan import dxt, top_files
    from advisor.profile import DXT_WRITE

    rec = records(ctx, "POSIX")
    syncs = _syncs(rec)
    trace = dxt(ctx)
    synced = np.unique(rec.ids[syncs > 0])
    if not len(synced):
        return 0.0, 0.0, []
    at = np.searchsorted(synced, rec.ids).clip(max=len(synced) - 1)
    on = synced[at] == rec.ids
    write_s = np.bincount(at[on], weights=col(rec, "F_WRITE_TIME")[on], minlength=len(synced))
    writes = (trace.op == DXT_WRITE) & np.isin(trace.record_id, synced)
    where = np.searchsorted(synced, trace.record_id[writes])
    dxt_s = np.bincount(where, weights=(trace.end - trace.start)[writes], minlength=len(synced))
    # only files whose every write DXT timed (a trace filtered to some files would make all their
    # write time look like syncs)
    seen = np.bincount(where, minlength=len(synced)) >= np.bincount(at[on], weights=col(rec, "WRITES")[on],
                                                                     minlength=len(synced))
    write_s = np.where(seen, write_s, 0.0)
    sync_s = np.where(seen, write_s - dxt_s, 0.0).clip(min=0)
    weight = np.zeros(len(rec))
    weight[on] = sync_s[at[on]]
    return float(sync_s.sum()), float(write_s.sum()), top_files(ctx, rec, weight)


@fact("sync_time_s", "seconds", "Seconds per process in fsync/fdatasync calls: on the files that sync, the write "
      "time less the writes' own durations (DXT; Darshan counts a sync's time as write time).",
      label="time in fsync per process")
def sync_time_s(ctx: FactContext) -> float:
    return ctx.memo("metadata.syncs", lambda: _sync_seconds(ctx))[0] / nprocs(ctx)


@fact("sync_share_of_write_time", "fraction", "Share of the write time of the files that sync spent in the "
      "syncs themselves (DXT).", label="share of their write time in fsync")
def sync_share_of_write_time(ctx: FactContext) -> float:
    sync_s, write_s, _ = ctx.memo("metadata.syncs", lambda: _sync_seconds(ctx))
    return sync_s / write_s if write_s else 0.0


@fact("synced_files", "path", "Files whose syncs took the most time.", label="files synced")
def synced_files(ctx: FactContext) -> list[str]:
    return ctx.memo("metadata.syncs", lambda: _sync_seconds(ctx))[2]


@fact("writes_per_sync", "count", "Writes per fsync/fdatasync call on the files that sync.",
      label="writes per sync")
def writes_per_sync(ctx: FactContext) -> float:
    rec = records(ctx, "POSIX")
    syncs = _syncs(rec)
    return float(col(rec, "WRITES")[syncs > 0].sum() / syncs.sum()) if syncs.sum() else 0.0
