"""Writing output files whole or not at all, the one way every command does it."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path

from advisor.errors import InputError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file renamed over it; '-' is stdout.

    A reader never sees half a file. A target that exists and is not a regular file
    (``/dev/null``, a FIFO, a terminal) is written in place: renaming over it would
    replace a device with a file, which as root breaks the whole machine.
    InputError names the path and the reason when it cannot be written.
    """
    if str(path) == "-":
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        sys.stdout.flush()
        return
    path = Path(path)
    mode = "wb" if isinstance(data, bytes) else "w"
    encoding = None if isinstance(data, bytes) else "utf-8"
    try:
        if path.exists() and not stat.S_ISREG(path.stat().st_mode):
            with open(path, mode, encoding=encoding) as fh:
                fh.write(data)
            return
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                   dir=path.parent if str(path.parent) else ".")
    except OSError as exc:
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(doc: dict, target: str | Path) -> None:
    """Write `doc` as indented JSON with :func:`write_atomic` ('-' is stdout), every non-ASCII
    character as a \\u escape, as `diagnose --json` writes it: a file name that is not UTF-8
    holds lone surrogates (its bytes, escaped by Python), which no UTF-8 text can hold."""
    write_atomic(target, json.dumps(doc, indent=2) + "\n")
