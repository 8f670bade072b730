"""One parsing child kept for input after input, for a process that parses many (a fleet worker).

Forking a fresh child per log (advisor.ingest.isolate) costs a fleet worker about 0.04 s of
CPU per log, copying and tearing down its address space: twice the parse of a typical log.
A kept child is forked once, with the same time and memory limits and the same one-line
errors: its memory limit is set once (its start plus the budget); a timeout or a crash kills
it and the next input gets a new one, as does the input after any error (a MemoryError may
leave its heap grown) and every RENEW inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from advisor.errors import InputError
from advisor.ingest import isolate
from advisor.profile import JobProfile

RENEW = 500
"""Inputs a kept child parses before it is replaced (bounds what its heap may keep)."""

_kept: KeptChild | None = None


def keep_child() -> None:
    """From now on this process parses through one kept child (call where no thread runs)."""
    global _kept
    _kept = _kept or KeptChild()


def kept() -> KeptChild | None:
    return _kept


class KeptChild:
    """A parsing child taking (load, path) pairs from its pipe; started on first use."""

    def __init__(self):
        self._proc, self._conn, self._parsed = None, None, 0

    def parse(self, load: Callable[[Path], JobProfile], path: Path, timeout_s: float) -> JobProfile:
        """`load(path)` in the child; InputError if it fails, crashes or overruns (as isolate's)."""
        path = Path(path)
        if self._proc is None or not self._proc.is_alive() or self._parsed >= RENEW:
            self.stop()
            self._start()
        self._parsed += 1
        self._conn.send((load, path))
        result = None
        if self._conn.poll(timeout_s):
            try:
                result = self._conn.recv()
            except (EOFError, OSError):
                result = None
        elif self._proc.is_alive():
            self.stop()
            raise InputError(str(path), f"parsing took longer than {timeout_s:g} s and was stopped")
        if result is None or result[0] != "ok":
            self.stop()  # crashed, or may have kept what it grew: a fresh one for the next input
        return isolate.outcome(path, result, self._proc.exitcode if self._proc else None)

    def _start(self) -> None:
        ctx = isolate.context()
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, isolate.memory_budget(), self._conn), daemon=True)
        with isolate.starting(ctx, _serve):
            self._proc.start()
        child.close()
        self._parsed = 0

    def stop(self) -> None:
        """End the child (it is idle or stuck: no result is lost) and reap it."""
        if self._proc is None:
            return
        self._conn.close()
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join()


def _serve(conn, budget: int, parent_end=None) -> None:
    """The kept child: one result per (load, path) its pipe brings, until the pipe closes."""
    # a forked child holds a copy of its parent's end: closed, the pipe ends when the parent dies
    if parent_end is not None:
        parent_end.close()
    isolate.settle(budget)
    while True:
        try:
            load, path = conn.recv()
        except (EOFError, OSError):
            return
        isolate.reply(conn, isolate.parse(load, path, budget))
