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
    # IOR's opens, closes and its remove of the file, replayed as called (the remove after all ranks)
    assert (f["replayed"]["opens"], f["replayed"]["closes"], f["replayed"]["unlinks"]) == (8, 8, 1)
    (v,) = doc["verifications"]
    assert v["proposed_by"][0] == "IO001" and v["pairs"] == 2
    assert not any(tmp_path.iterdir())


def test_mdtest_replays_its_metadata_calls_one_by_one(corpus: Path, tmp_path: Path) -> None:
    """mdtest has no reads or writes: its creates, closes, unlinks, and the tree's mkdir and rmdir
    are replayed call by call, and each kind is checked per file and directory."""
    trace = recorder_dir(corpus) / "R4_mdtest" / "trace"
    res = CliRunner().invoke(cli, ["replay", str(trace), "--target", str(tmp_path), "--np", "2",
                                   "--repeat", "2", "--json", "-"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["plan"]["ops"] == {"open": 1600, "stat": 3, "close": 1600, "unlink": 800, "mkdir": 6, "rmdir": 6}
    assert doc["fidelity"]["worst_error"] == 0.0
    files = doc["fidelity"]["files"]
    assert all(f["replayed"]["unlinks"] == f["expected"]["unlinks"] for f in files)
    created = [f for f in files if f["expected"]["opens"]]
    assert created and all(f["replayed"]["opens"] == f["expected"]["opens"] == 2 for f in created)
    assert not any(tmp_path.iterdir())


def test_good_file_per_process_replays_faithfully(corpus: Path, tmp_path: Path) -> None:
    trace = recorder_dir(corpus) / "R3_posix_fpp_good" / "trace"
    res = CliRunner().invoke(cli, ["replay", str(trace), "--target", str(tmp_path), "--np", "2",
                                   "--repeat", "2", "--json", "-"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["fidelity"]["worst_error"] == 0.0 and len(doc["fidelity"]["files"]) == 4
    # 256 MiB written and read back: replayed at the automatic scale (at most 256 MiB per pass)
    written = sum(f["replayed"]["bytes_written"] for f in doc["fidelity"]["files"])
    assert doc["scale"] < 1 and written == round(doc["scale"] * (256 << 20))


def test_verify_measures_the_coalescing_fix_of_small_shared_writes(corpus: Path, tmp_path: Path) -> None:
    trace = recorder_dir(corpus) / "R1_posix_small_shared" / "trace"
    res = CliRunner().invoke(cli, ["diagnose", str(trace), "--verify", "--target", str(tmp_path), "--np", "2",
                                   "--repeat", "2", "--json", "-"])
    assert res.exit_code == 0, res.output
    (doc,) = json.loads(res.output)
    (small,) = [f for f in doc["findings"] if f["code"] == "IO001"]
    verification = small["verification"]
    assert verification["pairs"] == 2 and verification["speedup"] > 0
    assert verification["baseline"]["median_s"] > 0


def test_renames_links_and_truncates_are_replayed_call_by_call(tmp_path: Path) -> None:
    """A hand-built trace (tests/recorder_build.py): a file written, truncated (ftruncate), renamed,
    linked under a third name, truncated by that name, both names removed; each call is replayed
    on its file and checked per file."""
    from tests.recorder_build import write_trace

    a, b, c = "/scratch/t/a", "/scratch/t/b", "/scratch/t/c"
    calls = [("open", 0, (a, "66", "420")), ("write", 0, (a, "%p", "4096")), ("ftruncate", 0, (a, "1000")),
             ("close", 0, (a,)), ("rename", 0, (a, b)), ("link", 0, (b, c)), ("truncate", 0, (c, "10")),
             ("unlink", 0, (c,)), ("unlink", 0, (b,))]
    trace = write_trace(tmp_path / "trace", [[(f, d, args, 0.01 * i, 0.01 * i + 0.001)
                                              for i, (f, d, args) in enumerate(calls)]])
    target = tmp_path / "target"
    target.mkdir()
    res = CliRunner().invoke(cli, ["replay", str(trace), "--target", str(target), "--np", "1", "--repeat", "2",
                                   "--json", "-"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    ops = doc["plan"]["ops"]
    assert (ops["rename"], ops["link"], ops["truncate"], ops["unlink"]) == (1, 1, 2, 2)
    assert doc["fidelity"]["worst_error"] == 0.0
    files = {f["name"]: f for f in doc["fidelity"]["files"]}
    assert (files[a]["replayed"]["renames"], files[a]["replayed"]["truncates"]) == (1, 1)
    assert files[b]["replayed"]["links"] == files[b]["expected"]["links"] == 1
    assert files[c]["replayed"]["truncates"] == files[c]["expected"]["truncates"] == 1
    assert not any(target.iterdir())
