"""Parse untrusted input in a child process with a time and memory limit.

A corrupt log can crash libdarshan-util (a signal), loop forever or allocate
without bound; none of that may take down the CLI, the Slurm hook or a fleet
worker. `run_isolated` runs `load(path)` in a child and turns every such end into
an InputError naming the file and what happened.

Children are forked from a multiprocessing *forkserver* that has already
imported the readers and loaded libdarshan-util, so each file costs a fork, not
an interpreter start, and forking stays safe even when the caller runs threads
(Dask). The forkserver is one helper process that exits with
the caller; every child is joined or killed before `run_isolated` returns.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import signal
import sys
import time
import traceback
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from advisor.errors import AdvisorError, InputError
from advisor.profile import JobProfile

DEFAULT_MEMORY_BYTES = 4 << 30
"""Address-space budget of a parsing child on top of what it starts with."""

_PRELOAD = ["advisor.ingest.darshan_preload"]
_context = None


class IsolatedCrash(RuntimeError):
    """A bug (not bad input) in a loader running in the child.

    The message is one line; with IOADVISOR_DEBUG set it also carries the
    child's traceback (the parent's own traceback would not show where it failed).
    """

    def __init__(self, path: Path, child_traceback: str):
        line = child_traceback.splitlines()[0] if child_traceback else "unknown error"
        message = f"{path}: {line}"
        if os.environ.get("IOADVISOR_DEBUG"):
            message += "\n--- traceback in the parsing child ---\n" + child_traceback
        super().__init__(message)
        self.child_traceback = child_traceback


def _ctx():
    global _context
    if _context is None:
        _context = mp.get_context("forkserver")
        _context.set_forkserver_preload(_PRELOAD)
    return _context


@contextmanager
def _main_hidden(load: Callable):
    """Keep multiprocessing from importing the caller's __main__ in the children.

    Our loaders live in importable modules, so the children never need the
    caller's script; importing it would re-run scripts that lack the
    `if __name__ == "__main__":` guard (and cost time).
    """
    main = sys.modules.get("__main__")
    if main is None or getattr(load, "__module__", "") == "__main__":
        yield
        return
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def memory_budget() -> int:
    """Bytes of address space a child may add; IOADVISOR_INGEST_MEMORY_MB overrides."""
    env = os.environ.get("IOADVISOR_INGEST_MEMORY_MB", "")
    return int(env) << 20 if env.isdigit() and int(env) > 0 else DEFAULT_MEMORY_BYTES


def _address_space() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _limit_memory(budget: int) -> None:
    try:
        limit = _address_space() + budget
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (OSError, ValueError):
        pass  # no /proc or a stricter limit already applies: keep what we have


def _child(conn, load: Callable[[Path], JobProfile], path: Path, budget: int) -> None:
    """Runs in the child: the profile, or ("error"|"crash", text), goes to `conn`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    _limit_memory(budget)
    start = time.perf_counter()
    try:
        profile = load(path)
        # What parsing this input cost, for `show --json` and bench/ingest.py.
        usage = resource.getrusage(resource.RUSAGE_SELF)
        profile.extras["ingest"] = {
            "isolated": True, "parse_s": round(time.perf_counter() - start, 4),
            "parser_cpu_s": round(usage.ru_utime + usage.ru_stime, 4),
            "parser_peak_rss_kb": usage.ru_maxrss}
        result = ("ok", profile)
    except AdvisorError as exc:
        result = ("error", exc.reason if isinstance(exc, InputError) else str(exc))
    except MemoryError:
        result = ("error", f"ran out of memory while parsing (limit {budget >> 20} MiB more "
                           "than the parser's start; set IOADVISOR_INGEST_MEMORY_MB to change)")
    except RecursionError:
        result = ("error", "nesting too deep to parse")
    except Exception as exc:  # a bug: hand the traceback to the parent
        result = ("crash", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    try:
        conn.send(result)
    except MemoryError:
        conn.send(("error", "the parsed profile is too large to return within the memory limit"))
    finally:
        conn.close()


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run_isolated(load: Callable[[Path], JobProfile], path: Path, timeout_s: float = 120.0,
                 memory_bytes: int | None = None) -> JobProfile:
    """`load(path)` in a child process; InputError if it fails, crashes or overruns."""
    ctx = _ctx()
    budget = memory_bytes or memory_budget()
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, load, Path(path), budget), daemon=True)
    with _main_hidden(load):
        proc.start()
    send.close()
    try:
        result = _receive(recv, proc, timeout_s, path)
    finally:
        recv.close()
        if proc.is_alive():
            proc.kill()
        proc.join()
    if result is None:
        code = proc.exitcode
        if code is not None and code < 0:
            raise InputError(str(path), f"the parser crashed ({_signal_name(code)}); "
                             "the log is probably corrupt or truncated")
        raise InputError(str(path), f"the parser exited unexpectedly (status {code})")
    kind, payload = result
    if kind == "ok":
        return payload
    if kind == "error":
        raise InputError(str(path), payload)
    raise IsolatedCrash(Path(path), payload)


def _receive(conn, proc, timeout_s: float, path: Path):
    """The child's result, None if it died without one; InputError on timeout."""
    if not conn.poll(timeout_s):
        if proc.is_alive():
            proc.kill()
            proc.join()
            raise InputError(str(path), f"parsing took longer than {timeout_s:g} s and was stopped")
        return None
    try:
        return conn.recv()
    except (EOFError, OSError):
        return None
