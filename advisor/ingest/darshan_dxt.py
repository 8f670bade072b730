"""DXT_POSIX / DXT_MPIIO traces -> DxtTrace numpy arrays.

libdarshan-util returns each DXT file record as one buffer: the record header
followed by its write segments, then its read segments (struct segment_info).
Each buffer becomes one structured numpy array with np.frombuffer, so a million
segments cost a few hundred milliseconds and ~45 bytes each, instead of the one
Python dict per segment of pydarshan's DXT reader.
"""

from __future__ import annotations

import numpy as np

from advisor.ingest.darshan_lib import DarshanLog, ModuleUnreadable, text
from advisor.profile import DXT_READ, DXT_WRITE, DxtTrace

SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])


def read_dxt(log: DarshanLog, module: str, idx: int, *, partial: bool) -> tuple[DxtTrace, int]:
    """The trace of one DXT module and its number of file records.

    A module libdarshan-util refuses (e.g. a DXT version from a newer Darshan)
    gives an unreadable trace whose note says why, never an empty one.
    """
    ffi = log.ffi
    header = ffi.sizeof("struct dxt_file_record")
    if SEGMENT.itemsize != ffi.sizeof("struct segment_info"):
        return DxtTrace.empty(module, "segment layout of this libdarshan-util is not understood",
                              readable=False), 0
    chunks, ids, ranks, writes, reads, hosts = [], [], [], [], [], {}
    try:
        for ptr in log.records(idx):
            rec = ffi.cast("struct dxt_file_record *", ptr)
            nw, nr = max(int(rec.write_count), 0), max(int(rec.read_count), 0)
            data = ffi.buffer(ffi.cast("char *", ptr) + header, SEGMENT.itemsize * (nw + nr))
            chunks.append(np.frombuffer(data, dtype=SEGMENT).copy())
            ids.append(int(rec.base_rec.id))
            ranks.append(int(rec.base_rec.rank))
            writes.append(nw)
            reads.append(nr)
            hosts.setdefault(int(rec.base_rec.rank), text(ffi, rec.hostname))
    except ModuleUnreadable as exc:
        return DxtTrace.empty(module, f"trace data unreadable: {exc}", readable=False), 0
    note = ("partial: Darshan's DXT buffer filled up, later operations were not traced"
            if partial else "")
    trace = _trace(module, chunks, ids, ranks, writes, reads, note)
    trace.hostnames = hosts
    return trace, len(ids)


def _trace(module: str, chunks, ids, ranks, writes, reads, note: str) -> DxtTrace:
    """Concatenate per-record segments into columns sorted by rank, then start time."""
    if not chunks:
        return DxtTrace.empty(module, note)
    seg = np.concatenate(chunks)
    nw, nr = np.array(writes, np.int64), np.array(reads, np.int64)
    per_record = nw + nr
    # Within a record the writes come first, then the reads.
    blocks = np.column_stack([nw, nr]).ravel()
    op = np.repeat(np.tile(np.array([DXT_WRITE, DXT_READ], np.int8), len(ids)), blocks)
    rank = np.repeat(np.array(ranks, np.int32), per_record)
    record_id = np.repeat(np.array(ids, np.uint64), per_record)
    order = np.lexsort((seg["start"], rank))
    return DxtTrace(
        module=module,
        rank=rank[order],
        record_id=record_id[order],
        op=op[order],
        offset=seg["offset"][order],
        length=seg["length"][order],
        start=seg["start"][order],
        end=seg["end"][order],
        note=note,
    )
