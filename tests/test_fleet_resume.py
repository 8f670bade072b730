"""A fleet run killed part way (SIGKILL, the worst case) resumes without losing or doubling a log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from advisor.fleet.store import FleetStore

BATCH = 4
LOGS = 48


@pytest.fixture
def archive(corpus: Path, tmp_path: Path) -> Path:
    """LOGS small real logs (readable and not) linked into a fresh tree, as an archive would hold them."""
    picked = sorted(p for p in corpus.rglob("*.darshan*") if p.stat().st_size < 200_000)[:LOGS]
    assert len(picked) == LOGS
    root = tmp_path / "archive"
    for i, log in enumerate(picked):
        day = root / "2024" / str(1 + i % 3) / str(1 + i % 28)
        day.mkdir(parents=True, exist_ok=True)
        (day / f"{i:03d}_{log.name}").symlink_to(log)
    return root


def _command(archive: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "advisor", "fleet", str(archive), "--out", str(out), "--workers", "2",
            "--batch", str(BATCH), "--quiet"]


def _kill_after_first_part(archive: Path, out: Path, timeout: float = 300) -> None:
    proc = subprocess.Popen(_command(archive, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)  # its own group: the Dask workers die with it
    deadline = time.monotonic() + timeout
    try:
        while not list((out / "jobs").glob("part-*.parquet")):
            assert proc.poll() is None, f"fleet ended before its first part: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, "no part written in time"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def test_killed_run_resumes_and_completes_without_duplicates(archive: Path, tmp_path: Path):
    out = tmp_path / "ds"
    _kill_after_first_part(archive, out)

    store = FleetStore(out, create=False)
    done = store.jobs(["path"]).num_rows
    assert 0 < done < LOGS, "the run finished before it could be interrupted"
    assert done % BATCH == 0  # only whole batches are committed

    again = subprocess.run(_command(archive, out), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"analysed {LOGS - done} logs" in again.stderr and f"skipped {done} " in again.stderr

    jobs = store.jobs(["path", "codes", "error"]).to_pylist()
    assert len(jobs) == LOGS
    assert Counter(j["path"] for j in jobs).most_common(1)[0][1] == 1
    assert {j["path"] for j in jobs} == {str(p) for p in archive.rglob("*") if p.is_symlink()}
    findings = Counter((f["path"], f["code"]) for f in store.findings(["path", "code"]).to_pylist())
    expected = Counter((j["path"], c["code"]) for j in jobs for c in (j["codes"] or []))
    assert findings == expected  # no finding lost or doubled by the kill
    assert sum(expected.values()) > 0 and any(j["error"] for j in jobs)
    assert not list(store.findings_dir.glob(".*.tmp")) and not list(store.jobs_dir.glob(".*.tmp"))


def test_a_log_name_that_is_not_utf8_costs_nothing(tmp_path: Path):
    """Parquet holds UTF-8 only: one such name was an internal error that lost the whole run."""
    from tests.conftest import DATA

    root = tmp_path / "archive"
    root.mkdir()
    good = (DATA / "dumps" / "a_good_fpp_posix_1m.darshan").read_bytes()
    (root / "good.darshan").write_bytes(good)
    (root / os.fsdecode(b"run-\xff\n\x1b[2J.darshan")).write_bytes(good)
    out = tmp_path / "ds"
    for _ in range(2):  # the second run finds both already done
        run = subprocess.run([sys.executable, "-m", "advisor", "fleet", str(root), "--out", str(out),
                              "--workers", "1", "--quiet"], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0 and "internal error" not in run.stderr, run.stderr
        assert "\x1b" not in run.stderr
    assert "skipped 2 already" in run.stderr
    paths = sorted(FleetStore(out, create=False).jobs(["path"]).column("path").to_pylist())
    assert paths == [str(root / "good.darshan"), str(root) + "/run-\\xff\n\x1b[2J.darshan"]
