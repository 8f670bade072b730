"""Decoder of Recorder 2.5 trace folders (uiuc-hpc/Recorder, the format docs/ingest.md describes).

A trace folder holds ``VERSION``, ``recorder.mt`` (metadata and the traced function names) and per
rank a grammar of its call sequence (``N.cfg``, Sequitur rules of terminal ids), its table of
distinct call signatures (``N.cst``; one merged ``0.cst`` with interprocess compression) and two
uint32 time deltas per call (``N.ts``). A call is a terminal of the expanded grammar: its signature
gives function, call depth and arguments, its deltas give start and end times. Everything here
follows Recorder's own reader (tools/reader.c), so that decoding equals ``recorder2text``.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from collections.abc import Iterator

import numpy as np

from advisor import arrays
from advisor.ingest.recorder.chains import int32_at, walk
from advisor.ingest.recorder.grammar import GrammarError, expand, parse_all

SUPPORTED = (2, 5)
# Layers as recorder2text numbers them (the `type` column).
POSIX, MPIIO, MPI, HDF5, FTRACE = 0, 1, 2, 3, 4
LAYER_NAMES = {POSIX: "POSIX", MPIIO: "MPI-IO", MPI: "MPI", HDF5: "HDF5", FTRACE: "user"}
USER_FUNCTION = 255
# RecorderMetadata: int ranks, double start_ts, double resolution, int buffer elements,
# int ts compression, int interprocess compression (x86-64 alignment: 40 bytes).
_METADATA = struct.Struct("<i4xddiii4x")
# The later 2.5.0 of Recorder's GOTCHA line (branch gotcha, 2023-10 on) writes the same VERSION with
# another RecorderMetadata: int ranks, 6 bools (layers traced, tid, call depth), double start_ts,
# double resolution, int buffer elements, 4 bools (zlib timestamps, interprocess compression, pattern
# recognition), also 40 bytes; read as ours, its start time lands where our resolution is.
_GOTCHA_METADATA = struct.Struct("<i6B6xddi4B")
# Call signature key head: pthread_t tid, uchar func_id, uchar level, uchar arg_count, int strlen.
_KEY_HEAD = struct.Struct("<QBBBi")
_KEY_HEAD_DTYPE = np.dtype([("tid", "<u8"), ("func", "u1"), ("level", "u1"), ("count", "u1"), ("strlen", "<i4")])


class TraceError(ValueError):
    """A Recorder trace this decoder cannot read; the message names the trace and the reason."""


@dataclass(frozen=True)
class Metadata:
    """``recorder.mt``: ranks, times and the function names (their index is the function id)."""

    version: str
    ranks: int
    start_ts: float
    time_resolution: float
    ts_compression: int
    interprocess: bool
    functions: tuple[str, ...]

    @cached_property
    def layers(self) -> np.ndarray:
        """Layer of every function id (0-255), as Recorder's recorder_get_func_type decides."""
        mpi = next((i for i, f in enumerate(self.functions) if "MPI" in f), len(self.functions))
        hdf5 = next((i for i, f in enumerate(self.functions) if "H5" in f), len(self.functions))
        layers = np.full(256, HDF5, dtype=np.uint8)
        for fid in range(256):
            if fid < mpi:
                layers[fid] = POSIX
            elif fid < hdf5:
                name = self.functions[fid] if fid < len(self.functions) else ""
                layers[fid] = MPIIO if name.startswith("MPI_File") else MPI
        layers[USER_FUNCTION] = FTRACE
        return layers

    @property
    def decimals(self) -> int:
        """Digits recorder2text prints for times: log10 of the clock's ticks per second."""
        return int(math.log10(1 / self.time_resolution))


class SignatureTable:
    """Every distinct call signature of a trace, numbered once (its ``gid``) however many ranks
    hold it: ranks repeat most signatures (FLASH: 710,000 entries in 1,024 tables, 50,000
    distinct), so a key is parsed once and what depends on a signature is worked out once."""

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}
        self.tid: list[int] = []
        self.args: list[tuple[str, ...]] = []
        self._func: list[int] = []
        self._level: list[int] = []
        self._arrays: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._func)

    def add(self, keys: list[bytes], head: np.ndarray, places: list[tuple[Path, int]]) -> None:
        """New keys, their heads (thread id, function, depth, argument count, argument bytes)
        as parsed columns; `places` (file, terminal id) name a key in an error."""
        args = [tuple(key[_KEY_HEAD.size:_KEY_HEAD.size + n].decode(errors="replace").split(" ")[:-1])
                for key, n in zip(keys, head["strlen"].tolist())]
        # arguments end each with a space (spaces inside were written as '_'): as many as counted
        found = np.fromiter(map(len, args), np.int64, len(args))
        bad = np.flatnonzero(found != head["count"])
        if bad.size:
            (path, terminal), i = places[bad[0]], int(bad[0])
            raise _fail(path, f"signature {terminal} holds {found[i]} arguments, not {head['count'][i]}")
        self.ids.update(zip(keys, range(len(self._func), len(self._func) + len(keys))))
        self._func += head["func"].tolist()
        self._level += head["level"].tolist()
        self.tid += head["tid"].tolist()
        self.args += args

    @property
    def func(self) -> np.ndarray:
        """uint8 function id per gid."""
        return self._array("func", self._func)

    @property
    def level(self) -> np.ndarray:
        """uint8 call depth per gid."""
        return self._array("level", self._level)

    def _array(self, name: str, values: list[int]) -> np.ndarray:
        """The list as uint8, converting only the signatures added since the last call."""
        cached = self._arrays.get(name, np.zeros(0, np.uint8))
        if cached.size != len(values):
            cached = self._arrays[name] = np.concatenate((cached, np.array(values[cached.size:], np.uint8)))
        return cached


@dataclass(frozen=True)
class RankCalls:
    """Every call of one rank in call order: columns indexed by call number."""

    rank: int
    terminal: np.ndarray  # int32 signature of each call (its gid in `signatures`)
    tstart: np.ndarray  # float64 seconds since the trace's start
    tend: np.ndarray
    signatures: SignatureTable

    def __len__(self) -> int:
        return int(self.terminal.size)

    @property
    def func(self) -> np.ndarray:
        return self.signatures.func[self.terminal]

    @property
    def level(self) -> np.ndarray:
        return self.signatures.level[self.terminal]

    def args(self, i: int) -> tuple[str, ...]:
        return self.signatures.args[self.terminal[i]]


def _fail(path: Path, reason: str) -> TraceError:
    return TraceError(f"{path}: {reason}")


def read_metadata(folder: Path) -> Metadata:
    """VERSION and recorder.mt; refuse a version other than 2.5 as Recorder's reader does."""
    folder = Path(folder)
    try:
        version = (folder / "VERSION").read_text(errors="replace").strip()
        raw = (folder / "recorder.mt").read_bytes()
    except OSError as err:
        raise _fail(folder, f"not a readable Recorder trace ({err.strerror}: {err.filename})") from None
    parts = version.split(".")
    if len(parts) < 2 or tuple(int(p) if p.isdigit() else -1 for p in parts[:2]) != SUPPORTED:
        raise _fail(folder, f"Recorder version {version!r} unsupported (this reader reads 2.5)")
    if len(raw) < _METADATA.size:
        raise _fail(folder, f"recorder.mt truncated ({len(raw)} bytes)")
    ranks, start, resolution, _, ts_compression, interprocess = _METADATA.unpack_from(raw)
    if resolution > 1 and 0 < _GOTCHA_METADATA.unpack_from(raw)[8] <= 1:
        # no tick is longer than a second: this is a start time, the other layout's
        raise _fail(folder, "recorder.mt has the layout of Recorder's later 2.5.0 (GOTCHA interception: "
                    "layer flags, zlib timestamps, pattern recognition), which this reader does not decode; "
                    "it reads the 2.5.0 of branch pilgrim (c1c3dcbf)")
    if ranks < 1 or not resolution > 0:
        raise _fail(folder, f"recorder.mt damaged ({ranks} ranks, time resolution {resolution})")
    if ts_compression != 0:
        raise _fail(folder, f"compressed timestamps (algorithm {ts_compression}) unsupported")
    names = raw[_METADATA.size:].decode(errors="replace").split("\n")[:-1]
    return Metadata(version, ranks, start, resolution, ts_compression, bool(interprocess), tuple(names))


_ENTRY_HEAD = 16  # terminal id, rank, key length, count (int32 each)


def read_signatures(path: Path, table: SignatureTable) -> np.ndarray:
    """One ``.cst`` (entries stored in hash order): the gid in `table` of each terminal id."""
    return read_tables([path], table)[0]


def read_tables(paths: list[Path], table: SignatureTable) -> list[np.ndarray]:
    """Several ``.cst`` files: per file, the gid in `table` of each terminal id.

    The entries of all files are found together (:mod:`chains`); a key seen in another rank's
    table is a dictionary hit, and only a new key is parsed."""
    raws = [_read(path) for path in paths]
    entries = []
    for path, raw in zip(paths, raws):
        if len(raw) < 4:
            raise _fail(path, "empty call-signature table")
        (n,) = struct.unpack_from("<i", raw)
        if n <= 0:
            raise _fail(path, f"call-signature table holds {n} entries")
        if n > (len(raw) - 4) // (_ENTRY_HEAD + _KEY_HEAD.size):  # (a damaged count: no endless walk)
            raise _fail(path, "call-signature table truncated")
        entries.append(n)
    size = np.array([len(raw) for raw in raws], np.int64)
    begin = np.cumsum(size) - size
    joined = b"".join(raws)
    buf = np.frombuffer(joined + bytes(_ENTRY_HEAD), np.uint8)
    count = np.array(entries, np.int64)
    heads, _ = walk(begin + 4, count, lambda at: _ENTRY_HEAD + int32_at(buf, at + 8))
    terminal, key_len = int32_at(buf, heads), int32_at(buf, heads + 8)
    owner = np.repeat(np.arange(len(paths)), count)
    limit = (begin + size)[owner]
    head_out = heads + _ENTRY_HEAD > limit
    damaged = (terminal < 0) | (terminal >= count[owner]) | (key_len < _KEY_HEAD.size)
    bad = head_out | damaged | (heads + _ENTRY_HEAD + key_len > limit)
    if bad.any():  # the first bad entry says why, as a walk entry by entry would
        i = int(np.argmax(bad))
        why = "damaged" if damaged[i] and not head_out[i] else "truncated"
        raise _fail(paths[int(owner[i])], f"call-signature table {why}")
    first = (heads + _ENTRY_HEAD).tolist()
    keys = [joined[a:b] for a, b in zip(first, (heads + _ENTRY_HEAD + key_len).tolist())]
    gid = list(map(table.ids.get, keys))
    new: dict[bytes, int] = {}  # keys no table held before: the first entry of each
    for i in [i for i, g in enumerate(gid) if g is None]:
        new.setdefault(keys[i], i)
    if new:
        first = np.fromiter(new.values(), np.int64, len(new))
        table.add(list(new), _key_heads(buf, heads[first] + _ENTRY_HEAD),
                  [(paths[int(owner[i])], int(terminal[i])) for i in first.tolist()])
        gid = list(map(table.ids.__getitem__, keys))
    gid = np.array(gid, np.int32)
    out = []
    for f, (lo, hi) in enumerate(zip((np.cumsum(count) - count).tolist(), np.cumsum(count).tolist())):
        gids = np.full(entries[f], -1, np.int32)
        gids[terminal[lo:hi]] = gid[lo:hi]
        if (gids < 0).any():
            raise _fail(paths[f], "call-signature table misses terminal ids")
        out.append(gids)
    return out


def _key_heads(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The heads of the keys starting at byte positions `at` of `buf`, as a structured array."""
    return buf[at[:, None] + np.arange(_KEY_HEAD.size)].copy().view(_KEY_HEAD_DTYPE).ravel()


def times(deltas: np.ndarray, resolution: float) -> tuple[np.ndarray, np.ndarray]:
    """Start and end times: deltas count ticks from the previous call's start (the first: 0)."""
    pairs = deltas.reshape(-1, 2).astype(np.float64) * resolution
    # np.cumsum adds in call order like the C reader, so the doubles are bit-identical.
    tstart = np.cumsum(pairs[:, 0])
    prev = np.concatenate(([0.0], tstart[:-1]))
    return tstart, pairs[:, 1] + prev


class RecorderTrace:
    """A Recorder trace folder: metadata now, ranks decoded on demand."""

    # grammars expanded together per batch: about this many calls (bounds the batch's memory)
    BATCH_CALLS = 1 << 21

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self.meta = read_metadata(self.folder)
        self.signatures = SignatureTable()
        self._gids: dict[int, np.ndarray] = {}  # rank (0 with a merged table) -> gid per terminal
        self._expanded: dict[int, np.ndarray] = {}  # grammar id -> terminals (interprocess: shared)
        self.grammar_of = list(range(self.meta.ranks))
        if self.meta.interprocess:
            raw = _read(self.folder / "ug.mt")
            ids = np.frombuffer(raw[:len(raw) // 4 * 4], dtype="<i4")
            if ids.size != self.meta.ranks + 1:
                raise _fail(self.folder / "ug.mt", f"holds {ids.size} integers, not ranks + 1")
            self.grammar_of = [int(i) for i in ids[:-1]]

    def gids(self, rank: int) -> np.ndarray:
        """The gid of each terminal id of a rank's table (the merged ``0.cst`` for every rank)."""
        table = 0 if self.meta.interprocess else rank
        self._tables([table])
        gids = self._gids[table]
        if not self.meta.interprocess:
            del self._gids[table]  # read once per rank: keep no table longer than its rank
        return gids

    def _tables(self, tables: list[int]) -> None:
        """Read the signature tables not yet read, together."""
        todo = [t for t in tables if t not in self._gids]
        if todo:
            read = read_tables([self.folder / f"{t}.cst" for t in todo], self.signatures)
            self._gids.update(zip(todo, read))

    def deltas(self, rank: int) -> np.ndarray:
        path = self.folder / f"{rank}.ts"
        raw = _read(path)
        if len(raw) % 8:
            raise _fail(path, f"timestamps truncated ({len(raw)} bytes, not pairs of uint32)")
        return np.frombuffer(raw, dtype="<u4")

    def rank(self, rank: int, deltas: np.ndarray | None = None) -> RankCalls:
        """Decode one rank; ``deltas`` replaces its ``.ts`` (Recorder's reader uses rank 0's
        with interprocess compression, see docs/ingest.md)."""
        if not 0 <= rank < self.meta.ranks:
            raise _fail(self.folder, f"no rank {rank} ({self.meta.ranks} ranks)")
        deltas = self.deltas(rank) if deltas is None else deltas
        self._expand([rank], [deltas.size // 2])
        return self._decode(rank, deltas)

    def ranks(self) -> Iterator[RankCalls]:
        """Every rank in order."""
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[RankCalls]]:
        """Every rank in order, in batches of about BATCH_CALLS calls decoded together."""
        pending: list[tuple[int, np.ndarray]] = []
        calls = 0
        for rank in range(self.meta.ranks):
            pending.append((rank, self.deltas(rank)))
            calls += pending[-1][1].size // 2
            if calls >= self.BATCH_CALLS or rank == self.meta.ranks - 1:
                self._expand([r for r, _ in pending], [d.size // 2 for _, d in pending])
                self._tables([0] if self.meta.interprocess else [r for r, _ in pending])
                yield [self._decode(r, d) for r, d in pending]
                pending, calls = [], 0

    def _expand(self, ranks: list[int], calls: list[int]) -> None:
        """Expand the grammars of `ranks` not yet expanded (each grammar once)."""
        todo: dict[int, int] = {}
        for rank, n in zip(ranks, calls):
            grammar = self.grammar_of[rank]
            if grammar not in self._expanded:
                todo[grammar] = max(todo.get(grammar, 0), n)
        paths = [self.folder / f"{grammar}.cfg" for grammar in todo]
        try:
            grammars = parse_all([_read(cfg) for cfg in paths], paths)
            expanded = expand(grammars, list(todo.values())) if grammars else []
        except GrammarError as err:
            raise TraceError(str(err)) from None
        self._expanded.update(zip(todo, expanded))

    def _decode(self, rank: int, deltas: np.ndarray) -> RankCalls:
        grammar = self.grammar_of[rank]
        cfg = self.folder / f"{grammar}.cfg"
        # an interprocess grammar serves many ranks; a rank's own is needed once
        terminal = self._expanded[grammar] if self.meta.interprocess else self._expanded.pop(grammar)
        gids = self.gids(rank)
        if terminal.size and (terminal.min() < 0 or terminal.max() >= gids.size):
            raise _fail(cfg, "grammar names call signatures the table does not hold")
        if deltas.size != 2 * terminal.size:
            raise _fail(self.folder / f"{rank}.ts",
                        f"{deltas.size // 2} timestamps for {terminal.size} calls")
        tstart, tend = times(deltas, self.meta.time_resolution)
        return RankCalls(rank, gids[terminal], tstart, tend, self.signatures)

    def text(self, calls: RankCalls) -> list[str]:
        """The lines recorder2text writes for these calls (its reference output)."""
        d = self.meta.decimals
        sig = calls.signatures
        used = arrays.unique(calls.terminal).tolist()
        form = {}
        for t in used:
            f, args = int(sig.func[t]), sig.args[t]
            tail = "".join(" " + a for a in args) if f != USER_FUNCTION else ""
            form[t] = f" {self._name(f, args)} {sig.level[t]} {self.meta.layers[f]} ({tail} )"
        return [f"{s:.{d}f} {e:.{d}f}{form[t]}"
                for s, e, t in zip(calls.tstart.tolist(), calls.tend.tolist(), calls.terminal.tolist())]

    def _name(self, func: int, args: tuple[str, ...]) -> str:
        if func == USER_FUNCTION:
            return args[1]
        return self.meta.functions[func] if func < len(self.meta.functions) else f"func{func}"


def _read(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise _fail(Path(path), f"unreadable ({err.strerror})") from None
