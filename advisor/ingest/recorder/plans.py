"""What each distinct call signature means for I/O, worked out once per signature (not per call).

A :class:`PlanTable` holds one row per signature gid: which loop counts it (POSIX/STDIO, MPI-IO,
HDF5 or none), its module and kind, the file (or handle, HDF5 id, dataset name) it names, and the
size, offset and whence its arguments give. Strings are interned as integer ids, so that the calls
of a whole trace are resolved with array operations.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from advisor.ingest.recorder import calls as C
from advisor.ingest.recorder.format import SignatureTable

NONE, FILES, MPIIO, HDF5 = 0, 1, 2, 3  # groups: not counted, POSIX/STDIO, MPI-IO, HDF5
MODULES = ("POSIX", "STDIO", "MPI-IO", "H5F", "H5D")
KINDS = (C.OPEN, C.CLOSE, C.READ, C.WRITE, C.SEEK, C.STAT, C.SYNC, C.META, C.FLUSH, C.VIEW)
MODES = ("", "indep", "coll", "split", "nb", "shared")
K = {kind: i for i, kind in enumerate(KINDS)}
# the Darshan counters a call adds 1 to where its kind does not say (index 0: none)
COUNTERS = ("", *sorted({spec.counter for spec in C.CALLS.values()} - {""}))
M = {module: i for i, module in enumerate(MODULES)}
# Directory calls: their path is a directory, never a data file (docs/ingest.md).
DIRECTORY_CALLS = ("mkdir", "rmdir", "opendir")


class Plan(NamedTuple):
    """One signature's meaning: its group, its call and argument values."""

    group: int
    spec: C.Call
    target: str  # path, MPI file handle, HDF5 id or dataset name
    size: int = 0  # bytes (MPI-IO: -1 when the datatype is derived; view: etype size; open: 1 on COMM_SELF)
    offset: int = -1
    extra: Any = None  # lseek whence; MPI_File_open's handle
    other: str = ""  # a rename's or link's new name


def plan(name: str, args: tuple[str, ...]) -> Plan | None:
    """How one call signature counts, or None when it does not (not I/O, not a traced file)."""
    spec = C.CALLS.get(name)
    if spec is None:
        return None

    def arg(k: int) -> str:
        return args[k] if 0 <= k < len(args) else ""

    if spec.module in ("POSIX", "STDIO"):
        path = arg(spec.path)
        if not C.traced_path(path):
            return None
        size = C.integer(arg(spec.size)) * (C.integer(arg(spec.nmemb)) if spec.nmemb >= 0 else 1)
        size = max(size - spec.size_bias, 0)
        other = arg(spec.path2)
        return Plan(FILES, spec, path, size, C.integer(arg(spec.offset)) if spec.offset >= 0 else -1,
                    C.integer(arg(spec.whence)) if spec.whence >= 0 else None,
                    other if C.traced_path(other) else "")
    if spec.module == "MPI-IO":
        if spec.kind == C.OPEN:
            path = arg(1)
            return Plan(MPIIO, spec, path, int(arg(0) == "MPI_COMM_SELF"), extra=arg(4)) \
                if C.traced_path(path) else None
        if spec.kind in (C.READ, C.WRITE):
            tsize = C.MPI_TYPE_SIZES.get(arg(spec.size + 1))
            size = C.integer(arg(spec.size)) * tsize if tsize is not None else -1
            return Plan(MPIIO, spec, arg(0), size, C.integer(arg(spec.offset)) if spec.offset >= 0 else -1)
        if spec.kind == C.SEEK:
            return Plan(MPIIO, spec, arg(0), 0, C.integer(arg(1)), C.MPI_SEEK.get(arg(2), -1))
        if spec.kind == C.VIEW:
            # extra: the filetype is derived (not a predefined type: its layout is not traced)
            return Plan(MPIIO, spec, arg(0), C.MPI_TYPE_SIZES.get(arg(2), 1), C.integer(arg(1)),
                        arg(3) not in C.MPI_TYPE_SIZES)
        return Plan(MPIIO, spec, arg(0), C.integer(arg(spec.size)) if spec.size >= 0 else 0)
    if spec.module == "H5F" and spec.kind == C.OPEN:
        return Plan(HDF5, spec, arg(0) if C.traced_path(arg(0)) else "")
    if spec.module == "H5D" and spec.kind == C.OPEN:
        return Plan(HDF5, spec, arg(1) or "?")
    return Plan(HDF5, spec, arg(0))


class PlanTable:
    """Columns over signature gids, extended as ranks bring new signatures."""

    COLUMNS = ("group", "module", "kind", "mode", "target", "handle", "size", "offset", "tracked",
               "whence", "counter", "directory", "other", "derived")

    def __init__(self, functions: tuple[str, ...]):
        self.functions = functions
        self.strings: list[str] = []
        self._ids: dict[str, int] = {}
        self._rows: dict[str, list] = {c: [] for c in self.COLUMNS}
        self._arrays: dict[str, np.ndarray] = {}
        self.group = np.zeros(0, np.int8)  # kept current rank by rank: it selects the calls to keep
        self.directories: set[int] = set()  # target ids of paths a call made or removed as a directory

    def intern(self, text: str) -> int:
        sid = self._ids.get(text)
        if sid is None:
            sid = self._ids[text] = len(self.strings)
            self.strings.append(text)
        return sid

    def extend(self, signatures: SignatureTable) -> None:
        """Plan the signatures added to `signatures` since the last call."""
        rows, names = self._rows, self.functions
        func_of = signatures.func
        for gid in range(len(rows["group"]), len(signatures)):
            func = int(func_of[gid])
            name = names[func] if func < len(names) else ""
            p = plan(name, signatures.args[gid])
            if p is None:
                values = (NONE, 0, 0, 0, -1, -1, 0, -1, False, -1, 0, False, -1, False)
            else:
                spec = p.spec
                handle = self.intern(p.extra) if spec.module == "MPI-IO" and spec.kind == C.OPEN else -1
                values = (p.group, M[spec.module], K[spec.kind], MODES.index(spec.mode), self.intern(p.target),
                          handle, p.size, p.offset, spec.offset >= 0,
                          p.extra if spec.kind == C.SEEK and p.extra is not None else -1, COUNTERS.index(spec.counter),
                          name in DIRECTORY_CALLS, self.intern(p.other) if p.other else -1,
                          spec.kind == C.VIEW and bool(p.extra))
                if name in DIRECTORY_CALLS:
                    self.directories.add(values[4])
            for column, value in zip(self.COLUMNS, values):
                rows[column].append(value)
        if len(rows["group"]) > self.group.size:
            self.group = np.concatenate((self.group, np.array(rows["group"][self.group.size:], np.int8)))
            self._arrays.clear()

    def __getitem__(self, column: str) -> np.ndarray:
        array = self._arrays.get(column)
        if array is None:
            values = self._rows[column]
            dtype = {"tracked": bool, "directory": bool, "derived": bool}.get(column, np.int64)
            array = self._arrays[column] = np.array(values, dtype=dtype)
        return array
