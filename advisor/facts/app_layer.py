"""What the application itself asked for: per file, the bytes and operations of the topmost layer
that counted them (HDF5's dataset calls, PnetCDF, MPI-IO, else POSIX + STDIO), on its data files.

Below the layer the application calls, the libraries move traffic of their own: ROMIO's data
sieving and the read half of a collective buffer's read-modify-write (E3SM-IO's 306,537 tiny POSIX
reads of files it only writes), the aggregators' requests, HDF5's metadata and superblock writes,
PnetCDF's header. And Python's imports and shared libraries are not the job's data at all. A rule
about what the application does (which direction it moves its data in) judges it here, where the
application acts; rules about what reached the file system judge the POSIX layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor import arrays
from advisor.facts import FactContext, fact
from advisor.facts._darshan import not_data_ids
from advisor.facts.layers import LAYERS, NO_FILE, account, layer_files

BASE = ("POSIX", "STDIO")  # side by side: a file no layer above counted is the sum of both


@dataclass(frozen=True)
class AppTraffic:
    """The job's data traffic as the application asked for it."""
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    layers: tuple[str, ...]  # the layers that counted it, top first


def app_traffic(ctx: FactContext) -> AppTraffic:
    """The job's data traffic as the application asked for it (once per profile)."""
    return ctx.memo("app_layer.traffic", lambda: _traffic(ctx))


def _traffic(ctx: FactContext) -> AppTraffic:
    per_file = layer_files(ctx)
    claimed = not_data_ids(ctx)
    sums = np.zeros(4, np.int64)
    used = []
    for layer in (x.name for x in LAYERS):
        files = per_file.get(layer)
        # a layer whose records name no file (older H5D) cannot be placed on files: the layer below counts
        if files is None or files.index(NO_FILE) is not None:
            continue
        fresh = ~arrays.isin(files.keys, claimed, kind="sort")
        take = fresh & ((files.bytes > 0) if layer not in BASE else np.ones(len(files.keys), bool))
        if not take.any():
            continue
        sums += [int(getattr(files, f)[take].sum()) for f in ("bytes_read", "bytes_written", "reads", "writes")]
        used.append(layer)
        if layer not in BASE:  # POSIX and STDIO both count a file neither layer above did
            claimed = arrays.union(claimed, files.keys[take])
    return AppTraffic(*(int(v) for v in sums), tuple(used))


@fact("app_bytes_read", "bytes", "Bytes the application read on its data files, at the topmost layer that "
      "counted them (HDF5 datasets, PnetCDF, MPI-IO, else POSIX + STDIO): not ROMIO's sieving and "
      "read-modify-write reads, not Python imports.", label="bytes the application read")
def app_bytes_read(ctx: FactContext) -> int:
    return app_traffic(ctx).bytes_read


@fact("app_bytes_written", "bytes", "Bytes the application wrote on its data files, at the topmost layer "
      "that counted them: not HDF5's metadata, not the aggregators' read-modify-write.",
      label="bytes the application wrote")
def app_bytes_written(ctx: FactContext) -> int:
    return app_traffic(ctx).bytes_written


@fact("app_read_share_bytes", "fraction", "Share of the application's bytes (app_bytes_read, app_bytes_written) "
      "that are read.", label="share of the application's bytes that are read")
def app_read_share_bytes(ctx: FactContext) -> float:
    t = app_traffic(ctx)
    return t.bytes_read / (t.bytes_read + t.bytes_written) if t.bytes_read + t.bytes_written else 0.0


@fact("app_read_share_ops", "fraction", "Share of the application's read and write calls, at the same layers, "
      "that are reads.", label="share of the application's calls that are reads")
def app_read_share_ops(ctx: FactContext) -> float:
    t = app_traffic(ctx)
    return t.reads / (t.reads + t.writes) if t.reads + t.writes else 0.0


@fact("app_layers", "text", "The layers the application's traffic was counted at, top first.",
      label="layers counted")
def app_layers(ctx: FactContext) -> str:
    return " + ".join(app_traffic(ctx).layers)


LIBRARIES = ("HDF5", "PnetCDF", "MPI-IO")


@fact("app_library", "enum", "The topmost I/O library the job called (HDF5, PnetCDF, MPI-IO), else POSIX: "
      "the layer where advice about how it calls for I/O applies, even where the log cannot place that "
      "layer's records on files.", label="I/O library the job called")
def app_library(ctx: FactContext) -> str:
    present = {row.layer for row in account(ctx).rows}
    return next((name for name in LIBRARIES if name in present), "POSIX")
