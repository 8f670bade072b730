"""DXT segments from `darshan-dxt-parser` text output, accumulated as numpy chunks.

darshan-dxt-parser prints, per (file record, rank), a block of comment lines
(``# DXT, file_id: ...``, ``# DXT, rank: ...``, ``# DXT, write_count: W, read_count: R``,
a column header) followed by W write segments and then R read segments, one per line::

     X_POSIX       0  write        0               0         1048576      0.0118      0.0120

Segment lines are never turned into Python objects one by one: runs of them are
handed over as raw bytes and converted in bulk by :func:`numpy.loadtxt` (a few MB at
a time), so a million segments take seconds and memory stays bounded. The op
(read/write) of each segment follows from the block's write_count, which
darshan-dxt-parser always prints first; the printed segment index is checked
against it so a reordered or spliced dump is rejected instead of misread.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

import numpy as np

from advisor.ingest.plausible import MAX_RANKS
from advisor.profile import DXT_READ, DXT_WRITE, DxtTrace

FLUSH_BYTES = 8 << 20
"""Convert pending segment text once this much has accumulated (bounds memory)."""

# rank, segment index, offset, length, start, end: columns 1 and 3-7 of a segment line;
# Lustre "[OST]" columns and the Pthread-ID column of DXT v2 dumps follow and are ignored.
_SEGMENT_DTYPE = np.dtype([("rank", "i8"), ("seg", "i8"), ("offset", "i8"),
                           ("length", "i8"), ("start", "f8"), ("end", "f8")])
_SEGMENT_COLUMNS = (1, 3, 4, 5, 6, 7)

_FILE_RE = re.compile(r"^# DXT, file_id: (\d+), file_name: (.*)$")
_RANK_RE = re.compile(r"^# DXT, rank: (-?\d+), hostname: (.*)$")
_COUNT_RE = re.compile(r"^# DXT, write_count: (\d+), read_count: (\d+)$")
_LUSTRE_RE = re.compile(r"^# DXT, Lustre stripe_size: (-?\d+), Lustre stripe_count: (-?\d+)$")
_OSTS_RE = re.compile(r"^# DXT, Lustre OST obdidx:(.*)$")


class DumpFormatError(ValueError):
    """The dump text does not follow darshan-dxt-parser's format (message says where)."""


@dataclass
class _Block:
    """One (file record, rank) block of a DXT module."""

    module: str
    record_id: int = 0
    name: str = ""
    rank: int = -1
    hostname: str = ""
    writes: int = -1
    reads: int = -1
    seen: int = 0  # segment lines consumed so far
    started: bool = False  # column header seen: segment lines may follow


@dataclass
class DxtLustreHint:
    """Stripe size, count and OST list that darshan-dxt-parser prints for Lustre files."""

    stripe_size: int
    stripe_count: int
    ost_ids: list[int] = field(default_factory=list)


@dataclass
class _Module:
    """Converted chunks and pending raw segment text of one DXT module."""

    chunks: list[dict[str, np.ndarray]] = field(default_factory=list)
    pending: list[bytes] = field(default_factory=list)
    pieces: list[tuple[int, int, int, int]] = field(default_factory=list)  # record, first, count, writes
    pending_bytes: int = 0
    hostnames: dict[int, str] = field(default_factory=dict)
    blocks: int = 0


class DxtAccumulator:
    """Collects the DXT blocks of one dump; :meth:`traces` returns a DxtTrace per module."""

    def __init__(self) -> None:
        self.modules: dict[str, _Module] = {}
        self.names: dict[int, str] = {}
        self.lustre: dict[int, DxtLustreHint] = {}
        self.threads_column = False
        self._block: _Block | None = None
        self._module = ""

    def blocks(self, module: str) -> int:
        """(file record, rank) blocks seen for `module`."""
        mod = self.modules.get(module)
        return mod.blocks if mod else 0

    # -- structure -------------------------------------------------------------
    def begin_module(self, module: str) -> None:
        """A ``# DXT_POSIX module data`` banner: following blocks belong to `module`."""
        self.end_block()
        self._module = module
        self.modules.setdefault(module, _Module())

    def header_line(self, line: str) -> bool:
        """Consume one ``# DXT, ...`` or column-header comment line; False if it is not one."""
        if not self._module:
            return False
        if m := _FILE_RE.match(line):
            self.end_block()
            self._block = _Block(self._module, record_id=int(m[1]), name=m[2])
            self.names.setdefault(int(m[1]), m[2])
            self.modules[self._module].blocks += 1
            return True
        block = self._block
        if block is None:
            return False
        if m := _RANK_RE.match(line):
            block.rank, block.hostname = int(m[1]), m[2]
        elif m := _COUNT_RE.match(line):
            block.writes, block.reads = int(m[1]), int(m[2])
        elif m := _LUSTRE_RE.match(line):
            self.lustre[block.record_id] = DxtLustreHint(int(m[1]), int(m[2]))
        elif m := _OSTS_RE.match(line):
            hint = self.lustre.get(block.record_id)
            if hint is not None:
                hint.ost_ids = [int(x) for x in m[1].split()]
        elif line.startswith("# Module") and "Wt/Rd" in line:
            if block.writes < 0:
                raise DumpFormatError(f"DXT block of record {block.record_id} has no write_count/read_count line")
            self.threads_column = self.threads_column or "Pthread" in line
            block.started = True
            if block.rank >= 0:
                self.modules[self._module].hostnames.setdefault(block.rank, block.hostname)
        elif line.startswith("# DXT,"):
            pass  # e.g. "number of threads", "mnt_pt": nothing the profile keeps
        else:
            return False
        return True

    def add_run(self, run: bytes) -> None:
        """Raw text of consecutive segment lines (each ending in a newline) of the open block."""
        block = self._block
        if block is None or not block.started:
            first = run.split(b"\n", 1)[0][:60].decode("utf-8", "backslashreplace")
            raise DumpFormatError(f"segment line outside a DXT block: {first!r}")
        body = run.rstrip(b"\r\n")  # trailing blank separator lines carry no segment
        count = body.count(b"\n") + 1 if body else 0
        if block.seen + count > block.writes + block.reads:
            raise DumpFormatError(
                f"DXT block of record {block.record_id} rank {block.rank} has more segments "
                f"than its write_count {block.writes} + read_count {block.reads}")
        mod = self.modules[block.module]
        mod.pending.append(run)
        mod.pieces.append((block.record_id, block.seen, count, block.writes))
        mod.pending_bytes += len(run)
        block.seen += count
        if mod.pending_bytes >= FLUSH_BYTES:
            self._flush(mod)

    def end_block(self, at_eof: bool = False) -> None:
        """Close the open block, checking that all its announced segments were there."""
        block, self._block = self._block, None
        if block is None or block.writes < 0:
            return
        expected = block.writes + block.reads
        if block.seen != expected:
            where = "the dump ends" if at_eof else "the block ends"
            raise DumpFormatError(
                f"{where} after {block.seen} of the {expected} segments announced for "
                f"record {block.record_id} rank {block.rank} ({block.module})")

    # -- conversion ------------------------------------------------------------
    def _flush(self, mod: _Module) -> None:
        if not mod.pending:
            return
        text = b"".join(mod.pending)
        try:
            seg = np.loadtxt(io.BytesIO(text), dtype=_SEGMENT_DTYPE, usecols=_SEGMENT_COLUMNS, ndmin=1)
        except (ValueError, OverflowError) as exc:
            raise DumpFormatError(f"malformed DXT segment line ({_short(exc)})") from None
        if len(seg) and not 0 <= seg["rank"].min() <= seg["rank"].max() < MAX_RANKS:
            bad = seg["rank"][(seg["rank"] < 0) | (seg["rank"] >= MAX_RANKS)][0]
            raise DumpFormatError(f"implausible DXT rank {bad} (expected 0 to {MAX_RANKS - 1})")
        record = np.empty(len(seg), np.uint64)
        index = np.empty(len(seg), np.int64)
        writes = np.empty(len(seg), np.int64)
        at = 0
        for record_id, first, count, nwrites in mod.pieces:
            record[at:at + count] = record_id
            index[at:at + count] = np.arange(first, first + count)
            writes[at:at + count] = nwrites
            at += count
        if at != len(seg):
            raise DumpFormatError(f"{len(seg)} DXT segment lines where {at} were counted")
        is_read = index >= writes
        expected_seg = np.where(is_read, index - writes, index)
        if not np.array_equal(seg["seg"], expected_seg):
            raise DumpFormatError("DXT segments are not in darshan-dxt-parser order (writes, then reads)")
        mod.chunks.append({
            "rank": seg["rank"].astype(np.int32), "record_id": record,
            "op": np.where(is_read, DXT_READ, DXT_WRITE).astype(np.int8),
            "offset": seg["offset"], "length": seg["length"],
            "start": seg["start"], "end": seg["end"],
        })
        mod.pending.clear()
        mod.pieces.clear()
        mod.pending_bytes = 0

    def traces(self) -> dict[str, DxtTrace]:
        """One DxtTrace per DXT module seen, sorted by rank then start time."""
        out: dict[str, DxtTrace] = {}
        for name, mod in self.modules.items():
            self._flush(mod)
            if not mod.chunks:
                trace = DxtTrace.empty(name)
            else:
                cols = {k: np.concatenate([c[k] for c in mod.chunks]) for k in mod.chunks[0]}
                mod.chunks.clear()
                order = np.lexsort((cols["start"], cols["rank"]))  # stable: dump order breaks ties
                trace = DxtTrace(module=name, **{k: v[order] for k, v in cols.items()})
            trace.hostnames = dict(mod.hostnames)
            out[name] = trace
        return out


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:160]
