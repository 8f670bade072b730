"""The fleet run's progress bar (rich, on stderr) and closing line."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from advisor.fleet.run import FleetStats, Progress


@contextlib.contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Progress | None]:
    """A callback drawing logs done out of logs found; the total is known once the walk ends."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, SpinnerColumn,
                               TextColumn, TimeElapsedColumn)

    bar = Bar(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
              TextColumn("{task.fields[rate]}"), TextColumn("{task.fields[errors]}"), TimeElapsedColumn(),
              console=Console(stderr=True), transient=False)
    task = bar.add_task("walking + analysing", total=None, rate="", errors="")

    def update(stats: FleetStats, walk_done: bool) -> None:
        elapsed = bar.tasks[task].elapsed or 0.0
        rate = f"{stats.analysed / elapsed:.1f} logs/s" if elapsed > 0 else ""
        bar.update(task, completed=stats.analysed, rate=rate, errors=f"{stats.errors} unreadable",
                   total=(stats.found - stats.skipped) if walk_done else None,
                   description="analysing" if walk_done else "walking + analysing")

    with bar:
        yield update


def summary_line(stats: FleetStats, out: str) -> str:
    return (f"fleet: analysed {stats.analysed} logs ({stats.errors} unreadable, {stats.findings} findings) "
            f"in {stats.elapsed_s:.1f} s ({stats.logs_per_s:.1f} logs/s); "
            f"skipped {stats.skipped} already in {out}; {stats.parts} parts written")
