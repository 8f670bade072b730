"""A replay stream synthesized from Darshan counters alone.

Per record and rank: as many reads and writes as counted, with sizes drawn from
the access-size histogram and the four common access sizes so that the bytes
match, offsets that reproduce the consecutive/sequential fractions inside the
rank's region of the file, opens/stats/fsyncs as counted, and for MPI-IO the
split between collective and independent calls. Shared-file records (rank -1)
are split evenly over the ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.metrics import SIZE_BINS
from advisor.profile import SHARED_RANK, JobProfile, ModuleRecords
from advisor.replay_plan.stream import FileTable, StreamBuilder, is_pseudo_file
from replay.plan import MPIIO, MPIIO_COLL, POSIX, READ, STDIO, WRITE

BIN_HI = np.array([hi if np.isfinite(hi) else 1 << 40 for _, hi in SIZE_BINS], dtype=np.int64)
BIN_LO = np.concatenate([[0], BIN_HI[:-1] + 1])
BIN_LO[0] = 1  # a zero-byte request moves nothing: keep synthesized ones at >= 1 byte


@dataclass(frozen=True)
class ModuleView:
    """How to read one module's counters for synthesis."""

    module: str
    prefix: str
    api: int
    opens: tuple[str, ...]
    fsyncs: tuple[str, ...]
    stats: tuple[str, ...] = ()
    sizes: str = "SIZE_{kind}_{bin}"
    seq: bool = True


VIEWS = (
    ModuleView("POSIX", "POSIX", POSIX, ("OPENS",), ("FSYNCS", "FDSYNCS"), ("STATS",)),
    ModuleView("STDIO", "STDIO", STDIO, ("OPENS", "FDOPENS"), ("FLUSHES",), sizes="", seq=False),
    ModuleView("MPI-IO", "MPIIO", MPIIO, ("INDEP_OPENS", "COLL_OPENS"), ("SYNCS",),
               sizes="SIZE_{kind}_AGG_{bin}", seq=False),
)
KINDS = ((READ, "READ", "READS", "BYTES_READ"), (WRITE, "WRITE", "WRITES", "BYTES_WRITTEN"))


def mpiio_ids(profile: JobProfile) -> set[int]:
    recs = profile.records.get("MPI-IO")
    return set() if recs is None else {int(i) for i in recs.ids}


def split_even(total: int, n: int, k: int) -> int:
    """Share of part k when `total` is split over n parts (remainder to the first parts)."""
    return total // n + (1 if k < total % n else 0)


class RecordCounters:
    """Counter access for one module's records."""

    def __init__(self, recs: ModuleRecords, view: ModuleView):
        self.recs, self.view = recs, view
        # plain lists: a metadata-heavy log has thousands of records read one value at a time
        p = view.prefix + "_"
        self._int = {k[len(p):]: v.tolist() for k, v in recs.counters.items() if k.startswith(p)}
        self._flt = {k[len(p) + 2:]: v.tolist() for k, v in recs.fcounters.items() if k.startswith(p + "F_")}

    def get(self, row: int, name: str) -> int:
        col = self._int.get(name)
        return max(col[row], 0) if col is not None else 0

    def fget(self, row: int, name: str) -> float:
        col = self._flt.get(name)
        return max(col[row], 0.0) if col is not None else 0.0

    def total(self, row: int, names: tuple[str, ...]) -> int:
        return sum(self.get(row, n) for n in names)

    def hist(self, row: int, kind: str) -> np.ndarray:
        if not self.view.sizes:
            return np.zeros(len(SIZE_BINS), np.int64)
        return np.array([self.get(row, self.view.sizes.format(kind=kind, bin=b)) for b, _ in SIZE_BINS],
                        np.int64)

    def common(self, row: int) -> list[tuple[int, int]]:
        out = []
        for k in range(1, 5):
            size, count = self.get(row, f"ACCESS{k}_ACCESS"), self.get(row, f"ACCESS{k}_COUNT")
            if count > 0:
                out.append((size, count))
        return out


def synthesize(profile: JobProfile, builder: StreamBuilder, files: FileTable, *,
               scale: float = 1.0, skip: set[int] | None = None) -> None:
    """Add synthesized streams for every file record not in `skip` (record ids; STDIO records
    are never skipped: DXT does not trace STDIO)."""
    skip = skip or set()
    via_mpiio = mpiio_ids(profile)
    for view in VIEWS:
        recs = profile.records.get(view.module)
        if recs is None or not len(recs):
            continue
        rc = RecordCounters(recs, view)
        for row in range(len(recs)):
            rid = int(recs.ids[row])
            name = profile.name_of(rid)
            below_mpiio = view.module != "MPI-IO" and rid in via_mpiio  # replayed at MPI-IO level
            if (rid in skip and view.module != "STDIO") or is_pseudo_file(name) or below_mpiio:
                continue
            _record(profile, builder, files, rc, row, name, scale)


def _record(profile, builder, files, rc: RecordCounters, row: int, name: str, scale: float) -> None:
    view, rank = rc.view, int(rc.recs.ranks[row])
    nprocs = max(profile.job.nprocs, 1)
    ranks = list(range(nprocs)) if rank == SHARED_RANK else [rank]
    world = view.module == "MPI-IO" and rank == SHARED_RANK and rc.get(row, "COLL_OPENS") > 0
    fid = files.add(int(rc.recs.ids[row]), name, world=world)
    n = len(ranks)
    opens = rc.get(row, "INDEP_OPENS") if world else rc.total(row, view.opens)
    fsyncs, stats = _scaled(rc.total(row, view.fsyncs), scale), rc.total(row, view.stats)
    t_open = rc.fget(row, "OPEN_START_TIMESTAMP")
    for k, r in enumerate(ranks):
        fm = builder.file_meta(r, fid, view.api == STDIO)
        fm.api, fm.time = (MPIIO_COLL if world else view.api), t_open
        if world:
            fm.indep_opens = split_even(opens, n, k)
        else:
            fm.opens = split_even(opens, n, k)
        fm.fsyncs, fm.stats = split_even(fsyncs, n, k), split_even(stats, n, k)
    if not (rc.get(row, "READS") or rc.get(row, "WRITES") or view.module == "MPI-IO"):
        return
    rng = _LazyRng(int(rc.recs.ids[row]) % (1 << 32))
    common = rc.common(row)
    budgets = {k: [(s, split_even(c, n, k)) for s, c in common] for k in range(min(n, EXACT_RANKS))}
    spans = _spans(rc, row)
    streams = []
    for code, kind, _, _ in KINDS:
        for members in _rank_classes(_count(rc, row, kind, scale), n):
            k0 = members[0]
            budget = budgets[k0] if n <= EXACT_RANKS else [(s, split_even(c, n, k0)) for s, c in common]
            stream = _kind_stream(rc, row, k0, n, code, kind, scale, budget, rng, spans[kind])
            if stream is not None:
                streams.append((members, code, stream))
    # one region size per record, large enough for every rank's stream: ranks never overlap
    region = max((max(st[4], int((st[0] - st[5] * st[4] + st[1]).max())) for _, _, st in streams), default=1)
    for members, code, (offsets, sizes, api, times, own, k0) in streams:
        _add_copies(builder, np.asarray(ranks)[members], np.asarray(members), fid, code,
                    offsets - k0 * own, sizes, api, times, region)


EXACT_RANKS = 64  # up to this many ranks share a record, each gets its own synthesized stream


def _count(rc: RecordCounters, row: int, kind: str, scale: float) -> tuple[int, int]:
    """(requests, collective requests) of one kind, scaled."""
    if rc.view.module == "MPI-IO":
        coll = rc.get(row, f"COLL_{kind}S") + rc.get(row, f"SPLIT_{kind}S")
        total = coll + rc.get(row, f"INDEP_{kind}S") + rc.get(row, f"NB_{kind}S")
    else:
        coll, total = 0, rc.get(row, f"{kind}S")
    return _scaled(total, scale), _scaled(coll, scale)


def _rank_classes(counts: tuple[int, int], n: int) -> list[list[int]]:
    """Ranks (indices) that get the same synthesized stream: each rank alone up to EXACT_RANKS,
    beyond that the (at most two) groups whose even share of the requests is equal; one stream
    per group, copied rank by rank into its region."""
    if n <= EXACT_RANKS:
        return [[k] for k in range(n)]
    extra = counts[0] % n
    return [c for c in (list(range(extra)), list(range(extra, n))) if c]


def _add_copies(builder, ranks: np.ndarray, ks: np.ndarray, fid: int, code: int, rel, sizes, api, times,
                region: int) -> None:
    """A stream (offsets relative to its rank's region) for every rank index in `ks`."""
    c = len(rel)
    builder.add_data(np.repeat(ranks, c), np.full(c * len(ks), code, np.int8), fid,
                     (rel[None, :] + (ks.astype(np.int64) * region)[:, None]).ravel(),
                     np.tile(sizes, len(ks)), np.tile(api, len(ks)), np.tile(times, len(ks)))


class _LazyRng:
    """A seeded generator made on first use (most records never draw)."""

    def __init__(self, seed: int):
        self.seed, self._rng = seed, None

    def __getattr__(self, name):
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return getattr(self._rng, name)


def _spans(rc: RecordCounters, row: int) -> dict[str, tuple[float, float]]:
    """When each kind of request happened; overlapping read and write spans (a shared record's
    min start / max end over ranks) are made consecutive, the earlier kind first."""
    spans = {}
    for kind in ("READ", "WRITE"):
        t0 = rc.fget(row, f"{kind}_START_TIMESTAMP")
        spans[kind] = (t0, max(rc.fget(row, f"{kind}_END_TIMESTAMP"), t0))
    first, second = ("READ", "WRITE") if spans["READ"][0] < spans["WRITE"][0] else ("WRITE", "READ")
    f0, f1 = spans[first]
    s0, s1 = spans[second]
    if f1 >= s0:
        spans[first] = (f0, f0 + (s0 - f0) * 0.999) if s0 > f0 else (f0, f0)
        spans[second] = (max(s0, f0 + 1e-6), max(s1, s0, f0 + 2e-6))
    return spans


def _scaled(x: int, scale: float) -> int:
    return int(np.ceil(x * scale)) if x else 0


def _kind_stream(rc: RecordCounters, row, k, n, code, kind, scale, budget, rng, span):
    """Rank k's stream of one kind: (offsets, sizes, api, times, region, k), or None."""
    view = rc.view
    total, coll = _count(rc, row, kind, scale)
    count = split_even(total, n, k)
    if count == 0:
        return None
    nbytes = split_even(int(round(rc.get(row, "BYTES_READ" if code == READ else "BYTES_WRITTEN") * scale)), n, k)
    hist = _split_hist(rc.hist(row, kind), n, k, scale, count)
    sizes = synth_sizes(hist, nbytes, budget, rng) if hist.sum() else uniform_sizes(nbytes, count)
    consec = split_even(_scaled(rc.get(row, f"CONSEC_{kind}S"), scale), n, k) if view.seq else count - 1
    seq = split_even(_scaled(rc.get(row, f"SEQ_{kind}S"), scale), n, k) if view.seq else count - 1
    # a rank's region of the file: from the largest offset touched where counted (POSIX,
    # STDIO), else (MPI-IO) the rank's larger share of bytes read or written, side by side
    extent = rc.get(row, f"MAX_BYTE_{'READ' if code == READ else 'WRITTEN'}") + 1
    if extent > 1:
        region = max(extent // n, 1)
    else:  # headroom: sizes drawn from the bins may add up to a little more than the bytes
        region = max(split_even(int(round(rc.get(row, b) * scale)), n, k) for b in ("BYTES_READ", "BYTES_WRITTEN"))
        region = int(region * 1.05) + 4096
    offsets, sizes = synth_offsets(sizes, consec, seq, base=k * region, region=region, rng=rng)
    t0, t1 = span
    times = t0 + (t1 - t0) * np.arange(count) / max(count, 1)
    api = np.full(count, view.api, np.int8)
    if coll:
        ncoll = split_even(coll, n, k)
        api[np.argsort(-sizes, kind="stable")[:ncoll]] = MPIIO_COLL  # data is collective, metadata not
    return offsets, sizes, api, times, region, k


def _split_hist(hist: np.ndarray, n: int, k: int, scale: float, count: int) -> np.ndarray:
    """This rank's share of the histogram, scaled, summing to exactly `count` operations."""
    if hist.sum() == 0:
        return hist
    share = hist * scale / n
    out = np.floor(share).astype(np.int64)
    missing = count - int(out.sum())
    if missing > 0:  # give the rounding remainder to the bins with the largest fractions
        order = np.argsort(-(share - out) - (hist > 0) * 1e-9, kind="stable")
        out[order[:missing]] += 1
    elif missing < 0:
        for i in np.argsort(-out, kind="stable")[: -missing]:
            out[i] -= 1
    return out


def synth_sizes(hist: np.ndarray, nbytes: int, budget: list[tuple[int, int]], rng) -> np.ndarray:
    """Request sizes: the common sizes where the histogram has room for them, the rest of each
    bin filled so that the total is `nbytes` (as far as the bins allow). `budget` (common size,
    count) is consumed in place, so reads and writes of one record share it."""
    count = int(hist.sum())
    if count == 0:
        return np.zeros(0, np.int64)
    left = hist.copy()
    sizes = []
    for i, (size, avail) in enumerate(budget):
        b = int(np.searchsorted(BIN_HI, size, side="left"))
        if b >= len(left) or avail <= 0:
            continue
        take = min(avail, int(left[b]))
        sizes.append(np.full(take, max(size, 1), np.int64))
        left[b] -= take
        budget[i] = (size, avail - take)
    fixed = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    rest_bins = np.repeat(np.arange(len(left)), left)
    lo, hi = BIN_LO[rest_bins], BIN_HI[rest_bins]
    extra = nbytes - int(fixed.sum()) - int(lo.sum())
    cap = hi - lo
    if len(rest_bins) and extra > 0 and cap.sum() > 0:
        frac = min(extra / cap.sum(), 1.0)
        add = np.floor(cap * frac).astype(np.int64)
        short = min(extra, int(cap.sum())) - int(add.sum())
        room = np.flatnonzero(add < cap)[:max(short, 0)]
        add[room] += 1
        rest = lo + add
    else:
        rest = lo
    out = np.concatenate([fixed, rest])
    return out[rng.permutation(len(out))] if len(np.unique(out)) > 1 else out


def uniform_sizes(nbytes: int, count: int) -> np.ndarray:
    """`count` requests of (almost) equal size moving `nbytes` (modules without a histogram)."""
    sizes = np.full(count, nbytes // count, np.int64)
    sizes[: nbytes % count] += 1
    return np.maximum(sizes, 1)


def synth_offsets(sizes: np.ndarray, consec: int, seq: int, *, base: int, region: int,
                  rng) -> tuple[np.ndarray, np.ndarray]:
    """Offsets from `base` whose consecutive (start at the previous end) and sequential (start
    at or after it) counts approach `consec` and `seq`: requests are laid out forward (gaps
    where sequential but not consecutive), then about 2x the backward count of them trade
    places at random, each swap making about one backward jump. The layout is the same for
    reads and writes of equal sizes, so a read-back finds what was written."""
    n = len(sizes)
    if n == 0:
        return np.zeros(0, np.int64), sizes
    C = min(max(consec, 0), n - 1)
    G = min(max(seq - consec, 0), n - 1 - C)
    B = n - 1 - C - G
    kinds = _interleave([C, G, B])  # 0 consecutive, 1 forward gap, 2 backward
    slack = max(region - int(sizes.sum()), 0)
    gap = slack // G if G else 0
    offsets = base + np.concatenate([[0], np.cumsum(sizes[:-1] + np.where(kinds == 1, gap, 0))])
    end = base + max(region, 1)
    if offsets[-1] + sizes[-1] > end:  # more bytes than the file region: re-read it from the start
        offsets = base + (offsets - base) % max(region, 1)
        offsets = np.where(offsets + sizes > end, np.maximum(base, end - sizes), offsets)
    order = np.arange(n)
    if B:  # requests trade places: (offset, size) pairs move together, the layout stays
        pick = np.sort(rng.choice(n, size=min(n, 2 * B), replace=False))
        order[pick] = pick[rng.permutation(len(pick))]
    return offsets[order].astype(np.int64), sizes[order]


def _interleave(counts: list[int]) -> np.ndarray:
    """Kinds 0..k-1 with the given counts, each spread evenly over the sequence."""
    keys = np.concatenate([(np.arange(c) + 0.5) / c for c in counts if c] or [np.zeros(0)])
    kinds = np.concatenate([np.full(c, i) for i, c in enumerate(counts) if c] or [np.zeros(0, int)])
    return kinds[np.argsort(keys, kind="stable")].astype(np.int8)
