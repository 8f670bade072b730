"""Measure every storage target of a striped file system with a short pinned write and read.

For each storage target (a Lustre OST, a CephFS OSD) a file laid out on that target alone
(``lfs setstripe -i N -c 1``; on CephFS a data pool that holds only that OSD) is written
with a final fsync, the page cache is dropped when permitted, and the file is read back
with O_DIRECT (ceph-fuse keeps data in its own memory, which a cache drop does not reach).
Rounds visit the targets in a rotating order and repeat until every target's median rate
moves by less than the tolerance from one round to the next (at least three rounds, within
a time budget). Outliers are judged by the slow-OST rule's own statistic
(:func:`advisor.targets.slow_targets`); for the slow ones a placement that keeps new files
off them is looked up (a CephFS pool without them, the healthy OSTs of a Lustre file system).
Every file lives in a fresh scratch directory under the target and is removed.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from advisor.errors import AdvisorError, InputError
from advisor.targets import FACTOR, TooFewTargets, slow_targets
from replay import safety
from replay.layout import Backend, Layout, LayoutError, backend_for

SCHEMA = "ioadvisor/probe/v1"
FILE_BYTES = 16 << 20
CHUNK = 4 << 20  # bytes per write and read call
MIN_ROUNDS, MAX_ROUNDS = 3, 12
TOLERANCE = 0.05  # a median that moves less than this from one round to the next is stable
BUDGET_S = 180.0
MiB = 1 << 20


class ProbeError(AdvisorError):
    """The probe could not run on this target (no striped file system, no way to pin a file)."""


@dataclass
class Target:
    """One storage target and its timed rounds."""

    id: int
    layout: Layout
    write_s: list[float] = field(default_factory=list)
    read_s: list[float] = field(default_factory=list)

    def rates(self, nbytes: int) -> list[float]:
        """Bytes moved over read+write seconds per round (the slow-OST rule's per-file rate)."""
        return [2 * nbytes / (w + r) for w, r in zip(self.write_s, self.read_s)]


@dataclass
class Settings:
    file_bytes: int = FILE_BYTES
    max_rounds: int = MAX_ROUNDS
    budget_s: float = BUDGET_S
    tolerance: float = TOLERANCE
    factor: float = FACTOR


def probe(target: str | Path, settings: Settings | None = None,
          progress: Callable[[int, list[Target]], None] | None = None) -> dict[str, Any]:
    """The probe document (``ioadvisor/probe/v1``) of the file system holding `target`."""
    s = settings or Settings()
    try:
        path = safety.check_target(target)
    except safety.SafetyError as exc:
        raise InputError(str(target), str(exc).split(": ", 1)[-1]) from None
    backend = backend_for(path)
    mount, fstype = safety.mount_of(path)
    if backend is None:
        raise ProbeError(f"{path}: {fstype or 'this file system'} has no storage targets a file can be "
                         "pinned to (the probe needs Lustre or CephFS)")
    try:
        targets = [Target(t, backend.pinned(t)) for t in backend.targets()]
    except LayoutError as exc:
        raise ProbeError(f"{path}: {exc}") from None
    if not targets:
        raise ProbeError(f"{path}: no storage targets found under {mount}")
    started, cache = time.monotonic(), _cache_policy()
    rounds, stable = _measure(backend, path, targets, s, cache, progress)
    return _document(backend, path, mount, targets, s, rounds, stable, cache, time.monotonic() - started)


def _cache_policy() -> str:
    return ("page cache dropped before each read; reads with O_DIRECT" if safety.can_drop_caches()
            else "reads with O_DIRECT (page cache not dropped: not root)")


def _measure(backend: Backend, path: Path, targets: list[Target], s: Settings, cache: str,
             progress) -> tuple[int, bool]:
    """Rounds over every target until stable, at most `max_rounds` or the time budget."""
    try:
        safety.check_space(path, s.file_bytes)
        with safety.Scratch(path) as scratch:
            data = _pattern(min(CHUNK, s.file_bytes))
            deadline = time.monotonic() + s.budget_s
            for r in range(s.max_rounds):
                shift = r % len(targets)
                for t in targets[shift:] + targets[:shift]:  # no target always first or last
                    _time_one(backend, scratch.path / f"t{t.id}-r{r}", t, s.file_bytes, data)
                if progress:
                    progress(r + 1, targets)
                if r + 1 >= MIN_ROUNDS and _stable(targets, s):
                    return r + 1, True
                if r + 1 >= MIN_ROUNDS and time.monotonic() > deadline:
                    return r + 1, False
            return s.max_rounds, False
    except safety.SafetyError as exc:
        raise ProbeError(str(exc)) from None
    except LayoutError as exc:
        raise ProbeError(f"{path}: {exc}") from None


def _pattern(size: int) -> mmap.mmap:
    """A page-aligned buffer of incompressible bytes (O_DIRECT needs the alignment)."""
    buf = mmap.mmap(-1, size)
    buf[:] = os.urandom(size)
    return buf


def _time_one(backend: Backend, file: Path, t: Target, nbytes: int, data: mmap.mmap) -> None:
    backend.create(file, t.layout)
    view = memoryview(data)
    t0 = time.perf_counter()
    fd = os.open(file, os.O_WRONLY)
    try:
        done = 0
        while done < nbytes:
            done += os.write(fd, view[:min(len(view), nbytes - done)])
        os.fsync(fd)
    finally:
        os.close(fd)
    t.write_s.append(time.perf_counter() - t0)
    safety.drop_caches()  # no-op when not permitted: O_DIRECT keeps the read honest anyway
    t0 = time.perf_counter()
    _read_direct(file, data)
    t.read_s.append(time.perf_counter() - t0)
    file.unlink()


def _read_direct(file: Path, buf: mmap.mmap) -> None:
    try:
        fd = os.open(file, os.O_RDONLY | os.O_DIRECT)
    except OSError:  # a file system without O_DIRECT: read through the (dropped) cache
        fd = os.open(file, os.O_RDONLY)
    try:
        while os.readv(fd, [buf]) > 0:
            pass
    finally:
        os.close(fd)


def _stable(targets: list[Target], s: Settings) -> bool:
    """Every target's median rate moved less than the tolerance with the last round."""
    for t in targets:
        rates = t.rates(s.file_bytes)
        now, before = float(np.median(rates)), float(np.median(rates[:-1]))
        if abs(now - before) > s.tolerance * now:
            return False
    return True


def _document(backend: Backend, path: Path, mount: str, targets: list[Target], s: Settings, rounds: int,
              stable: bool, cache: str, elapsed: float) -> dict[str, Any]:
    rates = {t.id: t.rates(s.file_bytes) for t in targets}
    notes = [] if stable else [f"rates not stable within {s.tolerance:.0%} after {rounds} rounds "
                               f"({'time budget' if rounds < s.max_rounds else 'round limit'} reached)"]
    try:
        outliers = slow_targets(rates, s.factor)
        slow, typical = outliers.slow, outliers.typical
    except TooFewTargets as exc:
        slow, typical = [], float(np.median([np.median(r) for r in rates.values()]))
        notes.append(f"no outliers judged: {exc}")
    avoid, avoid_reason = None, ""
    if slow:
        try:
            avoid = backend.avoiding(set(slow))
        except LayoutError as exc:
            avoid_reason = str(exc)
    return {
        "schema": SCHEMA, "target": str(path), "mount": mount, "fstype": backend.fstype,
        "target_kind": backend.target_kind, "file_bytes": s.file_bytes, "rounds": rounds, "stable": stable,
        "tolerance": s.tolerance, "factor": s.factor, "cache_policy": cache, "elapsed_s": round(elapsed, 2),
        "probed_at": time.time(),
        "targets": [{"id": t.id, "layout": t.layout.as_dict(),
                     "write_mib_s": [round(s.file_bytes / MiB / w, 2) for w in t.write_s],
                     "read_mib_s": [round(s.file_bytes / MiB / r, 2) for r in t.read_s],
                     "rate_mib_s": round(float(np.median(rates[t.id])) / MiB, 2),
                     "slow": t.id in slow} for t in targets],
        "typical_mib_s": round(typical / MiB, 2), "slow": slow, "avoid": avoid, "avoid_reason": avoid_reason,
        "notes": notes,
    }
