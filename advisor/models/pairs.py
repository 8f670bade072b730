"""Measured fixes as paired rows: a plan before and after a fix, and the speedup verification measured.

A fix's speedup is learned from what verification itself measures (:func:`advisor.verify.measure`:
auto-ranged samples, the same cache policy, the sequential paired test): the ratio of the
baseline's time to the fixed plan's, in which much of the node's state cancels. A row holds the
two plans' *descriptors* (:func:`plan_features`: dimensionless shares and ratios of the whole plan,
so that they transfer across workloads) and the measured speedup with its 95 % interval.

Rows come from the designed campaign (:mod:`advisor.models.campaign`, family = a pattern family)
and from a site's own verifications (family ``site:...``, appended after every ``--verify``).
They are gzipped CSV (``pairs.csv.gz`` in a model's data directory) or plain CSV appended to.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from advisor.errors import InputError
from advisor.models.features import SMALL_CALL, features

PAIRS_FILE = "pairs.csv.gz"  # shipped (read-only) rows
SITE_PAIRS_FILE = "pairs.csv"  # rows a site's verifications append to
OTHER_MOUNT_FILE = "other-mount-pairs.csv.gz"
"""Fixes measured on another mount than the data directory's: never training rows, they calibrate
the interval of predictions for another mount (:func:`advisor.models.speedup.other_mount_calibration`)."""
OTHER_MOUNT_GLOB = "other-mount-pairs*.csv.gz"
"""Every such file of a data directory (one a mount: ``other-mount-pairs-cephfs.csv.gz`` beside the first)."""


def other_mount_files(directory: Path) -> list[Path]:
    """The files of fixes measured on other mounts in a data directory."""
    return sorted(Path(directory).glob(OTHER_MOUNT_GLOB))
PAIRS_VERSION = 3  # 2: what reaches the file system (log2_fs_request_pages), cpus; 3: log2_rank_phase_mib

DESCRIPTORS = ("log2_call_pages", "log2_calls_per_mib", "small_call_share", "log2_pieces_per_call",
               "read_fraction", "reread_fraction", "consecutive_fraction", "forward_fraction",
               "unaligned_fraction", "shared_fraction", "ranks_per_file", "io_rank_fraction",
               "fsync_per_write", "log2_write_bytes_per_fsync", "mpiio_fraction", "collective_fraction",
               "opens_per_call", "log2_nprocs", "log2_fs_request_pages", "log2_rank_phase_mib")
"""What a plan is, in shares and ratios (sizes only relative to a 4 KiB page): what the ranks ask
of the I/O interface, and what reaches the file system (``log2_fs_request_pages``, the requests
after collective buffering merged the pieces of each collective call; :mod:`fs_requests`). One
absolute size, log-scaled: the volume a rank moves in a phase (``log2_rank_phase_mib``), which
the per-phase fixed costs (open, close, barriers, the sync at close) are a share of: a fix that
removes per-request costs gains more the more a phase moves (a phase's time is about fixed +
requests x per-request + bytes x per-byte; the requests per byte are ``log2_calls_per_mib`` and
``log2_fs_request_pages``, so the volume is what carries the fixed share)."""
PAGE = 4096

COLUMNS = ("family", "workload", "fix", "transform", "speedup", "ci_low", "ci_high", "pairs", "verdict",
           "load1", "cache_policy", "fstype", "measured_at", "version",
           *(f"b_{d}" for d in DESCRIPTORS), *(f"a_{d}" for d in DESCRIPTORS), "cpus")
"""A row's columns; ``load1`` (the 1-minute load average while the fix was measured) over ``cpus``
(the measuring node's CPUs) is the load a measurement ran under (:mod:`advisor.models.speedup`)."""
READABLE_VERSIONS = ("1", "2", "3")  # rows of an earlier version lack what it added: read as unknown


def plan_features(plan, fstype: str = "") -> dict[str, float]:
    """The descriptors of a whole plan (every phase that moves data, taken together)."""
    from advisor.models.sources.plan import plan_parts
    from replay.edit import data_mask, ranks_per_file

    parts = list(plan_parts(plan, fstype).values())
    if not parts:
        return {d: math.nan for d in DESCRIPTORS}
    whole = parts[0]
    for part in parts[1:]:
        whole = whole.merged(part)
    f = features(whole)
    ops = {k: np.asarray(v) for k, v in plan.ops.items()}
    data = data_mask(ops)
    lengths = ops["length"][data]
    per_file = ranks_per_file({k: v[data] for k, v in ops.items()}, plan.nranks, plan.nfiles)
    used = per_file[per_file > 0]
    call_bytes = whole.bytes / whole.calls if whole.calls else math.nan
    fs_bytes, fs_count = fs_requests(plan)
    phases = len(np.unique(ops["phase"][data & (ops["length"] > 0)]))
    per_rank_phase = fs_bytes / (max(plan.nranks, 1) * phases) if phases else 0.0
    out = {
        "log2_rank_phase_mib": math.log2(per_rank_phase / 2**20) if per_rank_phase > 0 else math.nan,
        "log2_fs_request_pages": math.log2(fs_bytes / fs_count / PAGE) if fs_count and fs_bytes else math.nan,
        "log2_call_pages": math.log2(call_bytes / PAGE) if call_bytes > 0 else math.nan,
        "log2_calls_per_mib": math.log2(whole.calls / (whole.bytes / 2**20)) if whole.bytes else math.nan,
        "small_call_share": float((lengths < SMALL_CALL).mean()) if len(lengths) else math.nan,
        "ranks_per_file": float(used.mean() / max(plan.nranks, 1)) if len(used) else math.nan,
    }
    for name in DESCRIPTORS:
        if name not in out:
            out[name] = f.get(name, math.nan)
    if math.isnan(out["log2_write_bytes_per_fsync"]) and not whole.bytes_written:
        out["log2_write_bytes_per_fsync"] = math.nan
    return {k: (float(v) if v is not None and math.isfinite(v) else math.nan) for k, v in out.items()}


def fs_requests(plan) -> tuple[float, float]:
    """(bytes, requests) the file system receives from a plan's data operations.

    An independent piece (POSIX, STDIO, independent MPI-IO) is one request. The pieces of one
    collective call (the k-th collective call of every rank on a file in a phase) are what
    two-phase I/O merges: their contiguous extents, split among the aggregators' file domains
    (``cb_nodes``, ROMIO's default on one node is one) and into ``cb_buffer_size`` chunks
    (16 MiB by default), each chunk one request. A collective job's requests are the
    aggregators', not the application's calls; what a fix changes is that pattern."""
    from replay.edit import data_mask
    from replay.plan import MPIIO_COLL

    ops = {k: np.asarray(v) for k, v in plan.ops.items()}
    data = data_mask(ops) & (ops["length"] > 0)
    coll = data & (ops["api"] == MPIIO_COLL)
    independent = data & ~coll
    total = float(ops["length"][data].sum())
    count = float(independent.sum())
    if coll.any():
        count += _collective_requests(ops, coll, plan)
    return total, count


def _collective_requests(ops: dict, coll: np.ndarray, plan) -> float:
    idx = np.flatnonzero(coll)
    rank, phase, fid = ops["rank"][idx], ops["phase"][idx], ops["file"][idx]
    batch = ops["batch"][idx]
    stream = (phase.astype(np.int64) << 40) | (fid.astype(np.int64) << 20) | rank.astype(np.int64)
    order = np.lexsort((idx, stream))  # each rank's collective pieces on a file in a phase, in order
    s, b = stream[order], batch[order]
    new_stream = np.concatenate([[True], s[1:] != s[:-1]])
    new_call = new_stream | np.concatenate([[True], (b[1:] < 0) | (b[1:] != b[:-1])])
    calls = np.cumsum(new_call)
    first_call = np.maximum.accumulate(np.where(new_stream, calls, 0))
    call = np.empty(len(idx), np.int64)
    call[order] = calls - first_call  # the k-th collective call of the rank's stream
    group = (phase.astype(np.int64) << 40) | (fid.astype(np.int64) << 24) | call
    off, ln = ops["offset"][idx].astype(np.int64), ops["length"][idx].astype(np.int64)
    order = np.lexsort((off, group))
    g, o, n = group[order], off[order], ln[order]
    new_group = np.concatenate([[True], g[1:] != g[:-1]])
    starts = np.flatnonzero(new_group)
    group_end = np.maximum.reduceat(o + n, starts)
    group_start = np.minimum.reduceat(o, starts)
    members = np.diff(np.append(starts, len(g)))
    base = (np.cumsum(new_group) - 1) * (int((o + n).max()) + 1)  # each group above the previous ones
    end = np.concatenate([[0], np.maximum.accumulate(base + o + n)[:-1]]) - base
    extent_start = new_group | (o > end)  # a gap (or another call) starts a new extent
    ext = np.flatnonzero(extent_start)
    ext_len = np.maximum.reduceat(o + n, ext) - o[ext]
    aggregators = max(1, min(int(plan.hints.get("cb_nodes", 1) or 1), plan.nranks))
    buffer = int(plan.hints.get("cb_buffer_size", CB_BUFFER) or CB_BUFFER)
    domain = np.repeat(np.ceil((group_end - group_start) / aggregators), members)[ext]
    chunk = np.maximum(np.minimum(domain, buffer), 1)
    return float(np.ceil(ext_len / chunk).sum())


CB_BUFFER = 16 << 20  # ROMIO's default cb_buffer_size


def fix_text(fix: dict) -> str:
    return json.dumps(fix, sort_keys=True, separators=(",", ":"))


def transform_name(fix: dict | list) -> str:
    """A fix's transform, or a combination's joined by '+' ("coalesce+collective")."""
    return "+".join(str(f.get("transform", "")) for f in (fix if isinstance(fix, list) else [fix]))


def row(family: str, workload: str, fix: dict, before: dict, after: dict, verification,
        load1: float | None = None) -> dict:
    """One CSV row of a measured fix (a :class:`advisor.verification.Verification` that measured)."""
    ci = verification.ci95 or [math.nan, math.nan]
    out = {"family": family, "workload": workload, "fix": fix_text(fix), "transform": transform_name(fix),
           "speedup": f"{verification.speedup:.6g}", "ci_low": _num(ci[0]), "ci_high": _num(ci[1]),
           "pairs": verification.pairs, "verdict": verification.verdict,
           "load1": _num(os.getloadavg()[0] if load1 is None else load1),
           "cache_policy": verification.cache_policy or "", "fstype": verification.fstype or "",
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "version": PAIRS_VERSION,
           "cpus": os.cpu_count() or ""}
    out.update({f"b_{k}": _num(before.get(k)) for k in DESCRIPTORS})
    out.update({f"a_{k}": _num(after.get(k)) for k in DESCRIPTORS})
    return out


def _num(x) -> str:
    return "" if x is None or not math.isfinite(float(x)) else f"{float(x):.6g}"


def append(path: Path, rows: list[dict]) -> None:
    """Append rows to a plain CSV (its header first when new); a file of an earlier version gets the
    columns it has; refuses another layout of columns."""
    path = Path(path)
    new = not path.exists() or path.stat().st_size == 0
    header = COLUMNS
    if not new:
        with open(path, newline="") as fh:
            header = tuple(next(csv.reader(fh), []))
        if not set(header) <= set(COLUMNS) or not set(header) >= set(COLUMNS[:14]):
            raise InputError(str(path), "has other columns than this ioadvisor writes for measured fixes")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=header, extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerows(rows)


def write_gz(path: Path, rows: list[dict]) -> None:
    """Rows as a gzipped CSV with reproducible bytes (no time stamp in the gzip header)."""
    from advisor.models.replays import write

    write(path, rows, COLUMNS)


def read(path: Path) -> list[dict]:
    """Rows of a pairs file (gzipped or plain CSV); InputError naming the file otherwise."""
    path = Path(path)
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"not a readable CSV of measured fixes: {exc}") from None
    for r in rows:
        if r.get("version") not in READABLE_VERSIONS or not r.get("speedup"):
            raise InputError(str(path), f"not measured fixes of version {PAIRS_VERSION} "
                                        f"(a row of {r.get('workload', '?')})")
    return rows


def descriptors(r: dict, side: str) -> dict[str, float]:
    """One side ('b' before, 'a' after) of a row as numbers (NaN where empty)."""
    return {k: float(r[f"{side}_{k}"]) if r.get(f"{side}_{k}") else math.nan for k in DESCRIPTORS}
