"""The normalized job profile: what a job did, independent of the input format.

Every ingest (Darshan log through pydarshan, `darshan-parser` dump, IOR output,
node snapshot) produces a :class:`JobProfile`; every later stage (facts, rules,
models, replay planning, reports) reads only this model.

Per-module records are kept column-wise (:class:`ModuleRecords`: one numpy array
per counter) so that a log with a million records or a million DXT segments stays
small and every fact is a vector operation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from advisor import arrays
from advisor.units import STD_STREAMS  # noqa: F401 (re-exported: facts read it from here)

SHARED_RANK = -1
"""Darshan's rank for a record reduced over all ranks of a shared file."""
DATA_MODULES = ("POSIX", "STDIO")
"""The layer that reaches the file system; MPI-IO and HDF5 time is spent in these below them."""


@dataclass
class Provenance:
    """Where a profile came from."""

    path: str
    format: str  # "darshan", "darshan-parser", "ior-text", "ior-json", "ior-csv", "snapshot"
    parser: str  # e.g. "pydarshan 3.5.0"
    log_version: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class JobInfo:
    """Job-level metadata."""

    jobid: str = ""
    uid: int | None = None
    user: str = ""
    nprocs: int = 0
    start_time: float | None = None  # POSIX seconds
    end_time: float | None = None
    runtime_s: float = 0.0
    exe: str = ""
    library_version: str = ""
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class ModuleInfo:
    """One instrumentation module of the log and whether its data is complete."""

    name: str
    records: int = 0
    version: int | None = None
    partial: bool = False
    supported: bool = True
    note: str = ""  # why unsupported or unreadable


@dataclass
class ModuleRecords:
    """All records of one module, column-wise.

    `counters` maps the full Darshan counter name (e.g. ``POSIX_BYTES_READ``) to an
    int64 array; `fcounters` maps float counter names (``POSIX_F_READ_TIME``) to a
    float64 array. Row *i* of every array belongs to record ``ids[i]`` on rank
    ``ranks[i]`` (``-1`` for a shared-file record reduced over all ranks).
    """

    module: str
    ids: np.ndarray  # uint64 record ids
    ranks: np.ndarray  # int64
    counters: dict[str, np.ndarray] = field(default_factory=dict)
    fcounters: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def get(self, name: str, default: float = 0) -> np.ndarray:
        """Column `name` (int or float counter), or a column of `default` when absent."""
        if name in self.counters:
            return self.counters[name]
        if name in self.fcounters:
            return self.fcounters[name]
        return np.full(len(self), default, dtype=np.float64)

    def has(self, name: str) -> bool:
        return name in self.counters or name in self.fcounters


@dataclass
class LustreComponent:
    """One layout component of a Lustre file (a plain layout is one component)."""

    extent_start: int = 0
    extent_end: int = -1  # -1: EOF
    stripe_size: int = 0
    stripe_count: int = 0
    stripe_offset: int = -1
    pattern: str = "raid0"  # raid0, overstriped, mdt, released ...
    pool: str = ""
    ost_ids: list[int] = field(default_factory=list)


@dataclass
class LustreLayout:
    """Lustre layout of one file, from the LUSTRE module (old or 3.4.6+ component form)."""

    record_id: int
    components: list[LustreComponent] = field(default_factory=list)
    mdts: int | None = None  # LUSTRE_MDTS where recorded
    osts: int | None = None  # LUSTRE_OSTS (file system OST count) where recorded

    @property
    def stripe_count(self) -> int:
        return max((c.stripe_count for c in self.components), default=0)

    @property
    def stripe_size(self) -> int:
        return self.components[0].stripe_size if self.components else 0

    @property
    def ost_ids(self) -> list[int]:
        seen: dict[int, None] = {}
        for c in self.components:
            for ost in c.ost_ids:
                seen[ost] = None
        return list(seen)


DXT_READ = 0
DXT_WRITE = 1


CALL_OPS = ("open", "close", "stat", "fsync", "unlink", "mkdir", "rmdir", "rename", "link", "truncate")
"""The metadata calls a call trace holds (:class:`MetadataCalls` ``op`` indexes this)."""


@dataclass
class MetadataCalls:
    """Metadata calls one by one, as a call tracer (Recorder) saw them: rank, the record id of
    the file or directory (named in ``JobProfile.names``), the call (``CALL_OPS``) and its start
    (seconds from the job's start), in rank then call order. Darshan logs have none."""

    rank: np.ndarray  # int32
    record_id: np.ndarray  # uint64
    op: np.ndarray  # int8 index in CALL_OPS
    start: np.ndarray  # float64
    target: np.ndarray | None = None  # uint64 record id of a rename's or link's new name (0: none)
    length: np.ndarray | None = None  # int64 size a truncate sets (-1: none)

    def __len__(self) -> int:
        return int(self.op.size)


@dataclass
class DxtTrace:
    """DXT segments of one module (DXT_POSIX or DXT_MPIIO) as parallel numpy arrays.

    One element per I/O operation: ``rank`` (int32), ``record_id`` (uint64),
    ``op`` (int8, DXT_READ/DXT_WRITE), ``offset`` and ``length`` (int64),
    ``start`` and ``end`` (float64 seconds from job start). Sorted by rank, then start.
    """

    module: str
    rank: np.ndarray
    record_id: np.ndarray
    op: np.ndarray
    offset: np.ndarray
    length: np.ndarray
    start: np.ndarray
    end: np.ndarray
    hostnames: dict[int, str] = field(default_factory=dict)  # rank -> host
    readable: bool = True
    note: str = ""  # why unreadable, or that the trace is partial

    def __len__(self) -> int:
        return int(self.rank.shape[0])

    _ARRAYS = ("rank", "record_id", "op", "offset", "length", "start", "end")

    def subset(self, mask: np.ndarray) -> DxtTrace:
        """The segments where `mask` is true (same module and host names)."""
        return DxtTrace(self.module, *(getattr(self, a)[mask] for a in self._ARRAYS),
                        hostnames=dict(self.hostnames), readable=self.readable, note=self.note)

    @classmethod
    def concat(cls, module: str, parts: list[DxtTrace]) -> DxtTrace:
        """The segments of `parts` as one trace, sorted by rank then start."""
        if not parts:
            return cls.empty(module)
        arrays = {a: np.concatenate([getattr(p, a) for p in parts]) for a in cls._ARRAYS}
        order = np.lexsort((arrays["start"], arrays["rank"]))
        hosts = {r: h for p in parts for r, h in p.hostnames.items()}
        return cls(module, *(arrays[a][order] for a in cls._ARRAYS), hostnames=hosts)

    @classmethod
    def empty(cls, module: str, note: str = "", readable: bool = True) -> DxtTrace:
        return cls(
            module=module,
            rank=np.empty(0, np.int32),
            record_id=np.empty(0, np.uint64),
            op=np.empty(0, np.int8),
            offset=np.empty(0, np.int64),
            length=np.empty(0, np.int64),
            start=np.empty(0, np.float64),
            end=np.empty(0, np.float64),
            readable=readable,
            note=note,
        )


@dataclass
class MountPoint:
    """A mount point of the job's node and its file system type."""
    path: str
    fstype: str


def shared_mask(rec: ModuleRecords) -> np.ndarray:
    """True for records of files opened by more than one rank (reduced or not)."""
    shared = rec.ranks == SHARED_RANK
    ids = rec.ids[~shared]
    if ids.size:
        uniq, counts = np.unique(ids, return_counts=True)
        multi = uniq[counts > 1]
        shared |= arrays.isin(rec.ids, multi)
    return shared


@dataclass
class JobProfile:
    """Everything later stages know about one job: a Darshan log or parser dump.

    Inputs of another kind are subclasses carrying their own typed payload (an IOR run:
    :class:`advisor.ingest.ior.model.IorProfile`; a node snapshot:
    :class:`advisor.ingest.snapshot.SnapshotProfile`; a campaign:
    :class:`advisor.campaign.CampaignProfile`); `kind` says which rules apply to it.
    """

    kind: ClassVar[str] = "darshan"  # a rule's `inputs` name the kinds it applies to
    source: Provenance
    job: JobInfo
    modules: dict[str, ModuleInfo] = field(default_factory=dict)
    records: dict[str, ModuleRecords] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)  # record id -> file path
    mounts: list[MountPoint] = field(default_factory=list)
    lustre: dict[int, LustreLayout] = field(default_factory=dict)  # record id -> layout
    dxt: dict[str, DxtTrace] = field(default_factory=dict)
    calls: MetadataCalls | None = None  # a call trace's metadata calls (Recorder), for replay
    ingest: dict[str, Any] = field(default_factory=dict)  # how the parse went (seconds, memory)
    # A parser dump's raw sections, kept for inspection (`show`, tests); no stage reads them.
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def partial_modules(self) -> list[str]:
        return [m.name for m in self.modules.values() if m.partial]

    def results_data(self) -> dict[str, Any]:
        """What ``show --json`` and ``diagnose --json`` carry of the input besides its records: a
        Recorder trace's call counts, else nothing; the other kinds of input override it (an IOR
        run, a node snapshot, IOzone, fio and mdtest outputs), so a Darshan log loads none of them."""
        return {"recorder": self.extras["recorder"]} if "recorder" in self.extras else {}

    def name_of(self, record_id: int) -> str:
        return self.names.get(int(record_id), f"<record {int(record_id):#x}>")

    def fstype_of(self, path: str) -> str:
        """File system type of `path` from the job's mount table (longest mount point containing it:
        `path` itself, or one whose directory prefix starts it; the first of equal length as in the
        table)."""
        points, dirs = self._mount_index()
        best = points.get(path)
        # the directory prefixes a mount point can match end at one of the path's slashes: a lookup
        # per slash, not a comparison per mount (fstype_of is asked for every file of a job)
        slash = path.find("/")
        while slash >= 0:
            hit = dirs.get(path[:slash + 1])
            if hit is not None and (best is None or hit < best):
                best = hit
            slash = path.find("/", slash + 1)
        return best[2] if best is not None else ""

    def _mount_index(self) -> tuple[dict[str, tuple[int, int, str]], dict[str, tuple[int, int, str]]]:
        """{mount point: rank}, {its prefix with "/": rank}; a rank (-length, table index, fstype)
        orders the longest mount point first. Made once per mount table."""
        made = self.__dict__.get("_mounts_indexed")
        if made is None or made[0] is not self.mounts or made[1] != len(self.mounts):
            points: dict[str, tuple[int, int, str]] = {}
            dirs: dict[str, tuple[int, int, str]] = {}
            for index, m in enumerate(self.mounts):
                rank = (-len(m.path), index, m.fstype)
                points.setdefault(m.path, rank)
                under = m.path.rstrip("/") + "/"
                if under not in dirs or rank < dirs[under]:
                    dirs[under] = rank
            made = (self.mounts, len(self.mounts), (points, dirs))
            self.__dict__["_mounts_indexed"] = made
        return made[2]

    def fstype_of_record(self, record_id: int) -> str:
        """'lustre' when Darshan recorded the file's Lustre layout, else :meth:`fstype_of` its path.

        The layout wins: a path through a symbolic link (Theta's /projects -> /lus/grand/projects)
        matches the wrong mount point, or only "/".
        """
        if int(record_id) in self.lustre:
            return "lustre"
        return self.fstype_of(self.name_of(record_id))
