"""`ioadvisor fleet --scheduler`: a Dask scheduler and workers started as separate processes
with the `dask scheduler` / `dask worker` commands, on the loopback interface only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client

from advisor.fleet.store import FleetStore
from tests.helpers import require

DASK = Path(sys.executable).with_name("dask")
LOGS = 12


class Daemons:
    """Processes started by a test, each in its own group, all killed at the end."""

    def __init__(self, tmp: Path):
        self.tmp, self.procs = tmp, []

    def start(self, *args: str, env: dict | None = None) -> subprocess.Popen:
        with open(self.tmp / f"daemon-{len(self.procs)}.log", "w") as log:  # the daemon keeps its own copy
            proc = subprocess.Popen([str(DASK), *args], stdout=log, stderr=subprocess.STDOUT,
                                    env={**os.environ, **(env or {})}, start_new_session=True)
        self.procs.append(proc)
        return proc

    def scheduler(self) -> str:
        info = self.tmp / f"scheduler-{len(self.procs)}.json"
        self.start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(info))
        deadline = time.monotonic() + 60
        while not info.exists():
            assert time.monotonic() < deadline, "dask scheduler did not start"
            time.sleep(0.1)
        return json.loads(info.read_text())["address"]

    def workers(self, address: str, n: int, env: dict | None = None) -> None:
        for i in range(n):
            self.start("worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--nworkers", "1",
                       "--no-dashboard", "--name", f"w{len(self.procs)}-{i}", env=env)
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(n, timeout=120)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Daemons]:
    require(DASK.exists(),
            f"the dask command is not installed next to {sys.executable} (pip install 'dask[distributed]')")
    d = Daemons(tmp_path)
    try:
        yield d
    finally:
        d.stop()


@pytest.fixture
def logs(corpus: Path, tmp_path: Path) -> Path:
    picked = sorted(p for p in (corpus / "generated").rglob("*.darshan") if p.stat().st_size < 400_000)[:LOGS]
    root = tmp_path / "logs"
    root.mkdir()
    for i, log in enumerate(picked):
        (root / f"{i:02d}-{log.parent.name}.darshan").symlink_to(log)
    return root


def fleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", "fleet", *args, "--quiet"],
                          capture_output=True, text=True, timeout=600)


def test_fleet_runs_on_an_existing_scheduler(daemons: Daemons, logs: Path, tmp_path: Path):
    address = daemons.scheduler()
    daemons.workers(address, 2, env={"DASK_DISTRIBUTED__WORKER__DAEMON": "False"})
    with Client(address) as client:
        worker_pids = set(client.run(os.getpid).values())

    run = fleet(str(logs), "--out", str(tmp_path / "ds"), "--scheduler", address)
    assert run.returncode == 0, run.stderr
    jobs = FleetStore(tmp_path / "ds", create=False).jobs(["path", "error", "worker", "n_findings"]).to_pylist()
    assert len(jobs) == LOGS and all(j["error"] is None for j in jobs)
    used = {int(j["worker"].rsplit(":", 1)[1]) for j in jobs}
    assert used <= worker_pids  # every log ran in a `dask worker` process, none in the client
    assert len(used) == 2  # and the work was spread over both
    assert sum(j["n_findings"] for j in jobs) > 0


def test_daemonic_workers_are_refused_in_one_line(daemons: Daemons, logs: Path, tmp_path: Path):
    address = daemons.scheduler()
    daemons.workers(address, 1, env={"DASK_DISTRIBUTED__WORKER__DAEMON": "True"})
    run = fleet(str(logs), "--out", str(tmp_path / "ds"), "--scheduler", address)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "DASK_DISTRIBUTED__WORKER__DAEMON=False" in lines[0], run.stderr
    assert not list((tmp_path / "ds" / "jobs").glob("part-*"))


def test_unreachable_scheduler_is_one_line(logs: Path, tmp_path: Path):
    run = subprocess.run([sys.executable, "-m", "advisor", "fleet", str(logs), "--out", str(tmp_path / "ds"),
                          "--scheduler", "tcp://127.0.0.1:9", "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "cannot reach the Dask scheduler" in run.stderr
