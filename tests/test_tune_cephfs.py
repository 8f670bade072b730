"""`ioadvisor tune` on a real CephFS (tests/system/cephfs.sh): a stripe-count search finds the
count the full grid of the same counts finds, measured with the same protocol."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from advisor.api import load
from advisor.config import ReplayConfig
from advisor.tune import space
from advisor.verify import measure, replay_plan

pytestmark = [pytest.mark.xdist_group("cephfs"), pytest.mark.slow]

FPP = "generated/a_good_fpp_posix_1m/case.darshan"  # 4 ranks, a file each, 1 MiB writes and reads
SCALE = "0.25"
CONFIG = """[replay]
min_sample_s = 0.25
max_pairs = 10
history = false
[model]
learn_from_verify = false
"""


def test_stripe_count_search_finds_the_grids_count(cephfs, corpus, tmp_path):
    target = cephfs.mnt / "tune-stripe"
    target.mkdir()
    config = tmp_path / "site.toml"
    config.write_text(CONFIG)
    out = subprocess.run([sys.executable, "-m", "advisor", "tune", str(corpus / FPP), "--target", str(target),
                          "--fix", "stripe:size=4m", "--np", "2", "--scale", SCALE, "--budget", "5",
                          "--config", str(config), "--json", "-"],
                         capture_output=True, text=True, env=cephfs.env, timeout=900)
    assert out.returncode == 0, out.stderr
    t = json.loads(out.stdout)["tune"]
    assert t["fstype"] == "fuse.ceph-fuse"
    counts = {c["fixes"][0]["count"] for c in t["candidates"]}
    assert counts == {1, 2, 4, -1} and {c["fixes"][0]["size"] for c in t["candidates"]} == {4 << 20}
    best = t["best"]
    assert best is not None and best["verdict"] != "not-verifiable", t
    assert "setfattr -n ceph.dir.layout" in best["apply"][0]

    # the grid: every count, in one verification replay with the sequential test
    profile = load(corpus / FPP)
    base = replay_plan(profile, np=2, scale=float(SCALE))
    grid = [c for c in space.build([({"transform": "stripe", "count": 4, "size": 4 << 20}, [], ["size"])], 2)]
    space.prepare(grid, base, target)
    runnable = [c for c in grid if not c.unusable and not c.same_as]
    settings = ReplayConfig(min_sample_s=0.25, max_pairs=10, history=False)
    m = measure(profile, [c.fixes for c in runnable], target, base=base, settings=settings)
    measured = {c.fixes[0]["count"]: v for c, v in zip(runnable, m.verifications) if v.measured}
    assert measured, [v.reason for v in m.verifications]
    grid_best = max(measured, key=lambda k: measured[k].speedup)
    found = best["fixes"][0]["count"]
    # the count the grid finds, or one the grid's own intervals cannot tell from it
    lo_best, hi_found = measured[grid_best].ci95[0], measured[found].ci95[1]
    assert found == grid_best or hi_found >= lo_best, (found, grid_best, measured)
    assert not [p for p in target.iterdir() if p.name.startswith("ioadvisor-replay-")]
