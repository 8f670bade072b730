"""`ioadvisor calibrate --target DIR --out DATA`: measure what a mount delivers for a sweep of patterns."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from advisor.formatting import printable


@click.command(name="calibrate")
@click.option("--target", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory on the mount to measure; the replayer writes only in a fresh scratch directory inside.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Data directory (calibration.csv + mount.json); an existing one is resumed.")
@click.option("--np", "nprocs", type=click.IntRange(1, 1_000_000), default=None,
              help="Largest rank count to sweep; default: the CPUs (or Slurm tasks) here.")
@click.option("--budget", type=click.FloatRange(0, min_open=True), default=30.0, show_default=True,
              help="Minutes to spend; the sweep covers the space coarsely first, then refines.")
@click.option("--repeat", type=click.IntRange(1, 100), default=3, show_default=True,
              help="Runs per pattern (the median is kept).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def command(target: Path, out: Path, nprocs: int | None, budget: float, repeat: int, quiet: bool):
    """Measure a designed sweep of I/O patterns on a mount with the replayer (transfer sizes
    1 KiB-16 MiB, write/read, file per process/shared, 1..N ranks, POSIX and MPI-IO
    independent/collective, fsync modes, stripe counts on Lustre).

    Rows are appended as batches finish: run it again with the same --out to go on where
    it stopped. Train a model on the result with `ioadvisor train DATA --out MODEL`.
    """
    from advisor.models.calibrate import calibrate
    from advisor.verify import default_np

    max_np = nprocs or default_np(1 << 20)
    with _bar(budget * 60, quiet) as update:
        progress = calibrate(target, out, max_np, budget * 60, repeat=repeat, on_progress=update)
    for failure in progress.failed[:10]:
        click.echo(printable(f"ioadvisor: calibrate: skipped {failure}"), err=True)
    click.echo(f"calibrate: measured {progress.measured} patterns ({progress.rows} rows) in "
               f"{progress.elapsed_s:.0f} s on up to {max_np} ranks; {progress.done_before + progress.measured} "
               f"of {progress.planned} designed patterns now in {out}"
               + (f" ({progress.stopped}; run again to refine)" if progress.stopped else "")
               + (f"; cache: {progress.cache_policy}" if progress.cache_policy else ""), err=True)


class _bar:
    """A rich progress bar on stderr: time spent out of the budget, patterns measured."""

    def __init__(self, budget_s: float, quiet: bool):
        self.budget_s, self.quiet = budget_s, quiet

    def __enter__(self):
        if self.quiet:
            return None
        if not sys.stderr.isatty():  # a log: one line per batch measured (a bar would print only at the end)
            from advisor.report.progress import steps

            self.lines = steps("calibrating")
            line = self.lines.__enter__()
            return lambda p: line(f"{p.measured} patterns, {p.rows} rows, "
                                  f"{p.elapsed_s:.0f} s of a {self.budget_s:.0f} s budget")
        self.lines = None
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("calibrating"), BarColumn(), TextColumn("{task.fields[points]}"),
                            TimeElapsedColumn(), console=Console(stderr=True))
        self.task = self.bar.add_task("", total=self.budget_s, points="")
        self.bar.__enter__()

        def update(p) -> None:
            self.bar.update(self.task, completed=min(p.elapsed_s, self.budget_s),
                            points=f"{p.measured} patterns, {p.rows} rows")
        return update

    def __exit__(self, *exc):
        if not self.quiet:
            (self.lines or self.bar).__exit__(*exc)
