"""Compact plot data of a job profile, stored in ``Diagnosis.figures``.

`figure_data(profile)` returns plain JSON values only (lists of numbers and short
strings), downsampled so a saved diagnosis stays small and re-renders as HTML
without the log: ranks beyond ``MAX_RANK_BARS`` are grouped (mean, and the slowest
rank of each group), the DXT trace becomes a fixed grid (:mod:`advisor.report.timeline`),
only the ``TOP_FILES`` slowest files are kept. Sections without data are left out.

Sections (the contract with :mod:`advisor.report.plots`):

- ``io_time``: modules, read/write/meta seconds (mean per process), runtime_s
- ``access_sizes``: bins (Darshan's), modules -> {read: [counts], write: [counts]}
- ``ranks``: labels, bytes_read/bytes_written (or bytes), bytes_total, time_s, time_max_s,
  straggler_index, grouped, source
- ``timeline``: see :func:`advisor.report.timeline.timeline_data`
- ``osts``: ost, bandwidth (bytes/s), bytes, time_s, files, compared (OSTs timed by files of
  min_file_bytes or more), median (of those; 0: too few to compare), outliers
- ``top_files``: files [{path, read_s, write_s, meta_s, bytes_read, bytes_written, ranks, shared}]
- ``snapshot``: {tables: [{title, columns, rows}]} of a node snapshot's settings (the page flags
  the rows that findings name)
- ``surface``: an IOzone automatic-mode output's record-size x file-size cells
  (:func:`advisor.report.surface.surface_data`)
- ``campaign`` is written by :func:`advisor.campaign.figure_data` (campaign diagnoses only).
"""

from __future__ import annotations

import numpy as np

from advisor import arrays, metrics
from advisor.facts.ost import MIN_RECORD_BYTES
from advisor.profile import DXT_READ, DXT_WRITE, JobProfile

MAX_RANK_BARS = 128
TOP_FILES = 12
STRAGGLER_RATIO = 1.5  # a rank slower than 1.5x the median ...
STRAGGLER_MADS = 3.0  # ... and more than 3 median absolute deviations above it
OST_SLOW_RATIO = 0.5  # an OST below half the median bandwidth is an outlier ...
MIN_COMPARED = 4  # ... of at least this many OSTs timed by large files (as the slow-OST rule)
SIZE_LABELS = ("0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M",
               "100M-1G", "1G+")


def _timeline(profile: JobProfile) -> dict | None:
    """The DXT timeline's data; without DXT, None and its drawing code (SVG) left unloaded."""
    if not profile.dxt:
        return None
    from advisor.report.timeline import timeline_data

    return timeline_data(profile)


def figure_data(profile: JobProfile) -> dict:
    """Every figure section the profile has data for (JSON-safe)."""
    summary = metrics.summarize(profile)
    files = metrics.per_file(profile) if profile.records else []
    sections = {
        "io_time": io_time(summary),
        "access_sizes": access_sizes(summary),
        "ranks": rank_figure(profile, summary),
        "timeline": _timeline(profile),
        "osts": ost_figure(files),
        "top_files": top_files(files),
    }
    # the sections of other kinds of input import their code for those inputs only (not for a log)
    if profile.kind == "snapshot":
        from advisor.ingest.ior.view import snapshot_data

        sections["snapshot"] = snapshot_tables(snapshot_data(profile.settings))
    if profile.kind == "iozone":
        from advisor.report.surface import surface_data

        sections["surface"] = surface_data(profile)
    return {"version": 1, **{k: v for k, v in sections.items() if v}}


def _r(x: float) -> float:
    """Four significant digits: plots need no more, and the JSON stays small."""
    return float(f"{float(x):.4g}")


def io_time(summary: metrics.ProfileSummary) -> dict | None:
    """Read, write and metadata seconds per module, averaged over processes."""
    n = max(summary.nprocs, 1)
    mods = [m for m in summary.modules.values() if m.io_time > 0]
    if not mods:
        return None
    return {"modules": [m.module for m in mods], "basis": "mean per process",
            "read": [_r(m.read_time / n) for m in mods], "write": [_r(m.write_time / n) for m in mods],
            "meta": [_r(m.meta_time / n) for m in mods], "runtime_s": _r(summary.runtime_s),
            # each module's total from the unrounded parts: the rounded three can add up to 572.1 ms
            # beside the layer account's 572.0 ms for the same MPI-IO time
            "total": [_r(m.io_time / n) for m in mods]}


def access_sizes(summary: metrics.ProfileSummary) -> dict | None:
    """Darshan's access-size histogram (reads and writes) of each module that records one."""
    out = {}
    for name, m in summary.modules.items():
        if sum(m.size_hist_read.values()) + sum(m.size_hist_write.values()) == 0:
            continue
        out[name] = {"read": [int(m.size_hist_read.get(k, 0)) for k, _ in metrics.SIZE_BINS],
                     "write": [int(m.size_hist_write.get(k, 0)) for k, _ in metrics.SIZE_BINS]}
    return {"bins": list(SIZE_LABELS), "modules": out} if out else None


def rank_figure(profile: JobProfile, summary: metrics.ProfileSummary) -> dict | None:
    """Bytes and I/O time per rank: exact from DXT when traced, else from the counters."""
    dxt = _dxt_ranks(profile)
    if dxt is not None:
        read, written, busy, source = *dxt, "DXT trace (read and write time per rank)"
        per_rank, layer = {"bytes_read": read, "bytes_written": written}, "POSIX"
    elif len(summary.rank_time) and summary.rank_time.sum() > 0:
        busy, source = summary.rank_time, "counters (shared-file records split evenly over ranks)"
        per_rank, layer = {"bytes": summary.rank_bytes}, " + ".join(summary.base_modules)
    else:
        return None
    hot = stragglers(busy)
    if len(busy) <= MAX_RANK_BARS:
        fig = {"labels": list(range(len(busy))), "time_s": [_r(t) for t in busy],
               "straggler_index": hot.tolist(), "grouped": False}
        fig.update({k: [_r(v) for v in col] for k, col in per_rank.items()})
    else:
        fig = _grouped(busy, per_rank, hot)
    # the job's bytes, not the sum of the bars: a grouped bar is its ranks' mean
    fig["bytes_total"] = _r(sum(float(np.sum(col)) for col in per_rank.values()))
    # the layer the bars are timed at: the file system's side (POSIX), which for an MPI-IO or HDF5 job is
    # not the header's I/O time, so the figure names it rather than give the job a second "I/O time"
    fig.update({"source": source, "stragglers": hot.tolist()[:64], "nprocs": int(len(busy)), "layer": layer})
    return fig


def _dxt_ranks(profile: JobProfile):
    """(bytes read, bytes written, busy seconds) per rank from the POSIX trace, or None."""
    trace = profile.dxt.get("DXT_POSIX")
    if trace is None or not trace.readable or not len(trace) or trace.note:
        return None  # a partial trace would make its ranks look idle
    n = max(profile.job.nprocs, int(trace.rank.max()) + 1)
    length = trace.length.astype(np.float64)
    read = np.bincount(trace.rank, weights=np.where(trace.op == DXT_READ, length, 0), minlength=n)
    written = np.bincount(trace.rank, weights=np.where(trace.op == DXT_WRITE, length, 0), minlength=n)
    busy = np.bincount(trace.rank, weights=trace.end - trace.start, minlength=n)
    return read, written, busy


def stragglers(times: np.ndarray) -> np.ndarray:
    """Ranks much slower than the median: > STRAGGLER_RATIO x median and > STRAGGLER_MADS MADs above it."""
    times = np.asarray(times, dtype=np.float64)
    if len(times) < 2:
        return np.empty(0, dtype=np.int64)
    med = float(arrays.median(times))
    mad = float(arrays.median(np.abs(times - med)))
    hot = (times > STRAGGLER_RATIO * med) & (times > med + STRAGGLER_MADS * mad) & (times > 0)
    return np.flatnonzero(hot)


def _grouped(busy: np.ndarray, per_rank: dict, hot: np.ndarray) -> dict:
    """Consecutive ranks in MAX_RANK_BARS groups: mean per rank, and the slowest rank's time."""
    n = len(busy)
    size = -(-n // MAX_RANK_BARS)
    edges = list(range(0, n, size))
    mean = lambda col: [_r(col[a:a + size].mean()) for a in edges]  # noqa: E731
    hot_groups = sorted({int(r) // size for r in hot})
    fig = {"labels": [f"{a}-{min(a + size, n) - 1}" for a in edges], "time_s": mean(busy),
           "time_max_s": [_r(busy[a:a + size].max()) for a in edges],
           "straggler_index": hot_groups, "grouped": True, "group_size": size}
    fig.update({k: mean(np.asarray(col, dtype=np.float64)) for k, col in per_rank.items()})
    return fig


def ost_figure(files: list[metrics.FileSummary]) -> dict | None:
    """Bandwidth per OST: bytes over I/O time of the files striped on it (Lustre layouts).

    As the slow-OST rule (advisor/facts/ost.py), only files of MIN_RECORD_BYTES or more time the
    OST rather than a request's latency: an OST holding only smaller files is drawn but not
    compared, and outliers are called only among at least MIN_COMPARED comparable OSTs."""
    nbytes: dict[int, float] = {}
    seconds: dict[int, float] = {}
    count: dict[int, int] = {}
    large: set[int] = set()
    for f in sorted(files, key=lambda f: f.bytes < MIN_RECORD_BYTES):  # large files first
        osts = f.layout.ost_ids if f.layout else []
        size, io_time = f.bytes, f.stats.io_time  # properties: read once per file, not per stripe
        if not osts or io_time <= 0 or size <= 0:
            continue
        big, share = size >= MIN_RECORD_BYTES, size / len(osts)
        for ost in osts:
            if ost in large and not big:
                continue  # an OST with large files is timed by them alone
            if big:
                large.add(ost)
            # a file waits for its slowest stripe: each of its OSTs is charged the file's time
            nbytes[ost] = nbytes.get(ost, 0.0) + share
            seconds[ost] = seconds.get(ost, 0.0) + io_time
            count[ost] = count.get(ost, 0) + 1
    if len(nbytes) < 2:
        return None
    osts = sorted(nbytes)
    bw = {o: nbytes[o] / seconds[o] for o in osts}
    compared = [o for o in osts if o in large]
    median = float(arrays.median([bw[o] for o in compared])) if len(compared) >= MIN_COMPARED else 0.0
    slow = [o for o in compared if median > 0 and bw[o] < OST_SLOW_RATIO * median]
    return {"ost": osts, "bandwidth": [_r(bw[o]) for o in osts], "bytes": [_r(nbytes[o]) for o in osts],
            "time_s": [_r(seconds[o]) for o in osts], "files": [count[o] for o in osts],
            "compared": compared, "median": _r(median), "min_file_bytes": MIN_RECORD_BYTES, "outliers": slow}


def top_files(files: list[metrics.FileSummary]) -> dict | None:
    """The TOP_FILES files with the most I/O time (cumulative over ranks)."""
    timed = sorted((f for f in files if f.stats.io_time > 0), key=lambda f: -f.stats.io_time)[:TOP_FILES]
    if not timed:
        return None
    # each file's figures are its lowest layer's (metrics.per_file): the file system's side, not the job's I/O time
    return {"basis": "summed over ranks, at the lowest layer that saw the file", "files": [
        {"path": f.path, "read_s": _r(f.stats.read_time), "write_s": _r(f.stats.write_time),
         "meta_s": _r(f.stats.meta_time), "bytes_read": int(f.stats.bytes_read),
         "bytes_written": int(f.stats.bytes_written), "ranks": int(f.ranks), "shared": bool(f.shared),
         "modules": list(f.modules)} for f in timed]}


def snapshot_tables(snap: dict) -> dict | None:
    """The settings of a node snapshot as tables; the first column names the object findings cite."""
    from advisor.collect import storage_devices

    tables = []
    host, cpu, mem = snap.get("host") or {}, snap.get("cpu") or {}, snap.get("memory") or {}
    node = [[k, str(v)] for k, v in (("hostname", host.get("hostname")), ("kernel", host.get("kernel")),
                                     ("CPU", cpu.get("model")), ("logical CPUs", cpu.get("logical_cpus")),
                                     ("threads per core", cpu.get("threads_per_core")),
                                     ("hyperthreading", cpu.get("hyperthreading")),
                                     ("dirty_ratio", mem.get("dirty_ratio")),
                                     ("dirty_background_ratio", mem.get("dirty_background_ratio"))) if v is not None]
    if node:
        tables.append({"title": "node", "columns": ["setting", "value"], "rows": node})
    columns = ("name", "read_ahead_kb", "max_sectors_kb", "max_hw_sectors_kb", "nr_requests", "queue_depth",
               "scheduler", "rotational")
    devices = [[str(d.get(c, "")) for c in columns] for d in storage_devices(snap)]
    if devices:
        tables.append({"title": "block devices", "columns": ["device", *columns[1:]], "rows": devices})
    lustre = snap.get("lustre") or {}
    params = [[str(k), str(v)] for k, v in sorted((lustre.get("params") or {}).items())]
    if params:
        tables.append({"title": "Lustre parameters (lctl get_param)", "columns": ["parameter", "value"],
                       "rows": params})
    layouts = [[str(d), _layout_text(v)] for d, v in sorted((lustre.get("layouts") or {}).items())
               if isinstance(v, dict)]
    if layouts:
        tables.append({"title": "default layouts (lfs getstripe -d)", "columns": ["directory", "layout"],
                       "rows": layouts})
    return {"tables": tables} if tables else None


def _layout_text(layout: dict) -> str:
    parts = [f"count {c.get('stripe_count')}, size {c.get('stripe_size')}" for c in layout.get("components", [])
             if isinstance(c, dict)]
    return "; ".join(parts) or str(layout.get("note", ""))
