"""Snapshots as input: schema validation, newer versions refused, one-line errors."""

from __future__ import annotations

import json

import jsonschema
import pytest

from advisor.collect import Collector
from advisor.errors import InputError
from advisor.ingest import load_profile
from advisor.ingest.snapshot import schema


@pytest.fixture(scope="module")
def doc() -> dict:
    return Collector().collect([])


def test_collected_snapshot_is_valid_v1(doc):
    jsonschema.Draft202012Validator(schema()).validate(doc)
    assert doc["schema"] == "ioadvisor/snapshot/v1"
    assert doc["memory"]["total_bytes"] > 0 and doc["cpu"]["logical_cpus"] >= 1


def test_snapshot_loads_as_profile(doc, tmp_path):
    path = tmp_path / "node.json"
    path.write_text(json.dumps(doc))
    profile = load_profile(path)
    assert profile.source.format == "snapshot"
    assert profile.settings["host"]["hostname"] == doc["host"]["hostname"]
    assert {m.path for m in profile.mounts} == {m["path"] for m in doc["mounts"]}


def test_newer_schema_is_refused_clearly(doc, tmp_path):
    path = tmp_path / "future.json"
    path.write_text(json.dumps({**doc, "schema": "ioadvisor/snapshot/v2"}))
    with pytest.raises(InputError) as err:
        load_profile(path)
    assert "v2 is newer than this ioadvisor reads (v1)" in err.value.reason


@pytest.mark.parametrize("mutate, words", [
    (lambda d: d.pop("cpu"), "'cpu' is a required property"),
    (lambda d: d["block_devices"].append({"name": 3}), "block_devices"),
    # a device name goes into suggested shell commands and udev rules
    (lambda d: d["block_devices"].append({"name": "sda; rm -rf /", "read_ahead_kb": 128, "max_sectors_kb": 512,
                                          "nr_requests": 64}), "does not match"),
])
def test_invalid_snapshot_names_the_place(doc, tmp_path, mutate, words):
    bad = json.loads(json.dumps(doc))
    mutate(bad)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(InputError) as err:
        load_profile(path)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_truncated_snapshot_is_one_line(doc, tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(doc)[:300])
    with pytest.raises(InputError) as err:
        load_profile(path)
    assert "not valid JSON" in err.value.reason


def _fake_server(root) -> dict:
    """A server with hyper-threading and an OST on a RAID volume, as a fake /sys tree."""
    for cpu, (core, sib) in enumerate([(0, "0,2"), (1, "1,3"), (0, "0,2"), (1, "1,3")]):
        topo = root / f"sys/devices/system/cpu/cpu{cpu}/topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text("0\n")
        (topo / "core_id").write_text(f"{core}\n")
        (topo / "thread_siblings_list").write_text(sib + "\n")
    queue = root / "sys/block/sdb/queue"
    queue.mkdir(parents=True)
    for name, value in {"read_ahead_kb": 256, "max_sectors_kb": 128, "max_hw_sectors_kb": 128,
                        "nr_requests": 128, "rotational": 1, "scheduler": "noop [deadline] cfq"}.items():
        (queue / name).write_text(f"{value}\n")
    (root / "sys/block/sdb/device").mkdir()
    (root / "sys/block/sdb/device/queue_depth").write_text("32\n")
    (root / "sys/class/block/sdb").mkdir(parents=True)
    (root / "proc").mkdir()
    (root / "proc/mounts").write_text("/dev/sdb /mnt/ost0 lustre ro 0 0\n")
    return Collector(root=str(root)).collect([])


def test_fake_sys_tree(tmp_path):
    snap = _fake_server(tmp_path)
    assert snap["cpu"]["threads_per_core"] == 2 and snap["cpu"]["cores"] == 2
    (dev,) = snap["block_devices"]
    assert (dev["read_ahead_kb"], dev["max_hw_sectors_kb"], dev["queue_depth"]) == (256, 128, 32)
    assert dev["scheduler"] == "deadline" and dev["rotational"] is True
    assert snap["mounts"][0]["fstype"] == "lustre" and snap["mounts"][0]["block_device"] == "sdb"


def test_nrao_oss_gets_every_server_finding(tmp_path):
    """The NRAO study's OSS (HT on, 256 KiB read-ahead, 128 KiB commands, queue depth 32)."""
    from advisor.config import SiteConfig
    from advisor.engine import diagnose
    from advisor.ingest.snapshot import profile_of

    snap = _fake_server(tmp_path)
    result = diagnose(profile_of(snap, "oss1.json"), SiteConfig())
    found = {f.code: f for f in result.findings}
    assert {"SRV001", "SRV002", "SRV003", "SRV004"} <= set(found)
    assert found["SRV003"].evidence["small_request_hw_limited"] is True
    assert "8 commands" in found["SRV003"].message
    assert "controller" in found["SRV003"].recommendation.text
    assert "echo 4096 > /sys/block/$dev/queue/read_ahead_kb" in found["SRV002"].recommendation.commands[1]
    assert "echo 256 > /sys/block/sdb/device/queue_depth" in found["SRV004"].recommendation.commands[1]


def test_terminal_header_of_a_snapshot_names_the_node_not_a_job(doc, tmp_path):
    import io

    from advisor.api import diagnose_path
    from advisor.report.terminal import console, print_report

    path = tmp_path / "node.json"
    path.write_text(json.dumps(doc))
    buffer = io.StringIO()
    print_report(diagnose_path(path), console(buffer))
    header = buffer.getvalue().split("╰")[0]
    assert f"node snapshot of {doc['host']['hostname']}" in header and " UTC" in header
    assert "ranks" not in header and "run time" not in header


def test_server_facts_of_the_fake_oss_against_the_site_targets(tmp_path):
    from advisor.config import from_dict
    from advisor.facts import FactContext
    from advisor.ingest.snapshot import profile_of

    ctx = FactContext(profile_of(_fake_server(tmp_path), "oss1.json"), from_dict({}))
    assert ctx.get("snap_is_server") is True and ctx.get("snap_storage_devices") == ["sdb"]
    assert ctx.get("snap_threads_per_core") == 2 and ctx.get("snap_ht_wanted") is False
    assert ctx.get("low_read_ahead_names") == ["sdb"] and ctx.get("read_ahead_target") > 256 * 1024  # bytes
    assert ctx.get("small_request_names") == ["sdb"] and ctx.get("small_request_hw_limited") is True
    assert ctx.get("shallow_depth_names") == ["sdb"]
    wanted = FactContext(profile_of(_fake_server(tmp_path / "b"), "oss1.json"),
                         from_dict({"targets": {"read_ahead_kb": 128, "hyperthreading": True}}))
    assert wanted.get("low_read_ahead_names") == [] and wanted.get("snap_ht_wanted") is True
