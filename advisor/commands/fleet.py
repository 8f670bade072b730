"""``ioadvisor fleet``: analyse a whole archive of logs on Dask, then report on the machine.

    ioadvisor fleet PATH... --out DIR [--workers N | --scheduler ADDRESS | --slurm-jobs K]
    ioadvisor fleet report DIR --html FILE
    ioadvisor fleet expect DIR
"""

from __future__ import annotations

import os
from datetime import date

import click

from advisor.errors import InputError
from advisor.formatting import printable
from advisor.fleet.settings import validate  # also registers [fleet] for this command's config

SUBCOMMANDS = ("run", "report", "expect")


class _RunByDefault(click.Group):
    """``fleet PATH...`` means ``fleet run PATH...``; ``report`` and ``expect`` are subcommands."""

    def parse_args(self, ctx, args):
        if args and args[0] not in SUBCOMMANDS and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_RunByDefault, name="fleet")
def command():
    """Analyse a whole archive of logs in parallel on Dask, then see the machine.

    \b
      ioadvisor fleet PATH... --out DIR [--workers N | --scheduler ADDRESS | --slurm-jobs K]
      ioadvisor fleet report DIR --html FILE
      ioadvisor fleet expect DIR

    A path named like a subcommand is given as ./report.
    """


def _day(ctx, param, value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)") from None


@command.command("run")
@click.argument("paths", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="Dataset folder (created, or resumed when it already holds a fleet dataset).")
@click.option("--workers", type=click.IntRange(1), default=None,
              help="Local worker processes, one thread each [default: [fleet] workers, or cores].")
@click.option("--scheduler", metavar="ADDRESS", help="An existing Dask scheduler (tcp://host:8786).")
@click.option("--slurm-jobs", type=click.IntRange(1), metavar="K",
              help="Start K single-worker Slurm batch jobs with dask-jobqueue.")
@click.option("--slurm-queue", help="Slurm partition for --slurm-jobs (else dask-jobqueue's config).")
@click.option("--slurm-account", help="Slurm account for --slurm-jobs.")
@click.option("--slurm-walltime", metavar="HH:MM:SS", help="Wall time of each worker job.")
@click.option("--slurm-memory", metavar="SIZE", help="Memory of each worker job (e.g. 4GiB).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=None,
              help="Seconds allowed to parse one log [default: [fleet] timeout_s, 120].")
@click.option("--batch", type=click.IntRange(1), default=None,
              help="Logs per committed part (an interruption loses at most one batch) [default: 200].")
@click.option("--glob", "globs", multiple=True, metavar="PATTERN",
              help="File names to take when walking folders (repeatable) [default: Darshan logs and dumps].")
@click.option("--since", callback=_day, metavar="YYYY-MM-DD", help="Only <Y>/<M>/<D> folders from this day.")
@click.option("--until", callback=_day, metavar="YYYY-MM-DD", help="Only <Y>/<M>/<D> folders up to this day.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Site config (TOML); its [fleet] section gives the defaults of these flags.")
@click.option("--retry-errors", is_flag=True,
              help="Analyse again the logs recorded with an error (e.g. after upgrading ioadvisor).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def run(paths, out, workers, scheduler, slurm_jobs, slurm_queue, slurm_account, slurm_walltime,
        slurm_memory, timeout_s, batch, globs, since, until, config_path, retry_errors, quiet):
    """Analyse every log under PATH... (folders, files, or @LIST files) into the dataset DIR.

    Logs already in DIR (same path, same content) are skipped, so an interrupted run
    is resumed by running the same command again.
    """
    from advisor.config import load_config
    from advisor.fleet.progress import progress_bar, summary_line
    from advisor.fleet.run import run_fleet

    if sum(x is not None for x in (workers, scheduler, slurm_jobs)) > 1:
        raise click.UsageError("give at most one of --workers, --scheduler, --slurm-jobs")
    _check_inputs(paths)
    config = load_config(config_path)
    flags = {"workers": workers, "scheduler": scheduler, "slurm_jobs": slurm_jobs, "timeout_s": timeout_s,
             "batch": batch, "patterns": tuple(globs), "slurm_queue": slurm_queue,
             "slurm_account": slurm_account, "slurm_walltime": slurm_walltime, "slurm_memory": slurm_memory}
    options = fleet_options(config, flags, since=since, until=until, retry_errors=retry_errors)
    with progress_bar(enabled=not quiet) as progress:
        stats = run_fleet(paths, out, options, progress)
    click.echo(printable(summary_line(stats, out)), err=True)


def fleet_options(config, flags: dict, **rest):
    """FleetOptions from the command line's `flags` (None or empty: not given) over the site
    config's [fleet] section over the built-in defaults."""
    from advisor.fleet.run import FleetOptions
    from advisor.fleet.walk import DEFAULT_PATTERNS

    site = validate(config.section("fleet"), config.path or "site config")

    def pick(name: str, default=None):
        """The flag, else the site's key (whose unset value is [fleet]'s own default), else `default`."""
        given = flags.get(name)
        return given if given not in (None, ()) else (getattr(site, name) or default)

    cluster_given = any(flags.get(k) is not None for k in ("workers", "scheduler", "slurm_jobs"))
    slurm_jobs = flags.get("slurm_jobs") or (None if cluster_given else site.slurm_jobs or None)
    slurm = {key: value for key in ("queue", "account", "walltime", "memory")
             if (value := pick(f"slurm_{key}", ""))}
    return FleetOptions(workers=pick("workers", os.cpu_count() or 1), scheduler=flags.get("scheduler"),
                        slurm_jobs=slurm_jobs, timeout_s=float(pick("timeout_s")),
                        batch=pick("batch"), patterns=tuple(pick("patterns", DEFAULT_PATTERNS)),
                        config=config, slurm=slurm, **rest)


def _check_inputs(paths) -> None:
    """Inputs that do not exist are refused before any cluster starts."""
    for item in paths:
        path = item[1:] if item.startswith("@") else item
        if not os.path.exists(path):
            raise InputError(path, "no such file or directory" + (" (list file)" if item.startswith("@") else ""))


@command.command("report")
@click.argument("dataset", type=click.Path(file_okay=False))
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False),
              help="Write the machine view here (per-job pages go to FILE's stem + '.jobs/').")
@click.option("--top", type=click.IntRange(1), default=20, show_default=True,
              help="Rows in each ranking and worst jobs linked to their own report.")
@click.option("--below", type=click.FloatRange(min=1.0), default=4.0, show_default=True,
              help="List jobs whose bandwidth is this many times below what the fleet's history predicts.")
def report(dataset, html_path, top, below):
    """Write the machine view of the fleet dataset DATASET as one self-contained HTML page."""
    from advisor.fleet.report import write_fleet_html

    written = write_fleet_html(dataset, html_path, top=top, below=below)
    click.echo(printable(f"wrote {html_path} and {written} per-job reports"), err=True)


@command.command("expect")
@click.argument("dataset", type=click.Path(file_okay=False))
@click.option("--below", type=click.FloatRange(min=1.0), default=4.0, show_default=True,
              help="Times below the predicted bandwidth that makes a job worth a look.")
@click.option("--top", type=click.IntRange(1), default=20, show_default=True, help="Jobs to list.")
@click.option("--model", "model_path", type=click.Path(dir_okay=False),
              help="Also save the trained model here (skops) for `diagnose --model`.")
def expect(dataset, below, top, model_path):
    """Jobs far below the bandwidth a model trained on the fleet's own history expects."""
    from advisor.fleet.expect import expected_bandwidth, print_expectations

    result = expected_bandwidth(dataset, below=below, model_path=model_path)
    print_expectations(result, top=top)
