"""Layout fixes replayed on a real CephFS: the files get the layout asked, read back after the run."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from advisor.api import diagnose_profile, load
from advisor.config import from_dict
from advisor.verify import measure, replay_plan

pytestmark = [pytest.mark.xdist_group("cephfs"), pytest.mark.slow]

FPP_1M = "traces/ior-good-fpp-1m.darshan"  # 4 ranks, a file each, 1 MiB requests
GOODOST = "darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input/sample-goodost.darshan"
MiB = 1 << 20


def _only(readback: dict) -> dict:
    (group,) = readback["layouts"]  # every file got one and the same layout
    return group["layout"]


def test_stripe_fix_leaves_files_of_four_stripes(cephfs, tmp_path):
    target = cephfs.mnt / "stripe4"
    target.mkdir()
    out = subprocess.run([sys.executable, "-m", "advisor", "replay", FPP_1M, "--target", str(target),
                          "--fix", "stripe:count=4", "--repeat", "3", "--scale", "0.125", "--json", "-"],
                         capture_output=True, text=True, env=cephfs.env, timeout=600)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["fstype"] == "fuse.ceph-fuse"
    baseline = doc["baseline"]["layouts"]
    assert _only(baseline)["stripe_count"] == 1 and baseline["files"] == 4 and baseline["wished"] == 0
    (v,) = doc["verifications"]
    assert v["verdict"] != "not-verifiable", v["reason"]
    fixed = v["layouts"]["fixed"]
    got = _only(fixed)
    assert got["stripe_count"] == 4 and fixed["files"] == fixed["wished"] == fixed["matched"] == 4
    assert got["pool"] == "cephfs_data" and got["targets"] == list(range(cephfs.osds))
    assert not any(target.iterdir()), "the replay left files behind"


def test_stripe_inheritance_fix_sets_the_directory_and_new_files_inherit(cephfs, corpus):
    """LUS004 on 48 single-stripe files (a site of 200 OSTs): its fix is the directory's default
    layout; the replayed workload creates its files there and they get it."""
    profile = load(corpus / GOODOST)
    finding = next(f for f in diagnose_profile(profile, from_dict({"system": {"osts": 200}})).findings
                   if f.code == "LUS004")
    assert finding.fix["scope"] == "dir"
    target = cephfs.mnt / "inherit"
    target.mkdir()
    base = replay_plan(profile, np=2, scale=0.002)  # still one 8 MiB write per file and rank:
    ops = dict(base.ops)  # requests cut to 1 MiB to keep the test short (the layout is the point here)
    ops["length"] = np.where(base.data_mask(), np.minimum(ops["length"], MiB), ops["length"])
    result = measure(profile, [finding.fix], target, repeat=3, base=base.replace(ops=ops))
    (v,) = result.verifications
    assert v.verdict != "not-verifiable", v.reason
    fixed = v.layouts["fixed"]
    got = _only(fixed)
    assert got["stripe_count"] == finding.fix["count"] and got["stripe_size"] == 4 * MiB
    assert fixed["files"] == fixed["wished"] == fixed["matched"] == 48
    assert _only(v.layouts["baseline"])["stripe_count"] == 1


def test_calibration_on_cephfs_has_layout_features(cephfs, tmp_path):
    """Every pattern the sweep measures on CephFS has a stripe count (1, 2 or 4: up to the OSDs),
    and its rows carry the layout features: stripe count, stripe unit, objects per call."""
    import csv

    target = cephfs.mnt / "calibrate"
    target.mkdir()
    data = tmp_path / "cal"
    out = subprocess.run([sys.executable, "-m", "advisor", "calibrate", "--target", str(target), "--out", str(data),
                          "--np", "2", "--budget", "0.2", "--repeat", "1", "--quiet"],
                         capture_output=True, text=True, env=cephfs.env, timeout=900)
    assert out.returncode == 0, out.stderr
    meta = json.loads((data / "mount.json").read_text())
    assert meta["identity"]["fstype"] == "fuse.ceph-fuse"
    with open(data / "calibration.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {r["stripe_count"] for r in rows} <= {"1", "2", "4"}
    for r in rows:
        assert float(r["f_stripe_count"]) == int(r["stripe_count"]) and float(r["f_log2_stripe_size"]) == 20
        assert 0 <= float(r["f_log2_objects_per_call"]) <= 2  # 1 .. 4 objects per call
