"""Ingest: turn an input file into a :class:`advisor.profile.JobProfile`.

Each input format is one module that registers a :class:`InputFormat` in
:data:`FORMATS` (a sniffer and a loader). Adding a format touches nothing else:
the rules only ever see the job profile.
"""

from __future__ import annotations

import functools
import importlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from advisor.errors import InputError
from advisor.profile import JobProfile
from advisor.records import Frozen

SNIFF_BYTES = 4096


class InputFormat(Frozen):
    """One input format: `sniff(path, head)` says whether it is ours; `load(path)` reads it.

    Every `load` runs in a parsing child with a time and memory limit (:mod:`advisor.ingest.isolate`):
    native readers may crash, and a text reader given a decompression bomb may run for minutes
    or take gigabytes."""

    name: str
    sniff: Callable[[Path, bytes], bool]
    load: Callable[[Path], JobProfile]
    # a format whose input is a folder of files (a Recorder trace) says which folders (or which of
    # their files) are one input
    folder: Callable[[Path], bool] | None = None
    # a file a run writes beside its output that is no input of its own (IOR's per-rank CSV): skipped
    # where a directory is walked, refused with its reason where it is named
    companion: Callable[[Path, bytes], bool] | None = None


FORMATS: list[InputFormat] = []
_FORMAT_MODULES = ("darshan_log", "parser_dump", "ior", "iozone", "fio", "mdtest", "snapshot", "recorder")


def register(fmt: InputFormat) -> InputFormat:
    FORMATS.append(fmt)
    return fmt


def _formats_in_order() -> Iterator[InputFormat]:
    """The registered formats in sniff order (_FORMAT_MODULES order: the most specific formats
    first, whatever module a caller happened to import before), each module imported only when
    the formats before it did not match: a Darshan log never imports the text readers."""
    for rank, module in enumerate(_FORMAT_MODULES):
        try:
            importlib.import_module(f"advisor.ingest.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"advisor.ingest.{module}":
                raise
        yield from [fmt for fmt in FORMATS if _sniff_rank(fmt) == rank]  # a module's own order
    yield from [fmt for fmt in FORMATS if _sniff_rank(fmt) == len(_FORMAT_MODULES)]


def _sniff_rank(fmt: InputFormat) -> int:
    module = fmt.load.__module__
    for rank, name in enumerate(_FORMAT_MODULES):
        if module == f"advisor.ingest.{name}" or module.startswith(f"advisor.ingest.{name}."):
            return rank
    return len(_FORMAT_MODULES)


def detect(path: str | Path) -> InputFormat:
    """The format of `path`, or InputError naming the path and why it is not an input."""
    path = Path(path)
    if _may_be_folder_input(path):
        for fmt in _formats_in_order():
            if fmt.folder is not None and fmt.folder(path):
                return fmt
    head = read_head(path)
    if not head:
        raise InputError(str(path), "empty file")
    for fmt in _formats_in_order():
        if fmt.sniff(path, head):
            return fmt
    raise InputError(str(path),
                     "not a recognised input (Darshan log, darshan-parser dump, IOR, IOzone, fio JSON or mdtest "
                     "output, Recorder trace folder or ioadvisor snapshot)")


def expand_inputs(paths: Iterable[str]) -> list[str | InputError]:
    """Directories stand for the inputs in them (one level, recognised formats only; READMEs,
    scripts and a run's companion files are skipped); a directory that holds none, or cannot be
    listed, is an unusable input of its own. A folder input (a Recorder trace) is one input."""
    out: list[str | InputError] = []
    for path in paths:
        if not os.path.isdir(path) or _folder_input(Path(path)):
            out.append(path)
            continue
        try:
            entries = sorted(Path(path).iterdir())
        except OSError as exc:
            out.append(InputError(path, f"cannot list the directory: {exc.strerror or exc}"))
            continue
        found = [str(entry) for entry in entries if _an_input(entry)]
        out += found or [InputError(path, "no Darshan log, darshan-parser dump, benchmark output, "
                                          "Recorder trace or snapshot in this directory")]
    return out


def _folder_input(path: Path) -> bool:
    from advisor.ingest.recorder_folder import is_trace

    return is_trace(path)


def _an_input(entry: Path) -> bool:
    try:
        if not (entry.is_file() or _folder_input(entry)):
            return False
        fmt = detect(entry)
        return not (fmt.companion and entry.is_file() and fmt.companion(entry, read_head(entry)))
    except (InputError, OSError):
        return False  # READMEs, scripts, configs next to the logs


def _may_be_folder_input(path: Path) -> bool:
    """Whether a folder format (a Recorder trace) may claim `path`: a directory, or a trace's
    own file. Told without importing the readers; only then are they asked."""
    from advisor.ingest.recorder_folder import is_trace

    return os.path.isdir(path) or is_trace(path)


def read_bounded(path: Path, max_bytes: int, what: str) -> bytes:
    """The whole of a text input that must not exceed `max_bytes`; InputError (one line) when it
    does or cannot be read. `what` names the input kind in the message ("an IOR output file")."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(str(path), f"{size} bytes is too large for {what}")
        return path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None


def read_head(path: Path) -> bytes:
    """The first bytes of a regular file; InputError for anything else.

    A FIFO, device or socket is refused by its type before it is opened (opening a FIFO blocks
    until a writer comes); the type is checked again on the open descriptor, which is opened
    non-blocking, so a file swapped for a FIFO in between cannot block either."""
    try:
        kind = _kind(os.stat(path).st_mode)
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None
    if kind != "file":
        raise InputError(str(path), f"is a {kind}, not a log file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        kind = _kind(os.fstat(fd).st_mode)
        if kind != "file":
            raise InputError(str(path), f"is a {kind}, not a log file")
        try:
            return fh.read(SNIFF_BYTES)
        except OSError as exc:
            raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"),
             (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))
    return next((name for test, name in kinds if test(mode)), "special file")


def load_profile(path: str | Path, *, timeout_s: float = 120.0) -> JobProfile:
    """Read one input into a job profile; InputError for anything unusable."""
    return start_profile(path, timeout_s=timeout_s)()


def start_profile(path: str | Path, *, timeout_s: float = 120.0,
                  isolate: bool = True) -> Callable[[], JobProfile]:
    """Start reading one input; calling the result gives its profile (or raises InputError).

    The parse runs on in its child until then, so the caller can work meanwhile.
    `isolate=False` parses in this process: for a caller that already is such a child
    (the Slurm hook's worker has its own limits).
    """
    fmt = detect(path)
    load = functools.partial(checked_load, fmt.load)
    if isolate:
        from advisor.ingest.isolate import Isolated
        from advisor.ingest.kept import kept

        if (child := kept()) is not None:  # a process that parses input after input (a fleet worker)
            return functools.partial(child.parse, load, Path(path), timeout_s)

        return Isolated(load, Path(path), timeout_s=timeout_s).result
    return lambda: load(Path(path))


def checked_load(load: Callable[[Path], JobProfile], path: Path) -> JobProfile:
    """`load(path)`, refused when a value is beyond what any real job can have (one line), its
    names cut to what a real job can have."""
    from advisor.ingest.bounded import cut_long_names
    from advisor.ingest.plausible import check

    return cut_long_names(check(load(path)))
