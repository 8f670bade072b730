"""Analyse an archive: walk, skip what is done, analyse in parallel, commit in batches.

Local workers are this machine's warm processes (advisor.fleet.local); a scheduler or Slurm
jobs are Dask's.

The driver never holds more than `window` logs in flight and one batch of rows: the
walk is a generator, results are committed to the dataset as they arrive, and
workers return rows (a few KB), never job profiles.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from advisor.errors import ConfigError, InputError
from advisor.fleet.analyse import analyse_log, failed_log
from advisor.fleet.store import MANIFEST, FleetStore, Seen, storable
from advisor.fleet.walk import DEFAULT_PATTERNS, LogFile, content_hash, iter_logs


@dataclass
class FleetOptions:
    """How and where to run; exactly one of workers / scheduler / slurm_jobs picks the cluster."""

    workers: int = 2
    scheduler: str | None = None
    slurm_jobs: int | None = None
    timeout_s: float = 120.0  # per log
    batch: int = 200  # logs per committed part: an interruption loses at most this many
    window: int = 0  # logs in flight; 0: 4 per worker thread
    patterns: tuple[str, ...] = DEFAULT_PATTERNS
    since: date | None = None
    until: date | None = None
    config: Any = None  # advisor.config.SiteConfig, validated by the caller
    slurm: dict[str, Any] = field(default_factory=dict)  # extra SLURMCluster arguments
    retry_errors: bool = False  # analyse again the logs recorded with an error


@dataclass
class FleetStats:
    found: int = 0
    skipped: int = 0
    analysed: int = 0
    errors: int = 0
    findings: int = 0
    parts: int = 0
    elapsed_s: float = 0.0

    @property
    def logs_per_s(self) -> float:
        return self.analysed / self.elapsed_s if self.elapsed_s > 0 else 0.0


Progress = Callable[[FleetStats, bool], None]  # (stats so far, walk finished?)


def run_fleet(inputs: Iterable[str], out: str, options: FleetOptions,
              progress: Progress | None = None) -> FleetStats:
    """Analyse every new log under `inputs` into the dataset at `out`."""
    stats = FleetStats()
    started = time.perf_counter()
    _check_engine(options.config)
    new_dataset = not (Path(out) / MANIFEST).exists()
    store = FleetStore(out).lock()
    try:
        pending = _new_logs(iter_logs(inputs, options.patterns, options.since, options.until),
                            store.seen(), stats, options.retry_errors)
        first = next(pending, None)
        if first is None:  # all done already: no cluster to start
            if progress:
                progress(stats, True)
            return stats
        logs = itertools.chain([first], pending)
        if options.scheduler or options.slurm_jobs:
            with _client(options) as client:
                _analyse_all(client, logs, store, options, stats, progress)
        else:
            _analyse_locally(logs, store, options, stats, progress)
    except BaseException:
        if new_dataset and not stats.parts:
            store.discard()  # a run that failed before its first batch leaves no dataset behind
        raise
    finally:
        store.close()
        stats.elapsed_s = time.perf_counter() - started
    return stats


def _check_engine(config) -> None:
    """Load the rule set, check the site config and load its model once, before any log: a
    mistake there is one error for the run (ConfigError), not an error row for every log."""
    from advisor.config import load_config
    from advisor.engine import check_thresholds
    from advisor.engine.rules import load_catalogue
    from advisor.pipeline import load_model

    config = config if config is not None else load_config()
    check_thresholds(config, load_catalogue())
    try:
        load_model(config.section("model").path or None)
    except InputError as exc:
        raise ConfigError(f"[model] path: {exc}") from None


def _new_logs(logs: Iterator[LogFile], seen: dict[str, Seen], stats: FleetStats,
              retry_errors: bool = False) -> Iterator[LogFile]:
    """Logs not yet in the dataset: same path and same content means done.

    Same size and modification time is taken as same content without reading the
    file (as make and rsync do); otherwise the content hash decides, so a log that
    was only touched or copied back is still not analysed twice.
    """
    for log in logs:
        stats.found += 1
        done = seen.get(storable(log.path))
        if done is not None and not (retry_errors and done.failed) and _same_content(log, done):
            stats.skipped += 1
            continue
        yield log


def _same_content(log: LogFile, done: Seen) -> bool:
    if (log.size, log.mtime_ns) == (done.size, done.mtime_ns):
        return True
    try:
        return bool(done.content_hash) and content_hash(log.path) == done.content_hash
    except OSError:
        return False


def _analyse_all(client, pending: Iterator[LogFile], store: FleetStore, options: FleetOptions,
                 stats: FleetStats, progress: Progress | None) -> None:
    from distributed import as_completed

    window = options.window or 4 * max(1, _threads(client))
    config = client.scatter(options.config, broadcast=True) if options.config is not None else None
    running: dict[Any, LogFile] = {}
    batch = _Batch(store, options.batch, stats)
    completed = as_completed()
    walk_done = _refill(client, pending, running, completed, window, config, options.timeout_s)
    for future in completed:
        log = running.pop(future)
        try:
            batch.add(_result(future, log))
        except ConfigError:
            batch.flush()  # keep what is done; the rest fails alike
            raise
        walk_done = walk_done or _refill(client, pending, running, completed, window, config,
                                         options.timeout_s)
        if progress:
            progress(stats, walk_done)
    batch.flush()
    if progress:
        progress(stats, True)


def _analyse_locally(pending: Iterator[LogFile], store: FleetStore, options: FleetOptions,
                     stats: FleetStats, progress: Progress | None) -> None:
    """The same on this machine's warm worker processes (advisor.fleet.local), without Dask."""
    from advisor.fleet.local import LocalPool

    batch = _Batch(store, options.batch, stats)
    walk = _Exhausted(pending)
    with LocalPool(options.workers, options.config, options.timeout_s) as pool:
        try:
            for result in pool.results(walk):
                batch.add(result)
                if progress:
                    progress(stats, walk.done)
        except ConfigError:
            batch.flush()  # keep what is done; the rest fails alike
            raise
    batch.flush()
    if progress:
        progress(stats, True)


class _Exhausted:
    """An iterator that says when it has run out (the progress bar's total is known then)."""

    def __init__(self, items: Iterator):
        self.items, self.done = items, False

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self.items)
        except StopIteration:
            self.done = True
            raise


def _refill(client, pending, running, completed, window, config, timeout_s) -> bool:
    """Keep `window` logs in flight; True once the walk is exhausted."""
    while len(running) < window:
        log = next(pending, None)
        if log is None:
            return True
        future = client.submit(analyse_log, log, config, timeout_s, pure=False)
        running[future] = log
        completed.add(future)
    return False


def _result(future, log: LogFile) -> dict[str, Any]:
    """The rows of one log; a worker that died on it still yields an error row."""
    try:
        result = future.result()
    except ConfigError:
        raise
    except Exception as exc:  # KilledWorker, a lost connection: the log gets an error row
        result = failed_log(log, f"worker failed on this log: {type(exc).__name__}: {exc}")
    future.release()
    return result


class _Batch:
    """Rows waiting to be committed as one part."""

    def __init__(self, store: FleetStore, size: int, stats: FleetStats):
        self.store, self.size, self.stats = store, max(1, size), stats
        self.jobs: list[dict[str, Any]] = []
        self.findings: list[dict[str, Any]] = []

    def add(self, result: dict[str, Any]) -> None:
        self.jobs.append(result["job"])
        self.findings.extend(result["findings"])
        self.stats.analysed += 1
        self.stats.errors += result["job"]["error"] is not None
        self.stats.findings += len(result["findings"])
        if len(self.jobs) >= self.size:
            self.flush()

    def flush(self) -> None:
        if self.jobs:
            self.store.write_batch(self.jobs, self.findings)
            self.stats.parts += 1
            self.jobs, self.findings = [], []


def _threads(client) -> int:
    return sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())


@contextlib.contextmanager
def _client(options: FleetOptions):
    """A Dask client on the scheduler or the Slurm cluster the options name (torn down after)."""
    import dask
    from distributed import Client

    # Workers start a child process per log (the isolated parser): they must not be daemons.
    with dask.config.set({"distributed.worker.daemon": False,
                          "distributed.scheduler.allowed-failures": 1}):
        if options.scheduler:
            with _connect(options.scheduler) as client:
                yield client
        else:
            with _slurm_cluster(options) as cluster, Client(cluster) as client:
                client.wait_for_workers(1, timeout=options.slurm.get("start_timeout", 600))
                yield client


@contextlib.contextmanager
def _connect(address: str):
    from distributed import Client

    try:
        client = Client(address, timeout="30s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(address, f"cannot reach the Dask scheduler: {exc}") from None
    with client:
        client.wait_for_workers(1, timeout=60)
        _check_workers(client, address)
        yield client


def _check_workers(client, address: str) -> None:
    """Workers must be able to start the isolated parser (a child process) for each log."""
    daemonic = [w for w, is_daemon in client.run(_is_daemon).items() if is_daemon]
    if daemonic:
        raise InputError(address, f"{len(daemonic)} of its workers are daemon processes and cannot "
                         "start the isolated log parser: start them with "
                         "DASK_DISTRIBUTED__WORKER__DAEMON=False in their environment")


def _is_daemon() -> bool:
    import multiprocessing

    return multiprocessing.current_process().daemon


@contextlib.contextmanager
def _slurm_cluster(options: FleetOptions):
    """dask-jobqueue's SLURMCluster, one single-threaded worker per batch job.

    Queue, account, walltime and memory come from the site's dask-jobqueue config
    (``jobqueue.slurm.*``) unless given in `options.slurm`.
    """
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise InputError("--slurm-jobs", "dask-jobqueue is not installed (pip install dask-jobqueue)") from None
    import shutil

    import dask

    if shutil.which("sbatch") is None:
        raise InputError("--slurm-jobs", "sbatch not found: run on a Slurm login node")
    _slurm_preflight(options.slurm)
    # One single-threaded worker process per core of each batch job.
    cores = options.slurm.get("cores") or dask.config.get("jobqueue.slurm.cores", None) or 1
    kwargs = {"cores": cores, "processes": cores, "worker_extra_args": ["--no-dashboard"],
              "job_script_prologue": ["export DASK_DISTRIBUTED__WORKER__DAEMON=False"]}
    if not dask.config.get("jobqueue.slurm.memory", None):
        kwargs["memory"] = f"{4 * cores}GiB"
    kwargs.update({k: v for k, v in options.slurm.items() if k not in ("start_timeout", "cores")})
    with SLURMCluster(**kwargs) as cluster:
        cluster.scale(jobs=options.slurm_jobs)
        yield cluster


def _slurm_preflight(slurm: dict[str, Any]) -> None:
    """`sbatch --test-only` with the same partition and account: a Slurm that cannot take
    the worker jobs is one line now, not a ten-minute wait for workers that never come."""
    import subprocess

    cmd = ["sbatch", "--test-only", "--wrap", "true"]
    cmd += [f"--partition={slurm['queue']}"] if slurm.get("queue") else []
    cmd += [f"--account={slurm['account']}"] if slurm.get("account") else []
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError("--slurm-jobs", f"sbatch did not answer: {exc}") from None
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no message"])[-1]
        raise InputError("--slurm-jobs", f"Slurm refuses the worker jobs: {last}")
