"""A parsing child kept for input after input (advisor.ingest.kept): same profiles, same limits."""

from __future__ import annotations

import functools
import os
import signal
import threading

import pytest

from advisor.errors import InputError
from advisor.ingest import checked_load, detect, load_profile
from advisor.ingest.kept import KeptChild
from tests.conftest import CORPUS, DATA
from tests.helpers import require

LOGS = [DATA / "dumps" / "a_good_fpp_posix_1m.darshan", DATA / "dumps" / "a_good_fpp_posix_1m.parser.txt",
        DATA / "dumps" / "a_good_fpp_posix_1m.dxt.txt"]


def _parse(child: KeptChild, path, timeout_s: float = 60.0):
    return child.parse(functools.partial(checked_load, detect(path).load), path, timeout_s)


def test_one_child_parses_input_after_input_as_a_fresh_child_would():
    child = KeptChild()
    try:
        profiles = [_parse(child, path) for path in LOGS * 2]
        pid = child._proc.pid
        assert _parse(child, LOGS[0]).ingest["isolated"] and child._proc.pid == pid  # still the same child
    finally:
        child.stop()
    for path, profile in zip(LOGS * 2, profiles):
        fresh = load_profile(path)
        assert profile.job == fresh.job and profile.names == fresh.names
        assert {m: len(r) for m, r in profile.records.items()} == {m: len(r) for m, r in fresh.records.items()}


def test_a_timeout_stops_the_child_and_the_next_input_gets_a_new_one():
    big = CORPUS / "generated" / "s_big_dxt_1k" / "darshan-dxt-parser.txt.gz"
    require(big.exists(), f"{big} (the shared corpus) is missing")
    child = KeptChild()
    try:
        with pytest.raises(InputError, match="parsing took longer than 0.05 s and was stopped"):
            _parse(child, big, 0.05)
        assert _parse(child, LOGS[0]).job.nprocs == 4
    finally:
        child.stop()


def test_a_child_killed_on_an_input_is_that_input_s_error_and_is_replaced():
    child = KeptChild()
    try:
        _parse(child, LOGS[0])  # started
        pid = child._proc.pid

        def kill_once_asked() -> None:  # after the request reached this child, however slow the machine
            while child._parsed < 2:
                threading.Event().wait(0.01)
            threading.Event().wait(0.2)
            os.kill(pid, signal.SIGKILL)

        threading.Thread(target=kill_once_asked, daemon=True).start()
        big = CORPUS / "generated" / "s_big_dxt_1k" / "darshan-dxt-parser.txt.gz"
        require(big.exists(), f"{big} (the shared corpus) is missing")
        with pytest.raises(InputError, match=r"the parser crashed \(SIGKILL\)"):
            _parse(child, big)
        assert _parse(child, LOGS[1]).job.nprocs == 4 and child._proc.pid != pid
    finally:
        child.stop()


def test_the_kept_child_ends_when_its_parent_is_killed(tmp_path):
    """A fleet worker killed by a signal leaves no parsing child waiting forever on their pipe."""
    import subprocess
    import sys
    import time

    script = (
        "import functools, sys, time\n"
        "from advisor.ingest import checked_load, detect\n"
        "from advisor.ingest.kept import KeptChild\n"
        "c = KeptChild(); p = sys.argv[1]\n"
        "c.parse(functools.partial(checked_load, detect(p).load), p, 60.0)\n"
        "print(c._proc.pid, flush=True); time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script, str(LOGS[0])], stdout=subprocess.PIPE, text=True)
    try:
        child_pid = int(parent.stdout.readline())
    finally:
        parent.kill()
        parent.wait()

    def running(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 20
    while running(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    ended = not running(child_pid)
    if not ended:
        os.kill(child_pid, signal.SIGKILL)
    assert ended, "the parsing child outlived its killed parent"
