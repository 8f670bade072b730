"""Parse untrusted input in a child process with a time and memory limit.

A corrupt log can crash libdarshan-util (a signal), loop forever or allocate
without bound; none of that may take down the CLI, the Slurm hook or a fleet
worker. `run_isolated` runs `load(path)` in a child and turns every such end into
an InputError naming the file and what happened; `Isolated` starts the child and
lets the caller work until it asks for the result.

A single-threaded caller (the CLI, the Slurm hook) forks the child from itself:
a log costs a fork, with no second interpreter to start, and libdarshan-util is
loaded once per caller (see `_ctx`). A caller running Python threads (a Dask
worker) could hand the child a lock another thread held at the fork, so its
children come from a multiprocessing *forkserver* that imported the readers
instead (one helper process per caller, exiting with it). Either way every
child is joined or killed once its result is taken or it is cancelled.
"""

from __future__ import annotations

import faulthandler
import importlib
import multiprocessing as mp
import os
import resource
import signal
import sys
import threading
import time
import traceback
import types
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from advisor.errors import AdvisorError, InputError
from advisor.profile import JobProfile

DEFAULT_MEMORY_BYTES = 2 << 30
"""Address-space budget of a parsing child on top of what it starts with (every input of the
shared corpus, up to 65,536 processes and a million DXT segments, parses within 1.5 GiB)."""

_PRELOAD = ["advisor.ingest.darshan_preload"]
# What a parsing child imports that its caller imports later anyway (the plausibility check's
# per-file tables are the facts' own; the user cache's hashing renders messages): imported once
# before the first fork, not in the child and again here (some 0.05 s of a one-log diagnosis's CPU).
_SHARED = ["advisor.ingest.plausible", "advisor.usercache"]
_forkserver = None
_forks = 0  # children forked from this process so far


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


def context():
    """Plain fork when no other Python thread runs (decided per call: threads may start later).

    Native thread pools (numpy's OpenBLAS) are not counted: they quiesce in their own
    pthread_atfork handlers. The first child loads the readers itself (its loader needs
    them) while its caller goes on working; before the second, the caller imports them
    once, as the forkserver would have, so that every later child starts with them. What
    both sides need (:data:`_SHARED`) the caller imports before the first.
    """
    global _forkserver, _forks
    if threading.active_count() == 1:
        for module in _PRELOAD if _forks else _SHARED:
            importlib.import_module(module)
        _forks += 1
        return mp.get_context("fork")
    if _forkserver is None:
        _forkserver = mp.get_context("forkserver")
        _forkserver.set_forkserver_preload(_PRELOAD)
    return _forkserver


@contextmanager
def starting(ctx, load: Callable):
    """Around `Process.start()`: what each start method needs to stay quiet and cheap."""
    if ctx is _forkserver:
        with main_hidden(load):
            yield
        return
    with warnings.catch_warnings():
        # Python >= 3.12 warns on fork() whenever the OS lists other threads, OpenBLAS's
        # idle pool included; Python threads were ruled out by context().
        warnings.filterwarnings("ignore", r"This process .* is multi-threaded", DeprecationWarning)
        yield


@contextmanager
def main_hidden(load: Callable):
    """Keep the forkserver from importing the caller's __main__ in the children.

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
    settle(budget)
    try:
        reply(conn, parse(load, path, budget))
    finally:
        conn.close()


def settle(budget: int) -> None:
    """A parsing child's set-up: the parent decides when to stop; its own memory limit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.disable()  # a forked child inherits it; a crash is the parent's one-line error
    _limit_memory(budget)


def parse(load: Callable[[Path], JobProfile], path: Path, budget: int) -> tuple[str, object]:
    """In a parsing child: ("ok", profile) or ("error"|"crash", text)."""
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_SELF)
    try:
        profile = load(path)
        # What parsing this input cost, for `show --json` and bench/ingest.py.
        usage = resource.getrusage(resource.RUSAGE_SELF)
        profile.ingest = {
            "isolated": True, "parse_s": round(time.perf_counter() - start, 4),
            "parser_cpu_s": round(usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime, 4),
            "parser_peak_rss_kb": usage.ru_maxrss}
        return ("ok", profile)
    except AdvisorError as exc:
        return ("error", exc.reason if isinstance(exc, InputError) else str(exc))
    except MemoryError:
        return ("error", f"ran out of memory while parsing (limit {budget >> 20} MiB more "
                         "than the parser's start; set IOADVISOR_INGEST_MEMORY_MB to change)")
    except RecursionError:
        return ("error", "nesting too deep to parse")
    except Exception as exc:  # a bug: hand the traceback to the parent
        return ("crash", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")


def reply(conn, result: tuple[str, object]) -> None:
    """Send `result` to the parent; what cannot be sent becomes a one-line error."""
    try:
        conn.send(result)  # pickled whole before anything is written: a failure leaves the pipe clean
    except MemoryError:
        conn.send(("error", "the parsed profile is too large to return within the memory limit"))
    except RecursionError:
        conn.send(("error", "the parsed profile is nested too deeply to return"))
    except Exception as exc:  # a bug; never a traceback of multiprocessing's on the user's terminal
        conn.send(("crash", f"returning the profile: {type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def outcome(path: Path, result, code: int | None) -> JobProfile:
    """The profile of a child's `result`; InputError for a failure, a crash (`result` None, the
    child's exit `code`) or bad input; IsolatedCrash for a bug."""
    if result is None:
        if code is not None and code < 0:
            raise InputError(str(path), f"the parser crashed ({_signal_name(code)}); "
                             "the log is probably corrupt or truncated")
        raise InputError(str(path), f"the parser exited unexpectedly (status {code})")
    kind, payload = result
    if kind == "ok":
        return payload
    if kind == "error":
        raise InputError(str(path), payload)
    raise IsolatedCrash(path, payload)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Isolated:
    """`load(path)` running in its child; :meth:`result` waits for the profile.

    Starting the child and waiting for it are apart so that the caller can work
    meanwhile (the CLI reads the rule catalogue while the first log is parsed).
    The time limit counts from the start.
    """

    def __init__(self, load: Callable[[Path], JobProfile], path: Path, timeout_s: float = 120.0,
                 memory_bytes: int | None = None):
        ctx = context()
        self.path, self.deadline = Path(path), time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self._recv, send = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=_child, daemon=True,
                                 args=(send, load, self.path, memory_bytes or memory_budget()))
        with starting(ctx, load):
            self._proc.start()
        send.close()

    def result(self) -> JobProfile:
        """The profile; InputError if the child failed, crashed or overran (IsolatedCrash: a bug)."""
        try:
            result = self._receive()
        finally:
            self.cancel()
        return outcome(self.path, result, self._proc.exitcode)

    def cancel(self) -> None:
        """Stop the child if it still runs, and reap it (idempotent)."""
        self._recv.close()
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join()

    def _receive(self):
        """The child's result, None if it died without one; InputError on timeout."""
        if not self._recv.poll(max(0.0, self.deadline - time.monotonic())):
            if self._proc.is_alive():
                self.cancel()
                raise InputError(str(self.path), f"parsing took longer than {self.timeout_s:g} s "
                                 "and was stopped")
            return None
        try:
            return self._recv.recv()
        except (EOFError, OSError):
            return None


def run_isolated(load: Callable[[Path], JobProfile], path: Path, timeout_s: float = 120.0,
                 memory_bytes: int | None = None) -> JobProfile:
    """`load(path)` in a child process; InputError if it fails, crashes or overruns."""
    return Isolated(load, path, timeout_s, memory_bytes).result()
