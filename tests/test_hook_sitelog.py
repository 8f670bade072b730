"""The site log: one bounded JSON line per job, appended atomically from many processes."""

from __future__ import annotations

import json
import multiprocessing as mp
import os

import pytest

from advisor.hooks.sitelog import append_line, encode_line


def record(jobid: str, **extra) -> dict:
    return {"time": "2026-01-01T00:00:00+00:00", "jobid": jobid, "user": "alice", "status": "reported",
            "categories": ["small-io"], "lost_s": 1.5, "error": None, **extra}


def test_one_valid_line_per_record(tmp_path):
    log = tmp_path / "site.jsonl"
    append_line(str(log), record("1"))
    append_line(str(log), record("2", error="a\nmulti-line\nerror"))
    lines = log.read_text().splitlines()
    assert [json.loads(line)["jobid"] for line in lines] == ["1", "2"]


def test_long_fields_are_shortened_never_cut_mid_json():
    huge = record("3", error="x" * 20000, logs=[f"/very/long/path/{i}" * 10 for i in range(500)],
                  exe="ior " + "-a " * 5000)
    line = encode_line(huge, max_bytes=4096)
    assert len(line) <= 4096 and line.endswith(b"\n")
    doc = json.loads(line)
    assert doc["jobid"] == "3" and doc["truncated"] is True and doc["status"] == "reported"


def test_a_tight_bound_keeps_what_identifies_the_job():
    line = encode_line(record("4", note="n" * 5000, reports=["r" * 300] * 20), max_bytes=256)
    assert len(line) <= 256 and json.loads(line)["jobid"] == "4"


def _writer(path: str, worker: int) -> None:
    for i in range(200):
        append_line(path, record(f"{worker}-{i}", error="e" * (i * 13 % 3000)))


def test_concurrent_appends_never_interleave(tmp_path):
    log = str(tmp_path / "site.jsonl")
    procs = [mp.get_context("fork").Process(target=_writer, args=(log, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    ids = [json.loads(line)["jobid"] for line in (tmp_path / "site.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(f"{w}-{i}" for w in range(4) for i in range(200))


def test_symlinked_site_log_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("")
    (tmp_path / "site.jsonl").symlink_to(target)
    with pytest.raises(OSError):
        append_line(str(tmp_path / "site.jsonl"), record("5"))
    assert target.read_text() == ""
    assert os.path.islink(tmp_path / "site.jsonl")
