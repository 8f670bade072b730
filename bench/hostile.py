"""Hostile inputs made from real ones, and how a tool fared on one: shared by bench/fuzz.py
(a large deterministic set, ioadvisor beside Drishti) and tests/test_fuzz.py (Hypothesis).

Mutations are pure functions of the real input's bytes and their parameters, so a seeded
choice of parameters gives the same set on every machine: truncation, bit flips, edits of
the Darshan header's fields (version, magic number, compression, partial flag, the region
map's offsets and lengths) and of the job record inside the compressed job region
(uid, times, nprocs, job id: decompressed, edited, recompressed and the map shifted), edits
of darshan-parser dumps (header lines, counter values, ranks), absurd numbers anywhere in
IOR outputs and snapshots, deep JSON nesting, and hostile file names.

A run is classified by what the tool did: a hang (no exit within the timeout), a signal
(killed by one: SIGSEGV, SIGABRT, ...), killed at the memory cap, an internal error (a bug:
ioadvisor's exit 3; for Drishti, which has no such status, an exit on an uncaught exception),
a success (exit 0) or a clean error (any other exit); whether it printed a Python traceback;
and its peak resident memory (every process of its session, polled, and what it reaped).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import struct
import subprocess
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

ABSURD_NUMBERS = ("0", "-1", "-2", "1", "nan", "NaN", "inf", "-inf", "1e309", "-1e309", "1e30", "1e-320",
                  "4294967296", "1099511627776", "1000000000000", "9223372036854775807",
                  "-9223372036854775808", "18446744073709551615", "9" * 400, "0x7fffffff", "", "-", "1.5")
ABSURD_INTS = (0, -1, 1, 2 ** 31, 2 ** 32 - 1, 2 ** 40, 10 ** 12, 2 ** 62, 2 ** 63 - 1, -2 ** 63)
HOSTILE_NAMES = (
    "clear\x1b[2J\x1b[H.darshan", "title\x1b]0;owned\x07.darshan", "new\nioadvisor: error: forged.darshan",
    "cr\rover.darshan", "bidi\u202etxt.darshan", "c1\x9b31m.darshan", "-rf.darshan", "$(id).darshan",
    "sp ace;|&.darshan", "[red]x[bold].darshan", "glob*?[x].darshan", "q'uo\"te.darshan",
    "x" * 240 + ".darshan", os.fsdecode(b"bytes\xff\xfe.darshan"), "%s%n%x.darshan", "..darshan",
)

# Darshan's header: version string (8 bytes), magic number (int64), compression (1 byte),
# partial flag (uint32); then the region map: (offset, length) pairs, the name/record map
# first, at 24 (3.00-3.21, 16 modules) or 32 (3.4x, 64 modules), and the module versions.
DARSHAN_HEADER_FIELDS = ("version", "magic", "compression", "partial_flag", "name_map.off", "name_map.len",
                         "module_map.off", "module_map.len")
DARSHAN_JOB_FIELDS = ("uid", "start_time", "end_time", "nprocs", "jobid")
DARSHAN_MAGIC = 6567223


# ---------------------------------------------------------------- generic byte and text edits

def truncate(data: bytes, keep: int) -> bytes:
    return data[:max(0, min(keep, len(data)))]


def flip_bits(data: bytes, bits: list[int]) -> bytes:
    out = bytearray(data)
    for bit in bits:
        if out:
            out[(bit // 8) % len(out)] ^= 1 << (bit % 8)
    return bytes(out)


def replace_number(text: str, index: int, value: str) -> str:
    """`text` with its `index`-th number (modulo their count) replaced by `value`."""
    spans = [m.span() for m in re.finditer(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", text)]
    if not spans:
        return text + value
    start, end = spans[index % len(spans)]
    return text[:start] + value + text[end:]


def nest_json(text: str, depth: int) -> str:
    """A JSON document with `depth` nested lists added as one more member."""
    body = text.rstrip()
    if not body.endswith("}"):
        return "[" * depth + "]" * depth
    return body[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}"


# ---------------------------------------------------------------- darshan-parser dumps

def dump_header_edit(text: str, key: str, value: str) -> str:
    """A dump with its '# key: ...' header line set to `value` (added when missing)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(f"# {key}:"):
            lines[i] = f"# {key}: {value}\n"
            return "".join(lines)
    return f"# {key}: {value}\n" + text


def dump_counter_edit(text: str, index: int, column: int, value: str) -> str:
    """A dump with one column (0 module, 1 rank, 2 record id, 3 counter, 4 value, 5 name) of its
    `index`-th counter line (modulo their count) set to `value`."""
    lines = text.splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if not line.startswith("#") and line.count("\t") >= 4]
    if not rows:
        return text
    i = rows[index % len(rows)]
    cells = lines[i].rstrip("\n").split("\t")
    cells[column % len(cells)] = value
    lines[i] = "\t".join(cells) + "\n"
    return "".join(lines)


def gzip_bomb_dump(text: str, unpacked: int) -> bytes:
    """A gzipped dump whose text is the header of `text` then its counter lines over and over,
    `unpacked` bytes in all (its gzip trailer says so), about 130 times smaller than that.

    One chunk of records is deflated once and its bytes repeated (a full flush makes them
    independent of what precedes), so gigabytes cost milliseconds to make; the trailer's CRC
    is left 0, since no reader gets that far."""
    lines = text.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if not line.startswith("#") and line.count("\t") >= 4)
    head = "".join(lines[:first]).encode()
    # one record's lines: a repeat must fall within deflate's 32 KiB window to compress
    counters = [line for line in lines[first:] if line.split("\t")[:3] == lines[first].split("\t")[:3]]
    records, size, serial = [], 0, 0
    while size < 1 << 20:  # 1 MiB of records: the first 16 KiB with ids of their own, the rest one id
        serial += size < 1 << 14
        record_id = str(serial * 2654435761 % (1 << 63))
        for line in counters:
            cells = line.split("\t")
            cells[2] = record_id
            records.append("\t".join(cells))
            size += len(records[-1])
    chunk = "".join(records).encode()
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    body = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    repeats = max(1, (unpacked - len(head)) // len(chunk))
    trailer = struct.pack("<II", 0, (len(head) + repeats * len(chunk)) & 0xFFFFFFFF)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + start + body * repeats + deflate.flush()
            + trailer)


# ---------------------------------------------------------------- binary Darshan logs

@dataclass
class DarshanLayout:
    header_size: int      # where the compressed job region starts
    map_at: int           # offset of the name map's (offset, length) pair
    modules: int          # module map entries after it
    job_end: int          # where the job region ends (the name map's offset)


def darshan_layout(data: bytes) -> DarshanLayout | None:
    """The header layout of a little-endian, zlib-compressed 3.x log; None for anything else."""
    if len(data) < 64 or struct.unpack_from("<q", data, 8)[0] != DARSHAN_MAGIC or data[16] != 0:
        return None
    for map_at, header_size in ((24, 360), (32, 1328)):
        off, length = struct.unpack_from("<QQ", data, map_at)
        if header_size < off <= len(data) and length > 0 and len(data) > header_size:
            return DarshanLayout(header_size, map_at, (header_size - map_at - 16) // 20, off)
    return None


def darshan_header_edit(data: bytes, field: str, value: int) -> bytes:
    """A log with one header field set (`value` truncated to the field's width)."""
    out = bytearray(data)
    layout = darshan_layout(data)
    if field == "version":
        out[0:8] = (f"{value % 1000 / 100:.2f}".encode() + b"\0" * 8)[:8]
    elif field == "magic":
        struct.pack_into("<Q", out, 8, value % 2 ** 64)
    elif field == "compression":
        out[16] = value % 256
    elif field == "partial_flag":
        struct.pack_into("<I", out, 20, value % 2 ** 32)
    elif layout is not None:
        where = layout.map_at + (0 if field.startswith("name_map") else 16) + (8 if field.endswith("len") else 0)
        struct.pack_into("<Q", out, where, value % 2 ** 64)
    return bytes(out)


def darshan_job_edit(data: bytes, field: str, value: int) -> bytes:
    """A log with one job-record field set, recompressed, and every region after it moved.

    The job record is (uid, start, end, nprocs, jobid) as int64 before 3.41, and (uid,
    start sec, start nsec, end sec, end nsec, nprocs, jobid) from 3.41 on."""
    layout = darshan_layout(data)
    if layout is None:
        return data
    try:
        job = bytearray(zlib.decompress(data[layout.header_size:layout.job_end]))
    except zlib.error:
        return data
    new_times = data[:4] >= b"3.41"
    offsets = dict(zip(DARSHAN_JOB_FIELDS, (0, 8, 24, 40, 48) if new_times else (0, 8, 16, 24, 32)))
    if len(job) < offsets["jobid"] + 8:
        return data
    struct.pack_into("<q", job, offsets[field], (value + 2 ** 63) % 2 ** 64 - 2 ** 63)
    packed = zlib.compress(bytes(job))
    shift = len(packed) - (layout.job_end - layout.header_size)
    out = bytearray(data[:layout.header_size] + packed + data[layout.job_end:])
    for entry in range(1 + layout.modules):  # every region offset after the job region moves
        at = layout.map_at + 16 * entry
        off, length = struct.unpack_from("<QQ", out, at)
        if length and off >= layout.job_end:
            struct.pack_into("<Q", out, at, off + shift)
    return bytes(out)


# ---------------------------------------------------------------- special files and names

def special_file(kind: str, path: Path) -> Path:
    """A FIFO, directory, socket, symlink loop, symlink to /dev/urandom, or sparse 1 GiB file."""
    import socket

    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    elif kind == "symlink-loop":
        os.symlink(path.name, path)
    elif kind == "urandom":
        os.symlink("/dev/urandom", path)
    elif kind == "sparse":
        with open(path, "wb") as fh:
            fh.truncate(1 << 30)
    else:
        raise ValueError(kind)
    return path


SPECIAL_KINDS = ("fifo", "directory", "socket", "symlink-loop", "urandom", "sparse")


# ---------------------------------------------------------------- running a tool on an input

@dataclass
class Outcome:
    status: int | None    # exit status; None when killed by a signal or at the timeout
    signal: int | None
    hung: bool
    peak_rss: int         # bytes: the largest process of the run's tree at any poll or exit
    stdout: str
    stderr: str

    capped: bool = False  # killed for passing the memory cap

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr + self.stdout

    def kind(self, internal_status: int | None = 3) -> str:
        """What the run came to, the first that applies: hang, signal, memory (killed at the
        cap), internal error (a bug of the tool: the exit status it reserves for one, or, for a
        tool with none, an exit on an uncaught exception), success (exit 0), clean error."""
        if self.hung:
            return "hang"
        if self.signal is not None:
            return "signal"
        if self.capped:
            return "memory"
        bug = self.status == internal_status if internal_status is not None else self.traceback
        if bug and self.status != 0:
            return "internal error"
        return "success" if self.status == 0 else "clean error"


def run(cmd: list[str], timeout: float, *, rss_cap: int = 4 << 30, cwd: str | None = None,
        env: dict[str, str] | None = None) -> Outcome:
    """Run `cmd` in its own session; kill the whole session at `timeout` or when one of its
    processes passes `rss_cap` (other people's memory), and say what happened."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                start_new_session=True, env={**os.environ, **(env or {})})
        watch = _Watch(proc.pid, rss_cap)
        watch.start()
        deadline = time.monotonic() + timeout
        status = usage = None
        while status is None:
            pid, status_raw, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status = status_raw
                break
            if time.monotonic() > deadline:
                watch.hung = True
                _kill_session(proc.pid)
            time.sleep(0.02)
        watch.stop()
        _kill_session(proc.pid)  # what the tool left behind (its children in our session)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait
        out.seek(0)
        err.seek(0)
        killed = os.WIFSIGNALED(status)
        return Outcome(None if killed else os.WEXITSTATUS(status),
                       os.WTERMSIG(status) if killed and not watch.hung and not watch.capped else None,
                       watch.hung, max(watch.peak, usage.ru_maxrss * 1024),
                       out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), watch.capped)


def _kill_session(sid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, signal.SIGKILL)


class _Watch(threading.Thread):
    """Polls the resident memory of every process in the run's session."""

    def __init__(self, sid: int, cap: int):
        super().__init__(daemon=True)
        self.sid, self.cap = sid, cap
        self.peak, self.hung, self.capped = 0, False, False
        self._done = threading.Event()

    def run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not self._done.wait(0.1):
            for rss in _session_rss(self.sid, page):
                self.peak = max(self.peak, rss)
                if rss > self.cap:
                    self.capped = True
                    _kill_session(self.sid)

    def stop(self) -> None:
        self._done.set()
        self.join()


def _session_rss(sid: int, page: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) == sid:  # field 6 of stat: the session id
                found.append(int(fields[21]) * page)  # field 24: resident pages
        except (OSError, IndexError, ValueError):
            continue
    return found
