"""`ioadvisor show PATH...`: what was ingested from each input."""

from __future__ import annotations

import os
import sys

import click

from advisor.fileio import write_json
from advisor.errors import InputError
from advisor.formatting import printable


def _one(path: str | InputError, top_files: int, printed: bool) -> dict:
    """The show entry of one input (printed too if `printed`); errors become an entry plus
    one line on stderr."""
    from advisor import api
    from advisor.report.show import error_entry, render, show_entry

    try:
        if isinstance(path, InputError):  # a directory with no input in it
            raise path
        entry = show_entry(api.load(path), top_files)
        if printed:
            render(entry)
        return entry
    except InputError as exc:
        click.echo(printable(f"ioadvisor: error: {exc}"), err=True)
        return error_entry(exc.path if isinstance(path, InputError) else path, exc.reason)
    except Exception as exc:  # a bug on one input must not hide the others
        if os.environ.get("IOADVISOR_DEBUG"):
            raise
        click.echo(printable(f"ioadvisor: internal error: {path}: {type(exc).__name__}: {exc} "
                             "(set IOADVISOR_DEBUG=1 for a traceback and please report it)"), err=True)
        return {**error_entry(path, f"internal error: {type(exc).__name__}: {exc}"), "internal": True}


@click.command(name="show")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--json", "json_out", metavar="FILE|-",
              help="Also write the results as JSON (ioadvisor/show/v1) to FILE, or only JSON to stdout with '-'.")
@click.option("--files", "top_files", default=10, show_default=True, type=click.IntRange(min=0),
              help="How many files to list per input, most bytes first (0: all).")
def command(paths: tuple[str, ...], json_out: str | None, top_files: int) -> None:
    """Show what was ingested from Darshan logs, darshan-parser dumps and other inputs.

    Per input: job id, processes, run time, executable, modules with record
    counts and partial flags (unread modules with the reason), totals per module,
    the busiest files with bytes and operations per module, Lustre layouts and
    DXT trace sizes. Each PATH is its own result: a bad one prints one error line
    and the others are still shown; the exit status is 2 if any input failed.
    """
    from advisor.report.show import SCHEMA

    from advisor.ingest import expand_inputs

    results = [_one(path, top_files, printed=json_out != "-") for path in expand_inputs(paths)]
    if json_out:
        write_json({"schema": SCHEMA, "results": results}, json_out)
    failed = [r for r in results if not r["ok"]]
    if failed:
        sys.exit(3 if any(r.get("internal") for r in failed) else 2)
