"""The site log: one JSON line per job, appended atomically by every node's hook.

Each line is written with a single ``write(2)`` on an ``O_APPEND`` descriptor, so
lines from concurrent hooks never interleave; a line is bounded in size (long
fields are shortened, never cut mid-JSON).
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

MAX_LINE_BYTES = 4096
_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
# Shortened in this order when a line is too long (the rest must always fit).
_SHRINKABLE = ("logs", "reports", "note", "error", "categories", "exe")


def encode_line(record: dict[str, Any], max_bytes: int = MAX_LINE_BYTES) -> bytes:
    """`record` as one JSON line of at most `max_bytes` bytes (shortening long fields)."""
    record = dict(record)
    line = _dump(record)
    for key in _SHRINKABLE:
        if len(line) <= max_bytes:
            break
        if key in record:
            record[key] = _shorten(record[key], len(line) - max_bytes)
            record["truncated"] = True
            line = _dump(record)
    if len(line) > max_bytes:  # only fixed-size fields left: keep what identifies the job
        line = _dump({k: record.get(k) for k in ("time", "jobid", "user", "status")} | {"truncated": True})
    return line


def _dump(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=True, default=str) + "\n").encode()


def _shorten(value: Any, excess: int) -> Any:
    if isinstance(value, str):
        keep = max(0, len(value) - excess - 16)
        return value[:keep] + "..." if keep else ""
    if isinstance(value, list):
        target = len(_dump({"v": value})) - excess
        while value and len(_dump({"v": value})) > target:
            value = value[:-1]
        return value
    return None


def append_line(path: str, record: dict[str, Any], max_bytes: int = MAX_LINE_BYTES) -> None:
    """Append `record` to the site log at `path` in one write (never through a symlink)."""
    data = encode_line(record, max_bytes)
    fd = os.open(path, _FLAGS, 0o640)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: site log is not a regular file")
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(f"{path}: short write ({written} of {len(data)} bytes)")
    finally:
        os.close(fd)
