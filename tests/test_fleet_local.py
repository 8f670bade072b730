"""The local fleet pool (advisor.fleet.local): warm workers, logs streamed, a dead worker replaced."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from advisor.config import load_config
from advisor.fleet.local import LocalPool
from advisor.fleet.walk import iter_logs


def _logs(corpus: Path, n: int):
    small = sorted(p for p in (corpus / "darshan-logs").rglob("*.darshan") if p.stat().st_size < 20_000)[:n]
    return list(iter_logs([str(p) for p in small]))


def test_every_log_gets_its_rows_from_warm_workers(corpus: Path):
    logs = _logs(corpus, 6)
    with LocalPool(2, load_config(None), 60) as pool:
        rows = list(pool.results(iter(logs)))
    assert sorted(r["job"]["path"] for r in rows) == sorted(log.path for log in logs)
    workers = {r["job"]["worker"] for r in rows}
    assert 1 <= len(workers) <= 2  # the same processes took log after log
    assert all(r["job"]["error"] is None for r in rows)  # small readable logs: every one diagnosed


def test_a_worker_killed_on_a_log_gives_it_an_error_row_and_is_replaced(corpus: Path):
    logs = _logs(corpus, 3)
    with LocalPool(1, load_config(None), 60) as pool:
        os.kill(pool._workers[0].proc.pid, signal.SIGKILL)  # before or while it takes the first log
        rows = list(pool.results(iter(logs)))
    by_path = {r["job"]["path"]: r["job"] for r in rows}
    assert list(by_path) == [log.path for log in logs]
    assert by_path[logs[0].path]["error"] == "worker failed on this log: its process ended (SIGKILL)"
    assert all(by_path[log.path]["error"] is None for log in logs[1:])  # the replacement went on


_DRIVER = """
import json, sys
from advisor.cli import main
from advisor.fleet import local

pools = []
class Watched(local.LocalPool):
    def __exit__(self, *exc):
        super().__exit__(*exc)
        pools.append(self)

local.LocalPool = Watched
try:
    main(["fleet", *sys.argv[2:], "--out", sys.argv[1], "--workers", "2", "--quiet"])
except SystemExit as end:
    assert not end.code, end.code
print(json.dumps({"start": pools[0]._ctx.get_start_method(), "pandas": "pandas" in sys.modules,
                  "exits": [w.proc.exitcode for w in pools[0]._workers]}))
"""


def test_a_fleet_driver_forks_its_workers_and_they_end_with_their_pipe(corpus: Path, tmp_path: Path):
    """A driver running no other thread forks the workers from itself (no forkserver importing the
    analysis again); each worker closes the driver's pipe ends it inherited, so it ends by itself
    when the driver closes its pipe (not killed); pyarrow never imports pandas to write the dataset."""
    import json
    import subprocess
    import sys

    logs = [log.path for log in _logs(corpus, 3)]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(tmp_path / "ds"), *logs], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"start": "fork", "pandas": False, "exits": [0, 0]}
