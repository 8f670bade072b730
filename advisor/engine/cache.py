"""A per-user cache of the checked rule catalogue (the cache folder itself: :mod:`advisor.usercache`).

Reading the installed rule files (YAML, every expression parsed, every Jinja2 template
checked against the rule's names) costs more CPU than diagnosing a typical log, and its
result changes only when the rule files or the code that reads and checks them change.
So the checked :class:`~advisor.engine.rules.Catalogue` is pickled under a key hashed
from exactly those files, in ``$XDG_CACHE_HOME/ioadvisor`` (default ``~/.cache/ioadvisor``).

A cache is never worth an error: a directory that cannot be created or written (a
read-only home, an epilog without HOME), a damaged or foreign file, all fall back
silently to doing the work. Only files owned by this user and writable by no one else
are loaded (pickle and compiled code run code). ``IOADVISOR_RULE_CACHE=0`` turns it off.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import advisor
from advisor.usercache import cache_dir, digest, private, private_dir  # noqa: F401  (render.py, tests)

T = TypeVar("T")

# The code whose behaviour a checked catalogue depends on: how rules are read and checked
# (engine), which facts and parameters exist (facts), the allowed categories (findings), the
# expression nodes' record base (records).
_CODE = ("engine", "facts", "findings.py", "records.py")


def key(files: list[Path]) -> str:
    """A hash of the rule files (names and bytes), the code that checks them and the Python."""
    root = Path(advisor.__file__).parent
    code = sorted(p for part in _CODE for p in ((root / part).glob("*.py") if (root / part).is_dir()
                                                 else [root / part]))
    return digest(*(str(path).encode() + b"\0" + path.read_bytes() for path in [*files, *code]))


def cached(files: list[Path], build: Callable[[], T]) -> T:
    """`build()`'s result for these rule files, from the cache when it is there and ours."""
    folder = cache_dir()
    if folder is None:
        return build()
    target = folder / f"catalogue-{key(files)}.pickle"
    value = _read(target)
    if value is None:
        value = build()
        _write(folder, target, value)
    return value


def _read(target: Path):
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not private(info):
            return None
        try:
            return pickle.load(fh)
        except Exception:  # damaged, or written by code since changed: rebuild
            return None


def _write(folder: Path, target: Path, value) -> None:
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".catalogue-", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, target)  # readers see the whole file or none
    except Exception:  # full disk, a value that cannot be pickled: no cache this time
        Path(tmp).unlink(missing_ok=True)
        return
    for old in folder.glob("catalogue-*.pickle"):  # earlier rules or code: never read again
        if old != target:
            old.unlink(missing_ok=True)
