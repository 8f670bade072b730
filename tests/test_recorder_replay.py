"""Replays of Recorder traces: per call from their segments, checked per file like DXT replays."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from advisor.cli import cli
from tests.recorder_traces import recorder_dir


def test_replay_of_small_shared_writes_is_faithful_and_verifies_a_fix(corpus: Path, tmp_path: Path) -> None:
    trace = recorder_dir(corpus) / "R1_posix_small_shared" / "trace"
    res = CliRunner().invoke(cli, ["replay", str(trace), "--target", str(tmp_path), "--fix", "IO001",
                                   "--np", "2", "--repeat", "2", "--json", "-"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["source"] == "dxt" and doc["scale"] == 1
    # every file's bytes and operations as the calls recorded them
    assert doc["fidelity"]["worst_error"] == 0.0
    (f,) = doc["fidelity"]["files"]
    assert f["name"] == "/scratch/rec/R1/f" and f["replayed"] == f["expected"]
    assert f["expected"]["writes"] == f["expected"]["reads"] == 4096
    (v,) = doc["verifications"]
    assert v["proposed_by"][0] == "IO001" and v["pairs"] == 2
    assert not any(tmp_path.iterdir())
