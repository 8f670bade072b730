"""What a replay did: per file and per rank counts, bytes and access sizes.

Each rank keeps a dense counter matrix (files x fields). Totals per file are an
MPI reduction, totals per rank a gather of one small row per rank, and the
(file, rank) pairs a gather of the rows a rank actually touched: no per-operation
data ever travels to one rank.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from replay.plan import FLAG_PAD, OP_NAMES, READ, SIZE_BIN_NAMES, WRITE, size_bins

FIELDS = ("opens", "reads", "writes", "bytes_read", "bytes_written", "fsyncs", "stats", "closes",
          "unlinks", "sends", "recvs", "bytes_sent", "bytes_received", "collective_calls",
          "pad_calls", "direct_ops", "mkdirs", "rmdirs", "renames", "links", "truncates")
F = {name: i for i, name in enumerate(FIELDS)}
NBINS = len(SIZE_BIN_NAMES)
# Column layout of the matrix: the fields, then the read and the write size histograms.
HIST_READ = len(FIELDS)
HIST_WRITE = HIST_READ + NBINS
WIDTH = HIST_WRITE + NBINS

OP_FIELD = {"open": "opens", "create": "opens", "fsync": "fsyncs", "stat": "stats",
            "close": "closes", "unlink": "unlinks", "mkdir": "mkdirs", "rmdir": "rmdirs", "rename": "renames",
            "link": "links", "truncate": "truncates"}


class Record:
    """One rank's counters for one run of one plan."""

    def __init__(self, nfiles: int):
        self.m = np.zeros((max(nfiles, 1), WIDTH), dtype=np.int64)

    def add(self, fid: int, field: str, value: int = 1) -> None:
        self.m[fid, F[field]] += value

    def add_meta(self, fid: int, opcode: int) -> None:
        self.m[fid, F[OP_FIELD[OP_NAMES[opcode]]]] += 1

    def add_sizes(self, ops: dict[str, np.ndarray]) -> None:
        """Access-size histograms of the data ops a rank executed (pads excluded)."""
        real = (ops["flags"] & FLAG_PAD) == 0
        for code, col in ((READ, HIST_READ), (WRITE, HIST_WRITE)):
            m = real & (ops["op"] == code)
            if m.any():
                np.add.at(self.m, (ops["file"][m], col + size_bins(ops["length"][m])), 1)

    def totals(self) -> np.ndarray:
        return self.m.sum(axis=0)


def reduce_record(comm, rec: Record, sources: np.ndarray) -> dict[str, Any] | None:
    """Per-file and per-rank totals and the touched (file, rank) rows, on rank 0 only."""
    from mpi4py import MPI

    per_file = np.zeros_like(rec.m) if comm.rank == 0 else None
    comm.Reduce(rec.m, per_file, op=MPI.SUM, root=0)
    per_rank = comm.gather(rec.totals(), root=0)
    touched = np.flatnonzero(rec.m.any(axis=1))
    rows = np.column_stack([touched, np.full(touched.size, comm.rank), rec.m[touched]])
    pairs = comm.gather(rows, root=0)
    if comm.rank != 0:
        return None
    return {
        "per_file": [_file_entry(fid, int(sources[fid]), row) for fid, row in enumerate(per_file)
                     if fid < len(sources) and row.any()],
        "per_rank": [_row_dict(row) for row in per_rank],
        "totals": _row_dict(per_file.sum(axis=0)),
        "pairs": np.concatenate(pairs) if pairs else np.zeros((0, WIDTH + 2), np.int64),
    }


def _row_dict(row: np.ndarray) -> dict[str, Any]:
    doc: dict[str, Any] = {name: int(row[i]) for i, name in enumerate(FIELDS)}
    doc["read_sizes"] = [int(x) for x in row[HIST_READ:HIST_READ + NBINS]]
    doc["write_sizes"] = [int(x) for x in row[HIST_WRITE:HIST_WRITE + NBINS]]
    return doc


def _file_entry(fid: int, source: int, row: np.ndarray) -> dict[str, Any]:
    return {"file": fid, "source": source, **_row_dict(row)}
