"""Progress of long work (replay rounds) on stderr: a rich status line where a terminal is
attached, one plain line per step otherwise (a log, `make demo` piped to a file), nothing when
quiet (``--json -``: stdout is the document, and scripts read stderr for errors)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from advisor.formatting import printable


@contextmanager
def steps(title: str, quiet: bool = False) -> Iterator[Callable[[str], None] | None]:
    """A callback taking one step's line ('round 3 of at most 40, 12 s'), shown under `title`;
    None when quiet."""
    if quiet:
        yield None
        return
    if not sys.stderr.isatty():
        print(printable(f"{title} ..."), file=sys.stderr, flush=True)
        yield lambda line: print(printable(f"{title}: {line}"), file=sys.stderr, flush=True)
        return
    from rich.console import Console

    with Console(stderr=True).status(printable(title)) as status:
        yield lambda line: status.update(printable(f"{title}: {line}"))
