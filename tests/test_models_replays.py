"""Measured fixes as training rows (advisor.models.replays), and judging a model on workloads it
never saw (advisor.models.holdout): real calibration rows (the shipped ones), replayed phases made
from real sweep plans."""

from __future__ import annotations

import csv
import gzip
import json
import math
from dataclasses import replace

import numpy as np
import pytest

from advisor.models import replays
from advisor.models.calibrate import DATA_FILE, MOUNT_FILE, plan_for
from advisor.models.check import Comparison, inside_share, median_error
from advisor.models.design import Point
from advisor.models.features import features
from advisor.models.holdout import leave_workload_out
from advisor.models.predict import DEFAULT_MODEL
from advisor.models.rows import collect
from advisor.models.sources.plan import plan_parts


def _phases(key: str, mib_s: float) -> list[dict]:
    parts = plan_parts(plan_for(Point.from_key(key), "ext4"), "ext4")
    return [{"phase": ph, "bytes": p.bytes, "seconds": p.bytes / mib_s / 2**20, "features": features(p)}
            for ph, p in parts.items()]


def _comparison(case: str, before: str, after: str, speedup: float, fix: dict) -> Comparison:
    """A fix of `case` measured `speedup`x faster: the sweep pattern `before` replayed at 100 MiB/s,
    `after` at 100 x speedup."""
    phases = {"baseline": _phases(before, 100.0), "fixed": _phases(after, 100.0 * speedup)}
    return Comparison(case, fix, ["X"], 1.0, [0.9, 1.1], speedup, [speedup / 1.1, speedup * 1.1], "improved",
                      False, "improved", 2, phases)


CASES = [
    ("fsync-a", "write-read:4096:shared:2:posix:per-write:sequential:a:small:0:0",
     "write-read:4096:shared:2:posix:at-close:sequential:a:small:0:0", 8.0, {"transform": "fsync"}),
    ("fsync-b", "write-read:4096:shared:2:posix:per-write:sequential:a:small:0:0",  # the same workload
     "write-read:4096:shared:2:posix:at-close:sequential:a:small:0:0", 7.0, {"transform": "fsync"}),
    ("small", "write-read:4096:shared:2:posix:none:sequential:a:small:0:0",
     "write-read:4194304:shared:2:posix:none:sequential:a:small:0:0", 2.0, {"transform": "coalesce"}),
    ("rand", "write-read:65536:shared:2:posix:none:random:a:small:0:0",
     "write-read:65536:shared:2:posix:none:sequential:a:small:0:0", 1.1, {"transform": "sequential"}),
    ("view", "write-read:65536:shared:2:posix:none:sequential:a:small:0:0",
     "write-read:65536:shared:2:collective-view:none:sequential:a:small:0:1", 0.5, {"transform": "collective"}),
]


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    """A calibration directory of the shipped rows' first 1,500 (fits in seconds)."""
    out = tmp_path_factory.mktemp("cal")
    with gzip.open(DEFAULT_MODEL.parent / "calibration.csv.gz", "rt", newline="") as fh:
        rows = list(csv.DictReader(fh))[:1500]
    with open(out / DATA_FILE, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / MOUNT_FILE).write_text((DEFAULT_MODEL.parent / MOUNT_FILE).read_text())
    return out


def test_replayed_fixes_are_rows_grouped_by_workload(tmp_path, calibration):
    comparisons = [_comparison(*c) for c in CASES]
    rows = replays.table(comparisons)
    assert {r["workload"] for r in rows} == {"fsync-a", "small", "rand", "view"}  # fsync-b replays fsync-a's
    assert sum(r["variant"] == "baseline" for r in rows) == 2 * len(CASES)  # each case's baseline once
    path = tmp_path / replays.REPLAYS_FILE
    replays.write(path, rows)
    again = tmp_path / "again.csv.gz"
    replays.write(again, rows)
    assert path.read_bytes() == again.read_bytes()  # reproducible bytes
    collected = collect([str(calibration), str(path)])
    fixes = {(f.case, json.loads(f.fix)["transform"]): f for f in collected.replayed}
    assert set(fixes) == {(c[0], c[4]["transform"]) for c in CASES}
    f = fixes[("fsync-b", "fsync")]
    assert f.speedup == 7.0 and len(f.baseline) == len(f.fixed) == 2
    assert {collected.groups[i] for i in f.baseline + f.fixed} == {replays.REPLAY_GROUP + "fsync-a"}
    seconds = [collected.bytes[i] / 2**20 / 10 ** collected.log10_mib_s[i] for i in f.fixed]
    assert seconds == pytest.approx([p["seconds"] for p in comparisons[1].phases["fixed"]], rel=1e-5)
    # a calibration directory's replays are left out on request (the holdout measures its own)
    (calibration / replays.REPLAYS_FILE).write_bytes(path.read_bytes())
    try:
        assert len(collect([str(calibration)]).replayed) == len(CASES)
        assert collect([str(calibration)], with_replays=False).replayed == []
    finally:
        (calibration / replays.REPLAYS_FILE).unlink()


def test_a_workload_is_predicted_by_models_that_never_saw_it(calibration):
    comparisons = [_comparison(*c) for c in CASES[:3]]  # two workloads: each fit costs seconds
    judged = {(c.job, c.fix["transform"]): c for c in leave_workload_out(comparisons, [str(calibration)])}
    assert len(judged) == 3
    for c in judged.values():
        assert c.interval[0] <= c.predicted <= c.interval[1] and c.error is not None
    # the fsync workload's own measurements changed a hundredfold: its prediction does not move,
    # the other workloads' models (which saw it) may
    louder = [replace(c, measured=c.measured * 100, phases={**c.phases, "fixed": [
        {**p, "seconds": p["seconds"] / 100} for p in c.phases["fixed"]]}) if c.job.startswith("fsync") else c
        for c in comparisons]
    again = {(c.job, c.fix["transform"]): c for c in leave_workload_out(louder, [str(calibration)])}
    assert again[("fsync-a", "fsync")].predicted == judged[("fsync-a", "fsync")].predicted
    assert again[("fsync-b", "fsync")].predicted == judged[("fsync-b", "fsync")].predicted
    assert again[("small", "coalesce")].predicted != judged[("small", "coalesce")].predicted
    inside, n = inside_share(list(judged.values()))
    assert n == 3 and 0 <= inside <= n and math.isfinite(median_error(list(judged.values())))


def test_a_comparison_round_trips_and_says_whether_the_measurement_fell_inside():
    c = _comparison(*CASES[2])
    assert json.dumps(Comparison.from_dict(json.loads(json.dumps(c.to_dict()))).to_dict()) == json.dumps(c.to_dict())
    assert c.inside is False and c.error == pytest.approx(0.5)  # predicted 1.0 [0.9-1.1], measured 2.0
    assert replace(c, interval=[0.5, 2.5]).inside is True
    assert replace(c, measured=None).inside is None and inside_share([c, replace(c, interval=None)]) == (0, 1)


def test_the_shipped_interval_is_calibrated_and_says_how():
    from advisor.models.store import load

    meta = load(DEFAULT_MODEL).meta["speedup_interval"]
    assert meta["coverage"] == 0.8 and math.isfinite(meta["widen_log10"]) and "conformalized" in meta["method"]
    assert np.isfinite(meta.get("fixes", meta.get("pairs", math.nan)))
