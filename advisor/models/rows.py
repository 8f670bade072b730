"""Training rows from what `ioadvisor train` is given: calibration data, IOR logs, Darshan logs.

- a calibration directory (``calibration.csv`` or a shipped ``calibration.csv.gz``, with
  ``mount.json``): one row per timed phase,
  features as measured, rows of one pattern in one group;
- an IOR output: one row per test and operation (IOR's mean bandwidth);
- a Darshan log or parser dump: one row per direction that moved at least
  :data:`MIN_BYTES` (the slowest rank's time from the timing counters, which never
  enter the features).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from advisor.errors import AdvisorError, InputError
from advisor.ingest.ior.model import IorProfile
from advisor.models.calibrate import DATA_FILE, MOUNT_FILE, SHIPPED_DATA_FILE, Dataset
from advisor.models import pairs, replays
from advisor.models.design import KEY_GROUP
from advisor.models.features import FEATURES_VERSION, features, names
from advisor.models.train import TrainingSet

PAIRS_NAMES = (pairs.PAIRS_FILE, pairs.SITE_PAIRS_FILE)
MIN_BYTES = 1 << 20  # a direction that moved less says nothing about bandwidth
MIN_SECONDS = 1e-4


@dataclass
class Collected:
    """Rows gathered so far, where they came from, and what was skipped and why."""

    rows: list[dict[str, float]] = field(default_factory=list)
    log10_mib_s: list[float] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    bytes: list[float] = field(default_factory=list)  # bytes of each row (NaN: not a calibration phase)
    origins: dict[str, int] = field(default_factory=dict)
    identities: list[dict] = field(default_factory=list)  # of calibration data sets
    calibrations: list[dict] = field(default_factory=list)  # what each calibration measured, where
    fstypes: dict[str, int] = field(default_factory=dict)  # of logs
    skipped: list[str] = field(default_factory=list)
    replayed: list = field(default_factory=list)  # advisor.models.replays.ReplayedFix: measured fixes
    pairs: list[dict] = field(default_factory=list)  # advisor.models.pairs rows: fixes measured as verify does
    other_mount: list[dict] = field(default_factory=list)  # fixes measured on another mount (calibration only)

    def add(self, feats: dict[str, float], mib_s: float, group: str, nbytes: float = math.nan) -> None:
        self.rows.append(feats)
        self.log10_mib_s.append(math.log10(mib_s))
        self.groups.append(group)
        self.bytes.append(nbytes)

    def training_set(self) -> TrainingSet:
        from advisor.models.features import matrix

        feature_names = names()
        groups = np.asarray(self.groups)
        return TrainingSet(matrix(self.rows, feature_names), np.asarray(self.log10_mib_s), feature_names,
                           groups, dict(self.origins), replays.weights(groups))


def collect(paths: list[str], with_replays: bool = True) -> Collected:
    """Rows from every path (files, calibration directories, directories of logs); a calibration
    directory's replayed fixes only `with_replays`."""
    out = Collected()
    for path in paths:
        p = Path(path)
        if p.name == replays.REPLAYS_FILE and p.is_file():
            replays.collect(p, out)
        elif p.name in PAIRS_NAMES and p.is_file():
            _pairs(p, out)
        elif any((p / name).exists() for name in (MOUNT_FILE, DATA_FILE, SHIPPED_DATA_FILE)):
            _calibration(p, out)
            if with_replays and (p / replays.REPLAYS_FILE).exists():
                replays.collect(p / replays.REPLAYS_FILE, out)
            for name in PAIRS_NAMES:
                if (p / name).is_file():
                    _pairs(p / name, out)
            for other in pairs.other_mount_files(p):
                out.other_mount += pairs.read(other)
        elif p.is_dir():
            for file in _files(p):
                if file.name in PAIRS_NAMES:
                    _pairs(file, out)
                else:
                    _log(file, out, quiet=True)
        elif p.exists():
            _log(p, out, quiet=False)
        else:
            raise InputError(str(p), "no such file or directory")
    return out


def _pairs(path: Path, out: Collected) -> None:
    """Measured fixes (the campaign's, a site's verifications): the speedup model's rows."""
    rows = pairs.read(path)
    out.pairs += rows
    out.origins[f"measured fixes {path}"] = len(rows)


def _files(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        found += [Path(dirpath) / f for f in sorted(filenames)]
    return found


def _calibration(path: Path, out: Collected) -> None:
    data = Dataset(path)
    meta = data.meta()
    if meta.get("features_version") != FEATURES_VERSION:
        raise InputError(str(path), f"calibration features are version {meta.get('features_version')}, "
                                    f"this ioadvisor computes version {FEATURES_VERSION}: calibrate again")
    out.identities.append(meta.get("identity") or {})
    n, caches = 0, set()
    for row in data.rows():
        caches.add(row.get("cache_policy") or "")
        try:
            mib_s, nbytes = float(row["mib_s"]), float(row["bytes"])
            feats = {k: float(row[f"f_{k}"]) if row.get(f"f_{k}") not in (None, "") else math.nan
                     for k in names()}
        except (KeyError, ValueError, TypeError):  # e.g. the last line of a killed calibration
            out.skipped.append(f"{path}: a damaged row ({row.get('key', '?')})")
            continue
        if mib_s > 0 and math.isfinite(mib_s):
            out.add(feats, mib_s, f"{KEY_GROUP}{row['key']}", nbytes)
            n += 1
    out.origins[f"calibration {path}"] = n
    out.calibrations.append({"path": str(path), "created": meta.get("created"), "settings": meta.get("settings"),
                             "runs": meta.get("runs", []),
                             "node": _node(meta.get("snapshot") or {}), "cache_policy": sorted(caches - {""})})


def _node(snapshot: dict) -> dict:
    """The few facts of an `ioadvisor collect` snapshot that say what machine measured."""
    host, cpu, mem = snapshot.get("host") or {}, snapshot.get("cpu") or {}, snapshot.get("memory") or {}
    return {"hostname": host.get("hostname"), "kernel": host.get("kernel"), "os": host.get("os"),
            "cpu": cpu.get("model"), "logical_cpus": cpu.get("logical_cpus"),
            "memory_bytes": mem.get("total_bytes")}


def _log(path: Path, out: Collected, quiet: bool) -> None:
    from advisor.ingest import detect, load_profile

    if quiet:
        try:
            detect(path)
        except InputError:
            return  # READMEs, scripts, per-rank CSVs next to the logs
    try:
        profile = load_profile(path)
    except AdvisorError as exc:
        if not quiet:
            raise
        out.skipped.append(str(exc))
        return
    before = len(out.rows)
    if isinstance(profile, IorProfile):
        _ior(profile, path, out)
        kind = "IOR"
    else:
        _darshan(profile, path, out)
        kind = "Darshan"
    added = len(out.rows) - before
    if added:
        out.origins[f"{kind} {path}"] = added
    else:
        out.skipped.append(f"{path}: no {kind} phase with a measured bandwidth")


def _ior(profile, path: Path, out: Collected) -> None:
    from advisor.models.sources.ior import ior_measured_mib_s, ior_parts

    for test in profile.run.tests:
        for op, part in ior_parts(test).items():
            mib_s = ior_measured_mib_s(test, op)
            if mib_s:
                out.add(features(part), mib_s, f"ior:{path}:{test.test_id}")


def _darshan(profile, path: Path, out: Collected) -> None:
    from advisor.models.sources.darshan import measured_parts, profile_parts

    parts = profile_parts(profile)
    for direction, measured in measured_parts(profile).items():
        if measured.bytes >= MIN_BYTES and measured.seconds >= MIN_SECONDS:
            out.add(features(parts[direction]), measured.mib_s, f"darshan:{path}")
            fstype = parts[direction].fstype or "unknown"
            out.fstypes[fstype] = out.fstypes.get(fstype, 0) + 1
