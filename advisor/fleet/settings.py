"""The `[fleet]` section of the site config: a centre's defaults for `ioadvisor fleet run`.

Where its Slurm workers run (partition, account, wall time, memory), how many local
workers, the per-log parse limit and the batch size belong to the site, not to each
command line; a flag given on the command line overrides its key here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.config import section
from advisor.errors import ConfigError


@section("fleet")
@dataclass
class FleetConfig:
    """Defaults of `ioadvisor fleet run` (each is also a flag)."""

    workers: int = 0  # local worker processes; 0: one per core
    slurm_jobs: int = 0  # > 0: run on that many Slurm worker jobs by default (dask-jobqueue)
    timeout_s: float = 120.0  # seconds allowed to parse one log
    batch: int = 200  # logs per committed part
    patterns: list[str] = field(default_factory=list)  # file names taken when walking; []: logs and dumps
    slurm_queue: str = ""  # Slurm partition of the worker jobs ("": dask-jobqueue's config)
    slurm_account: str = ""
    slurm_walltime: str = ""  # HH:MM:SS
    slurm_memory: str = ""  # e.g. "4GiB"


_RANGES = {"workers": (0, 100_000), "slurm_jobs": (0, 100_000), "timeout_s": (1, 86_400),
           "batch": (1, 10_000_000)}


def validate(cfg: FleetConfig, source: str) -> FleetConfig:
    """Reject values a wrong type does not catch (ranges, both cluster kinds at once)."""
    for key, (low, high) in _RANGES.items():
        if not low <= getattr(cfg, key) <= high:
            raise ConfigError(f"{source}: fleet.{key}: {getattr(cfg, key)} is outside [{low}, {high}]")
    if cfg.workers and cfg.slurm_jobs:
        raise ConfigError(f"{source}: fleet: give at most one of workers and slurm_jobs")
    return cfg
