"""How parsing children start: forked from a single-threaded caller, from the forkserver when other
threads run; started ahead of their result, the time limit counted from the start."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.ingest.isolate import Isolated
from advisor.profile import JobInfo, JobProfile, Provenance

REPO = Path(__file__).resolve().parents[1]


def _parent_pid(path: Path) -> JobProfile:
    return JobProfile(Provenance(str(path), "test", "test"), JobInfo(), extras={"ppid": os.getppid()})


def _sleep(path: Path) -> JobProfile:
    time.sleep(60)
    raise AssertionError("not stopped")


CALLER = """
import os, sys, threading
from pathlib import Path
from advisor.ingest.isolate import run_isolated
from tests.test_isolate_start import _parent_pid
if sys.argv[1] == "with-thread":
    threading.Thread(target=threading.Event().wait, daemon=True).start()
profile = run_isolated(_parent_pid, Path("x.darshan"), timeout_s=60)
print("forked here" if profile.extras["ppid"] == os.getpid() else "forkserver")
"""


@pytest.mark.parametrize("caller, start", [("alone", "forked here"), ("with-thread", "forkserver")])
def test_a_child_is_forked_by_a_single_threaded_caller_else_by_the_forkserver(caller, start):
    done = subprocess.run([sys.executable, "-c", CALLER, caller], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == start and done.stderr == ""  # no fork warning either


def test_parses_run_side_by_side_and_are_taken_in_any_order():
    first, second = (Isolated(_parent_pid, Path(name), timeout_s=120) for name in ("a", "b"))
    assert second.result().source.path == "b" and first.result().source.path == "a"
    assert not multiprocessing.active_children()


def test_the_time_limit_counts_from_the_start():
    pending = Isolated(_sleep, Path("slow.darshan"), timeout_s=2)
    time.sleep(3)  # the caller busy with something else
    asked = time.monotonic()
    with pytest.raises(InputError, match="longer than 2 s"):
        pending.result()
    assert time.monotonic() - asked < 1.5 and not multiprocessing.active_children()


def test_a_cancelled_parse_leaves_no_child():
    pending = Isolated(_sleep, Path("slow.darshan"), timeout_s=120)
    pending.cancel()
    pending.cancel()
    assert not multiprocessing.active_children()


def _unpicklable(path: Path) -> JobProfile:
    return JobProfile(Provenance(str(path), "test", "test"), JobInfo(), extras={"f": lambda: None})


def _nested(path: Path) -> JobProfile:
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    return JobProfile(Provenance(str(path), "test", "test"), JobInfo(), extras={"deep": deep})


def test_a_profile_that_cannot_be_returned_is_one_line_and_no_traceback(capfd):
    """Pickling the profile back failed outside the child's guard: multiprocessing printed its
    traceback on the terminal and the parent only saw 'the parser exited unexpectedly'."""
    from advisor.ingest.isolate import IsolatedCrash

    with pytest.raises(IsolatedCrash, match="returning the profile: "):
        Isolated(_unpicklable, Path("x.darshan"), timeout_s=60).result()
    with pytest.raises(InputError, match="nested too deeply to return"):
        Isolated(_nested, Path("y.darshan"), timeout_s=60).result()
    assert "Traceback" not in capfd.readouterr().err
