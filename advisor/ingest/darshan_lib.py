"""A thin, robust handle on libdarshan-util as pydarshan loads it (cffi).

pydarshan's own readers build one Python dict per record (and per DXT segment),
decode names strictly and cannot tell "end of module" from "module unreadable".
This module uses pydarshan's cffi declarations and library discovery
(libdarshan-util does all the decoding, decompression and version up-conversion;
nothing here parses Darshan's binary format) and adds what ingest needs:
error-aware record iteration, lenient text decoding, and capture of the messages
the C library prints on stderr so they can become the reason of an error.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import tempfile
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from advisor.errors import InputError


@functools.cache
def bindings() -> tuple[Any, Any]:
    """(ffi, lib): pydarshan's cffi declarations of libdarshan-util, and the library.

    Built from pydarshan's own header text (darshan/backend/api_def_c.py) and
    library discovery (darshan/discover_darshan.py), loaded as plain files: the
    `darshan` package itself imports pandas, which costs seconds per process and
    is not needed to read a log. The declarations come compiled from the per-user cache
    (:mod:`advisor.ingest.darshan_ffi`). Falls back to pydarshan's cffi_backend module.
    """
    try:
        base = Path(importlib.util.find_spec("darshan").origin).parent
        api = _load_file("api_def_c", base / "backend" / "api_def_c.py")
        discover = _load_file("discover_darshan", base / "discover_darshan.py")
        from advisor.ingest.darshan_ffi import declared

        ffi = declared(api.load_darshan_header(""))
        lib = discover.find_utils(ffi, None)
        if lib is None:
            raise ImportError("libdarshan-util not found")
        return ffi, lib
    except Exception:  # an unexpected pydarshan layout: take the slow, official way
        from darshan.backend import cffi_backend

        return cffi_backend.ffi, cffi_backend.libdutil


def _load_file(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"advisor._pydarshan_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def pydarshan_version() -> str:
    """pydarshan's installed version, read from its one dist-info beside the package when
    there is exactly one (importlib.metadata and the email parser it loads cost a parsing
    child 0.03 s, most of what reading a small log costs)."""
    base = Path(importlib.util.find_spec("darshan").origin).parents[1]
    found = list(base.glob("darshan-*.dist-info/METADATA"))
    if len(found) == 1:
        with open(found[0], encoding="utf-8", errors="replace") as meta:
            for line in meta:
                if line.startswith("Version:"):
                    return line.removeprefix("Version:").strip()
                if not line.strip():
                    break  # the headers end at the first blank line
    from importlib import metadata

    try:
        return metadata.version("darshan")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def counter_names(prefix: str, floats: bool) -> list[str]:
    """libdarshan-util's counter names for a module prefix (POSIX, MPIIO, BGQ ...)."""
    ffi, lib = bindings()
    table = getattr(lib, f"{prefix.lower()}_{'f_' if floats else ''}counter_names", None)
    if table is None:
        return []
    end = f"{prefix.upper()}_{'F_' if floats else ''}NUM_INDICES"
    names = []
    for i in range(4096):  # the list ends with its NUM_INDICES entry
        name = text(ffi, table[i])
        if name == end or not name:
            break
        names.append(name)
    return names


def text(ffi, cdata) -> str:
    """A C string as text ('' for NULL); bytes that are not UTF-8 are kept visible as \\xNN."""
    if cdata == ffi.NULL:
        return ""
    return ffi.string(cdata).decode("utf-8", "backslashreplace")


class CStderr:
    """Collects what native code writes to file descriptor 2 while active."""

    def __init__(self) -> None:
        self._file = None
        self._saved = -1
        self._pos = 0

    def __enter__(self) -> CStderr:
        self._file = tempfile.TemporaryFile(mode="w+b")
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc) -> None:
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._saved = -1

    def new_lines(self) -> list[str]:
        """Lines written since the previous call (stripped, non-empty)."""
        if self._file is None:
            return []
        self._file.seek(self._pos)
        data = self._file.read()
        self._pos += len(data)
        lines = (ln.strip() for ln in data.decode("utf-8", "replace").splitlines())
        # Python's own -X importtime report shares fd 2 with the library: not the library's word
        return [ln for ln in lines if ln and not ln.startswith("import time:")]

    def reason(self, default: str) -> str:
        """The library's own message (last new line), or `default`."""
        lines = self.new_lines()
        return lines[-1].removeprefix("Error: ").strip() if lines else default


class ModuleUnreadable(Exception):
    """libdarshan-util refused a module's records (version, corruption, truncation)."""


class DarshanLog:
    """An open Darshan 3.x log (libdarshan-util handle) with robust accessors."""

    def __init__(self, path: str, stderr: CStderr, name: str | None = None):
        self.ffi, self.lib = bindings()
        self.stderr, self.path = stderr, name or path  # errors name `name`: the log the user gave
        self.handle = self.lib.darshan_log_open(os.fsencode(path))
        if not self.handle:
            reason = stderr.reason("libdarshan-util could not open it").rstrip(".")
            reason = reason.removesuffix(": Success")  # errno was 0: a short read
            raise InputError(self.path, f"cannot be opened as a Darshan 3.x log ({reason}); "
                             "the file is truncated, corrupt or not a Darshan log")

    def close(self) -> None:
        if self.handle:
            self.lib.darshan_log_close(self.handle)
            self.handle = None

    @property
    def format_version(self) -> str:
        # libdarshan-util keeps the version string at the start of its handle
        # (pydarshan reads it the same way).
        return text(self.ffi, self.ffi.cast("char *", self.handle))

    def job(self):
        """(struct darshan_job, runtime seconds); InputError when unreadable."""
        job = self.ffi.new("struct darshan_job *")
        if self.lib.darshan_log_get_job(self.handle, job) < 0:
            raise InputError(self.path, "job header unreadable (truncated or corrupt log): "
                             + self.stderr.reason("no detail from libdarshan-util"))
        runtime = self.ffi.new("double *")
        self.lib.darshan_log_get_job_runtime(self.handle, job[0], runtime)
        return job, float(runtime[0])

    def exe(self) -> str:
        buf = self.ffi.new("char[]", 4096)
        if self.lib.darshan_log_get_exe(self.handle, buf) < 0:
            return ""
        return text(self.ffi, buf)

    def mounts(self) -> list[tuple[str, str]]:
        mnts = self.ffi.new("struct darshan_mnt_info **")
        cnt = self.ffi.new("int *")
        if self.lib.darshan_log_get_mounts(self.handle, mnts, cnt) < 0:
            return []
        try:
            return [(text(self.ffi, mnts[0][i].mnt_path), text(self.ffi, mnts[0][i].mnt_type))
                    for i in range(cnt[0])]
        finally:
            if cnt[0] > 0:
                self.lib.darshan_free(mnts[0])

    def modules(self) -> dict[str, dict]:
        """Module name -> {len, ver, idx, partial} as recorded in the log's header."""
        mods = self.ffi.new("struct darshan_mod_info **")
        cnt = self.ffi.new("int *")
        self.lib.darshan_log_get_modules(self.handle, mods, cnt)
        out = {}
        for i in range(cnt[0]):
            m = mods[0][i]
            # A corrupt header can name a module id libdarshan-util does not know.
            name = text(self.ffi, m.name) or f"unknown module #{m.idx}"
            out[name] = {"len": int(m.len), "ver": int(m.ver), "idx": int(m.idx),
                         "partial": bool(m.partial_flag)}
        if cnt[0] > 0:
            self.lib.darshan_free(mods[0])
        return out

    def names(self) -> dict[int, str]:
        """Record id -> name (file path, dataset, heatmap:MODULE ...)."""
        nrecs = self.ffi.new("struct darshan_name_record **")
        cnt = self.ffi.new("int *")
        self.lib.darshan_log_get_name_records(self.handle, nrecs, cnt)
        out = {}
        for i in range(cnt[0]):
            rec = nrecs[0][i]
            out[int(rec.id)] = text(self.ffi, rec.name)
            self.lib.darshan_free(rec.name)
        if cnt[0] > 0:
            self.lib.darshan_free(nrecs[0])
        return out

    def records(self, idx: int) -> Iterator:
        """Each record buffer (void *) of module `idx`; valid until the next one.

        Raises ModuleUnreadable with libdarshan-util's message when it refuses.
        """
        buf = self.ffi.new("void **")
        while True:
            # The library writes into *buf when it is not NULL: always start fresh.
            buf[0] = self.ffi.NULL
            status = self.lib.darshan_log_get_record(self.handle, idx, buf)
            if status == 0:
                return
            if status < 0:
                raise ModuleUnreadable(self.stderr.reason("libdarshan-util could not read its records"))
            try:
                yield buf[0]
            finally:
                self.lib.darshan_free(buf[0])


@contextmanager
def open_log(path: str, name: str | None = None) -> Iterator[DarshanLog]:
    """Open `path` with libdarshan-util, its stderr chatter captured; errors name `name` (default `path`)."""
    with CStderr() as err:
        log = DarshanLog(path, err, name)
        try:
            yield log
        finally:
            log.close()
