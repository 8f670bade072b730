"""Request sizes: how many reads and writes were small, exactly, and what they cost.

Darshan's size histogram cannot say whether a request in the 100K-1M bin is small: the
bin includes exactly 1 MiB (1048576 bytes). The count is made exact from the DXT trace
when there is a complete one, else from the four most common access sizes of each
record (a frequent 1 MiB request size is always among them); only the part of the bin
the common sizes do not explain is counted as small.

POSIX reads of a file the application only writes through MPI-IO are ROMIO's read-modify-write
(MPI007 counts and costs them), not the application's reads: they are left out here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.facts import FactContext, Missing, fact, param
from advisor.facts._darshan import (col, data_records, dxt, mpiio_write_only_ids, not_lustre, nprocs, records,
                                     top_files)
from advisor.metrics import SIZE_BINS
from advisor.profile import DXT_READ, DXT_WRITE, ModuleRecords, shared_mask

SMALL = param("small_request_bytes", 1 << 20, "requests below this size are small (bytes)", kind="bytes")
DEFAULT_RPC_SIZE = 1 << 20  # Lustre's bulk RPC (256 pages of 4 KiB) unless brw_size and max_pages_per_rpc raise it
# A request costs a fixed latency plus its bytes at the streaming rate; merging requests saves
# only latencies. Latency x rate = 200 KiB: below it a request is mostly latency, above mostly transfer.
DEFAULT_REQUEST_LATENCY_S = 100e-6
DEFAULT_STREAM_MIB_S = 2048.0

# Darshan's size bins: counter suffix and inclusive byte range.
BINS = tuple((suffix, int(lo) + 1 if lo else 0, int(min(hi, 1 << 62)))
             for (suffix, hi), (_, lo) in zip(SIZE_BINS, [("", 0), *SIZE_BINS]))
OPS = {"read": ("READS", "SIZE_READ_", "F_READ_TIME", "BYTES_READ", DXT_READ),
       "write": ("WRITES", "SIZE_WRITE_", "F_WRITE_TIME", "BYTES_WRITTEN", DXT_WRITE)}


@dataclass
class SmallTable:
    """Per POSIX record and op: all requests, small requests, and the small requests' seconds."""

    rec: ModuleRecords
    ops: dict[str, np.ndarray]
    small: dict[str, np.ndarray]
    small_seconds: dict[str, np.ndarray]
    small_bytes: dict[str, float | None]  # exact from DXT, else None
    method: str  # "dxt" or "histogram"


def _common_sizes(rec: ModuleRecords, lo: int, hi: int, threshold: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of common access sizes in [lo, hi]: (below threshold, at or above it)."""
    below = np.zeros(len(rec))
    above = np.zeros(len(rec))
    for k in range(1, 5):
        size = col(rec, f"ACCESS{k}_ACCESS")
        count = col(rec, f"ACCESS{k}_COUNT")
        inside = (size >= lo) & (size <= hi)
        below += np.where(inside & (size < threshold), count, 0)
        above += np.where(inside & (size >= threshold), count, 0)
    return below, above


def _histogram_small(rec: ModuleRecords, threshold: int, agg: str = "") -> dict[str, np.ndarray]:
    """Small requests per record and op from the size bins (`agg`: "AGG_" for the library modules,
    whose bins count the aggregate size of one call's selection)."""
    small = {op: np.zeros(len(rec)) for op in OPS}
    for suffix, lo, hi in BINS:
        counts = {op: col(rec, spec[1] + agg + suffix) for op, spec in OPS.items()}
        if hi < threshold:
            for op in OPS:
                small[op] += counts[op]
        elif lo < threshold:  # the bin straddles the threshold
            below, above = _common_sizes(rec, lo, hi, threshold)
            both = counts["read"] + counts["write"]
            unexplained = np.maximum(both - below - above, 0)
            # When the threshold is the bin's top, the only size of the bin that is not
            # small is the top itself, which the common sizes list when it is frequent.
            fraction = 1.0 if threshold == hi else (threshold - lo) / (hi - lo + 1)
            in_bin = np.minimum(below + unexplained * fraction, both)
            share = np.divide(in_bin, both, out=np.zeros_like(both), where=both > 0)
            for op in OPS:
                small[op] += counts[op] * share
    return small


def _table(ctx: FactContext) -> SmallTable:
    rec = data_records(ctx, "POSIX")
    threshold = int(ctx.param(SMALL))
    romio_reads = np.isin(rec.ids, mpiio_write_only_ids(ctx))
    ops = {op: col(rec, spec[0]) for op, spec in OPS.items()}
    ops["read"] = np.where(romio_reads, 0.0, ops["read"])
    try:
        trace = dxt(ctx, "DXT_POSIX")
    except Missing:
        trace = None
    if trace is not None:
        return _from_dxt(rec, trace, ops, threshold, romio_reads)
    small = _histogram_small(rec, threshold)
    small["read"] = np.where(romio_reads, 0.0, small["read"])
    seconds = {}
    for op, (_n_col, _p, t_col, *_r) in OPS.items():
        frac = np.divide(small[op], ops[op], out=np.zeros(len(rec)), where=ops[op] > 0)
        seconds[op] = col(rec, t_col) * frac
    return SmallTable(rec, ops, small, seconds, {op: None for op in OPS}, "histogram")


def segment_rows(rec: ModuleRecords, trace) -> np.ndarray:
    """Row of `rec` for every DXT segment: its file on its rank, else the file's shared row."""
    if not len(trace.rank):
        return np.empty(0, np.int64)
    rows_of = {(int(i), int(r)): n for n, (i, r) in enumerate(zip(rec.ids, rec.ranks))}
    # One int64 key per (file, rank) pair: np.unique(axis=1) over the two columns sorts
    # structured values and took seconds for a million segments.
    files, file_index = np.unique(trace.record_id, return_inverse=True)
    ranks = trace.rank.astype(np.int64)
    low = int(ranks.min())
    span = int(ranks.max()) - low + 1
    pairs, inverse = np.unique(file_index.astype(np.int64) * span + (ranks - low), return_inverse=True)
    lookup = np.empty(len(pairs), np.int64)
    for n, pair in enumerate(pairs.tolist()):
        rid, rank = int(files[pair // span]), pair % span + low
        lookup[n] = rows_of.get((rid, rank), rows_of.get((rid, -1), -1))
    return lookup[inverse.ravel()]


def _from_dxt(rec: ModuleRecords, trace, ops, threshold: int, romio_reads: np.ndarray) -> SmallTable:
    """`romio_reads`: rows whose reads are ROMIO's read-modify-write (not counted)."""
    small, seconds, small_bytes = {}, {}, {}
    rows = segment_rows(rec, trace)
    known = rows >= 0
    for op, spec in OPS.items():
        sel = (trace.op == spec[4]) & (trace.length < threshold) & known
        if op == "read":
            sel[known] &= ~romio_reads[rows[known]]
        small[op] = np.bincount(rows[sel], minlength=len(rec)).astype(np.float64)
        seconds[op] = np.bincount(rows[sel], weights=(trace.end - trace.start)[sel], minlength=len(rec))
        small_bytes[op] = float(trace.length[sel].sum())
    return SmallTable(rec, ops, small, seconds, small_bytes, "dxt")


def table(ctx: FactContext) -> SmallTable:
    return ctx.memo("small_table", lambda: _table(ctx))


def _register(op: str) -> None:
    n_col, _p, t_col, b_col, _d = OPS[op]

    @fact(f"{op}_ops", "ops", f"POSIX {op} requests, all ranks.", label=f"POSIX {op}s")
    def ops(ctx: FactContext) -> int:
        return int(table(ctx).ops[op].sum())

    @fact(f"small_{op}_count", "ops", f"POSIX {op}s below small_request_bytes (exact: DXT or common sizes).",
          label=f"small {op}s")
    def small_count(ctx: FactContext) -> int:
        return int(round(table(ctx).small[op].sum()))

    @fact(f"small_{op}_share", "fraction", f"Share of POSIX {op}s that are small.",
          label=f"share of {op}s that are small")
    def small_share(ctx: FactContext) -> float:
        n = ctx.get(f"{op}_ops")
        return ctx.get(f"small_{op}_count") / n if n else 0.0

    @fact(f"small_{op}_time_s", "seconds", f"Seconds per process spent in small {op}s (DXT, or op-weighted).",
          label=f"time in small {op}s per process")
    def small_time(ctx: FactContext) -> float:
        return float(table(ctx).small_seconds[op].sum()) / nprocs(ctx)

    @fact(f"small_{op}_mean_size", "bytes", f"Mean size of the small {op}s (DXT, else of their records).",
          label=f"mean size of small {op}s")
    def small_mean(ctx: FactContext) -> float:
        t = table(ctx)
        n = t.small[op].sum()
        if n <= 0:
            return 0.0
        if t.small_bytes[op] is not None:
            return t.small_bytes[op] / n
        mean = np.divide(col(t.rec, b_col), t.ops[op], out=np.zeros(len(t.rec)), where=t.ops[op] > 0)
        return float(min((mean * t.small[op]).sum() / n, ctx.param(SMALL)))

    @fact(f"small_{op}_saving", "fraction", f"Share of the small {op}s' time that rpc_size requests would save: "
          "the requests' fixed latencies (each costs request_latency_s plus its bytes at stream_mib_s), less "
          "the latencies of the rpc_size requests that would carry the same bytes.",
          label=f"share of small {op} time coalescing saves")
    def small_saving(ctx: FactContext) -> float:
        return coalescing_saving(ctx, ctx.get(f"small_{op}_mean_size"))

    @fact(f"small_{op}_cost_s", "seconds", f"Seconds per process small {op}s lose against rpc_size requests.",
          label=f"time small {op}s lose per process")
    def small_cost(ctx: FactContext) -> float:
        return ctx.get(f"small_{op}_time_s") * ctx.get(f"small_{op}_saving")

    @fact(f"small_{op}_files", "path", f"Files with the most small {op}s.", label=f"files with the most small {op}s")
    def small_files(ctx: FactContext) -> list[str]:
        t = table(ctx)
        return top_files(ctx, t.rec, t.small[op])

    @fact(f"shared_{op}_ops", "ops", f"POSIX {op}s to files shared by several ranks.", label=f"{op}s to shared files")
    def shared_ops(ctx: FactContext) -> int:
        t = table(ctx)
        return int(t.ops[op][shared_mask(t.rec)].sum())

    @fact(f"small_shared_{op}_count", "ops", f"Small POSIX {op}s to files shared by several ranks.",
          label=f"small {op}s to shared files")
    def small_shared(ctx: FactContext) -> int:
        t = table(ctx)
        return int(round(t.small[op][shared_mask(t.rec)].sum()))

    @fact(f"small_shared_{op}_share", "fraction", f"Share of {op}s to shared files that are small.",
          label=f"share of shared-file {op}s that are small")
    def small_shared_share(ctx: FactContext) -> float:
        n = ctx.get(f"shared_{op}_ops")
        return ctx.get(f"small_shared_{op}_count") / n if n else 0.0

    @fact(f"small_shared_{op}_time_s", "seconds", f"Seconds per process in small {op}s to shared files.",
          label=f"time in small shared-file {op}s per process")
    def small_shared_time(ctx: FactContext) -> float:
        t = table(ctx)
        return float(t.small_seconds[op][shared_mask(t.rec)].sum()) / nprocs(ctx)

    @fact(f"small_shared_{op}_fstype", "enum", f"File system type of the shared file with the most small {op}s "
          "(lustre when Darshan recorded its layout, else from the log's mount table).", label="file system type")
    def small_shared_fstype(ctx: FactContext) -> str:
        t = table(ctx)
        weight = t.small[op] * shared_mask(t.rec)
        if not weight.any():
            raise Missing(f"no small {op}s to shared files")
        fstype = ctx.profile.fstype_of_record(t.rec.ids[int(np.argmax(weight))])
        if not fstype:
            raise Missing("the file system of the shared files is unknown (no mount table)")
        return fstype

    for fn in (ops, small_count, small_share, small_time, small_mean, small_saving, small_cost, small_files,
               shared_ops, small_shared, small_shared_share, small_shared_time, small_shared_fstype):
        fn.__name__ = f"{fn.__name__}_{op}"


for _op in OPS:
    _register(_op)


@fact("small_count_method", "enum", "How small requests were counted: 'dxt' (exact) or 'histogram'.",
      label="small requests counted from")
def small_count_method(ctx: FactContext) -> str:
    return table(ctx).method


@fact("common_access_size", "bytes", "The most frequent POSIX request size of the job.",
      label="most common request size")
def common_access_size(ctx: FactContext) -> int:
    rec = data_records(ctx, "POSIX")
    counts: dict[int, float] = {}
    for k in range(1, 5):
        for size, count in zip(col(rec, f"ACCESS{k}_ACCESS"), col(rec, f"ACCESS{k}_COUNT")):
            if count > 0:
                counts[int(size)] = counts.get(int(size), 0) + count
    if not counts:
        raise Missing("the log records no common access sizes")
    return max(counts, key=counts.get)


@fact("rpc_size", "bytes", "The file system's bulk RPC size: [system] rpc_size, else Lustre's default "
      "(1 MiB), assumed.", label="RPC size")
def rpc_size(ctx: FactContext) -> int:
    return int(_site_or_assumed(ctx, "rpc_size", DEFAULT_RPC_SIZE, "an RPC size of 1 MiB (Lustre's default)",
                                lustre=True))


@fact("request_latency_s", "seconds", "The fixed cost of one request, an RPC round trip: [system] "
      "request_latency_s, else 100 us (a Lustre RPC over a fast network), assumed.", label="latency per request")
def request_latency_s(ctx: FactContext) -> float:
    return float(_site_or_assumed(ctx, "request_latency_s", DEFAULT_REQUEST_LATENCY_S,
                                  "a latency of 100 us per request (a Lustre RPC round trip)", lustre=True))


@fact("stream_rate", "rate", "What one process moves per second in large requests: [system] stream_mib_s, else "
      "2,048 MiB/s, assumed.", label="one process's streaming rate")
def stream_rate(ctx: FactContext) -> float:
    mib_s = _site_or_assumed(ctx, "stream_mib_s", DEFAULT_STREAM_MIB_S,
                             "a process streams 2,048 MiB/s in large requests")
    return float(mib_s) * (1 << 20)


def coalescing_saving(ctx: FactContext, size: float) -> float:
    """Share of the time of `size`-byte requests that rpc_size requests carrying the same bytes
    would save: each request costs request_latency_s plus its bytes at stream_rate, and merging
    saves only the latencies."""
    if size <= 0:
        return 0.0
    latency = ctx.get("request_latency_s")
    return max(0.0, 1.0 - size / ctx.get("rpc_size")) * latency / (latency + size / ctx.get("stream_rate"))


def _site_or_assumed(ctx: FactContext, key: str, default: float, assumed: str, lustre: bool = False) -> float:
    """The site config's `[system] key`, else `default`, recorded as assumed (`assumed` says what;
    a `lustre` default says when the job ran elsewhere)."""
    value = getattr(ctx.config.system, key)
    if value:
        return value
    ctx.assume(assumed, f"[system] {key}", ran_on=not_lustre(ctx) if lustre else "")
    return default


@fact("coalesce_size", "bytes", "Transfer size to coalesce small requests into: 4 x rpc_size.",
      label="request size to coalesce into")
def coalesce_size(ctx: FactContext) -> int:
    return 4 * ctx.get("rpc_size")


@dataclass(frozen=True)
class SmallCalls:
    """Small read and write calls of an I/O library module (H5D, PNETCDF_VAR), all ranks."""

    count: float
    calls: float
    seconds: float  # their share of the module's read and write time, summed over ranks
    mean_size: float

    def share(self) -> float:
        return self.count / self.calls if self.calls else 0.0


def small_calls(ctx: FactContext, module: str) -> SmallCalls:
    """The calls of `module` whose selection is below small_request_bytes, from its size bins."""
    from advisor.metrics import SPECS, Columns

    def build() -> SmallCalls:
        rec = records(ctx, module)
        cols = Columns.of(rec, SPECS[module])
        small = _histogram_small(rec, int(ctx.param(SMALL)), "AGG_")
        count, seconds, moved = 0.0, 0.0, 0.0
        for op, calls, t, b in (("read", cols.reads, cols.read_time, cols.bytes_read),
                                ("write", cols.writes, cols.write_time, cols.bytes_written)):
            frac = np.divide(small[op], calls, out=np.zeros(len(rec)), where=calls > 0)
            count += float(small[op].sum())
            seconds += float((t * frac).sum())
            moved += float((np.minimum(np.divide(b, calls, out=np.zeros(len(rec)), where=calls > 0),
                                       ctx.param(SMALL)) * small[op]).sum())
        return SmallCalls(count, float((cols.reads + cols.writes).sum()), seconds, moved / count if count else 0.0)

    return ctx.memo(f"small_calls.{module}", build)


def register_small_calls(prefix: str, module: str, calls: str) -> None:
    """The facts `<prefix>_small_calls`, `_small_share`, `_small_mean_size`, `_small_cost_s` of a library module."""

    @fact(f"{prefix}_small_calls", "ops", f"{calls} whose selection is below small_request_bytes (size bins "
          "corrected with the common access sizes), all ranks.", label=f"small {calls}")
    def count(ctx: FactContext) -> int:
        return int(round(small_calls(ctx, module).count))

    @fact(f"{prefix}_small_share", "fraction", f"Share of the {calls} that are small.",
          label=f"share of {calls} that are small")
    def share(ctx: FactContext) -> float:
        return small_calls(ctx, module).share()

    @fact(f"{prefix}_small_mean_size", "bytes", f"Mean size of the small {calls}.",
          label=f"mean size of small {calls}")
    def mean_size(ctx: FactContext) -> float:
        return small_calls(ctx, module).mean_size

    @fact(f"{prefix}_small_cost_s", "seconds", f"Seconds per process the small {calls} lose against rpc_size "
          "requests: their share of the call time, times what merging saves (request_latency_s each).",
          label=f"time small {calls} lose per process")
    def cost(ctx: FactContext) -> float:
        small = small_calls(ctx, module)
        return small.seconds / nprocs(ctx) * coalescing_saving(ctx, small.mean_size)

    for fn in (count, share, mean_size, cost):
        fn.__name__ = f"{prefix}_{fn.__name__}"
