"""pydarshan's cffi declarations of libdarshan-util, compiled once per user.

Parsing the declarations (cffi's `cdef`: pycparser and its regular expressions) costs about
0.06 s of CPU in every parsing child, more than reading a typical log. cffi's out-of-line
ABI mode writes the parsed declarations as a small Python module that needs no parser
(`cffi.recompiler.make_py_source`); it is kept in the per-user cache (:mod:`advisor.usercache`)
under a key of the declaration text, cffi's and Python's versions. Anything wrong with the
cache (none, unwritable, foreign, damaged) means parsing the declarations in-line, as before.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from advisor.usercache import digest, private, private_dir

MODULE = "_ioadvisor_darshan_cffi"


def declared(header: str):
    """A cffi FFI with `header` declared: the cached compiled module's, else parsed in-line."""
    try:
        ffi = _cached(header)
    except Exception:  # a cache is never worth an error
        ffi = None
    if ffi is not None:
        return ffi
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(header)
    return ffi


def _cached(header: str):
    import _cffi_backend

    folder = private_dir("cffi", digest(header, _cffi_backend.__version__))
    if folder is None:
        return None
    path = folder / f"{MODULE}.py"
    ffi = _loaded(path)
    if ffi is None:  # not there yet, damaged, or not ours alone: (re)built once
        _write(header, path)
        ffi = _loaded(path)
    return ffi


def _loaded(path: Path):
    """The FFI of the cached module at `path`, or None."""
    source = _read(path)
    if source is None:
        return None
    namespace: dict = {"__name__": MODULE}
    try:
        exec(compile(source, str(path), "exec"), namespace)
        return namespace["ffi"]
    except Exception:  # damaged
        return None


def _read(path: Path) -> bytes | None:
    """The module's text if it is a regular file of ours that no one else can write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read() if private(os.fstat(fd)) else None


def _write(header: str, path: Path) -> None:
    """Compile the declarations into `path` (atomically: readers see all of it or nothing)."""
    import cffi
    from cffi.recompiler import make_py_source

    builder = cffi.FFI()
    builder.cdef(header)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{MODULE}-", suffix=".tmp")
    except OSError:
        return
    os.close(fd)
    try:
        make_py_source(builder, MODULE, tmp)  # quiet, unlike FFI.emit_python_code
        os.replace(tmp, path)
    except Exception:  # full disk and the like: no cache this time
        with contextlib.suppress(OSError):
            os.unlink(tmp)
