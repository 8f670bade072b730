"""The `ioadvisor` command line.

Subcommands live in ``advisor.commands.<name>`` and are imported only when
invoked, so `ioadvisor --help` and the Slurm hook start fast.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys

import click

import advisor.fleet.settings  # noqa: F401  registers [fleet]: every command accepts the whole site file
import advisor.hooks.settings  # noqa: F401  registers [hook]
from advisor import __version__
from advisor.errors import AdvisorError
from advisor.formatting import printable
from advisor.gcpolicy import for_bursts

COMMANDS = {
    "show": "Show what was ingested from logs, dumps and snapshots.",
    "diagnose": "Diagnose jobs: findings with evidence, cost and fix.",
    "rules": "List the rule catalogue or explain one rule.",
    "report": "Re-render a saved diagnosis (JSON) as HTML or terminal text.",
    "collect": "Snapshot this node's storage-relevant settings as JSON.",
    "probe": "Measure every storage target (OST, OSD) of a file system; flag the slow ones.",
    "replay": "Replay a job on a real mount, as recorded and with fixes applied.",
    "tune": "Search each fix's settings by replaying the job; find the best on this mount.",
    "hook": "Post-job hooks for batch schedulers (Slurm epilog and others).",
    "calibrate": "Measure what a mount delivers for a sweep of access patterns.",
    "train": "Train a bandwidth model from calibrations, IOR and Darshan logs.",
    "fleet": "Analyse a whole archive of logs in parallel on Dask.",
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        try:
            module = importlib.import_module(f"advisor.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"advisor.commands.{name}":
                raise
            return _not_yet(name)
        return module.command

    def format_commands(self, ctx, formatter):
        rows = [(name, COMMANDS[name]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _not_yet(name: str) -> click.Command:
    @click.command(name=name, help=COMMANDS[name] + " (not available in this build)")
    def missing():
        raise click.ClickException(f"'{name}' is not available in this build")

    return missing


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ioadvisor")
def cli():
    """ioadvisor: find out why a job's I/O was slow, and what to change."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: turns AdvisorError into one line on stderr and exit status 2."""
    # At exit, skip the interpreter's last garbage collections over every object numpy, click
    # and the engine made (5 % of a short `diagnose`): what they would free the OS frees, and
    # Python does not promise to finalize objects still alive at exit.
    atexit.register(gc.freeze)
    for_bursts()
    try:
        cli.main(args=argv, prog_name="ioadvisor", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("ioadvisor: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.message = printable(exc.message)  # it may quote an argument: a hostile file name
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except AdvisorError as exc:
        click.echo(printable(f"ioadvisor: error: {exc}"), err=True)
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as exc:  # the last line of defence: never a traceback for a user
        if os.environ.get("IOADVISOR_DEBUG"):
            raise
        click.echo(printable(f"ioadvisor: internal error: {type(exc).__name__}: {exc} "
                             "(set IOADVISOR_DEBUG=1 for a traceback and please report it)"), err=True)
        sys.exit(3)
