"""Darshan module records -> numpy columns (counters, LUSTRE layouts, heatmaps).

Record structs come from pydarshan's cffi definitions; libdarshan-util has already
up-converted records of older module versions to the current layout, so counter
names are pydarshan's lists for the current module version.
"""

from __future__ import annotations

import numpy as np

from advisor.ingest.darshan_lib import DarshanLog, counter_names, text
from advisor.profile import LustreComponent, LustreLayout, ModuleRecords

# Modules whose records are one struct of `counters` and `fcounters` arrays
# (struct names as pydarshan's cffi declarations call them).
_STRUCTS = {
    "POSIX": "struct darshan_posix_file *", "MPI-IO": "struct darshan_mpiio_file *",
    "STDIO": "struct darshan_stdio_file *", "H5F": "struct darshan_hdf5_file *",
    "H5D": "struct darshan_hdf5_dataset *", "PNETCDF_FILE": "struct darshan_pnetcdf_file *",
    "PNETCDF_VAR": "struct darshan_pnetcdf_var *", "BG/Q": "struct darshan_bgq_record *",
    "DFS": "struct darshan_dfs_file *", "DAOS": "struct darshan_daos_object *",
}
GENERIC = tuple(_STRUCTS)
# Modules whose records point back to the file record of the file they live in.
_FILE_REC_ID = {"H5D": "H5D_FILE_REC_ID", "PNETCDF_VAR": "PNETCDF_VAR_FILE_REC_ID"}
_NAME_KEY = {"MPI-IO": "MPIIO", "BG/Q": "BGQ"}

# lustreapi.h LLAPI_LAYOUT_* pattern values, as darshan-parser names them.
LUSTRE_PATTERNS = {0: "raid0", 2: "mdt", 4: "raid0,overstriped", 8: "foreign"}
# The counters of one Lustre layout component, in darshan_lustre_component order.
LUSTRE_COMP_COUNTERS = ("STRIPE_SIZE", "STRIPE_COUNT", "STRIPE_PATTERN", "FLAGS", "EXT_START",
                        "EXT_END", "MIRROR_ID")


def _names(module: str, n: int, floats: bool) -> list[str]:
    """libdarshan-util's counter names for `module` (n of them), or positional names."""
    key = _NAME_KEY.get(module, module)
    names = counter_names(key, floats)
    if len(names) != n:  # a struct without a name list in this libdarshan-util
        names = [f"{key}_{'F_' if floats else ''}COUNTER_{i}" for i in range(n)]
    return names


def read_generic(log: DarshanLog, module: str, idx: int) -> ModuleRecords:
    """All records of a counters/fcounters module as columns."""
    ffi = log.ffi
    ctype = _STRUCTS[module]
    ids, ranks, cblocks, fblocks, file_ids = [], [], [], [], []
    nc = nf = 0
    for ptr in log.records(idx):
        rec = ffi.cast(ctype, ptr)
        ids.append(rec.base_rec.id)
        ranks.append(rec.base_rec.rank)
        cblocks.append(ffi.buffer(rec.counters)[:])
        fblocks.append(ffi.buffer(rec.fcounters)[:])
        nc, nf = len(rec.counters), len(rec.fcounters)
        if module in _FILE_REC_ID:
            file_ids.append(rec.file_rec_id)
    n = len(ids)
    cmat = np.frombuffer(b"".join(cblocks), dtype=np.int64).reshape(n, nc).T.copy()
    fmat = np.frombuffer(b"".join(fblocks), dtype=np.float64).reshape(n, nf).T.copy()
    out = ModuleRecords(module=module, ids=np.array(ids, dtype=np.uint64),
                        ranks=np.array(ranks, dtype=np.int64))
    out.counters = dict(zip(_names(module, nc, False), cmat))
    out.fcounters = dict(zip(_names(module, nf, True), fmat))
    if module in _FILE_REC_ID:
        out.counters[_FILE_REC_ID[module]] = np.array(file_ids, dtype=np.uint64)
    return out


def _component(ffi, comp, ost_ids: list[int]) -> LustreComponent:
    c = dict(zip(LUSTRE_COMP_COUNTERS, np.frombuffer(ffi.buffer(comp.counters), dtype=np.int64).tolist()))
    return lustre_component(c, ost_ids, text(ffi, comp.pool_name))


def lustre_component(v: dict[str, int], osts: list[int], pool: str) -> LustreComponent:
    """One layout component from its LUSTRE_COMP_COUNTERS values, OST ids and pool name."""
    pattern = v["STRIPE_PATTERN"]
    return LustreComponent(
        extent_start=max(v["EXT_START"], 0), extent_end=v["EXT_END"], stripe_size=v["STRIPE_SIZE"],
        stripe_count=v["STRIPE_COUNT"], stripe_offset=osts[0] if osts else -1,
        pattern=LUSTRE_PATTERNS.get(pattern, "unknown" if pattern < 0 else f"pattern {pattern:#x}"),
        pool=pool, ost_ids=osts)


def read_lustre(log: DarshanLog, idx: int) -> tuple[ModuleRecords, dict[int, LustreLayout]]:
    """LUSTRE records in both forms (libdarshan-util turns the old form into one component).

    Returns the counters as columns (LUSTRE_NUM_COMPONENTS, LUSTRE_NUM_STRIPES,
    LUSTRE_COMP<k>_<counter>, -1 where a record has fewer components) and one
    layout per record id (the first record seen for a file).
    """
    ffi = log.ffi
    ids, ranks, rows, layouts = [], [], [], {}
    for ptr in log.records(idx):
        rec = ffi.cast("struct darshan_lustre_record *", ptr)
        nstripes = max(int(rec.num_stripes), 0)
        osts = ffi.unpack(ffi.cast("int64_t *", rec.ost_ids), nstripes) if nstripes else []
        comps, row, used = [], {}, 0
        for k in range(max(int(rec.num_comps), 0)):
            counters = np.frombuffer(ffi.buffer(rec.comps[k].counters), dtype=np.int64)
            count = max(int(counters[1]), 0)
            comps.append(_component(ffi, rec.comps[k], osts[used:used + count]))
            used += count
            for name, value in zip(LUSTRE_COMP_COUNTERS, counters.tolist()):
                row[f"LUSTRE_COMP{k + 1}_{name}"] = value
        row["LUSTRE_NUM_COMPONENTS"], row["LUSTRE_NUM_STRIPES"] = len(comps), nstripes
        rid = int(rec.base_rec.id)
        ids.append(rid)
        ranks.append(int(rec.base_rec.rank))
        rows.append(row)
        layouts.setdefault(rid, LustreLayout(record_id=rid, components=comps))
    return _columns("LUSTRE", ids, ranks, rows, fill=-1), layouts


def read_heatmap(log: DarshanLog, idx: int) -> ModuleRecords:
    """HEATMAP records: bytes per time bin, named as darshan-parser names them."""
    ffi = log.ffi
    ids, ranks, widths, bins = [], [], [], {"READ": [], "WRITE": []}
    for ptr in log.records(idx):
        rec = ffi.cast("struct darshan_heatmap_record *", ptr)
        nbins = max(int(rec.nbins), 0)
        for kind, data in (("READ", rec.read_bins), ("WRITE", rec.write_bins)):
            bins[kind].append(np.frombuffer(ffi.buffer(data, 8 * nbins), dtype=np.int64).copy()
                              if nbins else np.empty(0, np.int64))
        ids.append(int(rec.base_rec.id))
        ranks.append(int(rec.base_rec.rank))
        widths.append(float(rec.bin_width_seconds))
    out = ModuleRecords(module="HEATMAP", ids=np.array(ids, dtype=np.uint64),
                        ranks=np.array(ranks, dtype=np.int64))
    width = max((len(b) for b in bins["READ"]), default=0)
    for kind, arrays in bins.items():
        matrix = np.zeros((width, len(arrays)), dtype=np.int64)  # bin x record
        for j, a in enumerate(arrays):
            matrix[: len(a), j] = a
        out.counters.update({f"HEATMAP_{kind}_BIN_{i}": matrix[i] for i in range(width)})
    out.fcounters["HEATMAP_F_BIN_WIDTH_SECONDS"] = np.array(widths, dtype=np.float64)
    return out


def _columns(module: str, ids: list[int], ranks: list[int], rows: list[dict[str, int]],
             fill: int) -> ModuleRecords:
    """Rows of name->value into int64 columns; names missing in a row get `fill`."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    counters = {name: np.array([row.get(name, fill) for row in rows], dtype=np.int64)
                for name in names}
    return ModuleRecords(module=module, ids=np.array(ids, dtype=np.uint64),
                         ranks=np.array(ranks, dtype=np.int64), counters=counters)
