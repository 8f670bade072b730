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

import numpy as np

SUPPORTED = (2, 5)
# Layers as recorder2text numbers them (the `type` column).
POSIX, MPIIO, MPI, HDF5, FTRACE = 0, 1, 2, 3, 4
LAYER_NAMES = {POSIX: "POSIX", MPIIO: "MPI-IO", MPI: "MPI", HDF5: "HDF5", FTRACE: "user"}
USER_FUNCTION = 255
# RecorderMetadata: int ranks, double start_ts, double resolution, int buffer elements,
# int ts compression, int interprocess compression (x86-64 alignment: 40 bytes).
_METADATA = struct.Struct("<i4xddiii4x")
# Call signature key head: pthread_t tid, uchar func_id, uchar level, uchar arg_count, int strlen.
_KEY_HEAD = struct.Struct("<QBBBi")


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


@dataclass(frozen=True)
class Signatures:
    """One call-signature table, indexed by terminal id."""

    func: np.ndarray  # uint8 function id
    level: np.ndarray  # uint8 call depth
    tid: np.ndarray  # uint64 thread id (0 unless RECORDER_LOG_TID)
    args: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class RankCalls:
    """Every call of one rank in call order: columns indexed by call number."""

    rank: int
    terminal: np.ndarray  # int32 signature index of each call
    tstart: np.ndarray  # float64 seconds since the trace's start
    tend: np.ndarray
    signatures: Signatures

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
    if ranks < 1 or not resolution > 0:
        raise _fail(folder, f"recorder.mt damaged ({ranks} ranks, time resolution {resolution})")
    if ts_compression != 0:
        raise _fail(folder, f"compressed timestamps (algorithm {ts_compression}) unsupported")
    names = raw[_METADATA.size:].decode(errors="replace").split("\n")[:-1]
    return Metadata(version, ranks, start, resolution, ts_compression, bool(interprocess), tuple(names))


def read_signatures(path: Path, known: dict[bytes, tuple] | None = None) -> Signatures:
    """One ``.cst``: entries stored in hash order, placed at their terminal id.

    `known` maps keys already parsed (of other ranks: most signatures repeat) to their fields."""
    raw = _read(path)
    if len(raw) < 4:
        raise _fail(path, "empty call-signature table")
    (entries,) = struct.unpack_from("<i", raw)
    if entries <= 0:
        raise _fail(path, f"call-signature table holds {entries} entries")
    known = {} if known is None else known
    fields: list[tuple | None] = [None] * entries
    pos = 4
    for _ in range(entries):
        if pos + 16 > len(raw):
            raise _fail(path, "call-signature table truncated")
        terminal, _rank, key_len, _count = struct.unpack_from("<iiii", raw, pos)
        key = raw[pos + 16:pos + 16 + key_len]
        pos += 16 + key_len
        if not 0 <= terminal < entries or len(key) != key_len or key_len < _KEY_HEAD.size:
            raise _fail(path, "call-signature table damaged")
        parsed = known.get(key)
        if parsed is None:
            parsed = known[key] = _parse_key(key, path, terminal)
        fields[terminal] = parsed
    if any(f is None for f in fields):
        raise _fail(path, "call-signature table misses terminal ids")
    tid, func, level, args = zip(*fields)  # type: ignore[misc]
    return Signatures(np.array(func, np.uint8), np.array(level, np.uint8), np.array(tid, np.uint64), args)


def _parse_key(key: bytes, path: Path, terminal: int) -> tuple:
    """(thread id, function id, depth, arguments) of one signature key."""
    tid, func, level, count, strlen = _KEY_HEAD.unpack_from(key)
    # Arguments end each with a space (spaces inside were written as '_').
    values = tuple(key[_KEY_HEAD.size:_KEY_HEAD.size + strlen].decode(errors="replace").split(" ")[:-1])
    if len(values) != count:
        raise _fail(path, f"signature {terminal} holds {len(values)} arguments, not {count}")
    return tid, func, level, values


def read_grammar(path: Path) -> dict[int, np.ndarray]:
    """One ``.cfg``: rule id -> (n, 2) int32 symbols (value, repetitions); rule -1 starts."""
    raw = _read(path)
    ints = np.frombuffer(raw[:len(raw) // 4 * 4], dtype="<i4")
    if ints.size < 1 or len(raw) % 4:
        raise _fail(path, "grammar truncated")
    rules: dict[int, np.ndarray] = {}
    pos = 1
    for _ in range(int(ints[0])):
        if pos + 2 > ints.size:
            raise _fail(path, f"grammar truncated after {len(rules)} of {ints[0]} rules")
        rule, symbols = int(ints[pos]), int(ints[pos + 1])
        body = ints[pos + 2:pos + 2 + 2 * symbols]
        if symbols < 0 or body.size != 2 * symbols:
            raise _fail(path, f"grammar truncated in rule {rule}")
        rules[rule] = body.reshape(-1, 2)
        pos += 2 + 2 * symbols
    if -1 not in rules:
        raise _fail(path, "grammar has no start rule")
    return rules


def expand(rules: dict[int, np.ndarray], path: Path) -> np.ndarray:
    """Terminal ids of the start rule, fully expanded (rules memoised, deepest first).

    Python lists, not numpy: most rules are a few symbols long, where list repetition is faster."""
    bodies = {rule: body.tolist() for rule, body in rules.items()}
    done: dict[int, list[int]] = {}
    stack, visiting = [-1], set()
    while stack:
        rule = stack[-1]
        if rule in done:
            stack.pop()
            continue
        body = bodies.get(rule)
        if body is None:
            raise _fail(path, f"grammar references missing rule {rule}")
        pending = [v for v, _ in body if v < 0 and v not in done]
        if pending:
            if rule in visiting:
                raise _fail(path, f"grammar rule {rule} is recursive")
            visiting.add(rule)
            stack.extend(pending)
            continue
        out: list[int] = []
        for v, e in body:
            if v >= 0 and e == 1:
                out.append(v)
            elif v >= 0:
                out.extend([v] * e)
            else:
                out.extend(done[v] * e)
        done[rule] = out
        stack.pop()
    return np.array(done[-1], dtype=np.int32)


def times(deltas: np.ndarray, resolution: float) -> tuple[np.ndarray, np.ndarray]:
    """Start and end times: deltas count ticks from the previous call's start (the first: 0)."""
    pairs = deltas.reshape(-1, 2).astype(np.float64) * resolution
    # np.cumsum adds in call order like the C reader, so the doubles are bit-identical.
    tstart = np.cumsum(pairs[:, 0])
    prev = np.concatenate(([0.0], tstart[:-1]))
    return tstart, pairs[:, 1] + prev


class RecorderTrace:
    """A Recorder trace folder: metadata now, ranks decoded on demand."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self.meta = read_metadata(self.folder)
        self._shared: Signatures | None = None
        self._keys: dict[bytes, tuple] = {}
        self.grammar_of = list(range(self.meta.ranks))
        if self.meta.interprocess:
            raw = _read(self.folder / "ug.mt")
            ids = np.frombuffer(raw[:len(raw) // 4 * 4], dtype="<i4")
            if ids.size != self.meta.ranks + 1:
                raise _fail(self.folder / "ug.mt", f"holds {ids.size} integers, not ranks + 1")
            self.grammar_of = [int(i) for i in ids[:-1]]

    def signatures(self, rank: int) -> Signatures:
        if not self.meta.interprocess:
            return read_signatures(self.folder / f"{rank}.cst", self._keys)
        if self._shared is None:
            self._shared = read_signatures(self.folder / "0.cst", self._keys)
        return self._shared

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
        cfg = self.folder / f"{self.grammar_of[rank]}.cfg"
        terminal = expand(read_grammar(cfg), cfg)
        signatures = self.signatures(rank)
        if terminal.size and (terminal.min() < 0 or terminal.max() >= signatures.func.size):
            raise _fail(cfg, "grammar names call signatures the table does not hold")
        deltas = self.deltas(rank) if deltas is None else deltas
        if deltas.size != 2 * terminal.size:
            raise _fail(self.folder / f"{rank}.ts",
                        f"{deltas.size // 2} timestamps for {terminal.size} calls")
        tstart, tend = times(deltas, self.meta.time_resolution)
        return RankCalls(rank, terminal, tstart, tend, signatures)

    def text(self, calls: RankCalls) -> list[str]:
        """The lines recorder2text writes for these calls (its reference output)."""
        d = self.meta.decimals
        sig = calls.signatures
        names = [self._name(int(f), a) for f, a in zip(sig.func, sig.args)]
        heads = [f" {n} {lv} {self.meta.layers[f]} (" for n, lv, f in zip(names, sig.level, sig.func)]
        tails = ["".join(" " + a for a in args) if f != USER_FUNCTION else ""
                 for f, args in zip(sig.func, sig.args)]
        return [f"{s:.{d}f} {e:.{d}f}{heads[t]}{tails[t]} )"
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
