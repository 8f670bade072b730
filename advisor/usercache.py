"""Where ioadvisor keeps per-user caches: ``$XDG_CACHE_HOME/ioadvisor`` (default ``~/.cache/ioadvisor``).

Each cache (the checked rule catalogue, compiled templates, libdarshan-util's compiled cffi
declarations) lives in a private folder named by a key hashed from what its content depends
on. A cache is never worth an error: with no usable place, callers do the work instead.
``IOADVISOR_RULE_CACHE=0`` turns every one of them off. Kept free of heavy imports: a parsing
child uses it before anything else is loaded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
from pathlib import Path

import advisor


def cache_dir() -> Path | None:
    """Where cache files go, or None when caching is off or there is no home to put it in."""
    if os.environ.get("IOADVISOR_RULE_CACHE", "1") == "0":
        return None
    xdg, home = os.environ.get("XDG_CACHE_HOME", ""), os.environ.get("HOME", "")
    if os.path.isabs(xdg):  # a relative one is to be ignored (XDG base directory spec)
        return Path(xdg) / "ioadvisor"
    return Path(home) / ".cache" / "ioadvisor" if os.path.isabs(home) else None


def digest(*parts: bytes | str) -> str:
    """A short hash of `parts`, of ioadvisor's version and of the Python running."""
    hasher = hashlib.sha256(f"{advisor.__version__} {sys.version}".encode())
    for part in parts:
        hasher.update(b"\0" + (part.encode() if isinstance(part, str) else part))
    return hasher.hexdigest()[:32]


def private_dir(prefix: str, key: str) -> Path | None:
    """The directory `prefix-key` of the cache, made if need be, or None unless it is ours alone.

    Making it removes the `prefix-*` directories of other keys: nothing reads them again.
    """
    root = cache_dir()
    if root is None:
        return None
    folder = root / f"{prefix}-{key}"
    try:
        if not folder.is_dir():
            root.mkdir(parents=True, exist_ok=True)
            for old in root.glob(f"{prefix}-*"):
                if old != folder:  # another process may be making this one right now
                    shutil.rmtree(old, ignore_errors=True)
            folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    return folder if stat.S_ISDIR(info.st_mode) and private(info) else None


def private(info: os.stat_result) -> bool:
    """Owned by this user and writable by no one else: safe to load code or pickles from."""
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
