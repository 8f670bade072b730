"""Slow storage targets on a real CephFS: the probe names the throttled OSD and no other, diagnose
reports it from the probe's snapshot, and avoiding it is measured faster than the default layout.
One OSD is throttled (cgroup blkio, as a failing disk) for the tests that need it."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from advisor.ingest import jsondoc

pytestmark = [pytest.mark.xdist_group("cephfs"), pytest.mark.slow]

SLOW_OSD = 1
SLOW_MIB_S = 5  # the others do ~100-400 MiB/s here, a few tens under load 12: 4x (slow_ost_factor) exceeded
FPP_1M = "traces/ior-good-fpp-1m.darshan"


def _run(cephfs, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True,
                         env=cephfs.env, timeout=900)
    assert out.returncode == 0, out.stderr
    return out


def _probe(cephfs, target, *extra: str) -> dict:
    out = _run(cephfs, "probe", "--target", str(target), "--size", "8", "--max-rounds", "6", "--budget", "60",
               "--json", "-", *extra)
    doc = json.loads(out.stdout)
    jsonschema.validate(doc, jsondoc.schema("probe-v1"))
    return doc


@pytest.fixture
def slow_osd(cephfs):
    cephfs.slow(SLOW_OSD, SLOW_MIB_S)
    try:
        yield SLOW_OSD
    finally:
        cephfs.slow(SLOW_OSD, "off")


def _dir(cephfs, name: str):
    d = cephfs.mnt / name
    d.mkdir()
    return d


def test_probe_flags_no_osd_when_none_is_throttled(cephfs):
    doc = _probe(cephfs, _dir(cephfs, "probe-healthy"))
    assert sorted(t["id"] for t in doc["targets"]) == list(range(cephfs.osds))
    assert doc["target_kind"] == "OSD" and doc["slow"] == [] and doc["avoid"] is None
    assert all(t["layout"]["pool"] == f"cephfs_osd{t['id']}" for t in doc["targets"])  # pinned, one OSD each


def test_probe_names_the_throttled_osd_and_diagnose_reports_it(cephfs, slow_osd, tmp_path):
    target = _dir(cephfs, "probe-slow")
    snapshot = tmp_path / "probe.snapshot.json"
    doc = _probe(cephfs, target, "--snapshot", str(snapshot))
    assert doc["slow"] == [slow_osd]
    assert doc["avoid"] == {"pool": f"cephfs_not_osd{slow_osd}",
                            "targets": [o for o in range(cephfs.osds) if o != slow_osd]}
    slow_rate = next(t["rate_mib_s"] for t in doc["targets"] if t["id"] == slow_osd)
    assert slow_rate * doc["factor"] < doc["typical_mib_s"]
    diagnosis = json.loads(_run(cephfs, "diagnose", str(snapshot), "--json", "-").stdout)
    (finding,) = [f for f in diagnosis["findings"] if f["code"] == "LUS011"]
    assert finding["fix"] == {"transform": "avoid-targets", "targets": [slow_osd]}
    assert f"setfattr -n ceph.dir.layout.pool -v cephfs_not_osd{slow_osd} {target}" in \
        " ".join(finding["recommendation"]["commands"])


def test_avoiding_the_throttled_osd_is_verified_as_improved(cephfs, slow_osd):
    target = _dir(cephfs, "avoid")
    out = _run(cephfs, "replay", FPP_1M, "--target", str(target), "--fix", "avoid-targets", "--json", "-")
    doc = json.loads(out.stdout)
    assert doc["probe"]["slow"] == [slow_osd]
    (v,) = doc["verifications"]
    assert v["fix"] == {"transform": "avoid-targets", "targets": [slow_osd]}
    assert v["verdict"] == "improved", v["reason"]
    fixed = v["layouts"]["fixed"]
    assert fixed["matched"] == fixed["wished"] == 4
    assert [g["layout"]["pool"] for g in fixed["layouts"]] == [f"cephfs_not_osd{slow_osd}"]
    assert slow_osd not in fixed["layouts"][0]["layout"]["targets"]


def test_diagnose_verify_gives_every_fix_a_verdict(cephfs):
    """Two jobs: a small shared-file one (coalesce, collective) and sample-badost, whose slow
    OST 14 is not a storage target of this file system (said, not replayed)."""
    target = _dir(cephfs, "verify-all")
    results = []
    for log, options in (("traces/ior-small-shared-4k.darshan", ["--scale", "0.05", "--repeat", "3"]),
                         ("traces/sample-badost.darshan", [])):  # automatic scale: within the target's room
        out = _run(cephfs, "diagnose", log, "--verify", "--target", str(target), *options, "--json", "-")
        results.append(json.loads(out.stdout))
    with_fix = [f for r in results for f in r["findings"] if f.get("fix")]
    assert len({json.dumps(f["fix"], sort_keys=True) for f in with_fix}) >= 4
    for f in with_fix:
        assert f["verification"]["verdict"] in ("improved", "regressed", "equivalent", "inconclusive",
                                                "not-verifiable"), f
        assert f["verification"]["reason"]
    (lus010,) = [f for f in with_fix if f["code"] == "LUS010"]
    assert lus010["verification"]["verdict"] == "not-verifiable"
    assert "OSD 14 does not serve the file system" in lus010["verification"]["reason"]
