"""Access pattern: random (non-sequential) requests, misalignment, redundant traffic."""

from __future__ import annotations

import numpy as np

from advisor.facts import FactContext, Missing, fact
from advisor.facts._darshan import col, data_records, data_summary, dxt, nprocs, summary, top_files
from advisor.profile import DXT_READ, DXT_WRITE, shared_mask

RANDOM_PENALTY = 0.5  # share of a random request's time a sequential stream would save (read-ahead, seeks)
MISALIGNED_PENALTY = 0.3  # share of a misaligned request's time spent on the extra stripe/page/lock


def _posix(ctx: FactContext):
    """The POSIX totals of the job's data files (imports and libraries are not its access pattern)."""
    s = data_summary(ctx, "POSIX")
    if s is None:
        raise Missing("no POSIX records in the log")
    return s


for _op, _ops, _seq, _time in (("read", "reads", "seq_read_frac", "read_time"),
                               ("write", "writes", "seq_write_frac", "write_time")):
    def _make(op=_op, ops=_ops, seq=_seq, tcol=_time):
        @fact(f"random_{op}_count", "ops", f"POSIX {op}s not at a higher offset than the previous one, at most "
              f"the {op}s of one pass over each rank's extent of its files (first_pass_{op}_share): a {op} of "
              f"the same bytes again is a repeat, not a seek elsewhere.", label=f"random {op}s")
        def count(ctx: FactContext) -> int:
            s = _posix(ctx)
            frac = getattr(s, seq)
            n = getattr(s, ops)
            return int(round(min(n * (1 - frac), n * ctx.get(f"first_pass_{op}_share")))) if frac is not None else 0

        @fact(f"random_{op}_share", "fraction", f"Share of POSIX {op}s that are random (not sequential).",
              label=f"share of {op}s that are random")
        def share(ctx: FactContext) -> float:
            n = getattr(_posix(ctx), ops)
            return ctx.get(f"random_{op}_count") / n if n else 0.0

        @fact(f"random_{op}_cost_s", "seconds", f"Seconds per process random {op}s lose against a sequential stream.",
              label=f"time random {op}s lose per process")
        def cost(ctx: FactContext) -> float:
            return getattr(_posix(ctx), tcol) / nprocs(ctx) * ctx.get(f"random_{op}_share") * RANDOM_PENALTY

        for fn in (count, share, cost):
            fn.__name__ = f"{fn.__name__}_{op}"
    _make()


def _first_pass(ctx: FactContext, op: str) -> float:
    """Share of the POSIX `op` calls of the job's data files that one pass over each rank's extent of a
    file needs: a record moving its bytes k times over holds 1/k of its calls in one pass (a shared
    record reduced over the ranks: each of them may move the whole extent once)."""
    b_col, m_col, n_col = (("BYTES_READ", "MAX_BYTE_READ", "READS") if op == "read"
                           else ("BYTES_WRITTEN", "MAX_BYTE_WRITTEN", "WRITES"))
    rec = _posix_records(ctx)
    calls, moved = col(rec, n_col), col(rec, b_col)
    extent = (col(rec, m_col) + 1) * np.where(rec.ranks < 0, nprocs(ctx), 1)
    once = np.divide(np.minimum(extent, moved), moved, out=np.ones_like(moved), where=moved > 0)
    return float((calls * once).sum() / calls.sum()) if calls.sum() > 0 else 1.0


def _posix_records(ctx: FactContext):
    _posix(ctx)  # Missing when the log has no POSIX data records
    return data_records(ctx, "POSIX")


for _op in ("read", "write"):
    def _make_first_pass(op=_op):
        @fact(f"first_pass_{op}_share", "fraction", f"Share of the POSIX {op}s that one pass over each rank's "
              f"extent of its files needs (the others move the same bytes again; Darshan's MAX_BYTE_{op.upper()} "
              f"bounds the extent).", label=f"share of {op}s in a first pass over the files")
        def share(ctx: FactContext) -> float:
            return ctx.memo(f"first_pass.{op}", lambda: _first_pass(ctx, op))

        share.__name__ = f"first_pass_{op}_share"
    _make_first_pass()


@fact("random_files", "path", "Files with the most non-sequential POSIX requests.",
      label="files with the most random requests")
def random_files(ctx: FactContext) -> list[str]:
    rec = data_records(ctx, "POSIX")
    rand = (col(rec, "READS") - col(rec, "SEQ_READS")).clip(min=0) + \
        (col(rec, "WRITES") - col(rec, "SEQ_WRITES")).clip(min=0)
    return top_files(ctx, rec, rand)


@fact("file_misaligned_share", "fraction", "Share of POSIX requests not aligned to the file alignment.",
      label="requests misaligned in the file")
def file_misaligned_share(ctx: FactContext) -> float:
    _assumed(ctx, "POSIX_FILE_ALIGNMENT")
    return _request_share(ctx, "file_not_aligned", "file alignment")


def _assumed(ctx: FactContext, counter: str) -> None:
    """An input that counted `counter` against a value it assumed (a Recorder trace names no file
    system, so its file alignment) says so, as the facts' own assumptions do."""
    assumed = ctx.profile.extras.get("assumed", {}).get(counter)
    if assumed:
        ctx.assume(assumed["value"], how=assumed["how"])


@fact("mem_misaligned_share", "fraction", "Share of POSIX requests on buffers not aligned in memory.",
      label="requests misaligned in memory")
def mem_misaligned_share(ctx: FactContext) -> float:
    return _request_share(ctx, "mem_not_aligned", "memory alignment")


def _request_share(ctx: FactContext, counted: str, what: str) -> float:
    """The POSIX summary's `counted` requests as a share of all reads and writes."""
    s = _posix(ctx)
    count = getattr(s, counted)
    if count is None:
        raise Missing(f"the log does not record {what}")
    n = s.reads + s.writes
    return min(count / n, 1.0) if n else 0.0


@fact("file_alignment", "bytes", "The file alignment Darshan checked requests against (st_blksize or stripe size).",
      label="file alignment")
def file_alignment(ctx: FactContext) -> int:
    _assumed(ctx, "POSIX_FILE_ALIGNMENT")
    a = _posix(ctx).file_alignment
    if not a:
        raise Missing("the log does not record the file alignment")
    return int(a)


def _mean_request(ctx: FactContext) -> float:
    """Mean POSIX request size of the job's data files (0 without requests)."""
    s = _posix(ctx)
    ops = s.reads + s.writes
    return (s.bytes_read + s.bytes_written) / ops if ops else 0.0


@fact("requests_below_alignment", "flag", "Whether the job's mean POSIX request is smaller than the file "
      "alignment: no offset makes such a request a whole block or stripe (a 512-byte write aligned to 4 KiB "
      "still writes part of a block), so the fix is fewer, larger requests, not other offsets.",
      label="requests smaller than the alignment")
def requests_below_alignment(ctx: FactContext) -> bool:
    mean = _mean_request(ctx)
    return 0 < mean < ctx.get("file_alignment")


@fact("misaligned_cost_s", "seconds", "Seconds per process misaligned file requests lose (estimate): a misaligned "
      "request touches one more block or stripe than it needs, so it loses that block's share of its time "
      "(alignment / mean request size), at most MISALIGNED_PENALTY (30 %); a request smaller than the "
      "alignment crosses a boundary only in the share its size is of it.",
      label="time misalignment loses per process")
def misaligned_cost_s(ctx: FactContext) -> float:
    s = _posix(ctx)
    mean_size = _mean_request(ctx)
    alignment = ctx.get("file_alignment")
    if mean_size <= 0:
        penalty = MISALIGNED_PENALTY
    elif mean_size < alignment:  # 3.9 KiB reads off a 4 MiB grid cross it once in ~1,000
        penalty = MISALIGNED_PENALTY * mean_size / alignment
    else:  # 128 MiB requests off a 1 MiB boundary (example.darshan) touch 129 stripes for 128: under 1 %
        penalty = min(MISALIGNED_PENALTY, alignment / mean_size)
    return (s.read_time + s.write_time) / nprocs(ctx) * ctx.get("file_misaligned_share") * penalty


@fact("misaligned_files", "path", "Files with the most misaligned requests.",
      label="files with the most misaligned requests")
def misaligned_files(ctx: FactContext) -> list[str]:
    rec = data_records(ctx, "POSIX")
    return top_files(ctx, rec, col(rec, "FILE_NOT_ALIGNED"))


REDUNDANT_MODULES = ("POSIX", "STDIO")  # both carry per-file bytes and the highest offset moved


def _redundant_records(ctx: FactContext) -> list:
    """The data-file records of the modules that reach the file system: an fread is a read of the
    file as much as a read() is (a job rereading its inputs through STDIO has no POSIX reads of them)."""
    found, reasons = [], []
    for module in REDUNDANT_MODULES:
        try:
            found.append(data_records(ctx, module))
        except Missing as exc:
            reasons.append(str(exc))
    if not found:
        raise Missing("; ".join(reasons))
    return found


def _redundant(ctx: FactContext, op: str) -> tuple[float, float, float, list[str], float, bool]:
    """(bytes moved, distinct bytes of the file extent, seconds per process, files, share of the bytes
    moved again that another rank had moved, whether DXT told that share) for `op`, per file over POSIX
    and STDIO (a file both opened is one extent)."""
    b_col, m_col, t_col = (("BYTES_READ", "MAX_BYTE_READ", "F_READ_TIME") if op == "read"
                           else ("BYTES_WRITTEN", "MAX_BYTE_WRITTEN", "F_WRITE_TIME"))
    recs = _redundant_records(ctx)
    ids = np.concatenate([rec.ids for rec in recs])
    uniq, inv = np.unique(ids, return_inverse=True)
    moved = np.bincount(inv, weights=np.concatenate([col(rec, b_col) for rec in recs]), minlength=len(uniq))
    extent = np.zeros(len(uniq))
    np.maximum.at(extent, inv, np.concatenate([col(rec, m_col) for rec in recs]) + 1)
    seconds = np.bincount(inv, weights=np.concatenate([col(rec, t_col) for rec in recs]), minlength=len(uniq))
    extra = (moved - extent).clip(min=0)
    waste = np.divide(extra, moved, out=np.zeros_like(moved), where=moved > 0) * seconds
    files = [ctx.profile.name_of(uniq[i]) for i in np.argsort(-extra) if extra[i] > 0]
    by_others = _read_by_other_ranks(ctx, op, uniq)
    traced = by_others is not None
    if not traced:  # no DXT: a file several ranks opened is one they may share a read of
        shared = np.zeros(len(uniq), bool)
        shared[inv[np.concatenate([shared_mask(rec) for rec in recs])]] = True
        again = float(extra.sum())
        by_others = float(extra[shared].sum()) / again if again else 0.0
    return (float(moved.sum()), float(np.minimum(extent, moved).sum()), float(waste.sum()) / nprocs(ctx), files,
            by_others, traced)


def _read_by_other_ranks(ctx: FactContext, op: str, ids: np.ndarray) -> float | None:
    """From DXT, the share of the bytes moved again (over the data files `ids`) that another rank had
    moved (the ranks' extents of a file overlap), rather than the same rank again: IOR -i 3 has each of
    its ranks read its own block of the shared file three times, which no MPI_Bcast shares. None
    without a complete DXT trace."""
    try:
        trace = dxt(ctx)
    except Missing:
        return None
    keep = (trace.op == (DXT_READ if op == "read" else DXT_WRITE)) & np.isin(trace.record_id, ids) & (trace.length > 0)
    if not keep.any():
        return None
    file, rank = trace.record_id[keep], trace.rank[keep]
    start, end = trace.offset[keep], trace.offset[keep] + trace.length[keep]
    per_rank = _union_bytes(np.unique(np.stack([file, rank.astype(np.uint64)]), axis=1, return_inverse=True)[1].ravel(),
                            start, end)
    per_file = _union_bytes(np.unique(file, return_inverse=True)[1].ravel(), start, end)
    cross, same = per_rank - per_file, float(trace.length[keep].sum()) - per_rank
    return cross / (cross + same) if cross + same > 0 else 0.0


def _union_bytes(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> float:
    """Bytes covered by the extents [start, end), the union taken within each group, summed: a sweep
    over their edges (+1 at a start, -1 at an end), ordered by group then offset; a group's edges sum
    to zero, so one running depth serves every group, and what lies between two edges of a group is
    covered when the depth after the first is positive (one pass, however many ranks and files)."""
    groups = np.concatenate([group, group])
    where = np.concatenate([start, end])
    step = np.concatenate([np.ones(len(start), np.int64), -np.ones(len(end), np.int64)])
    order = np.lexsort((where, groups))
    groups, where, depth = groups[order], where[order], np.cumsum(step[order])
    span = (where[1:] - where[:-1]).astype(np.float64)
    return float(span[(depth[:-1] > 0) & (groups[1:] == groups[:-1])].sum())


for _op, _done in (("read", "read"), ("write", "written")):
    def _make_redundant(op=_op, done=_done):
        @fact(f"redundant_{op}_bytes", "bytes", f"Bytes {done} beyond each file's extent (the same bytes {done} "
              f"again), POSIX and STDIO.", label=f"bytes {done} again")
        def extra(ctx: FactContext) -> int:
            moved, distinct, *_ = ctx.memo(f"redundant.{op}", lambda: _redundant(ctx, op))
            return int(moved - distinct)

        @fact(f"redundant_{op}_factor", "ratio", f"Bytes {done} / distinct bytes of the files' extents.",
              label=f"bytes {done} / distinct bytes")
        def factor(ctx: FactContext) -> float:
            moved, distinct, *_ = ctx.memo(f"redundant.{op}", lambda: _redundant(ctx, op))
            return moved / distinct if distinct else 0.0

        @fact(f"redundant_{op}_cost_s", "seconds", f"Seconds per process spent on repeated {op}s.",
              label=f"time on repeated {op}s per process")
        def cost(ctx: FactContext) -> float:
            return ctx.memo(f"redundant.{op}", lambda: _redundant(ctx, op))[2]

        @fact(f"redundant_{op}_files", "path", f"Files whose bytes were {done} more than once.",
              label=f"files {done} more than once")
        def files(ctx: FactContext) -> list[str]:
            return ctx.memo(f"redundant.{op}", lambda: _redundant(ctx, op))[3]

        @fact(f"redundant_{op}_shared_share", "fraction", f"Share of the bytes {done} again that another rank "
              f"had {done} (DXT: the ranks' extents of each file compared); without DXT, that are of files "
              f"several ranks opened (the rest: {done} again by the same rank).",
              label=f"share of the bytes {done} again that another rank had {done}")
        def shared_share(ctx: FactContext) -> float:
            return ctx.memo(f"redundant.{op}", lambda: _redundant(ctx, op))[4]

        @fact(f"redundant_{op}_shared_traced", "flag", f"Whether DXT told which rank had {done} the bytes "
              f"{done} again (without it, a shared file's record cannot tell a rank {done} its own block "
              f"again from another rank's bytes).", label=f"DXT tells which rank had {done} the bytes first")
        def shared_traced(ctx: FactContext) -> bool:
            return ctx.memo(f"redundant.{op}", lambda: _redundant(ctx, op))[5]

        for fn in (extra, factor, cost, files, shared_share, shared_traced):
            fn.__name__ = f"{fn.__name__}_{op}"
    _make_redundant()


@fact("read_share_ops", "fraction", "Share of POSIX + STDIO requests that are reads.",
      label="share of requests that are reads")
def read_share_ops(ctx: FactContext) -> float:
    mods = summary(ctx).modules
    reads = sum(mods[m].reads for m in ("POSIX", "STDIO") if m in mods)
    writes = sum(mods[m].writes for m in ("POSIX", "STDIO") if m in mods)
    return reads / (reads + writes) if reads + writes else 0.0


@fact("read_share_bytes", "fraction", "Share of POSIX + STDIO bytes that are read.",
      label="share of bytes that are read")
def read_share_bytes(ctx: FactContext) -> float:
    r, w = ctx.get("bytes_read"), ctx.get("bytes_written")
    return r / (r + w) if r + w else 0.0


@fact("rw_switches", "count", "Times a file went from reading to writing or back (POSIX, all files).",
      label="read/write switches")
def rw_switches(ctx: FactContext) -> int:
    return int(_posix(ctx).rw_switches)
