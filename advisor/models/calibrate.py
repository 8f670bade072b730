"""Measure the sweep's patterns on a mount with the replayer: the training data of a model.

Each :class:`advisor.models.design.Point` becomes a replay plan (through the replayer's
own IOR plan source and transforms), points with the same rank count run together in
one MPI job (interleaved A B C A B C ..., the page cache dropped before every run when
permitted), and every phase that moves data becomes one row: its features, its median
time over the repetitions (the slowest rank's), its bandwidth. Rows are appended to
``DATA/calibration.csv`` after every batch, so an interrupted or budget-limited
calibration resumes where it stopped; ``DATA/mount.json`` records the mount's identity
and an ``ioadvisor collect`` snapshot, and a resume on another mount is refused.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import InputError
from advisor.models import design as sweep
from advisor.models import mount
from advisor.models.features import FEATURES_VERSION, features, names
from advisor.models.sources.plan import plan_parts
from advisor.units import MiB
from replay.layout import LayoutError, backend_for, can_set_layout
from replay.layout import wishes as layout_wishes

DATA_FILE, MOUNT_FILE, FAILED_FILE = "calibration.csv", "mount.json", "failed.csv"
SHIPPED_DATA_FILE = DATA_FILE + ".gz"  # a finished calibration, compressed to ship: read, never resumed
SCHEMA = "ioadvisor/calibration/v1"
BATCH = 6  # points per MPI job: fewer launches, yet rows reach the disk often
FACTORS = ("op", "transfer", "layout", "nprocs", "api", "fsync", "order", "aligned", "volume", "stripe_count",
           "aggregators")
COLUMNS = ("key", "phase", "direction", *FACTORS, "bytes", "seconds", "mib_s", "runs_s", "cache_policy",
           "features_version", *(f"f_{n}" for n in names()), "fstype", "source", "host", "measured_at",
           "load1")  # the node's 1-minute load average when the batch ended: a busy node measures slower
STRIPE_SIZE = 1 << 20


@dataclass
class Progress:
    """What a calibration did so far (passed to the progress callback after every batch)."""

    planned: int  # points in the design
    done_before: int  # points already in the data when this run started
    measured: int = 0
    rows: int = 0
    failed: list[str] = field(default_factory=list)  # "key: reason"
    elapsed_s: float = 0.0
    budget_s: float = 0.0
    cache_policy: str = ""
    stopped: str = ""  # why the sweep ended before the design did


def plan_for(point: sweep.Point, fstype: str):
    """The replay plan of one sweep point (the replayer's IOR source, then its transforms)."""
    from advisor.ingest.ior.model import FPP, SHARED, IorParams, IorProfile, IorRun, IorTest
    from advisor.profile import JobInfo, Provenance
    from advisor.replay_plan import build_plan
    from replay.collective import aggregate, collective
    from replay.transforms import stripe

    xfer = point.transfer_bytes
    # a file view is what the collective fix makes of a POSIX job: its syncs stay in the write phase
    params = IorParams(
        api="POSIX" if point.api in ("posix", "collective-view") else "MPIIO",
        access=FPP if point.layout == "fpp" else SHARED,
        collective=point.api == "collective", segments=1, tasks=point.nprocs, repetitions=1,
        transfer_size=xfer, block_size=xfer * point.requests_per_rank, write=point.op == "write-read",
        read=True, keep_file=True, fsync=point.fsync == "at-close",
        fsync_per_write=point.sync_every > 0, random_offsets=point.order == "random",
        test_file="calibration")
    run = IorRun(format="ior-json", tests=[IorTest(params=params)])
    profile = IorProfile(source=Provenance(f"<calibration {point.key}>", "ior-json", "ioadvisor calibrate"),
                         job=JobInfo(nprocs=point.nprocs), run=run)
    plan = _syncs(_holes(build_plan(profile, source="ior", scale=1.0), point), point)
    if point.api == "collective-view":
        plan = collective(plan, cb_nodes=point.aggregators or None)
    elif point.api == "collective" and point.aggregators:
        plan = plan.replace(hints=dict(plan.hints, cb_nodes=str(point.aggregators)))
    elif point.aggregators:
        plan = aggregate(plan, point.aggregators)
    if point.stripe_count and can_set_layout(fstype):
        plan = stripe(plan, point.stripe_count, STRIPE_SIZE)
    return plan


def _holes(plan, point: sweep.Point):
    """Order ``holes``: every offset doubled, leaving a transfer-sized gap after each transfer (one
    segment: each rank's block starts at twice its offset too, so ranks' data never overlap)."""
    if point.order != "holes":
        return plan
    from advisor.replay_plan.stream import prefill_bytes

    ops = dict(plan.ops, offset=plan.ops["offset"] * 2)
    files = dict(plan.files, prefill=prefill_bytes(ops, plan.nfiles))
    return plan.replace(ops=ops, files=files)


def _syncs(plan, point: sweep.Point):
    """IOR -Y's fsync after every write thinned to one every `sync_every` writes of each rank's
    stream, or doubled (``twice-per-write``)."""
    import numpy as np

    from replay.edit import merge, take
    from replay.plan import FSYNC

    ops = plan.ops
    fs = np.flatnonzero(ops["op"] == FSYNC)
    if point.fsync == "twice-per-write":
        return plan.replace(ops=merge(ops, take(ops, fs), fs + 0.5))
    if point.sync_every <= 1 or not len(fs):
        return plan
    stream = ops["rank"][fs].astype(np.int64) * (1 << 32) + ops["file"][fs]
    order = np.lexsort((fs, stream))
    first = np.concatenate([[True], stream[order][1:] != stream[order][:-1]])
    start = np.maximum.accumulate(np.where(first, np.arange(len(fs)), 0))
    nth = np.empty(len(fs), np.int64)
    nth[order] = np.arange(len(fs)) - start + 1  # 1, 2, ... within each rank's stream on a file
    keep = np.ones(len(ops["op"]), bool)
    keep[fs[nth % point.sync_every != 0]] = False
    return plan.replace(ops=take(ops, keep))


def stripe_counts(snapshot: dict, fstype: str, target: Path | None = None) -> list[int]:
    """Stripe counts to sweep: 1, 2, 4 ... up to the storage targets (at most 16) where layouts
    can be set (Lustre OSTs from the snapshot, else the file system's own list: CephFS OSDs), else none."""
    if not can_set_layout(fstype):
        return [0]
    osts = 0
    for fs in (snapshot.get("lustre") or {}).get("filesystems", []) or []:
        osts = max(osts, len(fs.get("osts", []) or []))
    if not osts and target is not None and (backend := backend_for(target)) is not None:
        try:
            osts = len(backend.targets())
        except LayoutError:
            osts = 0
    top = min(max(osts, 1), 16)
    return sorted({1 << k for k in range(5) if 1 << k <= top} | {top})


class Dataset:
    """``DATA/``: calibration.csv (append-only rows) and mount.json (identity + snapshot).

    A directory holding ``calibration.csv.gz`` instead (the default model's data) is read-only.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.csv = self.path / DATA_FILE
        self.shipped_csv = self.path / SHIPPED_DATA_FILE
        self.meta_path = self.path / MOUNT_FILE
        self.failed_path = self.path / FAILED_FILE

    def open(self, identity: dict, snapshot: dict, settings: dict) -> None:
        """Create the data set, or check that an existing one was measured on this mount."""
        if self.path.exists() and not self.path.is_dir():
            raise InputError(str(self.path), "exists and is not a calibration directory")
        if self.shipped_csv.exists() and not self.csv.exists():
            raise InputError(str(self.path), f"holds a finished calibration ({SHIPPED_DATA_FILE}): "
                                             "calibrate into a new directory")
        if self.meta_path.exists():
            meta = self.meta()
            if meta.get("features_version") != FEATURES_VERSION:
                raise InputError(str(self.path), f"holds features of version {meta.get('features_version')}, "
                                 f"this ioadvisor computes version {FEATURES_VERSION}: calibrate into a new directory")
            diff = mount.differences(meta.get("identity", {}), identity)
            if diff:
                raise InputError(str(self.path), "was measured on another mount (" + "; ".join(diff)
                                 + "): calibrate into a new directory")
            self._write_meta({**meta, "runs": [*meta.get("runs", []), _run_record(settings)]})
            return
        self.path.mkdir(parents=True, exist_ok=True)
        self._write_meta({"schema": SCHEMA, "features_version": FEATURES_VERSION, "identity": identity,
                          "settings": settings, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                          "runs": [_run_record(settings)], "snapshot": snapshot})

    def _write_meta(self, doc: dict) -> None:
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        tmp.replace(self.meta_path)

    def meta(self) -> dict:
        try:
            doc = json.loads(self.meta_path.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(str(self.meta_path), f"not a calibration record: {exc}") from None
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise InputError(str(self.meta_path), f"not a calibration record (schema {SCHEMA} expected)")
        return doc

    def done_keys(self) -> set[str]:
        """Points measured, and points that failed (delete failed.csv to try those again)."""
        failed = set()
        if self.failed_path.exists():
            with open(self.failed_path, newline="") as fh:
                failed = {row["key"] for row in csv.DictReader(fh)}
        return {row["key"] for row in self.rows()} | failed

    def fail(self, key: str, reason: str) -> None:
        new = not self.failed_path.exists()
        with open(self.failed_path, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=("key", "reason"))
            if new:
                writer.writeheader()
            writer.writerow({"key": key, "reason": reason})

    def rows(self) -> list[dict[str, str]]:
        if self.csv.exists():
            with open(self.csv, newline="") as fh:
                return list(csv.DictReader(fh))
        if self.shipped_csv.exists():
            try:
                with gzip.open(self.shipped_csv, "rt", newline="") as fh:
                    return list(csv.DictReader(fh))
            except (OSError, EOFError, UnicodeDecodeError) as exc:
                raise InputError(str(self.shipped_csv), f"not a readable gzip CSV: {exc}") from None
        return []

    def append(self, rows: list[dict]) -> None:
        new = not self.csv.exists()
        if not new:
            with open(self.csv, newline="") as fh:
                header = next(csv.reader(fh), [])
            if tuple(header) != COLUMNS:  # rows would land under another column's name
                raise InputError(str(self.csv), "has other columns than this ioadvisor writes: "
                                                "calibrate into a new directory")
        with open(self.csv, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            if new:
                writer.writeheader()
            writer.writerows(rows)
            fh.flush()


def _run_record(settings: dict) -> dict:
    """When a calibration run (the first or a resumption) started, its settings, and how busy the node was."""
    return {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "settings": settings,
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


def pending(points: list[sweep.Point], done: set[str]) -> Iterator[sweep.Point]:
    """The sweep's order without the points already measured."""
    for point in sweep.coarse_to_fine(points):
        if point.key not in done:
            yield point


def _batch(order: Iterator[sweep.Point], held: list[sweep.Point]) -> list[sweep.Point]:
    """The next points to run together: the first pending one and the next ones in order with
    the same rank count (points of other rank counts wait, in order, in `held`)."""
    batch: list[sweep.Point] = []
    for point in held[:]:
        if not batch or point.nprocs == batch[0].nprocs:
            batch.append(point)
            held.remove(point)
        if len(batch) == BATCH:
            return batch
    for point in order:
        if not batch or point.nprocs == batch[0].nprocs:
            batch.append(point)
        else:
            held.append(point)
        if len(batch) == BATCH or len(held) > 4 * BATCH:
            break
    return batch


def calibrate(target: Path, out: Path, max_np: int, budget_s: float, repeat: int = 3,
              on_progress: Callable[[Progress], None] | None = None) -> Progress:
    """Measure sweep points on `target` until the design or the time budget is exhausted."""
    from advisor.collect import collect
    from replay import safety

    try:
        target = safety.check_target(target)
    except safety.SafetyError as exc:
        raise InputError(str(target), str(exc).split(": ", 1)[-1]) from None
    ident = mount.identity(target)
    snapshot = collect([str(target)])
    data = Dataset(out)
    data.open(ident, snapshot, {"max_np": max_np, "repeat": repeat, "budget_min": round(budget_s / 60, 1)})
    points = sweep.design(max_np, stripe_counts(snapshot, ident["fstype"], target))
    done = data.done_keys()
    progress = Progress(planned=len(points), done_before=len(done & {p.key for p in points}),
                        budget_s=budget_s)
    order, held = pending(points, done), []
    started, per_batch = time.monotonic(), 0.0
    while True:
        progress.elapsed_s = time.monotonic() - started
        if progress.measured and progress.elapsed_s + per_batch > budget_s:
            progress.stopped = f"time budget of {budget_s / 60:g} min reached"
            break
        batch = _batch(order, held)
        if not batch:
            break
        t0 = time.monotonic()
        rows = _measure_isolating(batch, target, ident, repeat, progress, data)
        data.append(rows)
        per_batch = max(per_batch, time.monotonic() - t0) if not progress.measured else \
            0.5 * per_batch + 0.5 * (time.monotonic() - t0)
        progress.measured += len(batch)
        progress.rows += len(rows)
        progress.elapsed_s = time.monotonic() - started
        if on_progress:
            on_progress(progress)
    return progress


class ReplayFailed(Exception):
    """The MPI job of a batch failed (its line from the executor or mpiexec)."""


def _measure_isolating(batch: list[sweep.Point], target: Path, ident: dict, repeat: int,
                       progress: Progress, data: Dataset) -> list[dict]:
    """A batch's rows; when its MPI job fails, each point alone, so one pattern that breaks
    the replayer costs only itself (recorded in failed.csv and skipped from then on)."""
    try:
        return measure_batch(batch, target, ident, repeat, progress)
    except ReplayFailed as exc:
        if len(batch) == 1:
            data.fail(batch[0].key, str(exc))
            progress.failed.append(f"{batch[0].key}: {exc}")
            return []
    rows = []
    for point in batch:
        rows += _measure_isolating([point], target, ident, repeat, progress, data)
    return rows


def measure_batch(batch: list[sweep.Point], target: Path, ident: dict, repeat: int,
                  progress: Progress) -> list[dict]:
    """Run one batch of points (one MPI job) and turn every timed phase into a row."""
    from replay import safety
    from replay.launch import LaunchError, LaunchOptions, run_plans

    plans = {}
    for point in batch:
        try:  # layouts made valid on the target (CephFS stripe units and object sizes)
            plans[point.key] = layout_wishes.prepare(plan_for(point, ident["fstype"]), target)
        except (ValueError, LayoutError) as exc:
            progress.failed.append(f"{point.key}: {exc}")
    if not plans:
        return []
    cache = "drop" if safety.can_drop_caches() else "neighbour"
    try:
        with safety.Scratch(target) as scratch:
            safety.check_space(scratch.path, max(p.planned_bytes() for p in plans.values()))
            dirs = [plan.save(scratch.path / f"plan{i}") for i, plan in enumerate(plans.values())]
            labels = [f"p{i}" for i in range(len(plans))]
            result = run_plans(scratch, dirs, labels, LaunchOptions(np=batch[0].nprocs, repeat=repeat,
                                                                    cache=cache))
    except safety.SafetyError as exc:
        raise InputError(str(target), f"calibration replay refused: {exc}") from None
    except LaunchError as exc:
        raise ReplayFailed(str(exc)) from None
    progress.cache_policy = result.get("cache_policy", "")
    by_point = {p.key: p for p in batch}
    rows = []
    for (key, plan), variant in zip(plans.items(), result["variants"]):
        rows += _rows(by_point[key], plan, variant, ident, result.get("cache_policy", ""))
    return rows


def _rows(point: sweep.Point, plan, variant: dict, ident: dict, cache: str) -> list[dict]:
    """One row per phase that moves data: features of the phase and its median time."""
    out = []
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for phase, part in plan_parts(plan, ident["fstype"]).items():
        times = [run["phases"][phase]["max_s"] for run in variant["runs"] if run]
        seconds = statistics.median(times) if times else math.nan
        if not seconds > 0:
            continue
        row = {"key": point.key, "phase": phase, "direction": "read" if part.bytes_read else "write",
               **{f: getattr(point, f) for f in FACTORS}, "bytes": int(part.bytes),
               "seconds": f"{seconds:.6g}", "mib_s": f"{part.bytes / seconds / MiB:.6g}",
               "runs_s": " ".join(f"{t:.6g}" for t in times), "cache_policy": cache,
               "features_version": FEATURES_VERSION,
               "fstype": ident["fstype"], "source": ident["source"], "host": ident["host"], "measured_at": stamp,
               "load1": f"{os.getloadavg()[0]:.2f}"}
        row.update({f"f_{k}": ("" if math.isnan(v) else f"{v:.6g}") for k, v in features(part).items()})
        out.append(row)
    return out
