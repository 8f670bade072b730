"""`ioadvisor hook`: the post-job hook (Slurm epilog, or any scheduler's epilogue)."""

from __future__ import annotations

import json
import os
import sys

import click

from advisor.errors import ConfigError
from advisor.formatting import printable

_CONFIG = click.option("--config", "config_path", envvar="IOADVISOR_CONFIG",
                       type=click.Path(dir_okay=False),
                       help="Site config (TOML) with a [hook] section [env: IOADVISOR_CONFIG].")


@click.group(name="hook", help="Post-job hooks for batch schedulers (Slurm epilog and others).")
def command():
    pass


@command.command("slurm-epilog")
@_CONFIG
@click.option("--dry-run", is_flag=True, help="Print what would be done (used by `hook check`).")
def slurm_epilog(config_path, dry_run):
    """Run as slurmd's Epilog (root, no PATH): report on the job that just ended. Always exits 0."""
    from advisor.hooks.epilog import job_from_slurm_env, slurm_epilog as run_epilog

    if dry_run:
        _print_plan(lambda: job_from_slurm_env(os.environ), config_path)
        return
    sys.exit(run_epilog(config_path, os.environ))


@command.command("run")
@_CONFIG
@click.option("--jobid", required=True, help="Job id (as in the Darshan log name).")
@click.option("--user", required=True, help="The job's user name.")
@click.option("--uid", required=True, type=int, help="The job's uid.")
@click.option("--gid", required=True, type=int, help="The job's primary gid.")
@click.option("--workdir", required=True, help="The job's working directory (absolute).")
@click.option("--start", type=float, default=None, help="Job start (POSIX seconds), to find Darshan's date directory.")
@click.option("--exit-code", default="", help="The job's exit status, recorded in the site log.")
def run(config_path, jobid, user, uid, gid, workdir, start, exit_code):
    """Report on one finished job (PBS, Flux or LSF epilogues). Always exits 0."""
    from advisor.hooks.epilog import run_job
    from advisor.hooks.job import JobContext

    try:
        job = JobContext(jobid=jobid, user=user, uid=uid, gid=gid, workdir=workdir,
                         exit_code=exit_code, start_time=start)
        run_job(job, config_path)
    except Exception as exc:  # an epilogue must not fail the scheduler's cleanup
        click.echo(printable(f"ioadvisor hook: job {jobid}: {exc}"), err=True)


@command.command("check")
@_CONFIG
@click.option("--wrapper", type=click.Path(dir_okay=False), help="The Epilog= wrapper to check (run as slurmd would).")
@click.option("--jobid", help="Show what the hook would do for this job (from scontrol, or the options below).")
@click.option("--user", help="The job's user (instead of asking scontrol).")
@click.option("--uid", type=int)
@click.option("--gid", type=int)
@click.option("--workdir")
def check(config_path, wrapper, jobid, user, uid, gid, workdir):
    """Validate the site config and the wrapper; print what the hook would do for a job."""
    from advisor.hooks.settings import load_settings

    from advisor.engine import check_thresholds
    from advisor.engine.rules import load_catalogue

    cfg, site = load_settings(config_path)
    check_thresholds(site, load_catalogue())
    click.echo(f"config {config_path}: valid ([hook] and the rules' thresholds)")
    for key, value in vars(cfg).items():
        click.echo(f"  {key} = {value!r}")
    from advisor.hooks.locate import layout_warnings

    for warning in layout_warnings(cfg):
        click.echo(printable(f"WARNING: {warning}"))
    if cfg.log_layout == "darshan":
        click.echo("note: logs are found by job id only if Darshan names them by it: build with "
                   "--with-jobid-env=SLURM_JOB_ID or set DARSHAN_JOBID=SLURM_JOB_ID for the job")
    job = _job_for_check(jobid, user, uid, gid, workdir) if jobid else None
    problems = []
    if wrapper:
        problems += _check_wrapper(wrapper, job)
    elif job:
        _print_plan(lambda: job, config_path)
    for problem in problems:
        click.echo(printable(f"PROBLEM: {problem}"))
    if problems:
        raise ConfigError(f"{len(problems)} problem(s) with the hook setup (see above)")


@command.command("install-wrapper")
@_CONFIG
@click.option("--out", required=True, help="Where to write the wrapper ('-': print it).")
@click.option("--python", "python", default=None, help="Python of the ioadvisor installation [this one].")
def install_wrapper(config_path, out, python):
    """Write the Epilog= wrapper script (absolute paths) for slurm.conf."""
    from advisor.hooks.settings import load_settings
    from advisor.hooks.wrapper import default_python, install_wrapper as install, render_wrapper

    if not config_path:
        raise click.UsageError("--config is required: the epilog has no environment to find it")
    config_path = os.path.abspath(config_path)
    load_settings(config_path)  # refuse to install a wrapper around a broken config
    target = "/etc/slurm/ioadvisor-epilog" if out == "-" else os.path.abspath(out)
    try:
        text = render_wrapper(python or default_python(), config_path, target)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if out == "-":
        click.echo(text, nl=False)
        return
    install(target, text)
    click.echo(f"wrote {target}; add to slurm.conf on every compute node:\n  Epilog={target}")


def _check_wrapper(wrapper: str, job) -> list[str]:
    from advisor.hooks.wrapper import check_wrapper

    env = {"SLURM_JOB_ID": "0", "SLURM_JOB_USER": "nobody", "SLURM_JOB_UID": "65534",
           "SLURM_JOB_GID": "65534", "SLURM_JOB_WORK_DIR": "/nonexistent"}
    if job is not None:
        env = {"SLURM_JOB_ID": job.jobid, "SLURM_JOB_USER": job.user, "SLURM_JOB_UID": str(job.uid),
               "SLURM_JOB_GID": str(job.gid), "SLURM_JOB_WORK_DIR": job.workdir}
        if job.nodes:
            env |= {"SLURM_NODELIST": ",".join(job.nodes), "SLURMD_NODENAME": job.nodes[0]}
    env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
    problems, output = check_wrapper(os.path.abspath(wrapper), env)
    click.echo(printable(f"wrapper {wrapper}: ran as slurmd would (as root, no PATH, no HOME) with --dry-run"
               + (f" for job {job.jobid}:" if job else " for a placeholder job:")))
    lines = output.strip().splitlines() or ["(no output)"]
    click.echo("\n".join(f"  {printable(line)}" for line in lines))
    return problems


def _job_for_check(jobid, user, uid, gid, workdir):
    from advisor.hooks.epilog import job_from_scontrol
    from advisor.hooks.job import JobContext

    given = (user, uid, gid, workdir)
    if all(v is not None for v in given):
        return JobContext(jobid=jobid, user=user, uid=uid, gid=gid, workdir=workdir)
    if any(v is not None for v in given):
        raise click.UsageError("give all of --user --uid --gid --workdir, or none (scontrol is asked)")
    try:
        return job_from_scontrol(jobid)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"job {jobid}: {exc}") from None


def _print_plan(get_job, config_path) -> None:
    from advisor.hooks.postjob import plan
    from advisor.hooks.settings import load_settings

    cfg, _ = load_settings(config_path)
    doc = plan(get_job(), cfg)
    click.echo(json.dumps(doc, indent=1, default=str))
