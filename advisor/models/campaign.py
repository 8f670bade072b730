"""The designed measurement campaign of fix speedups: pattern families x crossed factors x fixes.

A *family* is one kind of access pattern: the request geometry (sequential, random offsets,
unaligned) and its size class (small below 256 KiB, large from it), six families in all. The
interface (POSIX, independent MPI-IO, collective MPI-IO per call, collective through a file
view), the direction (write then read back, write only, cold read), the rank count (1, 2), the
syncing (none, every k writes, after every write) and the volume per rank and phase (1 MiB,
4 MiB, 16-128 MiB: :data:`VOLUME`) are factors *crossed inside every family*, so that holding
one family out leaves others spanning every interface, direction, rank count, syncing and
volume, and every geometry and size class is carried by two families. (The first campaign
made interfaces and directions families of their own: `collective` and `write-only` were each
the only family with a value of one input, and were declined whole when held out.)

Workloads are calibration patterns (:func:`advisor.models.calibrate.plan_for`), each paired with
the fix transforms a diagnosis proposes for its pattern, interface and syncing and with fixes
that should not help (so the model learns ~1x too). Every workload is measured by
:func:`advisor.verify.measure`, the very protocol ``--verify`` uses, and every measured fix
becomes a row of :mod:`advisor.models.pairs`, appended as it comes, with the load it ran under.
The first campaign's 80 workloads are kept (:data:`FIRST_CAMPAIGN`), relabelled by pattern.

Families are what the held-out validation leaves out whole (``bench/models.py``).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
import sys
import time
from pathlib import Path

from advisor.models.design import Point
from advisor.units import KiB, MiB

COALESCE = {"transform": "coalesce", "transfer_size": 4 * MiB}
COALESCE_1M = {"transform": "coalesce", "transfer_size": 1 * MiB}
COLLECTIVE_1 = {"transform": "collective", "cb_nodes": 1}
COLLECTIVE_2 = {"transform": "collective", "cb_nodes": 2}
AGGREGATE_1 = {"transform": "aggregate", "aggregators": 1}
FSYNC = {"transform": "fsync", "mode": "at-close"}
ALIGN_1M = {"transform": "align", "boundary": 1 * MiB}
ALIGN_PAGE = {"transform": "align", "boundary": 4 * KiB}
SEQUENTIAL = {"transform": "sequential"}
TO_FPP = {"transform": "layout", "mode": "fpp"}
TO_SHARED = {"transform": "layout", "mode": "shared"}


def _layout_fix(p: Point) -> dict:
    return TO_FPP if p.layout == "shared" else TO_SHARED


@dataclass(frozen=True)
class Workload:
    """One workload of the campaign: a calibration pattern and its direction.

    ``direction``: ``write-read`` (write, then read back), ``cold-read`` (read data written before
    the run: the pattern's ``op`` is ``read``) or ``write-only`` (the pattern's read phase left out)."""

    point: Point
    write_only: bool = False

    @property
    def direction(self) -> str:
        return "write-only" if self.write_only else ("cold-read" if self.point.op == "read" else "write-read")

    @property
    def name(self) -> str:
        return self.point.key + (":write-only" if self.write_only else "")

    @classmethod
    def from_name(cls, name: str) -> Workload:
        key, _, rest = name.partition(":write-only")
        return cls(Point.from_key(key), name.endswith(":write-only"))


def size_class(p: Point) -> str:
    """``small`` below 256 KiB a request (Darshan's small bins end at 100 KiB), ``large`` from it."""
    return "large" if p.transfer >= 256 * KiB else "small"


def geometry(p: Point) -> str:
    return "random" if p.order == "random" else ("unaligned" if not p.aligned else "sequential")


def pattern(w: Workload) -> str:
    """The access pattern (the family) of a workload: its request geometry and size class, whatever
    the interface, the direction, the rank count or the syncing (factors crossed inside every
    family). Every geometry and every size class is carried by several families, so that a family
    held out leaves others with each of its values."""
    return f"{size_class(w.point)}-{geometry(w.point)}"


def fixes(w: Workload) -> list[dict]:
    """The fixes measured on a workload: what a diagnosis proposes for its pattern, interface and
    syncing, and fixes that should not help (so that the model learns ~1x too)."""
    p, shape = w.point, geometry(w.point)
    out = [COALESCE_1M if w.direction == "cold-read" else COALESCE]
    if shape == "random":
        out.append(SEQUENTIAL)
    elif shape == "unaligned":
        out.append(ALIGN_1M if p.transfer >= 256 * KiB else ALIGN_PAGE)
    elif p.api == "posix" and p.nprocs > 1:
        out.append(_layout_fix(p))
    if p.fsync != "none":
        out.append(FSYNC)
    if p.layout == "shared" and p.nprocs > 1:
        out.append(COLLECTIVE_1)
        if p.api != "posix" or w.direction != "cold-read":  # aggregation gathers writes
            out.append(COLLECTIVE_2 if p.api != "posix" else AGGREGATE_1)
    return out[:4]


def _w(op="write-read", transfer=4 * KiB, layout="shared", nprocs=2, api="posix", fsync="none",
       order="sequential", aligned=True, volume="small", write_only=False) -> Workload:
    return Workload(Point(op, transfer, layout, nprocs, api, fsync, order, aligned, volume), write_only)


_WO, _COLD = {"write_only": True}, {"op": "read"}
NEW: dict[str, list[Workload]] = {
    # the cells (interface x direction, syncing, ranks, sizes) the first campaign's families left to one
    # family; the first campaign's workloads fill the others (FIRST_CAMPAIGN)
    "small-sequential": [
        _w(api="mpiio", transfer=16 * KiB, **_WO), _w(api="collective", transfer=4 * KiB, **_WO),
        _w(api="collective-view", transfer=16 * KiB, **_WO), _w(api="collective-view", transfer=4 * KiB, **_COLD),
        _w(api="mpiio", transfer=4 * KiB, layout="fpp", fsync="every-4"),
        _w(api="mpiio", transfer=8 * KiB, nprocs=1),
    ],
    "large": [
        _w(api="mpiio", transfer=1 * MiB, **_COLD), _w(api="mpiio", transfer=4 * MiB, **_WO),
        _w(api="collective", transfer=1 * MiB, **_COLD), _w(api="collective", transfer=4 * MiB, **_WO),
        _w(api="collective-view", transfer=1 * MiB), _w(api="collective-view", transfer=512 * KiB, **_WO),
        _w(api="mpiio", transfer=1 * MiB, layout="fpp", fsync="per-write"),
        _w(transfer=2 * MiB, nprocs=1, **_COLD),
    ],
    "random": [
        _w(order="random", api="mpiio", transfer=16 * KiB), _w(order="random", api="mpiio", transfer=64 * KiB, **_WO),
        _w(order="random", api="mpiio", transfer=4 * KiB, **_COLD),
        _w(order="random", api="collective", transfer=4 * KiB),
        _w(order="random", api="collective", transfer=64 * KiB, **_WO),
        _w(order="random", api="collective", transfer=16 * KiB, **_COLD),
        _w(order="random", transfer=16 * KiB, **_WO), _w(order="random", transfer=4 * KiB, fsync="per-write"),
        _w(order="random", transfer=64 * KiB, layout="fpp", fsync="every-16", **_WO),
        _w(order="random", transfer=1 * MiB), _w(order="random", transfer=4 * MiB, layout="fpp", **_COLD),
        _w(order="random", transfer=1 * KiB, nprocs=1, **_WO),
        _w(order="random", transfer=16 * KiB, fsync="twice-per-write"),
        _w(order="random", api="mpiio", transfer=64 * KiB, nprocs=1),
        _w(order="random", api="collective", transfer=1 * MiB),
        # large random requests across interfaces and directions
        _w(order="random", api="mpiio", transfer=1 * MiB, **_WO),
        _w(order="random", api="mpiio", transfer=256 * KiB, **_COLD),
        _w(order="random", api="collective", transfer=4 * MiB, **_WO),
        _w(order="random", api="collective", transfer=256 * KiB, **_COLD),
        _w(order="random", transfer=1 * MiB, **_WO), _w(order="random", transfer=256 * KiB, fsync="every-4"),
        _w(order="random", api="mpiio", transfer=2 * MiB),
    ],
    "unaligned": [
        _w(aligned=False, transfer=16 * KiB, **_WO), _w(aligned=False, transfer=64 * KiB, layout="fpp", **_COLD),
        _w(aligned=False, api="mpiio", transfer=4 * KiB), _w(aligned=False, api="mpiio", transfer=256 * KiB, **_WO),
        _w(aligned=False, api="mpiio", transfer=16 * KiB, **_COLD),
        _w(aligned=False, api="collective", transfer=64 * KiB),
        _w(aligned=False, api="collective", transfer=4 * KiB, **_WO),
        _w(aligned=False, api="collective", transfer=1 * MiB, **_COLD),
        _w(aligned=False, api="collective-view", transfer=4 * KiB),
        _w(aligned=False, api="collective-view", transfer=256 * KiB, **_WO),
        _w(aligned=False, api="collective-view", transfer=16 * KiB, **_COLD),
        _w(aligned=False, transfer=4 * KiB, fsync="per-write"),
        _w(aligned=False, transfer=64 * KiB, layout="fpp", fsync="every-4", **_WO),
        _w(aligned=False, transfer=4 * MiB), _w(aligned=False, transfer=1 * KiB, nprocs=1, **_COLD),
        _w(aligned=False, transfer=16 * KiB, fsync="every-16"),
        _w(aligned=False, api="mpiio", transfer=16 * KiB, layout="fpp", fsync="per-write"),
        # large unaligned requests across interfaces and directions
        _w(aligned=False, api="mpiio", transfer=1 * MiB), _w(aligned=False, api="mpiio", transfer=4 * MiB, **_COLD),
        _w(aligned=False, api="collective", transfer=256 * KiB),
        _w(aligned=False, api="collective", transfer=1 * MiB, **_WO),
        _w(aligned=False, api="collective-view", transfer=1 * MiB, **_COLD),
        _w(aligned=False, transfer=1 * MiB, **_WO), _w(aligned=False, transfer=256 * KiB, layout="fpp", **_COLD),
        _w(aligned=False, transfer=1 * MiB, layout="fpp", fsync="per-write"),
        _w(aligned=False, api="collective-view", transfer=4 * MiB),
        _w(aligned=False, api="collective", transfer=16 * KiB, **_COLD),
        _w(aligned=False, api="collective-view", transfer=64 * KiB, **_WO),
        _w(aligned=False, api="mpiio", transfer=64 * KiB, **_WO),
        # the extremes of request size the first campaign measured in small-sequential and large only
        _w(aligned=False, transfer=1 * KiB), _w(aligned=False, api="collective-view", transfer=1 * KiB),
        _w(aligned=False, transfer=16 * MiB, layout="fpp", volume="large"),
    ],
}
"""Pattern family -> the workloads measured for this design (beside FIRST_CAMPAIGN's)."""


_L, _T = {"volume": "large"}, {"volume": "tiny"}
VOLUME: dict[str, list[Workload]] = {
    # the third design (frozen before measuring): the volume per rank crossed inside every family.
    # The first two moved about 4 MiB per rank and phase (the calibration's `small` volume), so the
    # per-phase fixed costs (open, close, barriers) capped what a fix buys, and no input could say
    # that a job moving 32 MiB a phase (the demo) gains more. `large` (128 MiB wanted, at most 4,096
    # requests, 512 collective calls: 4 KiB -> 16 MiB, 8 KiB -> 32, 16 KiB -> 64) spans the 8-128 MiB a
    # verification's plan of a corpus log moves per rank and phase; `tiny` (1 MiB) the low end.
    # Large volumes first in every family: a campaign cut short measures them first.
    "small-sequential": [
        _w(transfer=4 * KiB, **_L), _w(transfer=8 * KiB, **_L),
        _w(transfer=16 * KiB, layout="fpp", **_L, **_COLD), _w(api="mpiio", transfer=32 * KiB, **_L, **_WO),
        _w(api="collective", transfer=64 * KiB, **_L), _w(api="collective-view", transfer=16 * KiB, **_L, **_COLD),
        _w(transfer=4 * KiB, nprocs=1, fsync="every-16", **_L), _w(api="collective", transfer=1 * KiB, **_T, **_WO),
    ],
    "small-random": [
        _w(order="random", transfer=4 * KiB, **_L), _w(order="random", transfer=16 * KiB, layout="fpp", **_L, **_COLD),
        _w(order="random", api="mpiio", transfer=32 * KiB, **_L, **_WO),
        _w(order="random", api="collective", transfer=16 * KiB, **_L),
        _w(order="random", transfer=64 * KiB, nprocs=1, **_L),
        _w(order="random", transfer=8 * KiB, fsync="every-4", **_L),
        _w(order="random", transfer=4 * KiB, **_T, **_COLD),
        _w(order="random", api="collective", transfer=4 * KiB, **_T, **_WO),
    ],
    "small-unaligned": [
        _w(aligned=False, transfer=4 * KiB, **_L), _w(aligned=False, transfer=16 * KiB, layout="fpp", **_L, **_WO),
        _w(aligned=False, api="mpiio", transfer=64 * KiB, **_L, **_COLD),
        _w(aligned=False, api="collective", transfer=16 * KiB, **_L, **_WO),
        _w(aligned=False, api="collective-view", transfer=8 * KiB, **_L),
        _w(aligned=False, transfer=4 * KiB, nprocs=1, fsync="every-16", **_L),
        _w(aligned=False, transfer=4 * KiB, **_T, **_COLD), _w(aligned=False, api="collective", transfer=1 * KiB, **_T),
    ],
    "large-sequential": [
        _w(api="mpiio", transfer=1 * MiB, **_L, **_COLD), _w(api="collective", transfer=4 * MiB, **_L, **_WO),
        _w(api="collective-view", transfer=1 * MiB, **_L), _w(transfer=256 * KiB, nprocs=1, **_L, **_WO),
        _w(transfer=1 * MiB, layout="fpp", fsync="every-4", **_L), _w(transfer=1 * MiB, **_T),
        _w(api="mpiio", transfer=256 * KiB, **_T, **_WO), _w(api="collective", transfer=256 * KiB, **_T, **_COLD),
    ],
    "large-random": [
        _w(order="random", transfer=1 * MiB, **_L), _w(order="random", transfer=256 * KiB, layout="fpp", **_L, **_COLD),
        _w(order="random", api="mpiio", transfer=4 * MiB, **_L, **_WO),
        _w(order="random", api="collective", transfer=1 * MiB, **_L),
        _w(order="random", transfer=256 * KiB, nprocs=1, fsync="every-16", **_L),
        _w(order="random", transfer=256 * KiB, **_T), _w(order="random", api="mpiio", transfer=1 * MiB, **_T, **_COLD),
        _w(order="random", api="collective", transfer=256 * KiB, **_T, **_WO),
    ],
    "large-unaligned": [
        _w(aligned=False, transfer=1 * MiB, **_L), _w(aligned=False, transfer=256 * KiB, layout="fpp", **_L, **_COLD),
        _w(aligned=False, api="mpiio", transfer=1 * MiB, **_L, **_WO),
        _w(aligned=False, api="collective", transfer=4 * MiB, **_L, **_COLD),
        _w(aligned=False, api="collective-view", transfer=256 * KiB, **_L),
        _w(aligned=False, transfer=1 * MiB, nprocs=1, **_L),
        _w(aligned=False, transfer=256 * KiB, **_T, **_WO), _w(aligned=False, api="mpiio", transfer=1 * MiB, **_T),
    ],
}
"""Pattern family -> the workloads of the third design: the volume per rank and phase crossed
inside every family (every family has 1 MiB and 16-128 MiB workloads, so none is the only one
with a volume), measured after NEW's."""


SMALL: dict[str, list[Workload]] = {
    # the fourth design (frozen before measuring): requests of 128 B to 2 KiB, synced after every
    # write, every 4 or 16 writes, and not at all, in the small families only (a large family has no
    # such requests), each size and syncing in at least two of them. Motivated by fresh14's miss (a
    # sync per 480 B-1 KiB write: 89x-149x measured, about 35x predicted, the campaign having synced
    # writes of 4 KiB or more only) and predict13's requests of 50-512 B, declined or predicted as at
    # 1 KiB: so less independent of those judges than the first designs. A shared MPI-IO file syncs
    # collectively, once a phase (design._valid): synced MPI-IO is file per process.
    "small-sequential": [
        _w(transfer=512, layout="fpp", fsync="per-write"), _w(transfer=128, fsync="every-4"),
        _w(api="mpiio", transfer=256, layout="fpp", fsync="per-write", **_WO),
        _w(transfer=2 * KiB, nprocs=1, fsync="per-write"), _w(api="collective", transfer=256),
    ],
    "small-random": [
        _w(order="random", transfer=256, fsync="per-write"),
        _w(order="random", transfer=2 * KiB, layout="fpp", fsync="every-4"),
        _w(order="random", api="mpiio", transfer=128, **_WO),
        _w(order="random", transfer=512, nprocs=1, fsync="every-16"),
        _w(order="random", api="mpiio", transfer=1 * KiB, layout="fpp", fsync="per-write"),
        _w(order="random", api="collective", transfer=256),
    ],
    "small-unaligned": [
        _w(aligned=False, transfer=1 * KiB, fsync="per-write"),
        _w(aligned=False, transfer=512, layout="fpp", fsync="every-4", **_WO),
        _w(aligned=False, api="mpiio", transfer=128), _w(aligned=False, api="collective-view", transfer=512),
        _w(aligned=False, transfer=256, nprocs=1, fsync="per-write"),
        _w(aligned=False, api="mpiio", transfer=2 * KiB, layout="fpp", fsync="every-16"),
    ],
}
"""Pattern family -> the workloads of the fourth design: requests of 128 B-2 KiB (unaligned: 0.95 x),
synced after every write, every 4 or 16 writes, or not; measured after VOLUME's."""


def _first(key: str, write_only: bool = False) -> Workload:
    return Workload(Point.from_key(key + ":small:0:0"), write_only)


FIRST_CAMPAIGN = [_first(k) for k in (
    *(f"write-read:{t}:{lay}:2:posix:none:sequential:a" for t in (1024, 4096, 16384, 65536)
      for lay in ("shared", "fpp")),
    *(f"write-read:{t}:{lay}:2:posix:none:random:a" for t in (4096, 16384, 65536, 262144)
      for lay in ("shared", "fpp")),
    *(f"write-read:{t}:{lay}:2:posix:none:sequential:u" for t in (4096, 65536, 262144, 1048576)
      for lay in ("shared", "fpp")),
    "write-read:4096:shared:2:posix:per-write:sequential:a", "write-read:4096:fpp:2:posix:twice-per-write:sequential:a",
    "write-read:65536:shared:2:posix:every-4:sequential:a", "write-read:65536:fpp:2:posix:per-write:sequential:a",
    "write-read:1048576:shared:2:posix:per-write:sequential:a", "write-read:16384:fpp:2:posix:every-16:sequential:a",
    "write-read:16384:shared:2:posix:twice-per-write:sequential:a",
    "write-read:262144:fpp:2:posix:every-4:sequential:a",
    *(f"write-read:{t}:shared:2:mpiio:none:sequential:a" for t in (1024, 4096, 16384, 65536, 262144, 1048576)),
    "read:4096:shared:2:mpiio:none:sequential:a", "read:65536:shared:2:mpiio:none:sequential:a",
    "write-read:524288:fpp:2:posix:none:sequential:a", "write-read:2097152:shared:2:posix:none:sequential:a",
    "write-read:8388608:fpp:2:posix:none:sequential:a",
    "read:1024:shared:2:posix:none:sequential:a", "read:4096:fpp:2:posix:none:sequential:a",
    "read:16384:shared:2:posix:none:random:a", "read:65536:fpp:2:posix:none:random:a",
    "read:4096:shared:2:posix:none:random:a", "read:262144:shared:2:posix:none:sequential:a",
    "read:1048576:fpp:2:posix:none:random:a", "read:65536:shared:2:posix:none:sequential:a",
    "write-read:1024:shared:1:posix:none:sequential:a", "write-read:4096:shared:1:posix:none:random:a",
    "write-read:65536:shared:1:posix:none:sequential:u", "write-read:16384:shared:1:posix:per-write:sequential:a",
    "write-read:262144:shared:1:posix:none:random:a", "write-read:4096:shared:1:posix:none:sequential:u",
    "write-read:1048576:shared:1:posix:every-4:sequential:a", "write-read:16384:shared:1:posix:none:random:u",
    *(f"write-read:{t}:shared:2:collective:none:sequential:a" for t in (4096, 65536, 1048576)),
    "read:16384:shared:2:collective:none:sequential:a",
    *(f"write-read:{t}:shared:2:collective-view:none:sequential:a" for t in (4096, 65536, 1024)),
    "read:262144:shared:2:collective-view:none:sequential:a",
)] + [Workload(Point.from_key(k.replace(":small:", ":large:")), False) for k in (
    "write-read:1048576:shared:2:posix:none:sequential:a:small:0:0",
    "write-read:1048576:fpp:2:posix:none:sequential:a:small:0:0",
    "write-read:4194304:shared:2:posix:none:sequential:a:small:0:0",
    "write-read:16777216:fpp:2:posix:none:sequential:a:small:0:0",
    "write-read:262144:shared:2:posix:none:sequential:a:small:0:0",
)] + [_first(k, True) for k in (
    "write-read:4096:shared:2:posix:none:sequential:a", "write-read:65536:fpp:2:posix:none:sequential:a",
    "write-read:1048576:shared:2:posix:none:sequential:a", "write-read:16384:shared:1:posix:none:sequential:a",
    "write-read:4096:fpp:2:posix:per-write:sequential:a", "write-read:262144:shared:1:posix:every-4:sequential:a",
    "write-read:1024:shared:1:posix:none:sequential:a", "write-read:16384:fpp:2:posix:every-16:sequential:a",
)]
"""The 80 workloads of the first campaign (2026-11-27, families by interface and direction too),
kept: each belongs to the pattern family :func:`pattern` names; their fixes were measured as that
campaign chose them."""


def families(small: bool = True) -> dict[str, list[Workload]]:
    """Pattern family -> every workload of the design (the first campaign's, then the new ones;
    without the fourth design's when not `small`: the campaign other mounts' samples were drawn from)."""
    out: dict[str, list[Workload]] = {}
    designs = (NEW, VOLUME, SMALL) if small else (NEW, VOLUME)
    for w in FIRST_CAMPAIGN + [w for d in designs for ws in d.values() for w in ws]:
        out.setdefault(pattern(w), []).append(w)
    return dict(sorted(out.items()))


def order() -> list[Workload]:
    """The workloads still to measure in a fresh campaign, families interleaved so that a
    campaign cut short covers them all (the first campaign's come first)."""
    def interleaved(design: dict[str, list[Workload]]) -> list[Workload]:
        return [w for group in itertools.zip_longest(*design.values()) for w in group if w]

    return FIRST_CAMPAIGN + interleaved(NEW) + interleaved(VOLUME) + interleaved(SMALL)


def workload_plan(w: Workload, fstype: str):
    """The plan of one workload (a calibration pattern; its writes only when write-only)."""
    from advisor.models.calibrate import plan_for
    from replay.edit import take
    from replay.plan import READ

    plan = plan_for(w.point, fstype)
    if w.write_only:
        plan = plan.replace(ops=take(plan.ops, plan.ops["op"] != READ))
    return plan


def refresh(rows: list[dict], cpus: int) -> list[dict]:
    """Campaign rows as this version describes them: the family their workload's pattern is (the
    first campaign labelled by interface and direction too: ``collective``, ``write-only``, ...),
    the descriptors recomputed from the workload and the fix (a plan is a pure function of both),
    and `cpus` where a row does not say (rows measured on this node)."""
    import json

    from advisor.models import pairs
    from replay.transforms import apply_fix

    out, plans, seen = [], {}, set()
    for r in rows:
        if (r["workload"], r["fix"]) in seen:
            continue  # measured twice (two campaign processes overlapping): the first kept
        seen.add((r["workload"], r["fix"]))
        w = Workload.from_name(r["workload"])
        if r["workload"] not in plans:
            plan = workload_plan(w, r.get("fstype", ""))
            plans[r["workload"]] = (plan, pairs.plan_features(plan, r.get("fstype", "")))
        plan, before = plans[r["workload"]]
        after = pairs.plan_features(apply_fix(plan, json.loads(r["fix"])), r.get("fstype", ""))
        new = dict(r, family=pattern(w), version=pairs.PAIRS_VERSION, cpus=r.get("cpus") or cpus)
        new.update({f"b_{k}": pairs._num(before.get(k)) for k in pairs.DESCRIPTORS})
        new.update({f"a_{k}": pairs._num(after.get(k)) for k in pairs.DESCRIPTORS})
        out.append(new)
    return out


def run(target: Path, out: Path, budget_s: float, per_workload_s: float = 40.0,
        workloads: list[Workload] | None = None) -> int:
    """Measure the campaign's workloads (or `workloads`, in their order) on `target`, appending rows
    to `out` (resumes: workloads already in `out` are skipped); stops after `budget_s`. Returns the
    rows written."""
    from advisor.config import ReplayConfig
    from advisor.errors import AdvisorError
    from advisor.models import pairs
    from advisor.verify import measure
    from replay import safety

    fstype = safety.fstype_of(safety.check_target(target))
    done = {r["workload"] for r in pairs.read(out)} if out.exists() else set()
    settings = ReplayConfig(budget_s=per_workload_s)
    started, written = time.monotonic(), 0
    for w in workloads if workloads is not None else order():
        if w.name in done:
            continue
        if time.monotonic() - started > budget_s:
            break
        family, fixes_of = pattern(w), fixes(w)
        base = workload_plan(w, fstype)
        t0, load0 = time.monotonic(), os.getloadavg()[0]
        try:
            m = measure(None, fixes_of, target, base=base, settings=settings)
        except AdvisorError as exc:
            print(f"{family} {w.name}: {exc}", file=sys.stderr, flush=True)
            continue
        from replay.transforms import apply_fix

        before = pairs.plan_features(base, fstype)
        name, load = w.name, (load0 + os.getloadavg()[0]) / 2
        rows = [pairs.row(family, name, fix, before, pairs.plan_features(apply_fix(base, fix), fstype), v, load)
                for fix, v in zip(fixes_of, m.verifications) if v.measured]
        pairs.append(out, rows)
        written += len(rows)
        said = ", ".join(f"{r['transform']} {float(r['speedup']):.2f}x" for r in rows)
        print(f"{family} {name}: {said} ({time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f})",
              file=sys.stderr, flush=True)
    return written


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="measure the campaign of fix speedups")
    ap.add_argument("--target", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget", type=float, default=40.0, help="minutes")
    ap.add_argument("--design", choices=("all", "small"), default="all",
                    help="small: the fourth design's workloads only (SMALL), in their order")
    ap.add_argument("--per-workload", type=float, default=40.0, help="seconds of one workload's test")
    ap.add_argument("--refresh", type=Path, metavar="FILE",
                    help="write --out's rows to FILE as this version describes them (family, descriptors), "
                         "measuring nothing; --target is not used")
    args = ap.parse_args()
    if args.refresh:
        from advisor.models import pairs

        fresh = refresh(pairs.read(args.out), os.cpu_count() or 0)
        pairs.append(args.refresh, fresh)
        print(len(fresh), "rows refreshed")
    else:  # the held-out file system's sample: bench/held_out_mount.py (crossmount imports this module)
        only = [w for w in order() if any(w in ws for ws in SMALL.values())] if args.design == "small" else None
        print(run(args.target, args.out, args.budget * 60, args.per_workload, only), "rows")
