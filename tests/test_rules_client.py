"""Client-config rules (CLI002 RPC size, CLI003 dirty cache, CLI004 directory layout) on snapshots.

This node has no Lustre, so `ioadvisor collect` runs here for real (host, /sys, /proc) with
`lctl` and `lfs` answered from real command output (tests/data/lustre, see SOURCES.md
there): the OSC names of host lab102's `lctl get_param` and SDSC Expanse's `lfs getstripe`
of a directory, each carrying the value under test. The snapshot then goes through the schema
and the engine as any collected file would.
"""

from __future__ import annotations

import json
from pathlib import Path

from advisor.collect import Collector
from advisor.config import from_dict
from advisor.engine import diagnose
from advisor.ingest import load_profile

LUSTRE = Path(__file__).parent / "data" / "lustre"
MiB = 1 << 20


class RecordedLustreClient(Collector):
    """A collector on this node whose lctl/lfs print recorded output and whose `lustre_dir` is a Lustre mount."""

    def __init__(self, lustre_dir: Path, params: dict[str, int], getstripe: str):
        super().__init__()
        self.lustre_dir, self.params, self.getstripe = lustre_dir, params, getstripe

    def which(self, name: str) -> str | None:
        return {"lctl": "/usr/sbin/lctl", "lfs": "/usr/bin/lfs"}.get(name)

    def mounts(self):
        return super().mounts() + [{"device": "10.0.0.1@tcp:/lustrefs", "path": str(self.lustre_dir),
                                    "fstype": "lustre", "options": "rw,flock", "block_device": None}]

    def run(self, argv: list[str]) -> str | None:
        self.commands.append({"argv": argv, "status": "ok", "returncode": 0})
        if argv[1:3] == ["getstripe", "-d"]:
            return self.getstripe.replace("striped", argv[3], 1)
        if argv[1] == "get_param":
            name = argv[2].split(".")[-1]
            if argv[2].startswith("osc.*.") and name in self.params:
                return _osc_lines(name, self.params[name])
        return None


def _osc_lines(name: str, value: int) -> str:
    """lab102's `lctl get_param osc.*.max_rpcs_in_flight` (4 OSTs, client and MDT OSCs) for `name`."""
    text = (LUSTRE / "lctl_max_rpcs.txt").read_text()
    return "".join(line.split(".max_rpcs_in_flight=")[0] + f".{name}={value}\n" for line in text.splitlines())


# Lustre defaults per the manual: 8 RPCs in flight, 256 pages (1 MiB) per RPC, 32 MiB dirty per OSC (older
# clients; newer ones derive it from the two others).
DEFAULTS = {"max_rpcs_in_flight": 8, "max_pages_per_rpc": 256, "max_dirty_mb": 32}


def _snapshot(tmp_path: Path, getstripe: str = "getstripe_dir_plain.txt", **params: int) -> Path:
    lustre_dir = tmp_path / "scratch"
    lustre_dir.mkdir()
    doc = RecordedLustreClient(lustre_dir, {**DEFAULTS, **params}, (LUSTRE / getstripe).read_text()
                               ).collect([str(lustre_dir)])
    path = tmp_path / "client.json"
    path.write_text(json.dumps(doc))
    return path


def _found(snapshot: Path, **config) -> dict:
    result = diagnose(load_profile(snapshot), from_dict(config))
    return {f.code: f for f in result.findings}, {n.check.split()[0]: n.reason for n in result.not_checked}


# ---- CLI002: client RPCs smaller than the file system's RPC size ----------------------------

def test_cli002_default_1mib_rpcs_on_a_16mib_file_system(tmp_path):
    """The Natasha 16 MiB end-to-end setup: brw_size=16 on the OSSes, clients still at 256 pages."""
    found, _ = _found(_snapshot(tmp_path), system={"rpc_size": 16 * MiB})
    f = found["CLI002"]
    assert (f.evidence["osc_pages_per_rpc"], f.evidence["pages_per_rpc_target"]) == (256, 4096)
    assert f.evidence["client_rpc_bytes"] == MiB
    assert "sends RPCs of 256 pages (1 MiB), fewer than the 4096 pages" in f.message
    assert "lctl set_param -P osc.*.max_pages_per_rpc=4096    # on the MGS" in f.recommendation.commands


def test_cli002_silent_once_clients_send_16mib(tmp_path):
    found, not_checked = _found(_snapshot(tmp_path, max_pages_per_rpc=4096), system={"rpc_size": 16 * MiB})
    assert "CLI002" not in found and "CLI002" not in not_checked


# ---- CLI003: little dirty cache per OST --------------------------------------------------------

def test_cli003_32mib_dirty_cache_against_the_site_target(tmp_path):
    found, _ = _found(_snapshot(tmp_path), targets={"max_dirty_mb": 256})
    f = found["CLI003"]
    assert (f.evidence["osc_dirty_bytes"], f.evidence["dirty_target_bytes"]) == (32 * MiB, 256 * MiB)
    assert "may hold only 32 MiB of dirty data per OST (the site wants 256 MiB)" in f.message
    assert "lctl set_param -P osc.*.max_dirty_mb=256    # on the MGS" in f.recommendation.commands


def test_cli003_silent_at_the_target(tmp_path):
    found, not_checked = _found(_snapshot(tmp_path, max_dirty_mb=256), targets={"max_dirty_mb": 256})
    assert "CLI003" not in found and "CLI003" not in not_checked


# ---- CLI004: directory default layout differs from the site's --------------------------------

def test_cli004_directory_left_at_one_stripe(tmp_path):
    """Expanse's `striped` directory before `lfs setstripe -c 4`, on a site whose default is 4 x 1 MiB."""
    snap = _snapshot(tmp_path)
    found, _ = _found(snap, system={"default_stripe_count": 4, "default_stripe_size": MiB})
    f = found["CLI004"]
    path = str(tmp_path / "scratch")
    assert f.evidence["layout_mismatch_paths"] == [path]
    (entry,) = f.evidence["layout_mismatch_dirs"]
    assert (entry["stripe_count"], entry["stripe_size"], entry["want_count"], entry["want_size"]) == (1, MiB, 4, MiB)
    assert f"{path} stripe count 1, stripe size 1 MiB (site: 4 x 1 MiB)" in f.message
    assert f"lfs setstripe -c 4 -S 1M {path}" in f.recommendation.commands


def test_cli004_silent_after_setstripe(tmp_path):
    """The same directory after `lfs setstripe -c 4 striped/` (Expanse's second getstripe)."""
    found, not_checked = _found(_snapshot(tmp_path, getstripe="getstripe_dir_raid0.txt"),
                                system={"default_stripe_count": 4, "default_stripe_size": MiB})
    assert "CLI004" not in found and "CLI004" not in not_checked
