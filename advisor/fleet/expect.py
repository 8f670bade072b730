"""Jobs far below the bandwidth the fleet's own history predicts for jobs like them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from advisor.errors import InputError
from advisor.formatting import printable
from advisor.fleet.aggregate import JobRef
from advisor.fleet.store import FleetStore
from advisor.models import bandwidth as bw

_COLUMNS = ["path", "content_hash", "jobid", "user", "app", "start_time", "nprocs", "bytes_read",
            "bytes_written", "io_time_s", "features", "error"]


@dataclass
class SlowJob(JobRef):
    observed_mib_s: float = math.nan
    expected_mib_s: float = math.nan
    io_time_s: float = 0.0

    @property
    def factor(self) -> float:
        """How many times below expectation."""
        return self.expected_mib_s / self.observed_mib_s

    @property
    def lost_s(self) -> float:
        """I/O time per process the job would have saved at the expected bandwidth."""
        return self.io_time_s * (1.0 - 1.0 / self.factor)


@dataclass
class Expectations:
    jobs_used: int
    jobs_skipped: int  # errors, too few bytes or too little time to measure
    median_factor: float  # typical miss of the out-of-fold predictions (x or /)
    below: float
    slow: list[SlowJob] = field(default_factory=list)  # worst (most time lost) first
    reason: str = ""  # why nothing was computed


def expected_bandwidth(dataset: str | Path, below: float = 4.0,
                       model_path: str | None = None) -> Expectations:
    """Out-of-fold expected bandwidth per job; jobs `below` times under it, most time lost first."""
    table = FleetStore(dataset, create=False).jobs(_COLUMNS).to_pydict()
    moved = np.array([(r or 0) + (w or 0) for r, w in zip(table["bytes_read"], table["bytes_written"])],
                     dtype=float)
    io_time = np.array([t or 0.0 for t in table["io_time_s"]], dtype=float)
    ok = bw.usable(moved, io_time) & np.array([e is None for e in table["error"]])
    idx = np.flatnonzero(ok)
    result = Expectations(len(idx), len(moved) - len(idx), math.nan, below)
    if len(idx) < bw.MIN_JOBS:
        result.reason = (f"only {len(idx)} jobs moved at least {bw.MIN_BYTES >> 20} MiB with measurable "
                         f"I/O time; {bw.MIN_JOBS} are needed to learn what this machine usually delivers")
        return result
    x = bw.matrix([dict(table["features"][i] or []) for i in idx])
    y = np.log10(moved[idx] / io_time[idx] / (1 << 20))
    pred = bw.out_of_fold(x, y, np.array([table["content_hash"][i] for i in idx]))
    result.median_factor = float(10 ** np.median(np.abs(pred - y)))
    result.slow = _slow_jobs(table, idx, y, pred, below)
    if model_path:
        model = bw.fit(x, y)
        model.cv_median_factor = result.median_factor
        bw.save(model, model_path)
    return result


def _slow_jobs(table, idx, y, pred, below: float) -> list[SlowJob]:
    slow = []
    for k in np.flatnonzero(pred - y >= math.log10(below)):
        row = {name: column[int(idx[k])] for name, column in table.items()}
        slow.append(SlowJob(**JobRef.of(row), observed_mib_s=float(10 ** y[k]), expected_mib_s=float(10 ** pred[k]),
                            io_time_s=float(row["io_time_s"] or 0.0)))
    return sorted(slow, key=lambda s: (-s.lost_s, s.path))


def print_expectations(result: Expectations, top: int = 20) -> None:
    """The slow jobs as a terminal table."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if result.reason:
        raise InputError("fleet expect", result.reason)
    console.print(f"{result.jobs_used} jobs learned from ({result.jobs_skipped} skipped: errors or too "
                  f"little I/O); out-of-fold predictions miss by x{result.median_factor:.2f} typically. "
                  f"{len(result.slow)} jobs are at least {result.below:g}x below expectation:")
    table = Table("job", "user", "application", "start", "ranks", "MiB/s", "expected", "x below",
                  "I/O s lost", "log")
    for job in result.slow[:top]:
        # Text(): names from logs are data, never rich markup; printable: nor terminal controls
        table.add_row(Text(printable(job.jobid)), Text(printable(job.user)), Text(printable(job.app)),
                      job.start, str(job.nprocs), f"{job.observed_mib_s:.1f}", f"{job.expected_mib_s:.1f}",
                      f"{job.factor:.1f}", f"{job.lost_s:.2f}", Text(printable(job.path)))
    console.print(table)
