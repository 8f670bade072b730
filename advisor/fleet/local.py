"""Local fleet workers: one warm interpreter per worker, logs streamed to it.

A Dask LocalCluster starts a scheduler, a nanny and a fresh interpreter per worker, which
imports the analysis on its first log: about 18 s of CPU on the 2-core VM before the first
result, more than diagnosing 113 logs. Local workers are forked instead from one forkserver
that imported the analysis once (or from the driver itself, which did, when it runs no other
thread); each loads the rule set on start and then takes logs from
its pipe, a few queued so it never waits for the driver. Each worker parses through one kept
parsing child with the usual limits (advisor.ingest.kept), not a fork per log. A worker that dies on a
log gives that log an error row and is replaced; a wrong site config stops the run.
"""

from __future__ import annotations

import multiprocessing as mp
from collections import deque
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection, wait
from typing import Any

from advisor.errors import ConfigError
from advisor.fleet.analyse import analyse_log, failed_log
from advisor.fleet.walk import LogFile

QUEUED = 2
"""Logs handed to a worker ahead: one in analysis, one waiting, so the driver's batch commits
never leave a worker idle."""
_PRELOAD = ["advisor.fleet.analyse", "advisor.engine.rules", "advisor.ingest.darshan_preload"]


class LocalPool:
    """`workers` warm analysis processes on this machine (a context manager)."""

    def __init__(self, workers: int, config: Any, timeout_s: float):
        self.size, self.config, self.timeout_s = max(1, workers), config, timeout_s
        self._ctx = _context()
        self._workers: list[_Worker] = []

    def __enter__(self) -> LocalPool:
        for _ in range(self.size):
            self._workers.append(self._start())
        return self

    def __exit__(self, *exc) -> None:
        for worker in self._workers:
            worker.stop()

    def results(self, logs: Iterable[LogFile]) -> Iterator[dict[str, Any]]:
        """The rows of every log, in the order they finish; ConfigError stops the run."""
        logs = iter(logs)
        for worker in self._workers:
            worker.feed(logs)
        while busy := [w for w in self._workers if w.queued]:
            for conn in wait([w.conn for w in busy]):
                worker = next(w for w in busy if w.conn is conn)
                log = worker.queued.popleft()
                try:
                    kind, payload = conn.recv()
                except (EOFError, OSError):  # it died on this log
                    worker = self._replace(worker)
                    kind, payload = "ok", failed_log(log, "worker failed on this log: its process "
                                                          f"ended ({_status(worker.died)})")
                if kind == "config":
                    raise ConfigError(payload)
                yield payload
                worker.feed(logs)

    def _replace(self, dead: _Worker) -> _Worker:
        """A new worker in the place of `dead`, given the logs that were queued for it."""
        code = dead.stop()
        worker = self._start()
        worker.died = code
        for log in dead.queued:
            worker.queued.append(log)
            worker.conn.send(log)
        self._workers[self._workers.index(dead)] = worker
        return worker

    def _start(self) -> _Worker:
        from advisor.ingest.isolate import main_hidden

        driver, worker = self._ctx.Pipe()
        # a forked worker holds copies of the driver's ends of its own pipe and of the others': it
        # closes them, or it would never see its pipe end when the driver closes it
        drivers = [driver, *(w.conn for w in self._workers if not w.conn.closed)]
        inherited = drivers if self._ctx is mp.get_context("fork") else []
        proc = self._ctx.Process(target=_serve, args=(worker, self.config, self.timeout_s, inherited), daemon=False)
        with main_hidden(_serve):
            proc.start()
        worker.close()
        return _Worker(proc, driver)


class _Worker:
    def __init__(self, proc, conn: Connection):
        self.proc, self.conn = proc, conn
        self.queued: deque[LogFile] = deque()
        self.died: int | None = None  # exit status of the worker this one replaced

    def feed(self, logs: Iterator[LogFile]) -> None:
        while len(self.queued) < QUEUED and (log := next(logs, None)) is not None:
            self.queued.append(log)
            try:
                self.conn.send(log)
            except OSError:  # it died before taking it: its pipe reads as ended, and the pool
                return  # replaces it, giving the replacement every log queued here

    def stop(self) -> int | None:
        """Close its pipe (it exits at the end of its log) and reap it; its exit code."""
        self.conn.close()
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        return self.proc.exitcode


def _context():
    """Workers forked from this process when no other thread runs in it (the driver imported the
    analysis already: a forkserver would import it all again, about 0.7 s of CPU); else from a
    forkserver that imported it (a thread holding a lock at the fork would leave it held)."""
    import importlib
    import threading

    if threading.active_count() == 1:
        for module in _PRELOAD:  # what the forkserver would have loaded, once for every worker
            importlib.import_module(module)
        return mp.get_context("fork")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


def _status(code: int | None) -> str:
    import signal

    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


def _serve(conn: Connection, config: Any, timeout_s: float, inherited: list[Connection]) -> None:
    """A worker: rows for each log its pipe brings, until the pipe closes."""
    import signal

    for driver_end in inherited:
        driver_end.close()

    from advisor import gcpolicy
    from advisor.engine.rules import load_catalogue
    from advisor.ingest.kept import keep_child

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when to stop
    gcpolicy.for_bursts()  # (a forkserver's child did not inherit the driver's)
    load_catalogue()  # warm before the first log (the per-user rule cache makes it a read)
    keep_child()  # one parsing child for all its logs, not a fork per log
    gcpolicy.settled()  # the analysis code and the rules: full collections need not scan them
    while True:
        try:
            log = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result = ("ok", analyse_log(log, config, timeout_s))
        except ConfigError as exc:
            result = ("config", str(exc))
        try:
            conn.send(result)
        except OSError:  # the driver stopped (interrupted, or a wrong config): nothing to say
            return
