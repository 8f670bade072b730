"""Measured fixes as training data: the phases a job's replay took before and after each fix.

``advisor.models.check`` (``bench/models.py``, or a site checking its model on its own logs)
replays a job's plan and each fixed plan. Every phase of both is a row like a calibration
phase (its features, bytes, and the median over the samples of its slowest rank's time per
pass), and every fix is a measured speedup. In a model's data directory they are
``replays.csv.gz``; rows of one *workload* share a group, a workload being every case whose
baseline replays the same phases (the same IOR run logged with another verbosity is one
workload), so that cross-validation never predicts a workload with a model that saw it.

The measured speedups also calibrate the predicted interval (:func:`calibrate`): each fix is
predicted out of fold (by a model that never saw its workload), and the interval is widened
until it holds 80 % of them, as :mod:`advisor.models.conformal` does with calibration pairs.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from advisor.errors import InputError
from advisor.models import conformal
from advisor.models.features import FEATURES_VERSION, features, names

REPLAYS_FILE = "replays.csv.gz"
REPLAY_GROUP = "replay:"  # training rows of one workload share the group REPLAY_GROUP + its name
COLUMNS = ("workload", "case", "fix", "variant", "phase", "bytes", "seconds", "mib_s", "speedup", "verdict",
           "features_version", *(f"f_{n}" for n in names()))


def phase_rows(plan, variant: dict, fstype: str) -> list[dict]:
    """Every phase of `plan` that moved data: its features, bytes and the median over the samples
    of its slowest rank's seconds per pass (the executor's record of that plan: `variant`)."""
    from advisor.models.sources.plan import plan_parts

    runs = [r for r in variant.get("runs", []) if r and r.get("phases")]
    out = []
    for phase, part in plan_parts(plan, fstype).items():
        times = [r["phases"][phase]["max_s"] for r in runs if phase < len(r["phases"])]
        seconds = statistics.median(times) if times else math.nan
        if seconds > 0:
            out.append({"phase": phase, "bytes": part.bytes, "seconds": seconds, "features": features(part)})
    return out


def workloads(cases: dict[str, list[dict]]) -> dict[str, str]:
    """case -> its workload: the first case (by name) whose baseline phases are the same."""
    first: dict[tuple, str] = {}
    out = {}
    for case in sorted(cases):
        phases = cases[case]
        sig = tuple((round(p["bytes"]), *(round(v, 3) if math.isfinite(v) else None
                                          for v in p["features"].values())) for p in phases)
        out[case] = first.setdefault(sig, case)
    return out


def table(comparisons: list) -> list[dict]:
    """CSV rows of measured fixes (advisor.models.check.Comparison with phases): each case's
    baseline phases once, each fix's phases with its measured speedup."""
    import json

    measured = [c for c in comparisons if c.phases and c.measured]
    baselines = {}
    for c in measured:
        baselines.setdefault(c.job, c.phases["baseline"])
    work = workloads(baselines)
    rows = []
    for case, phases in baselines.items():
        rows += [_row(work[case], case, "", "baseline", p) for p in phases]
    for c in measured:
        fix = json.dumps(c.fix, sort_keys=True, separators=(",", ":"))
        rows += [_row(work[c.job], c.job, fix, "fixed", p, c.measured, c.verdict) for p in c.phases["fixed"]]
    return rows


def _row(workload: str, case: str, fix: str, variant: str, p: dict, speedup: float | None = None,
         verdict: str = "") -> dict:
    row = {"workload": workload, "case": case, "fix": fix, "variant": variant, "phase": p["phase"],
           "bytes": int(p["bytes"]), "seconds": f"{p['seconds']:.6g}",
           "mib_s": f"{p['bytes'] / p['seconds'] / 2**20:.6g}",
           "speedup": "" if speedup is None else f"{speedup:.6g}", "verdict": verdict,
           "features_version": FEATURES_VERSION}
    row.update({f"f_{k}": ("" if not math.isfinite(v) else f"{v:.6g}") for k, v in p["features"].items()})
    return row


def write(path: Path, rows: list[dict], columns: tuple[str, ...] = COLUMNS) -> None:
    """`rows` as a gzipped CSV (reproducible bytes: no time stamp in the gzip header)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(text.getvalue().encode())


@dataclass
class ReplayedFix:
    """One measured fix in a training set: its speedup and the rows of both plans' phases."""

    workload: str
    case: str
    fix: str
    speedup: float
    baseline: list[int] = field(default_factory=list)  # row indices
    fixed: list[int] = field(default_factory=list)


def collect(path: Path, out) -> None:
    """Rows of a replays file into `out` (advisor.models.rows.Collected), and its fixes."""
    try:
        with gzip.open(path, "rt", newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"not a readable gzip CSV: {exc}") from None
    baselines: dict[str, list[int]] = {}
    fixes: dict[tuple[str, str], ReplayedFix] = {}
    for row in rows:
        try:
            if int(row["features_version"]) != FEATURES_VERSION:
                raise InputError(str(path), f"replayed phases of features version {row['features_version']}, "
                                            f"this ioadvisor computes version {FEATURES_VERSION}")
            mib_s, nbytes = float(row["mib_s"]), float(row["bytes"])
            feats = {k: float(row[f"f_{k}"]) if row.get(f"f_{k}") else math.nan for k in names()}
        except (KeyError, ValueError, TypeError):
            raise InputError(str(path), f"a damaged row ({row.get('case', '?')})") from None
        index = len(out.rows)
        out.add(feats, mib_s, REPLAY_GROUP + row["workload"], nbytes)
        if row["variant"] == "baseline":
            baselines.setdefault(row["case"], []).append(index)
        else:
            fix = fixes.setdefault((row["case"], row["fix"]), ReplayedFix(row["workload"], row["case"], row["fix"],
                                                                         float(row["speedup"])))
            fix.fixed.append(index)
    for fix in fixes.values():
        fix.baseline = baselines.get(fix.case, [])
    out.replayed += [f for f in fixes.values() if f.baseline and f.fixed]
    out.origins[f"replayed fixes {path}"] = len(rows)


def weights(groups: np.ndarray) -> np.ndarray | None:
    """Each row's weight in the fit: the replayed phases weigh as much together as all the other
    rows (None when there are not both). A few hundred replayed phases beside thousands of
    calibration phases would otherwise barely move the trees, yet they are measured the way a
    verification measures (auto-ranged samples of whole plans, on the node as it is) and are the
    phases predictions are made for; the calibration still covers the space they do not."""
    replayed = np.char.startswith(groups.astype(str), REPLAY_GROUP)
    if replayed.all() or not replayed.any():
        return None
    return np.where(replayed, (~replayed).sum() / replayed.sum(), 1.0)


def predicted_band(rows: list[int], nbytes: np.ndarray, bands: tuple) -> np.ndarray:
    """(seconds, fast, slow) of a plan made of these phase rows, from log10 MiB/s (mid, lo, hi)."""
    mid, lo, hi = (np.asarray(b)[rows] for b in bands)
    b = nbytes[rows]
    return np.array([np.sum(b / 10 ** mid), np.sum(b / 10 ** hi), np.sum(b / 10 ** lo)])


def scores(fixes: list[ReplayedFix], nbytes: np.ndarray, bands: tuple) -> np.ndarray:
    """Conformity score (log10, as conformal.score) of every fix's measured speedup."""
    return np.array([conformal.score(math.log10(f.speedup), predicted_band(f.baseline, nbytes, bands),
                                     predicted_band(f.fixed, nbytes, bands)) for f in fixes])


def calibrate(fixes: list[ReplayedFix], nbytes: np.ndarray, bands: tuple) -> dict | None:
    """The interval's widening from measured fixes predicted out of fold (None without any)."""
    if not fixes:
        return None
    s = scores(fixes, nbytes, bands)
    return {"coverage": conformal.COVERAGE, "widen_log10": conformal.quantile(s), "fixes": len(s),
            "workloads": len({f.workload for f in fixes}),
            "method": "conformalized quantile regression: measured speedups of replayed fixes, each predicted "
                      "by a cross-validation model that never saw its workload"}
