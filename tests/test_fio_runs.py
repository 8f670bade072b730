"""fio runs made here, on the local disk and on the project's CephFS, diagnosed from their JSON;
fio's text output and damaged JSON get one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.helpers import require_command

INSTALL = "apt-get install fio (make system-deps)"
TAIL_RATIO, TAIL_MIN_IOS = 10.0, 2000  # BEN025's defaults (advisor/facts/bench_tests.py)


def _fio(directory: Path, *jobs: str) -> Path:
    """Run fio in `directory` with `jobs` options; its JSON output's path."""
    exe = require_command("fio", INSTALL)
    out = subprocess.run([exe, f"--directory={directory}", "--output-format=json", *jobs], capture_output=True,
                         text=True, timeout=300, check=True)
    path = directory / "fio.json"
    path.write_text(out.stdout)
    return path


def _diagnose(path: Path, env=None) -> dict:
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", str(path), "--json", "-"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def _check(path: Path, doc: dict) -> None:
    """The diagnosis carries every job's numbers as fio printed them, and BEN025 fires exactly on the
    jobs whose own percentiles show a tail."""
    raw = json.loads(path.read_text())
    expected, tails = [], set()
    for job in raw["jobs"]:
        for direction in ("read", "write"):
            d = job[direction]
            if d["io_bytes"]:
                expected.append((job["jobname"], direction, d["io_bytes"], d["bw"], d["iops"]))
                p = d["clat_ns"]["percentile"]
                if d["total_ios"] >= TAIL_MIN_IOS and p["99.900000"] >= TAIL_RATIO * p["50.000000"]:
                    tails.add((job["jobname"], direction))
    got = [(m["job"], m["direction"], m["io_bytes"], m["bw_kib_s"], m["iops"]) for m in doc["data"]["measurements"]]
    assert got == expected
    found = {(t["job"], t["direction"]) for f in doc["findings"] if f["code"] == "BEN025"
             for t in f["evidence"]["fio_latency_tails"]}
    assert found == tails


def test_fio_on_the_local_disk(tmp_path):
    """A direct sequential writer and a buffered 4 KiB random writer (4,096 writes: enough for a 99.9th percentile)."""
    path = _fio(tmp_path, "--name=seqwrite", "--rw=write", "--bs=1m", "--size=32m", "--direct=1",
                "--name=randwrite", "--rw=randwrite", "--bs=4k", "--size=16m")
    _check(path, _diagnose(path))


@pytest.mark.xdist_group("cephfs")
@pytest.mark.slow
def test_fio_on_cephfs(cephfs):
    """The same jobs on the CephFS mount (ceph-fuse over four BlueStore OSDs), then reads of what they wrote."""
    d = cephfs.mnt / "fio"
    d.mkdir()
    path = _fio(d, "--name=seqwrite", "--rw=write", "--bs=1m", "--size=32m", "--direct=1",
                "--name=randwrite", "--rw=randwrite", "--bs=4k", "--size=16m",
                "--name=seqread", "--rw=read", "--bs=1m", "--size=32m", "--filename=seqwrite.0.0", "--stonewall")
    doc = _diagnose(path, cephfs.env)
    _check(path, doc)
    assert [m["job"] for m in doc["data"]["measurements"]] == ["seqwrite", "randwrite", "seqread"]


def test_fio_text_output_is_one_line_saying_what_to_run(corpus):
    out = subprocess.run([sys.executable, "-m", "advisor", "show",
                          str(CORPUS / "generated" / "k_fio_randwrite_4k" / "fio.txt")], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--output-format=json" in out.stderr


def test_a_fio_json_cut_short_says_it_is_truncated(corpus, tmp_path):
    text = (CORPUS / "generated" / "k_fio_randwrite_4k" / "fio.json").read_text()
    for cut in (len(text) // 3, len(text) - 10):
        path = tmp_path / "fio.json"
        path.write_text(text[:cut])
        out = subprocess.run([sys.executable, "-m", "advisor", "show", str(path)], capture_output=True, text=True)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and "truncated" in out.stderr, out.stderr
