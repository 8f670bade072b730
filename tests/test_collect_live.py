"""`ioadvisor collect` on this machine, then `diagnose` with a site config naming its disk.

Expectations come from the live /sys values read here at test time, not from constants:
once with the default targets and once with targets just above the live values (so
every server rule must fire and quote the live numbers).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import require

SYS_BLOCK = Path("/sys/block")


def _disk() -> str:
    """A real block device of this machine (one with a backing device), the largest one."""
    disks = [d for d in SYS_BLOCK.iterdir() if (d / "device").exists() and (d / "queue").is_dir()]
    require(bool(disks), "no block device with a backing device in /sys/block")
    return max(disks, key=lambda d: int((d / "size").read_text())).name


def _live(disk: str) -> dict:
    q = SYS_BLOCK / disk / "queue"
    depth = SYS_BLOCK / disk / "device" / "queue_depth"
    siblings = max(len(_cpus(p.read_text())) for p in
                   Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology/thread_siblings_list"))
    return {"read_ahead_kb": int((q / "read_ahead_kb").read_text()),
            "max_sectors_kb": int((q / "max_sectors_kb").read_text()),
            "nr_requests": int((q / "nr_requests").read_text()),
            "queue_depth": int(depth.read_text()) if depth.exists() else None,
            "threads_per_core": siblings}


def _cpus(text: str) -> list[int]:
    out = []
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _ioadvisor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("collect") / "node.json"
    proc = _ioadvisor("collect", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(out.read_text())


def _diagnose(snap: Path, config: Path) -> dict:
    result = config.with_suffix(".json")
    proc = _ioadvisor("diagnose", str(snap), "--config", str(config), "--json", str(result))
    assert proc.returncode in (0, 1), proc.stderr  # 1: findings at --fail-on level, if any
    doc = json.loads(result.read_text())
    return doc[0] if isinstance(doc, list) else doc


def _site(path: Path, disk: str, **targets) -> Path:
    lines = ["[targets]", f'storage_devices = ["{disk}"]']
    lines += [f"{k} = {v}" for k, v in targets.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_snapshot_matches_sys(snapshot):
    _, doc = snapshot
    disk = _disk()
    live = _live(disk)
    dev = next(d for d in doc["block_devices"] if d["name"] == disk)
    for key in ("read_ahead_kb", "max_sectors_kb", "nr_requests", "queue_depth"):
        assert dev[key] == live[key], key
    assert doc["cpu"]["threads_per_core"] == live["threads_per_core"]
    assert doc["lustre"]["lctl"] is None or Path(doc["lustre"]["lctl"]).is_absolute()


def _expected(live: dict, ra: int, sectors: int, nr: int, depth: int) -> set[str]:
    codes = set()
    if live["threads_per_core"] > 1:
        codes.add("SRV001")
    if live["read_ahead_kb"] < ra:
        codes.add("SRV002")
    if live["max_sectors_kb"] < sectors:
        codes.add("SRV003")
    if live["nr_requests"] < nr or (live["queue_depth"] is not None and live["queue_depth"] < depth):
        codes.add("SRV004")
    return codes


def test_default_targets_give_the_findings_the_live_values_call_for(snapshot, tmp_path):
    snap, _ = snapshot
    disk = _disk()
    live = _live(disk)
    result = _diagnose(snap, _site(tmp_path / "site.toml", disk))
    codes = {f["code"] for f in result["findings"] if f["code"].startswith("SRV")}
    assert codes == _expected(live, 4096, 1024, 256, 256)


def test_targets_above_the_live_values_fire_every_device_rule(snapshot, tmp_path):
    snap, _ = snapshot
    disk = _disk()
    live = _live(disk)
    ra, sectors, nr = live["read_ahead_kb"] * 2, live["max_sectors_kb"] * 2, live["nr_requests"] * 2
    config = _site(tmp_path / "high.toml", disk, read_ahead_kb=ra, max_sectors_kb=sectors,
                   nr_requests=nr, queue_depth=nr)
    result = _diagnose(snap, config)
    found = {f["code"]: f for f in result["findings"]}
    assert {"SRV002", "SRV003", "SRV004"} <= set(found)
    (ra_dev,) = found["SRV002"]["evidence"]["low_read_ahead_devices"]
    assert ra_dev == {"name": disk, "read_ahead_kb": live["read_ahead_kb"], "target": ra}
    assert f"echo {ra} > /sys/block/$dev/queue/read_ahead_kb" in " ".join(
        found["SRV002"]["recommendation"]["commands"])
    assert any("udev" in c for c in found["SRV002"]["recommendation"]["commands"])
    (sec_dev,) = found["SRV003"]["evidence"]["small_request_devices"]
    assert sec_dev["max_sectors_kb"] == live["max_sectors_kb"]
    (q_dev,) = found["SRV004"]["evidence"]["shallow_queue_devices"]
    assert q_dev["nr_requests"] == live["nr_requests"]
    assert ("SRV001" in found) == (live["threads_per_core"] > 1)


def test_client_checks_are_not_checked_only_without_lustre(snapshot, tmp_path):
    snap, doc = snapshot
    result = _diagnose(snap, _site(tmp_path / "site.toml", _disk()))
    reasons = {n["check"].split()[0]: n["reason"] for n in result["not_checked"]}
    if doc["lustre"]["lctl"] is None:
        assert "CLI001" in reasons and "lctl" in reasons["CLI001"]
    else:  # a Lustre client: the client checks ran on its real settings
        assert "lctl" not in reasons.get("CLI001", "")
