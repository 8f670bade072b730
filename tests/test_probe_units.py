"""The probe's parts without a striped file system: the slow-target statistic it shares with
LUS010, when rounds count as stable, its refusal elsewhere, and the facts of its snapshot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import advisor.commands.probe  # noqa: F401  (the command's module, run below as `python -m advisor probe`)
from advisor.facts import FactContext
from advisor.ingest.snapshot import load
from advisor.probe import ProbeError, Settings, Target, _stable, probe
from advisor.targets import TooFewTargets, slow_targets
from replay.layout.model import Layout

DATA = Path(__file__).resolve().parent / "data" / "probe"
MiB = 1 << 20


def test_slow_target_statistic_is_the_median_of_medians():
    rates = {0: [100, 110], 1: [90, 100], 2: [120, 100], 3: [20, 22], 4: [105, 95]}
    out = slow_targets(rates, 4.0)
    assert out.slow == [3] and out.typical == 100.0 and out.medians[3] == 21.0
    assert slow_targets(rates, 5.0).slow == []  # 21 x 5 > 100: not slow enough at that factor
    with pytest.raises(TooFewTargets, match="fewer than 4 targets"):
        slow_targets({0: [1, 2], 1: [1, 2], 2: [1, 2], 3: [1]})  # one target with a single rate


def test_rounds_are_stable_when_no_median_moves_beyond_the_tolerance():
    t = Target(0, Layout(), write_s=[1.0, 1.0, 1.0], read_s=[1.0, 1.0, 1.0])
    assert t.rates(MiB) == [MiB, MiB, MiB]
    assert _stable([t], Settings(file_bytes=MiB))
    jumpy = Target(1, Layout(), write_s=[1.0, 2.0, 0.5, 0.5], read_s=[1.0, 2.0, 0.5, 0.5])
    assert not _stable([t, jumpy], Settings(file_bytes=MiB))  # median 0.75 -> 1 MiB/s: +33 %


def test_probe_refuses_a_file_system_without_storage_targets(tmp_path):
    with pytest.raises(ProbeError, match="has no storage targets a file can be pinned to"):
        probe(tmp_path)
    out = subprocess.run([sys.executable, "-m", "advisor", "probe", "--target", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and out.stderr.count("\n") == 1 and "has no storage targets" in out.stderr


def test_snapshot_facts_of_a_probe():
    ctx = FactContext(load(DATA / "cephfs-osd2-throttled.snapshot.json"))
    assert ctx.get("probe_slow_targets") == [2] and ctx.get("probe_target_kind") == "OSD"
    assert ctx.get("probe_avoid_pool") == "cephfs_not_osd2" and ctx.get("probe_healthy_targets") == [0, 1, 3]
    assert ctx.get("probe_slow_rate") * 4 < ctx.get("probe_typical_rate")
    assert not ctx.get("probe_is_lustre") and ctx.get("probe_lustre_fsname") == ""
    healthy = FactContext(load(DATA / "cephfs-healthy.snapshot.json"))
    assert healthy.get("probe_slow_targets") == [] and healthy.get("probe_slow_rate") == 0.0
