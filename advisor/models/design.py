"""The calibration sweep: which patterns to measure, and in which order.

The space is a grid of factors (transfer size 1 KiB..16 MiB, write-then-read or cold
read, file per process or shared, ranks 1..N, POSIX / MPI-IO independent / MPI-IO
collective per call / collective through a file view, how often the writes are synced
(never, at close, every 64, 16 or 4 writes, after every write, twice per write), how
many ranks write a shared file (aggregators: the ``cb_nodes`` of collective I/O, or
subsetting through the aggregate transform), sequential, random or sequential with
holes, aligned or not, small or large volume, stripe counts where the file system has
layouts). It is far larger than any budget, so :func:`coarse_to_fine` orders it greedily
by farthest point first (maximin in a weighted factor space): the first points span
every factor's extremes, later points fill in between, and any prefix of the order
covers the space as evenly as its length allows.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from advisor.units import KiB, MiB

TRANSFERS = tuple(KiB << k for k in range(15))  # 1 KiB .. 16 MiB (below a page too: apps do that)
OPS = ("write-read", "read")  # write then read back (warm), or read data written before the run (cold)
LAYOUTS = ("shared", "fpp")
APIS = ("posix", "mpiio", "collective", "collective-view")
FSYNCS = ("none", "at-close", "every-64", "every-16", "every-4", "per-write", "twice-per-write")
"""How often writes are synced (IOR -e, -Y, and the frequencies between and beyond them: one
fsync after every k-th write of a rank's stream; twice per write is what Darshan records of
IOR -Y, an fsync and the one of its close path, and what a replay of such a log runs)."""
SYNC_EVERY = {"per-write": 1, "every-4": 4, "every-16": 16, "every-64": 64}
ORDERS = ("sequential", "random", "holes")
"""holes: sequential with a transfer-sized gap after every transfer (a file view with holes makes
collective buffering read, modify and write its whole extent; a scaled replay of a random pattern
has them)."""
VOLUMES = {"tiny": 1 * MiB, "small": 4 * MiB, "large": 128 * MiB}  # bytes per rank wanted
UNALIGNED = 1_000_000 / MiB  # an unaligned transfer: 1 MiB -> 1,000,000 bytes (as users write)
VIEW_CALL_BYTES = 64 * MiB  # the replayer issues a file-view call from one buffer of at most this
MAX_OPS = {"default": 4096, "per-write": 1024, "collective": 512}  # requests per rank, at most
MAX_FSYNCS = MAX_OPS["per-write"]  # fsyncs per rank, at most (each waits for the device)
# (per-write fsyncs reach the same volumes as the other modes, so that volume does not stand in
# for fsyncs in the model)

KEY_GROUP = "cal:"  # training rows of one pattern share the group KEY_GROUP + its key

# How much a difference in each factor separates two points (the order's metric).
WEIGHTS = {"transfer": 3.0, "op": 2.0, "api": 1.5, "fsync": 1.5, "layout": 1.0, "nprocs": 1.0,
           "stripe_count": 1.0, "aggregators": 1.0, "order": 0.7, "volume": 0.7, "aligned": 0.5}


@dataclass(frozen=True)
class Point:
    """One pattern of the sweep (one IOR-like test run by the replayer)."""

    op: str
    transfer: int
    layout: str
    nprocs: int
    api: str
    fsync: str
    order: str
    aligned: bool
    volume: str
    stripe_count: int = 0  # 0: the file system's default layout
    aggregators: int = 0  # ranks writing the shared file (0: every rank, or the MPI library's default)

    @property
    def key(self) -> str:
        """Stable name of the point (resuming skips points whose key is in the data)."""
        return (f"{self.op}:{self.transfer}:{self.layout}:{self.nprocs}:{self.api}:{self.fsync}:"
                f"{self.order}:{'a' if self.aligned else 'u'}:{self.volume}:{self.stripe_count}:"
                f"{self.aggregators}")

    @classmethod
    def from_key(cls, key: str) -> Point:
        """The point a key names (ValueError when it names none)."""
        f = key.split(":")
        if len(f) != 11:
            raise ValueError(f"not a calibration pattern key: {key!r}")
        return cls(f[0], int(f[1]), f[2], int(f[3]), f[4], f[5], f[6], f[7] == "a", f[8], int(f[9]), int(f[10]))

    @property
    def sync_every(self) -> int:
        """Writes per fsync (0: no fsync after writes)."""
        return SYNC_EVERY.get(self.fsync, 1 if self.fsync == "twice-per-write" else 0)

    @property
    def transfer_bytes(self) -> int:
        return self.transfer if self.aligned else int(round(self.transfer * UNALIGNED))

    @property
    def requests_per_rank(self) -> int:
        """Requests each rank makes: the volume wanted, within the cap of this kind of run."""
        if self.sync_every == 1:  # an fsync (or two) after every write
            cap = MAX_OPS["per-write"]
        else:  # at most as many fsyncs as after every write, whatever their frequency
            cap = MAX_OPS["collective" if self.api == "collective" else "default"]
            cap = min(cap, MAX_FSYNCS * self.sync_every) if self.sync_every else cap
        volume = VOLUMES[self.volume]
        if self.api == "collective-view":  # one call per rank: within the replayer's 64 MiB buffer
            volume = min(volume, VIEW_CALL_BYTES)
        return int(min(max(volume // self.transfer_bytes, 1), cap))

def _valid(op: str, layout: str, nprocs: int, api: str, fsync: str, order: str, aggregators: int = 0) -> bool:
    if op == "read" and fsync != "none":
        return False  # nothing to sync
    if api != "posix" and layout == "shared" and fsync not in ("none", "at-close"):
        return False  # a shared MPI-IO file syncs collectively, once per phase: frequencies do not apply
    if aggregators and (layout == "fpp" or nprocs < 2 or aggregators > nprocs or api == "mpiio"
                        or (op == "read" and api == "posix")):
        return False  # aggregators gather several ranks' writes (collective: and reads) to one shared file
    if api.startswith("collective") and (layout == "fpp" or nprocs < 2):
        return False  # collective buffering needs a file shared by several ranks
    if api == "collective-view" and order == "random":
        return False  # a file view sorts each rank's pieces by offset
    return not (layout == "fpp" and nprocs == 1)  # one file per process of one process: the same as shared


def rank_counts(max_np: int) -> list[int]:
    """1, 2, 4, ... up to max_np, and max_np itself."""
    counts = [n for n in (1 << k for k in range(20)) if n <= max_np]
    return sorted(set(counts + [max_np]))


def design(max_np: int, stripe_counts: list[int] | None = None) -> list[Point]:
    """Every valid point of the sweep for up to `max_np` ranks."""
    stripes = stripe_counts or [0]
    aggregators = [0] + rank_counts(max_np)
    points = []
    for op, xfer, layout, n, api, fsync, order, aligned, volume, sc, agg in itertools.product(
            OPS, TRANSFERS, LAYOUTS, rank_counts(max_np), APIS, FSYNCS, ORDERS, (True, False),
            tuple(VOLUMES), stripes, aggregators):
        if _valid(op, layout, n, api, fsync, order, agg):
            points.append(Point(op, xfer, layout, n, api, fsync, order, aligned, volume, sc, agg))
    return points


def _embedding(points: list[Point]) -> np.ndarray:
    """Weighted coordinates whose L1 distance is the order's metric: log-scaled ordinal
    factors in [0, weight], categorical factors one-hot at weight / 2 (a mismatch costs weight)."""
    def scaled(values: list[float], weight: float) -> np.ndarray:
        v = np.log2(np.asarray(values, float) + 1)
        span = v.max() - v.min()
        return ((v - v.min()) / span if span > 0 else np.zeros(len(v))) * weight

    cols = [scaled([getattr(p, name) for p in points], WEIGHTS[name])
            for name in ("transfer", "nprocs", "stripe_count", "aggregators")]
    for name, levels in (("op", OPS), ("api", APIS), ("fsync", FSYNCS), ("layout", LAYOUTS),
                         ("order", ORDERS), ("volume", tuple(VOLUMES)), ("aligned", (True, False))):
        index = np.array([levels.index(getattr(p, name)) for p in points])
        cols += [(index == k) * WEIGHTS[name] / 2 for k in range(len(levels))]
    return np.stack(cols, axis=1)


def coarse_to_fine(points: list[Point], seed: int = 0) -> Iterator[Point]:
    """Points in farthest-point-first order, lazily (deterministic for a design and seed)."""
    if not points:
        return
    emb = _embedding(points)
    jitter = np.random.default_rng(seed).random(len(points)) * 1e-6  # breaks ties reproducibly
    centre = np.abs(emb[:, :3] - emb[:, :3].max(axis=0) / 2).sum(axis=1)
    last = int(np.argmin(centre + jitter))
    dist = np.full(len(points), np.inf)
    for _ in range(len(points)):
        yield points[last]
        dist = np.minimum(dist, np.abs(emb - emb[last]).sum(axis=1))
        dist[last] = -1.0
        last = int(np.argmax(dist + jitter))
        if dist[last] < 0:
            return
