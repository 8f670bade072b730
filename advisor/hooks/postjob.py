"""What the hook does for one finished job, whatever the scheduler: the steps in order.

1. site-wide opt-out (`[hook] opt_out_users`);
2. as the job's user: the user's opt-out markers, then the job's Darshan logs (bounded wait);
3. as the job's user, with time and memory limits: diagnose, then write the reports;
4. as root: one line in the site log; errors also to stderr and syslog.

Never raises: every failure becomes the record's ``error``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import sys
import syslog
import time
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from advisor.formatting import printable
from advisor.hooks import locate, sitelog, writer
from advisor.hooks.child import ChildResult, run_as_user
from advisor.hooks.job import JobContext
from advisor.hooks.runner import run_diagnosis
from advisor.hooks.settings import HookConfig

SURVEY_SLACK_S = 5.0  # listing log directories on a busy parallel file system


def opt_out_reason(cfg: HookConfig, job: JobContext) -> str | None:
    """Why the user does not want a report (marker in the work dir or home dir), else None.

    Runs as the job's user: the markers are looked up with the user's rights only.
    """
    places = [("work dir", job.workdir)]
    with contextlib.suppress(KeyError):
        places.append(("home dir", pwd.getpwuid(job.uid).pw_dir))
    for where, directory in places:
        if os.path.lexists(os.path.join(directory, cfg.opt_out_marker)):
            return f"{cfg.opt_out_marker} in the {where}"
    return None


def survey(cfg: HookConfig, job: JobContext) -> dict[str, Any]:
    """As the job's user: the opt-out reason, else the job's logs."""
    reason = opt_out_reason(cfg, job)
    if reason:
        return {"opted_out": reason}
    found = locate.find_logs(cfg, job)
    return {"logs": found.logs, "note": found.note()}


def survey_as_user(cfg: HookConfig, job: JobContext) -> ChildResult:
    """`survey` in a child running as the job's user, bounded by the wait for logs."""
    return run_as_user(lambda: survey(cfg, job), uid=job.uid, gid=job.gid,
                       timeout_s=cfg.wait_s + SURVEY_SLACK_S)


def base_record(job: JobContext) -> dict[str, Any]:
    return {"time": datetime.now(UTC).isoformat(timespec="seconds"),
            "jobid": job.jobid, "user": job.user, "uid": job.uid, "node": job.node,
            "exit": job.exit_code, "status": "error", "exe": "", "categories": [],
            "lost_s": 0.0, "error": None}


def handle_job(job: JobContext, cfg: HookConfig, site_config: Any = None) -> dict[str, Any]:
    """Run the hook for `job`; the site-log record of what happened (never raises)."""
    start = time.monotonic()
    record = base_record(job)
    try:
        record.update(_steps(job, cfg, site_config))
    except Exception as exc:  # the hook must finish; the record says what broke
        record.update(status="error", error=f"{type(exc).__name__}: {exc}")
    record["elapsed_s"] = round(time.monotonic() - start, 3)
    return record


def _steps(job: JobContext, cfg: HookConfig, site_config: Any) -> dict[str, Any]:
    if job.user in cfg.opt_out_users:
        return {"status": "opted-out", "note": "user listed in hook.opt_out_users"}
    found = survey_as_user(cfg, job)
    if found.error:
        return {"status": "error", "error": f"looking for logs: {found.error}"}
    if found.value.get("opted_out"):
        return {"status": "opted-out", "note": found.value["opted_out"]}
    logs, note = found.value["logs"], found.value.get("note") or None
    if not logs:
        return {"status": "no-log", "note": note}
    dest = writer.destination(cfg, job)
    if cfg.destination == "site-dir":
        writer.prepare_site_dir(cfg.site_dir, job)
    result = run_diagnosis(job, cfg, site_config, logs, dest)
    if result.error:
        return {"status": "error", "logs": logs, "note": note,
                "error": f"diagnosis: {result.error}"}
    notes = "; ".join(n for n in (note, result.value.pop("note", None)) if n) or None
    return {**result.value, "logs": logs, "note": notes}


def record_outcome(record: dict[str, Any], cfg: HookConfig) -> None:
    """Append the record to the site log; report errors on stderr and to syslog."""
    problems = [record["error"]] if record.get("error") else []
    if cfg.site_log:
        try:
            sitelog.append_line(cfg.site_log, record)
        except OSError as exc:
            problems.append(f"site log {cfg.site_log}: {exc.strerror or exc}")
    for problem in problems:
        message = printable(f"ioadvisor hook: job {record['jobid']}: {problem}")
        print(message, file=sys.stderr)
        if cfg.syslog:
            syslog.openlog("ioadvisor", syslog.LOG_PID, syslog.LOG_USER)
            syslog.syslog(syslog.LOG_WARNING, message)


def plan(job: JobContext, cfg: HookConfig) -> dict[str, Any]:
    """What the hook would do for `job`, without diagnosing or writing (for `hook check`)."""
    doc: dict[str, Any] = {"job": asdict(job), "first_node": job.is_first_node(),
                           "log_source": cfg.log_source(), "destination": writer.destination(cfg, job),
                           "min_severity": cfg.min_severity, "site_log": cfg.site_log or None}
    if job.user in cfg.opt_out_users:
        doc["opted_out"] = "user listed in hook.opt_out_users"
        return doc
    found = survey_as_user(cfg, job)
    doc.update(found.value or {"error": found.error})
    return doc
