"""Find a finished job's Darshan log(s), waiting a bounded time for one still being written.

Three site layouts (`[hook] log_layout`):

- ``darshan``: Darshan's own ``<log_dir>/<Y>/<M>/<D>/<user>_<exe>_id<jobid>_<...>.darshan``
  (month and day not zero-padded; the date is the job's start in local time, so a
  few days are searched). Darshan writes ``*.darshan_partial`` and renames it when the
  log is complete.
- ``glob``: a pattern with ``{jobid}``/``{user}``/``{uid}``/``{workdir}``.
- ``fixed``: one name, as set with ``DARSHAN_LOGFILE``.

Runs as the job's user (see :mod:`advisor.hooks.child`): only files that user owns,
regular files and not symlinks, are taken.
"""

from __future__ import annotations

import glob
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

from advisor.hooks.job import JobContext
from advisor.hooks.settings import HookConfig

POLL_S = 0.2
SETTLED_AGE_S = 1.0  # a log untouched this long is complete (Darshan writes it in one go)
PARTIAL = ".darshan_partial"


@dataclass
class Located:
    """The logs found for one job, and what the search saw."""

    logs: list[str] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)  # still changing when the wait ended
    skipped: list[str] = field(default_factory=list)  # found but refused (owner, symlink, ...)
    waited_s: float = 0.0
    truncated: int = 0  # logs beyond max_logs

    def note(self) -> str:
        parts = []
        if self.unsettled:
            parts.append(f"{len(self.unsettled)} log(s) still being written after {self.waited_s:.1f} s")
        if self.skipped:
            parts.append("refused: " + "; ".join(self.skipped[:3]))
        if self.truncated:
            parts.append(f"{self.truncated} more log(s) beyond max_logs")
        return ", ".join(parts)


def darshan_day_dirs(log_dir: str, start: float | None, now: float, search_days: int) -> list[Path]:
    """The date directories a job's logs can be in, newest first (local time, as Darshan)."""
    last = datetime.fromtimestamp(now).date()
    first = datetime.fromtimestamp(start).date() if start else last
    first = min(first, last) - timedelta(days=search_days)
    days = min((last - first).days, 366)
    return [_day_dir(log_dir, last - timedelta(days=n)) for n in range(days + 1)]


def _day_dir(log_dir: str, day: date) -> Path:
    return Path(log_dir) / str(day.year) / str(day.month) / str(day.day)


def is_darshan_name(name: str, job: JobContext) -> bool:
    """Whether a file name in a Darshan date directory belongs to this job (complete or partial)."""
    if not (name.startswith(f"{job.user}_") or name.startswith(f"{job.uid}_")):
        return False
    if not (name.endswith(".darshan") or name.endswith(PARTIAL)):
        return False
    return f"_id{job.jobid}_" in name or f"_id{job.jobid}-" in name


def candidates(cfg: HookConfig, job: JobContext, now: float) -> list[str]:
    """Every path that currently looks like one of the job's logs (partial ones included)."""
    if cfg.log_layout == "darshan":
        found = []
        for day in darshan_day_dirs(cfg.log_dir, job.start_time, now, cfg.search_days):
            try:
                with os.scandir(day) as entries:
                    found += [e.path for e in entries if is_darshan_name(e.name, job)]
            except OSError:
                continue  # no logs that day, or not listable: nothing of ours
        return sorted(found)
    values = job.template_values()
    if cfg.log_layout == "glob":
        escaped = {k: glob.escape(v) for k, v in values.items()}
        return sorted(glob.glob(cfg.log_glob.format_map(escaped)))
    path = cfg.log_file.format_map(values)
    return [path] if os.path.lexists(path) else []


def layout_warnings(cfg: HookConfig) -> list[str]:
    """What in the log directory says Darshan puts its logs somewhere the config does not look."""
    if cfg.log_layout != "darshan":
        return []
    try:
        with os.scandir(cfg.log_dir) as entries:
            names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    except OSError as exc:
        return [f"{cfg.log_dir}: cannot list the log directory ({exc.strerror})"]
    flat = [n for n, is_dir in names if n.endswith((".darshan", PARTIAL))]
    years = [n for n, is_dir in names if is_dir and n.isdigit() and len(n) == 4]
    warnings = []
    if flat:
        warnings.append(f"{cfg.log_dir}: {len(flat)} log(s) directly in the log directory, not in <year>/<month>/"
                        "<day>/: DARSHAN_LOG_DIR_PATH writes flat; use DARSHAN_LOGPATH for the dated layout, "
                        "or log_layout = \"glob\" with log_glob = \"<dir>/{user}_*_id{jobid}*.darshan\"")
    if not years:
        warnings.append(f"{cfg.log_dir}: no <year> directory: Darshan's dated layout is not there (yet)")
    return warnings


def find_logs(cfg: HookConfig, job: JobContext, *, now: Callable[[], float] = time.time,
              sleep: Callable[[float], None] = time.sleep) -> Located:
    """The job's complete logs; waits at most `cfg.wait_s` while one is still being written."""
    start = time.monotonic()
    seen: dict[str, tuple[int, int]] = {}
    while True:
        result = _scan(cfg, job, now(), seen)
        result.waited_s = time.monotonic() - start
        if not result.unsettled or result.waited_s >= cfg.wait_s:
            return _limit(result, cfg.max_logs)
        sleep(min(POLL_S, max(0.0, cfg.wait_s - result.waited_s)))


def _scan(cfg: HookConfig, job: JobContext, wall: float, seen: dict) -> Located:
    result = Located()
    for path in candidates(cfg, job, wall):
        try:
            st = os.lstat(path)
        except OSError:
            continue  # renamed or removed since the listing
        # A partial log is waited for only when it could be the job's own: another user can
        # plant an empty "<victim>_..._id<next job>..." partial in a shared log directory.
        refused = _refusal(st, job)
        if refused:
            result.skipped.append(f"{path}: {refused}")
            continue
        if path.endswith(PARTIAL):
            result.unsettled.append(path)
            continue
        key = (st.st_size, st.st_mtime_ns)
        # Darshan renames *.darshan_partial once the log is complete: its final name is proof.
        settled = (cfg.log_layout == "darshan" or wall - st.st_mtime >= SETTLED_AGE_S
                   or seen.get(path) == key)
        seen[path] = key
        (result.logs if settled else result.unsettled).append(path)
    return result


def _refusal(st: os.stat_result, job: JobContext) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "a symlink"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != job.uid:
        return f"owned by uid {st.st_uid}, not the job's user"
    return ""


def _limit(result: Located, max_logs: int) -> Located:
    if len(result.logs) > max_logs:
        result.truncated = len(result.logs) - max_logs
        result.logs = result.logs[:max_logs]
    return result
