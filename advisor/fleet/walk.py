"""Find the logs of an archive, one at a time.

Inputs are directories (Darshan's ``<year>/<month>/<day>`` log tree or any tree; a
Recorder trace folder in it is one log), single files, and list files (``@FILE``: one path per line). Everything is a
generator: an archive of millions of logs is never held as a list.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from advisor.errors import InputError
from advisor.ingest.recorder_folder import is_trace

DEFAULT_PATTERNS = (
    "*.darshan",  # Darshan 3.x logs
    "*.darshan.*",  # Darshan 2.x (.darshan.gz, .darshan.bz2) and placeholders of big logs
    "*parser*.txt",  # darshan-parser / darshan-dxt-parser dumps
    "*parser*.txt.gz",
)
"""File names treated as logs when walking a tree (files named explicitly are always taken)."""

HASH_CHUNK = 1 << 20
_DAY_PART = re.compile(r"^\d{1,4}$")


@dataclass(frozen=True)
class LogFile:
    """One candidate log: its path as the user will see it, its size and modification time."""

    path: str
    size: int
    mtime_ns: int


def content_hash(path: str | os.PathLike) -> str:
    """BLAKE2b-128 of the file content (hex); identifies a log independently of its path.
    A Recorder trace folder: of its files' names and contents, in name order."""
    digest = hashlib.blake2b(digest_size=16)
    files = sorted(Path(path).iterdir()) if os.path.isdir(path) else [Path(path)]
    for file in files:
        if len(files) > 1:
            digest.update(file.name.encode() + b"\0")
        with open(file, "rb") as fh:
            while chunk := fh.read(HASH_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def iter_logs(inputs: Iterable[str], patterns: tuple[str, ...] = DEFAULT_PATTERNS,
              since: date | None = None, until: date | None = None) -> Iterator[LogFile]:
    """Every log under `inputs`, in a stable order, without building a list.

    A directory is walked (symlinked files are followed, symlinked directories are
    not, so a link loop cannot trap the walk); ``@FILE`` reads a list file; a file
    named directly is taken whatever its name. `since`/`until` prune a Darshan
    ``<Y>/<M>/<D>`` tree by date without descending into the other days.
    """
    for item in inputs:
        if item.startswith("@"):
            yield from _from_list(Path(item[1:]), patterns, since, until)
        elif is_trace(Path(item)):
            yield _trace_entry(item)
        elif os.path.isdir(item):
            yield from _walk(item, patterns, _DateWindow(since, until), ())
        else:
            yield _entry(item)


def _from_list(list_file: Path, patterns, since, until) -> Iterator[LogFile]:
    """Paths of a list file; relative ones are relative to the list file's folder."""
    try:
        # SIM115: opened apart from the `with` below so that only the open's OSError is a list-file error
        fh = open(list_file, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
    except OSError as exc:
        raise InputError(str(list_file), f"cannot read list file: {exc.strerror or exc}") from None
    base = list_file.parent
    with fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            path = line if os.path.isabs(line) else str(base / line)
            if is_trace(Path(path)):
                yield _trace_entry(path)
            elif os.path.isdir(path):
                yield from _walk(path, patterns, _DateWindow(since, until), ())
            else:
                yield _entry(path)


def _trace_entry(path: str) -> LogFile:
    """A Recorder trace folder: one log, as large as its files, as new as its newest."""
    try:
        stats = [entry.stat() for entry in os.scandir(path) if entry.is_file()]
        return LogFile(path, sum(st.st_size for st in stats), max(st.st_mtime_ns for st in stats))
    except (OSError, ValueError):
        return LogFile(path, -1, 0)


def _entry(path: str) -> LogFile:
    """A file named explicitly; a missing one still becomes a row (with an error) later."""
    try:
        st = os.stat(path)
        return LogFile(path, st.st_size, st.st_mtime_ns)
    except OSError:
        return LogFile(path, -1, 0)


@dataclass(frozen=True)
class _DateWindow:
    since: date | None
    until: date | None

    def excludes(self, parts: tuple[int, ...]) -> bool:
        """Whether a ``Y[/M[/D]]`` prefix lies wholly outside the window."""
        if not (self.since or self.until) or not parts or not 1900 <= parts[0] <= 9999:
            return False
        lo, hi = _first_day(parts), _last_day(parts)
        if lo is None or hi is None:
            return False
        return bool((self.since and hi < self.since) or (self.until and lo > self.until))


def _first_day(parts: tuple[int, ...]) -> date | None:
    try:
        return date(*(parts + (1, 1))[:3])
    except ValueError:
        return None


def _last_day(parts: tuple[int, ...]) -> date | None:
    try:
        if len(parts) == 1:
            return date(parts[0], 12, 31)
        if len(parts) == 2:
            nxt = date(parts[0] + parts[1] // 12, parts[1] % 12 + 1, 1)
            return date.fromordinal(nxt.toordinal() - 1)
        return date(*parts[:3])
    except ValueError:
        return None


def _walk(root: str, patterns, window: _DateWindow, parts: tuple[int, ...]) -> Iterator[LogFile]:
    """Depth-first, sorted per directory, so two walks of one tree list the same order."""
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return  # an unreadable directory is skipped, like find(1) does after its warning
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False) and is_trace(Path(entry.path)):
                yield _trace_entry(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                sub = _date_parts(parts, entry.name)
                if sub is not None and window.excludes(sub):
                    continue
                yield from _walk(entry.path, patterns, window, sub or ())
            elif _matches(entry.name, patterns):
                yield _stat(entry)
        except OSError:
            continue


def _date_parts(parts: tuple[int, ...], name: str) -> tuple[int, ...] | None:
    """The date prefix after descending into `name`, when the tree looks like ``Y/M/D``."""
    if len(parts) >= 3 or not _DAY_PART.match(name):
        return None
    if not parts and len(name) != 4:
        return None
    return parts + (int(name),)


def _matches(name: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _stat(entry: os.DirEntry) -> LogFile:
    try:
        st = entry.stat(follow_symlinks=True)
        return LogFile(entry.path, st.st_size, st.st_mtime_ns)
    except OSError:  # a dangling symlink: reported as an unreadable log
        return LogFile(entry.path, -1, 0)
