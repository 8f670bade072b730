"""STDIO requests: how large the fread/fwrite calls were, and flushes that defeat the buffer.

A job whose data goes only through the C standard I/O library has no POSIX record at all
(glibc's buffered write()/read() are not interposed), so its request sizes come from the
STDIO counters: bytes over calls per file. Each call below the buffer size only copies into
the stream's buffer (st_blksize, 4 KiB on most file systems, unless setvbuf gave a larger
one); the file system sees one request per buffer, so small calls cost library time and
many small file-system requests. An fflush per few calls empties the buffer before it fills.
"""

from __future__ import annotations

import numpy as np

from advisor.facts import FactContext, Missing, fact, param
from advisor.facts._darshan import col, data_mask, records, top_files
from advisor.facts.requests import SMALL, coalescing_saving
from advisor.facts.sanity import bounded

STDIO_BUFFER = param("stdio_buffer_bytes", 4096, "a STDIO stream's default buffer (glibc: st_blksize, bytes)",
                     stands_for="a STDIO stream buffer of 4 KiB (glibc's default)", kind="bytes")
OPS = {"read": ("READS", "BYTES_READ"), "write": ("WRITES", "BYTES_WRITTEN")}


def _data(ctx: FactContext):
    rec = records(ctx, "STDIO")
    keep = data_mask(ctx, rec)
    if not keep.any():
        raise Missing("STDIO carried only the standard streams")
    return rec, keep


def _register(op: str) -> None:
    calls_col, bytes_col = OPS[op]

    @fact(f"stdio_{op}_calls", "ops", f"STDIO {op} calls on data files (not the standard streams).",
          label=f"STDIO {op} calls")
    def calls(ctx: FactContext) -> int:
        rec, keep = _data(ctx)
        return int(col(rec, calls_col)[keep].sum())

    @fact(f"stdio_{op}_mean_size", "bytes", f"Mean STDIO {op} call size on data files (bytes / calls).",
          label=f"mean STDIO {op} size")
    def mean_size(ctx: FactContext) -> float:
        rec, keep = _data(ctx)
        n = col(rec, calls_col)[keep].sum()
        return float(col(rec, bytes_col)[keep].sum() / n) if n else 0.0

    @fact(f"stdio_{op}_request_size", "bytes", f"Bytes per file-system request of STDIO {op}s: the stream "
          "buffer for calls smaller than it (they are copied into it), else the mean call.",
          label=f"STDIO {op} request size")
    def request_size(ctx: FactContext) -> float:
        return max(ctx.get(f"stdio_{op}_mean_size"), float(ctx.get("stdio_buffer_bytes")))

    @fact(f"stdio_small_{op}_cost_s", "seconds", f"Seconds per process STDIO {op}s lose against rpc_size "
          f"requests: their bounded {op} time x the share that merging their file-system requests saves "
          "(the same latency model as POSIX requests); 0 when those requests are not small.",
          label=f"time small STDIO {op}s lose per process")
    def small_cost(ctx: FactContext) -> float:
        request = ctx.get(f"stdio_{op}_request_size")
        if ctx.get(f"stdio_{op}_mean_size") <= 0 or request >= ctx.param(SMALL):
            return 0.0
        rec, keep = _data(ctx)
        return bounded(ctx, "STDIO", keep).consistent(op) * coalescing_saving(ctx, request)

    for fn in (calls, mean_size, request_size, small_cost):
        fn.__name__ = f"{fn.__name__}_{op}"


for _op in OPS:
    _register(_op)


@fact("stdio_small_files", "path", "Data files with the most STDIO calls.", label="files with the most STDIO calls")
def stdio_small_files(ctx: FactContext) -> list[str]:
    rec, keep = _data(ctx)
    return top_files(ctx, rec, (col(rec, "READS") + col(rec, "WRITES")) * keep)


@fact("stdio_flushes", "ops", "fflush calls on STDIO data files.", label="fflush calls")
def stdio_flushes(ctx: FactContext) -> int:
    rec, keep = _data(ctx)
    return int(col(rec, "FLUSHES")[keep].sum())


@fact("stdio_bytes_per_flush", "bytes", "Bytes written per fflush on STDIO data files.", label="bytes per fflush")
def stdio_bytes_per_flush(ctx: FactContext) -> float:
    rec, keep = _data(ctx)
    flushes = col(rec, "FLUSHES")[keep].sum()
    if not flushes:
        raise Missing("no fflush calls")
    return float(col(rec, "BYTES_WRITTEN")[keep].sum() / flushes)


@fact("stdio_buffer_bytes", "bytes", "The STDIO buffer size assumed (stdio_buffer_bytes: glibc's default).",
      label="STDIO buffer assumed")
def stdio_buffer_bytes(ctx: FactContext) -> int:
    return int(ctx.param(STDIO_BUFFER))


@fact("stdio_flush_cost_s", "seconds", "Seconds per process in fflush on STDIO data files: the metadata time "
      "(bounded) in proportion of flushes among open/seek/flush calls.", label="time in fflush per process")
def stdio_flush_cost_s(ctx: FactContext) -> float:
    rec, keep = _data(ctx)
    flushes = col(rec, "FLUSHES")[keep].sum()
    meta_calls = sum(col(rec, c)[keep].sum() for c in ("OPENS", "FDOPENS", "SEEKS", "FLUSHES"))
    if not flushes:
        return 0.0
    return bounded(ctx, "STDIO", keep).consistent("meta") * float(flushes / max(meta_calls, 1))


@fact("stdio_flush_files", "path", "STDIO data files with the most fflush calls.",
      label="files with the most fflush calls")
def stdio_flush_files(ctx: FactContext) -> list[str]:
    rec, keep = _data(ctx)
    return top_files(ctx, rec, np.where(keep, col(rec, "FLUSHES"), 0))
