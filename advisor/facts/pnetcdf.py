"""PnetCDF: what the application asked the library for (Darshan's PNETCDF_FILE and PNETCDF_VAR).

A PNETCDF_VAR record is one variable on one rank (or reduced over all ranks); its calls are
counted by mode: independent (ncmpi_put_vara, after ncmpi_begin_indep_data), collective
(ncmpi_put_vara_all) and nonblocking (ncmpi_iput_vara / bput, completed by ncmpi_wait_all,
which posts all pending requests as one collective MPI-IO call). PNETCDF_FILE_REDEFS counts
ncmpi_redef calls: re-entering define mode, which may move the whole data section when the
header grows.
"""

from __future__ import annotations

import numpy as np

from advisor import arrays
from advisor.facts import FactContext, fact
from advisor.facts._darshan import col, nprocs, owner_files, records, top_files
from advisor.facts.requests import register_small_calls
from advisor.profile import SHARED_RANK

MODES = {"indep": ("INDEP_READS", "INDEP_WRITES"), "coll": ("COLL_READS", "COLL_WRITES"),
         "nb": ("NB_READS", "NB_WRITES")}


def _ops(rec, mode: str) -> np.ndarray:
    return sum(col(rec, name) for name in MODES[mode])


@fact("pnetcdf_var_ops", "ops", "PnetCDF variable reads and writes (put/get calls of every mode), all ranks.",
      label="PnetCDF variable reads and writes")
def pnetcdf_var_ops(ctx: FactContext) -> int:
    rec = records(ctx, "PNETCDF_VAR")
    return int(sum(_ops(rec, m) for m in MODES).sum())


def _register(mode: str, words: str) -> None:
    @fact(f"pnetcdf_{mode}_ops", "ops", f"PnetCDF variable reads and writes made {words}, all ranks.",
          label=f"PnetCDF {words} reads and writes")
    def ops(ctx: FactContext) -> int:
        return int(_ops(records(ctx, "PNETCDF_VAR"), mode).sum())

    @fact(f"pnetcdf_{mode}_share", "fraction", f"Share of the PnetCDF variable reads and writes made {words}.",
          label=f"share of PnetCDF variable I/O made {words}")
    def share(ctx: FactContext) -> float:
        n = ctx.get("pnetcdf_var_ops")
        return ctx.get(f"pnetcdf_{mode}_ops") / n if n else 0.0

    ops.__name__, share.__name__ = f"pnetcdf_{mode}_ops", f"pnetcdf_{mode}_share"


for _mode, _words in (("indep", "independently"), ("coll", "collectively"), ("nb", "nonblocking")):
    _register(_mode, _words)


@fact("pnetcdf_indep_files", "path", "netCDF files with the most independent PnetCDF variable reads and writes.",
      label="files with independent PnetCDF I/O")
def pnetcdf_indep_files(ctx: FactContext) -> list[str]:
    rec = records(ctx, "PNETCDF_VAR")
    files = owner_files(ctx, rec, "PNETCDF_VAR_FILE_REC_ID")
    uniq, inv = np.unique(files, return_inverse=True)
    per_file = np.bincount(inv, weights=_ops(rec, "indep"), minlength=len(uniq))
    return [ctx.profile.name_of(uniq[i]) for i in np.argsort(-per_file, kind="stable") if per_file[i] > 0]


def _per_file(ctx: FactContext, name: str) -> np.ndarray:
    """A PNETCDF_FILE counter per file and opening rank: summed over the ranks (a reduced record
    sums them), divided by the ranks that opened the file (every rank calls ncmpi_redef)."""
    rec = records(ctx, "PNETCDF_FILE")
    ranks = np.where(rec.ranks == SHARED_RANK, nprocs(ctx), 1)
    return col(rec, name) / ranks


@fact("pnetcdf_redefs", "ops", "Times a file re-entered define mode (ncmpi_redef), per rank, on the file with the "
      "most.", label="define-mode re-entries per file")
def pnetcdf_redefs(ctx: FactContext) -> int:
    redefs = _per_file(ctx, "REDEFS")
    return int(round(redefs.max())) if len(redefs) else 0


@fact("pnetcdf_redef_cost_s", "seconds", "Seconds per process the re-entries into define mode take: their share "
      "of the PnetCDF file calls (create, open, redef, sync) of the time in those calls (PNETCDF_FILE_F_META_TIME), "
      "a share by count.", label="time define-mode re-entries take per process")
def pnetcdf_redef_cost_s(ctx: FactContext) -> float:
    rec = records(ctx, "PNETCDF_FILE")
    calls = sum(col(rec, n) for n in ("CREATES", "OPENS", "REDEFS", "SYNCS"))
    share = np.divide(col(rec, "REDEFS"), calls, out=np.zeros(len(rec)), where=calls > 0)
    return float((col(rec, "F_META_TIME") * share).sum()) / nprocs(ctx)


@fact("pnetcdf_redef_files", "path", "netCDF files that re-entered define mode, most re-entries first.",
      label="files re-entering define mode")
def pnetcdf_redef_files(ctx: FactContext) -> list[str]:
    rec = records(ctx, "PNETCDF_FILE")
    return top_files(ctx, rec, col(rec, "REDEFS"))


@fact("pnetcdf_calls_collective", "flag", "The netCDF files' MPI-IO data calls were mostly collective (by calls, as "
      "aggregation.mpiio_modes counts them): each blocking _all put or get is then a collective MPI-IO call, and "
      "fewer, larger calls are fewer collective calls (the mpiio_calls fix), not merged POSIX requests, which the "
      "aggregators already make.", label="PnetCDF calls collective below")
def pnetcdf_calls_collective(ctx: FactContext) -> bool:
    from advisor.facts.aggregation import collective_below

    files, var = ctx.profile.records.get("PNETCDF_FILE"), ctx.profile.records.get("PNETCDF_VAR")
    ids = [np.zeros(0, np.uint64)] + ([files.ids.astype(np.uint64)] if files is not None else [])
    if var is not None and len(var):
        ids.append(owner_files(ctx, var, "PNETCDF_VAR_FILE_REC_ID"))
    return collective_below(ctx, arrays.unique(np.concatenate(ids)).tolist())


register_small_calls("pnetcdf", "PNETCDF_VAR", "PnetCDF variable reads and writes")
