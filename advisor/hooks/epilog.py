"""The Slurm epilog entry: the job from slurmd's environment, then the post-job steps.

slurmd runs ``Epilog=`` as root with no PATH and no HOME, once on every node of the job;
a non-zero exit drains the node. So: only the first host of the job's node list works,
and :func:`slurm_epilog` returns 0 whatever happens.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime

from advisor.hooks.job import JobContext, expand_hostlist


def job_from_slurm_env(env: Mapping[str, str]) -> JobContext:
    """The finished job as slurmd describes it to the epilog."""
    def need(name: str) -> str:
        value = env.get(name, "")
        if not value:
            raise ValueError(f"{name} is not set (is this running as slurmd's Epilog?)")
        return value

    nodelist = env.get("SLURM_NODELIST") or env.get("SLURM_JOB_NODELIST") or ""
    return JobContext(
        jobid=need("SLURM_JOB_ID"), user=need("SLURM_JOB_USER"),
        uid=int(need("SLURM_JOB_UID")), gid=int(need("SLURM_JOB_GID")),
        workdir=need("SLURM_JOB_WORK_DIR"),
        nodes=expand_hostlist(nodelist) if nodelist else [],
        node=env.get("SLURMD_NODENAME", ""), exit_code=env.get("SLURM_JOB_EXIT_CODE2", ""))


def run_job(job: JobContext, config_path: str | None) -> dict | None:
    """The post-job steps for `job` on this node; the site-log record, None when not our node."""
    from advisor.hooks.postjob import handle_job, record_outcome
    from advisor.hooks.settings import load_settings

    if not job.is_first_node():
        return None
    cfg, site_config = load_settings(config_path)
    record = handle_job(job, cfg, site_config)
    record_outcome(record, cfg)
    return record


def slurm_epilog(config_path: str | None, env: Mapping[str, str]) -> int:
    """The epilog: always 0, so that slurmd never drains a node because of us."""
    try:
        run_job(job_from_slurm_env(env), config_path)
    except BaseException as exc:  # noqa: BLE001 - anything at all: report it, exit 0
        _report_failure(env.get("SLURM_JOB_ID", "?"), exc)
    return 0


def _report_failure(jobid: str, exc: BaseException) -> None:
    try:
        from advisor.formatting import printable

        message = printable(f"ioadvisor hook: job {jobid}: {type(exc).__name__}: {exc}")
        print(message, file=sys.stderr)
        import syslog

        syslog.openlog("ioadvisor", syslog.LOG_PID, syslog.LOG_USER)
        syslog.syslog(syslog.LOG_ERR, message)
    except BaseException:  # noqa: BLE001 - stderr may be closed: nothing left to try
        pass


SCONTROL = "/usr/bin/scontrol"


def job_from_scontrol(jobid: str, scontrol: str = SCONTROL) -> JobContext:
    """A job as `scontrol show job -o` describes it (for `hook check` on a real job id)."""
    env = {"SLURM_CONF": os.environ["SLURM_CONF"]} if "SLURM_CONF" in os.environ else {}
    run = subprocess.run([scontrol, "show", "job", "-o", jobid], capture_output=True, text=True,
                         timeout=30, env=env, stdin=subprocess.DEVNULL)
    if run.returncode != 0 or "JobId=" not in run.stdout:
        raise ValueError(f"scontrol show job {jobid}: {run.stderr.strip() or 'no such job'}")
    fields = parse_scontrol(run.stdout)
    user, uid = _name_and_id(fields["UserId"])
    _, gid = _name_and_id(fields["GroupId"])
    start = fields.get("StartTime", "")
    nodelist = fields.get("NodeList", "")
    return JobContext(jobid=fields["JobId"], user=user, uid=uid, gid=gid, workdir=fields["WorkDir"],
                      nodes=expand_hostlist(nodelist) if nodelist not in ("", "(null)") else [],
                      start_time=datetime.fromisoformat(start).timestamp() if start[:1].isdigit() else None)


def parse_scontrol(line: str) -> dict[str, str]:
    """`Key=value` pairs of one `scontrol -o` line; values may hold spaces (WorkDir, Command)."""
    keys = list(re.finditer(r"(?:^| )([A-Za-z][A-Za-z0-9:/_]*)=", line.strip()))
    return {m.group(1): line.strip()[m.end():(keys[i + 1].start() if i + 1 < len(keys) else None)]
            for i, m in enumerate(keys)}


def _name_and_id(value: str) -> tuple[str, int]:
    name, _, number = value.partition("(")
    return name, int(number.rstrip(")"))
