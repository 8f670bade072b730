"""HDF5: what the application asked the library for (Darshan's H5F and H5D modules).

An H5D record is one dataset on one rank (or reduced over all ranks, rank -1); its
H5D_FILE_REC_ID names the HDF5 file, whose H5F record says whether the file was opened with
the MPI-IO driver (H5F_USE_MPIIO). H5D_USE_MPIIO_COLLECTIVE is 1 when the dataset's transfers
used a collective transfer property list. H5F_F_META_TIME is the time in H5Fcreate, H5Fopen,
H5Fflush and H5Fclose: the file's metadata (superblock, object headers, B-trees), written
independently by every rank unless the application asks for collective metadata I/O.
"""

from __future__ import annotations

import numpy as np

from advisor import arrays
from advisor.facts import FactContext, Missing, fact
from advisor.facts.access import MISALIGNED_PENALTY  # a straddled stripe's share of a request's time
from advisor.facts._darshan import col, data_records, maybe, nprocs, owner_files, records, total
from advisor.facts.requests import register_small_calls
from advisor.profile import SHARED_RANK

DATASET_OPS = ("READS", "WRITES")


def _datasets(ctx: FactContext):
    """H5D records; Missing when the log has none (no HDF5, or Darshan built without it)."""
    return records(ctx, "H5D")


def _collective(rec) -> np.ndarray:
    """Per row: its dataset used collective transfers on some rank (the flag is per dataset and rank)."""
    flag = col(rec, "USE_MPIIO_COLLECTIVE") > 0
    ids = arrays.unique(rec.ids[flag])
    return np.isin(rec.ids, ids)


def _dataset_files(ctx: FactContext, rec) -> np.ndarray:
    return owner_files(ctx, rec, "H5D_FILE_REC_ID")


def _ops(rec) -> np.ndarray:
    return sum(col(rec, op) for op in DATASET_OPS)


@fact("hdf5_uses_mpiio", "flag", "Some HDF5 file was opened with the MPI-IO driver (H5Pset_fapl_mpio: H5F_USE_MPIIO).",
      label="HDF5 over MPI-IO")
def hdf5_uses_mpiio(ctx: FactContext) -> bool:
    return bool((col(records(ctx, "H5F"), "USE_MPIIO") > 0).any())


@fact("hdf5_dataset_ops", "ops", "HDF5 dataset reads and writes (H5Dread / H5Dwrite calls), all ranks.",
      label="HDF5 dataset reads and writes")
def hdf5_dataset_ops(ctx: FactContext) -> int:
    return int(_ops(_datasets(ctx)).sum())


@fact("hdf5_indep_ops", "ops", "HDF5 dataset reads and writes on datasets no rank accessed with a collective "
      "transfer property list (H5D_USE_MPIIO_COLLECTIVE 0).", label="independent HDF5 dataset reads and writes")
def hdf5_indep_ops(ctx: FactContext) -> int:
    rec = _datasets(ctx)
    return int(_ops(rec)[~_collective(rec)].sum())


@fact("hdf5_indep_share", "fraction", "Share of the HDF5 dataset reads and writes that are independent.",
      label="share of HDF5 dataset I/O that is independent")
def hdf5_indep_share(ctx: FactContext) -> float:
    n = ctx.get("hdf5_dataset_ops")
    return ctx.get("hdf5_indep_ops") / n if n else 0.0


@fact("hdf5_indep_datasets", "count", "Datasets read or written with independent transfers only.",
      label="datasets with independent transfers")
def hdf5_indep_datasets(ctx: FactContext) -> int:
    rec = _datasets(ctx)
    return len(arrays.unique(rec.ids[~_collective(rec) & (_ops(rec) > 0)]))


@fact("hdf5_indep_files", "path", "HDF5 files holding the datasets with independent transfers, most operations first.",
      label="HDF5 files with independent dataset I/O")
def hdf5_indep_files(ctx: FactContext) -> list[str]:
    rec = _datasets(ctx)
    weight = np.where(_collective(rec), 0.0, _ops(rec))
    return _files_by(ctx, rec, weight)


def _files_by(ctx: FactContext, rec, weight: np.ndarray) -> list[str]:
    """The HDF5 files of the dataset rows with the most `weight`, heaviest first."""
    files = _dataset_files(ctx, rec)
    uniq, inv = np.unique(files, return_inverse=True)
    per_file = np.bincount(inv, weights=weight, minlength=len(uniq))
    return [ctx.profile.name_of(uniq[i]) for i in np.argsort(-per_file, kind="stable") if per_file[i] > 0]


def _dataset_total(ctx: FactContext, name: str) -> float:
    """An H5D counter summed over the records; 0 without datasets (a job that only opens files)."""
    datasets = ctx.profile.records.get("H5D")
    return float(col(datasets, name).sum()) if datasets is not None else 0.0


def _meta_seconds(ctx: FactContext) -> float:
    """H5F and H5D metadata seconds, summed over ranks."""
    return float(col(records(ctx, "H5F"), "F_META_TIME").sum()) + _dataset_total(ctx, "F_META_TIME")


@fact("hdf5_meta_time_s", "seconds", "Seconds per process in HDF5 file and dataset metadata: creating, opening, "
      "flushing and closing files and datasets (H5F_F_META_TIME + H5D_F_META_TIME).",
      label="time in HDF5 metadata per process")
def hdf5_meta_time_s(ctx: FactContext) -> float:
    return _meta_seconds(ctx) / nprocs(ctx)


@fact("hdf5_meta_fixable_s", "seconds", "Seconds per process of HDF5 metadata that collective metadata, fewer "
      "flushes and larger metadata blocks can remove: where a Recorder trace shows what HDF5's metadata calls did "
      "below them, the H5Fflush calls and the reads, writes and syncs beneath the other metadata calls (not "
      "MPI_File_open/close, nor HDF5's waits for the other ranks); from Darshan, whose H5F_F_META_TIME does not "
      "split, the whole metadata time.", label="HDF5 metadata time a metadata fix can remove per process")
def hdf5_meta_fixable_s(ctx: FactContext) -> float:
    files = records(ctx, "H5F")
    if "H5F_F_META_IO_TIME" not in files.fcounters:
        return ctx.get("hdf5_meta_time_s")
    seconds = total(files, "F_FLUSH_TIME") + total(files, "F_META_IO_TIME") + _dataset_total(ctx, "F_META_IO_TIME")
    return min(seconds, _meta_seconds(ctx)) / nprocs(ctx)


@fact("hdf5_coll_metadata_set", "flag", "The job asked for collective metadata I/O (a Recorder trace shows "
      "H5Pset_all_coll_metadata_ops or H5Pset_coll_metadata_write calls); Darshan does not record property "
      "lists: False there.", label="collective HDF5 metadata already asked for")
def hdf5_coll_metadata_set(ctx: FactContext) -> bool:
    hdf5 = ctx.profile.extras.get("recorder", {}).get("calls", {}).get("HDF5", {})
    return any(hdf5.get(f, 0) for f in ("H5Pset_all_coll_metadata_ops", "H5Pset_coll_metadata_write"))


@fact("hdf5_properties_recorded", "flag", "The input records the job's HDF5 property calls (a Recorder trace of "
      "the HDF5 layer: H5Pset_* calls are traced, H5Pset_libver_bounds and H5Pset_chunk_cache excepted); a "
      "Darshan log does not, so whether the job already sets what a fix proposes is not checked there.",
      label="HDF5 property calls recorded")
def hdf5_properties_recorded(ctx: FactContext) -> bool:
    return bool(ctx.profile.extras.get("recorder", {}).get("calls", {}).get("HDF5"))


@fact("hdf5_meta_share", "fraction", "Share of the HDF5 time (metadata + dataset reads and writes) spent in "
      "metadata.", label="share of HDF5 time in metadata")
def hdf5_meta_share(ctx: FactContext) -> float:
    meta = _meta_seconds(ctx)
    data = _dataset_total(ctx, "F_READ_TIME") + _dataset_total(ctx, "F_WRITE_TIME")
    return meta / (meta + data) if meta + data > 0 else 0.0


@fact("hdf5_file_opens", "ops", "HDF5 file creates and opens (H5F_OPENS), all ranks.", label="HDF5 file opens")
def hdf5_file_opens(ctx: FactContext) -> int:
    return int(col(records(ctx, "H5F"), "OPENS").sum())


@fact("hdf5_dataset_opens", "ops", "HDF5 dataset creates and opens (H5D_OPENS), all ranks.",
      label="HDF5 dataset opens")
def hdf5_dataset_opens(ctx: FactContext) -> int:
    return int(_dataset_total(ctx, "OPENS"))


@fact("hdf5_file_reopens", "ops", "HDF5 file opens beyond one per file per rank that opened it (a shared "
      "record counts one per process), all ranks: what keeping the files open would save. Datasets are not "
      "counted: a Recorder trace names them without their file (FLASH's checkpoints each open /dens anew).",
      label="HDF5 file reopens")
def hdf5_file_reopens(ctx: FactContext) -> int:
    rec = records(ctx, "H5F")
    once = np.where(rec.ranks == SHARED_RANK, nprocs(ctx), 1)
    return int(np.clip(col(rec, "OPENS") - once, 0, None).sum())


@fact("hdf5_flushes", "ops", "H5Fflush and H5Dflush calls, all ranks.", label="HDF5 flushes")
def hdf5_flushes(ctx: FactContext) -> int:
    return int(col(records(ctx, "H5F"), "FLUSHES").sum() + _dataset_total(ctx, "FLUSHES"))


@fact("hdf5_meta_files", "path", "HDF5 files with the most metadata time.",
      label="HDF5 files with the most metadata time")
def hdf5_meta_files(ctx: FactContext) -> list[str]:
    rec = records(ctx, "H5F")
    meta = col(rec, "F_META_TIME")
    uniq, inv = np.unique(rec.ids, return_inverse=True)
    per_file = np.bincount(inv, weights=meta, minlength=len(uniq))
    return [ctx.profile.name_of(uniq[i]) for i in np.argsort(-per_file, kind="stable") if per_file[i] > 0]


def hdf5_file_ids(ctx: FactContext) -> np.ndarray:
    """Record ids of the HDF5 files (H5F records, and the files H5D records name); empty without HDF5."""
    ids = [np.zeros(0, np.uint64)]
    files, datasets = ctx.profile.records.get("H5F"), ctx.profile.records.get("H5D")
    if files is not None:
        ids.append(files.ids.astype(np.uint64))
    if datasets is not None and len(datasets):
        ids.append(_dataset_files(ctx, datasets))
    return arrays.unique(np.concatenate(ids))


@fact("misaligned_hdf5", "flag", "The file with the most misaligned requests is an HDF5 file (H5F/H5D records name "
      "it): only then is H5Pset_alignment the remedy.", label="misaligned file is HDF5")
def misaligned_hdf5(ctx: FactContext) -> bool:
    rec = data_records(ctx, "POSIX")
    weight = col(rec, "FILE_NOT_ALIGNED")
    if not (weight > 0).any():
        return False
    return bool(np.isin(rec.ids[int(np.argmax(weight))], hdf5_file_ids(ctx)))


@fact("hdf5_meta_indep_writes", "ops", "Independent MPI-IO writes to HDF5 files whose dataset transfers are all "
      "collective: HDF5's own metadata writes (0 without HDF5 over MPI-IO).",
      label="independent MPI-IO writes of HDF5 metadata")
def hdf5_meta_indep_writes(ctx: FactContext) -> int:
    mpi, datasets = maybe(ctx, "MPI-IO"), ctx.profile.records.get("H5D")
    if mpi is None or datasets is None or not len(datasets):
        return 0
    files = _dataset_files(ctx, datasets)
    independent = arrays.unique(files[~_collective(datasets) & (_ops(datasets) > 0)])
    collective = np.setdiff1d(arrays.unique(files[_collective(datasets)]), independent, assume_unique=True)
    return int(col(mpi, "INDEP_WRITES")[arrays.isin(mpi.ids, collective)].sum())


def _scattered(rec) -> np.ndarray:
    return col(rec, "POINT_SELECTS") + col(rec, "IRREGULAR_HYPERSLAB_SELECTS")


@fact("hdf5_selects", "ops", "HDF5 dataspace selections of the dataset reads and writes (regular and irregular "
      "hyperslabs, point lists).", label="HDF5 selections")
def hdf5_selects(ctx: FactContext) -> int:
    rec = _datasets(ctx)
    return int((col(rec, "REGULAR_HYPERSLAB_SELECTS") + _scattered(rec)).sum())


@fact("hdf5_scattered_selects", "ops", "HDF5 selections that are point lists (H5Sselect_elements) or irregular "
      "hyperslabs (unions of blocks).", label="point and irregular HDF5 selections")
def hdf5_scattered_selects(ctx: FactContext) -> int:
    return int(_scattered(_datasets(ctx)).sum())


@fact("hdf5_scattered_share", "fraction", "Share of the HDF5 selections that are point lists or irregular hyperslabs.",
      label="share of HDF5 selections that are scattered")
def hdf5_scattered_share(ctx: FactContext) -> float:
    n = ctx.get("hdf5_selects")
    return ctx.get("hdf5_scattered_selects") / n if n else 0.0


@fact("hdf5_scattered_cost_s", "seconds", "Seconds per process the dataset reads and writes with point or irregular "
      "selections lose: their share of the datasets' read and write time, times what merging requests of their "
      "mean size into rpc_size ones saves (request_latency_s each); a lower bound: a point list's pieces are "
      "smaller than the call's mean size.", label="time scattered selections lose per process")
def hdf5_scattered_cost_s(ctx: FactContext) -> float:
    from advisor.facts.requests import coalescing_saving

    rec = _datasets(ctx)
    scattered = _scattered(rec)
    selects = col(rec, "REGULAR_HYPERSLAB_SELECTS") + scattered
    share = np.divide(scattered, selects, out=np.zeros(len(rec)), where=selects > 0)
    seconds = float(((col(rec, "F_READ_TIME") + col(rec, "F_WRITE_TIME")) * share).sum())
    ops = float((_ops(rec) * share).sum())
    moved = float(((col(rec, "BYTES_READ") + col(rec, "BYTES_WRITTEN")) * share).sum())
    if ops <= 0:
        return 0.0
    return seconds / nprocs(ctx) * coalescing_saving(ctx, moved / ops)


@fact("hdf5_scattered_files", "path", "HDF5 files with the most point and irregular selections.",
      label="HDF5 files with scattered selections")
def hdf5_scattered_files(ctx: FactContext) -> list[str]:
    rec = _datasets(ctx)
    return _files_by(ctx, rec, _scattered(rec))


register_small_calls("hdf5", "H5D", "H5Dread/H5Dwrite calls")


@fact("hdf5_calls_collective", "flag", "The HDF5 files' MPI-IO data calls were mostly collective (by calls, as "
      "aggregation.mpiio_modes counts them): each H5Dread/H5Dwrite is then a collective MPI-IO call below, and "
      "fewer, larger dataset calls are fewer collective calls (the mpiio_calls fix), not merged POSIX requests, "
      "which the aggregators already make.", label="HDF5 dataset calls collective below")
def hdf5_calls_collective(ctx: FactContext) -> bool:
    from advisor.facts.aggregation import collective_below

    return collective_below(ctx, hdf5_file_ids(ctx).tolist())


def _chunk_misfits(ctx: FactContext) -> list[tuple[int, int, int, float]]:
    """(dataset row, chunk bytes, stripe size, read+write seconds) of the chunked datasets whose chunk is
    neither a multiple nor a divisor of their file's Lustre stripe size; Missing without chunks or layouts."""
    rec = _datasets(ctx)
    dims = [col(rec, f"CHUNK_SIZE_D{d}") for d in range(1, 6)]
    chunked = dims[0] > 0
    if not chunked.any():
        raise Missing("no chunked HDF5 dataset (H5D_CHUNK_SIZE_D1 0: contiguous layout)")
    chunk = np.prod([np.where(d > 0, d, 1) for d in dims], axis=0) * np.maximum(col(rec, "DATATYPE_SIZE"), 1)
    files = _dataset_files(ctx, rec)
    seconds = col(rec, "F_READ_TIME") + col(rec, "F_WRITE_TIME")
    out, known = [], False
    for row in np.flatnonzero(chunked):
        layout = ctx.profile.lustre.get(int(files[row]))
        stripe = layout.stripe_size if layout is not None else 0
        if not stripe:
            continue
        known = True
        size = int(chunk[row])
        if size % stripe and stripe % size:
            out.append((int(row), size, stripe, float(seconds[row])))
    if not known:
        raise Missing("the stripe size of the HDF5 files is unknown (no LUSTRE records)")
    return out


def _misfits(ctx: FactContext):
    return ctx.memo("hdf5.chunk_misfits", lambda: _chunk_misfits(ctx))


@fact("hdf5_chunk_misfit_datasets", "count", "Chunked datasets whose chunk (H5D_CHUNK_SIZE_D* x DATATYPE_SIZE) is "
      "neither a multiple nor a divisor of their file's Lustre stripe size.", label="datasets with misfit chunks")
def hdf5_chunk_misfit_datasets(ctx: FactContext) -> int:
    return len({int(_datasets(ctx).ids[row]) for row, *_ in _misfits(ctx)})


@fact("hdf5_chunk_bytes", "bytes", "Chunk size of the misfit dataset with the most read and write time.",
      label="chunk size")
def hdf5_chunk_bytes(ctx: FactContext) -> int:
    misfits = _misfits(ctx)
    if not misfits:
        raise Missing("every chunk fits the stripe size")
    return max(misfits, key=lambda m: m[3])[1]


@fact("hdf5_chunk_stripe_size", "bytes", "Stripe size of that dataset's file.", label="stripe size")
def hdf5_chunk_stripe_size(ctx: FactContext) -> int:
    misfits = _misfits(ctx)
    if not misfits:
        raise Missing("every chunk fits the stripe size")
    return max(misfits, key=lambda m: m[3])[2]


@fact("hdf5_chunk_misfit_cost_s", "seconds", "Seconds per process the misfit chunks lose to straddled stripes: "
      "their datasets' read and write time times the misalignment penalty.",
      label="time misfit chunks lose per process")
def hdf5_chunk_misfit_cost_s(ctx: FactContext) -> float:
    return sum(m[3] for m in _misfits(ctx)) / nprocs(ctx) * MISALIGNED_PENALTY


@fact("hdf5_chunk_misfit_files", "path", "HDF5 files of the datasets with misfit chunks.",
      label="HDF5 files with misfit chunks")
def hdf5_chunk_misfit_files(ctx: FactContext) -> list[str]:
    rec = _datasets(ctx)
    weight = np.zeros(len(rec))
    for row, _size, _stripe, seconds in _misfits(ctx):
        weight[row] = seconds + 1e-12
    return _files_by(ctx, rec, weight)
