"""Counter records and summary sections of `darshan-parser` output.

A record is printed as one tab-separated line per counter::

    POSIX  <rank>  <record id>  POSIX_BYTES_READ  67108864  <file name>  <mount pt>  <fs type>

:class:`CounterTables` groups consecutive lines of one (rank, record id) into a
record, keeps the raw value strings per record layout (the tuple of counter
names, identical for every record of a fixed-size module) and converts each
column to numpy once, at the end. :class:`SectionReader` keeps the optional
``--total``, ``--file`` and ``--perf`` sections (and the per-file list of older
parsers) as typed :class:`ParserSections`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from advisor.ingest.dxt_dump import DumpFormatError
from advisor.ingest.dump_lustre import lustre_records
from advisor.profile import LustreLayout, ModuleRecords

# Absent counters in a record with a shorter layout (fewer OST ids or heatmap bins).
_FILL = {"HEATMAP": 0}
_DEFAULT_FILL = -1
# Columns are converted through fixed-width string arrays as wide as their longest value: one
# value of megabytes would make every row that wide. No rank or record id has more than 20
# digits; darshan-parser prints a counter in at most a few dozen characters.
MAX_ID_CHARS = 24
MAX_VALUE_CHARS = 64
# Counter columns (names x records) allowed beyond the counter lines read.
MAX_SPARSENESS = 64
MAX_SPARSE_CELLS = 1 << 22


@dataclass
class FileCounts:
    """One row of ``--file``: files of a kind, bytes moved to/from them, max byte offset."""

    files: int
    bytes: int
    max_offset: int


@dataclass
class FileListRow:
    """One row of ``--file-list`` (Darshan 3.0-3.3 parsers): a file's I/O time summary."""

    record_id: int
    name: str
    nprocs: int
    slowest_s: float
    avg_s: float
    detail: list[float] = field(default_factory=list)


@dataclass
class ParserSections:
    """The summary sections darshan-parser printed for one module (POSIX, MPI-IO, STDIO, ...).

    ``totals``: ``--total`` (counter name without the ``total_`` prefix -> value);
    ``file_counts``: ``--file`` (``total``, ``read_only``, ``write_only``, ``read_write``,
    ``unique``, ``shared``); ``perf``: ``--perf`` (``total_bytes``, ``agg_perf_by_slowest``
    in MiB/s, ``shared_files_time_by_slowest``, ``unique_files_slowest_rank_io_time``, ...).
    """

    module: str
    totals: dict[str, float] = field(default_factory=dict)
    file_counts: dict[str, FileCounts] = field(default_factory=dict)
    perf: dict[str, float] = field(default_factory=dict)
    file_list: list[FileListRow] = field(default_factory=list)


class SectionReader:
    """Recognises the ``--total/--file/--perf/--file-list`` parts of a module section."""

    _PERF_KEY = re.compile(r"[^a-z0-9]+")

    def __init__(self) -> None:
        self.by_module: dict[str, ParserSections] = {}
        self._kind = ""

    def _get(self, module: str) -> ParserSections:
        return self.by_module.setdefault(module, ParserSections(module))

    def comment(self, module: str, line: str) -> bool:
        """Consume a comment line of a section; True when a section is (still) open."""
        if line.startswith("# Total file counts"):
            self._kind = "file"
        elif line.startswith("# performance"):
            self._kind = "perf"
        elif line.startswith("# Per-file summary of I/O activity"):
            self._kind = "file-list"
        elif self._kind == "file":
            self._file_count(module, line)
        elif self._kind == "perf":
            self._perf(module, line)
        return bool(self._kind)

    def _file_count(self, module: str, line: str) -> None:
        key, _, rest = line[2:].partition(": ")
        values = rest.split()
        if key.isidentifier() and len(values) == 3 and all(v.lstrip("-").isdigit() for v in values):
            self._get(module).file_counts[key] = FileCounts(*(int(v) for v in values))

    def _perf(self, module: str, line: str) -> None:
        body = line[2:].split(" # ")[0]  # "agg_perf_by_slowest: 1.0 # MiB/s"
        key, sep, value = body.rpartition(":")
        if not sep or not key.strip():
            return
        try:
            number = float(value)
        except ValueError:
            return
        self._get(module).perf[self._PERF_KEY.sub("_", key.strip().lower()).strip("_")] = number

    def data(self, module: str, text: str) -> str:
        """Consume ``total_X: v`` and file-list lines; returns the lines that are neither."""
        rest: list[str] = []
        for line in text.split("\n"):
            if not line:
                continue
            if line.startswith("total_") and "\t" not in line:
                name, _, value = line[len("total_"):].partition(": ")
                self._get(module).totals[name] = _number(value, line)
            elif self._kind == "file-list":
                self._file_list_row(module, line)
            else:
                rest.append(line)
        return "\n".join(rest)

    def _file_list_row(self, module: str, line: str) -> None:
        # <record_id> <file_name> <nprocs> <slowest> <avg> [detail columns...]
        fields = line.split("\t")
        try:
            self._get(module).file_list.append(FileListRow(
                record_id=int(fields[0]), name=fields[1], nprocs=int(fields[2]),
                slowest_s=float(fields[3]), avg_s=float(fields[4]),
                detail=[float(x) for x in fields[5:]]))
        except (ValueError, IndexError):
            raise DumpFormatError(f"malformed --file-list line {line[:100]!r}") from None

    def reset(self) -> None:
        """A new module section starts."""
        self._kind = ""


def _number(value: str, line: str) -> float:
    try:
        return int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError:
        raise DumpFormatError(f"malformed --total line {line[:100]!r}") from None


@dataclass
class _Table:
    """Raw records of one module: per layout, the value strings of each record."""

    module: str
    ranks: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    layout_of: list[tuple[str, ...]] = field(default_factory=list)  # per record
    values: dict[tuple[str, ...], list[list[str]]] = field(default_factory=dict)

    def rows(self):
        """(rank, record id, {counter name: value text}) of each record, in dump order."""
        taken = dict.fromkeys(self.values, 0)
        for rank, rid, layout in zip(self.ranks, self.ids, self.layout_of):
            vals = self.values[layout][taken[layout]]
            taken[layout] += 1
            yield rank, rid, dict(zip(layout, vals))


class CounterTables:
    """All counter records of a dump, converted to :class:`ModuleRecords` at the end."""

    def __init__(self) -> None:
        self.tables: dict[str, _Table] = {}
        self.names: dict[int, str] = {}
        self._records: dict[str, ModuleRecords] | None = None
        self._lustre_layouts: dict[int, LustreLayout] = {}
        self._cur: tuple[str, str, str] | None = None  # module, rank, record id
        self._cnames: list[str] = []
        self._vals: list[str] = []

    def has_module(self, module: str) -> bool:
        return module in self.tables

    def drop(self, module: str) -> int:
        """Forget the records of a module that is not used; returns how many there were."""
        table = self.tables.pop(module, None)
        return len(table.ids) if table else 0

    def add(self, text: str) -> None:
        """Consume counter lines (tab-separated, one per counter)."""
        cur, cnames, vals = self._cur, self._cnames, self._vals
        for line in text.split("\n"):
            p = line.split("\t", 5)  # the name (which may hold tabs), mount and fs type stay joined
            if len(p) != 6:
                if not line.strip():
                    continue
                raise DumpFormatError(f"malformed counter line {line[:100]!r}")
            if cur is None or p[2] != cur[2] or p[1] != cur[1] or p[0] != cur[0]:
                self._close(cur, cnames, vals)
                cur, cnames, vals = (p[0], p[1], p[2]), [], []
                name = p[5].rsplit("\t", 2)[0]
                # DAOS lines carry the object id where other modules print the name
                if name != "(null)" and p[0] != "DAOS":
                    self.names.setdefault(_record_id(p[2], line), name)
            if len(p[4]) > MAX_VALUE_CHARS or len(p[1]) > MAX_ID_CHARS or len(p[2]) > MAX_ID_CHARS:
                raise DumpFormatError(f"malformed counter line: a value of {len(p[4])} characters "
                                      f"({line[:60]!r}...)")
            cnames.append(p[3])
            vals.append(p[4])
        self._cur, self._cnames, self._vals = cur, cnames, vals

    def _close(self, cur: tuple[str, str, str] | None, cnames: list[str], vals: list[str]) -> None:
        if cur is None or not cnames:
            return
        module, rank, rid = cur
        table = self.tables.get(module) or self.tables.setdefault(module, _Table(module))
        layout = tuple(cnames)
        table.ranks.append(rank)
        table.ids.append(rid)
        table.layout_of.append(layout)
        table.values.setdefault(layout, []).append(vals)

    def check_complete(self) -> None:
        """The last record of a cut dump has fewer counters than the module's others."""
        cur, cnames = self._cur, self._cnames
        self._close(cur, cnames, self._vals)
        self._cur, self._cnames, self._vals = None, [], []
        if cur is None or cur[0] in _FILL or cur[0] == "LUSTRE":  # variable-length records
            return
        table = self.tables[cur[0]]
        longest = max(table.values, key=len)
        if len(cnames) < len(longest) and longest[:len(cnames)] == tuple(cnames):
            raise DumpFormatError(
                f"the dump is truncated: the last {cur[0]} record (record id {cur[2]}, rank {cur[1]}) "
                f"has {len(cnames)} of its {len(longest)} counters")

    def records(self) -> dict[str, ModuleRecords]:
        if self._records is None:
            self._records = {}
            for module, table in self.tables.items():
                if module == "LUSTRE":
                    self._records[module], self._lustre_layouts = lustre_records(table)
                else:
                    self._records[module] = self._convert(table)
        return self._records

    def _convert(self, table: _Table) -> ModuleRecords:
        n = len(table.ids)
        try:
            ids = np.array(table.ids).astype(np.uint64)
            ranks = np.array(table.ranks).astype(np.int64)
        except (ValueError, OverflowError):
            raise DumpFormatError(f"malformed rank or record id in the {table.module} records") from None
        recs = ModuleRecords(module=table.module, ids=ids, ranks=ranks)
        fill = _FILL.get(table.module, _DEFAULT_FILL)
        layouts = list(table.values)
        _check_table_size(table, n)
        rows_of = {layout: [] for layout in layouts}
        for i, layout in enumerate(table.layout_of):
            rows_of[layout].append(i)
        for layout in layouts:
            raw = np.array(table.values[layout], dtype=str).reshape(len(rows_of[layout]), len(layout))
            rows = np.array(rows_of[layout], dtype=np.int64)
            for j, cname in enumerate(layout):
                self._store(recs, table.module, cname, raw[:, j], rows, n, fill)
        return recs

    def _store(self, recs: ModuleRecords, module: str, cname: str, col: np.ndarray,
               rows: np.ndarray, n: int, fill: int) -> None:
        is_float = "_F_" in cname
        try:
            # record ids of the file a dataset/variable belongs to are printed unsigned
            values = col.astype(np.float64 if is_float else np.uint64 if cname.endswith("_FILE_REC_ID")
                                else np.int64)
        except (ValueError, OverflowError):
            values = _record_ids(col) if not is_float else None  # e.g. POSIX_RENAMED_FROM, unsigned
            if values is None:
                values, is_float = _floats(col), True  # e.g. APMPI prints float variances
            if values is None:
                example = next((str(v) for v in col if not str(v).lstrip("-").isdigit()), str(col[0]))
                raise DumpFormatError(f"malformed {cname} value in the {module} records "
                                      f"(e.g. {example[:40]!r})") from None
        target = recs.fcounters if is_float else recs.counters
        target[cname] = _scatter(values, rows, n, np.nan if is_float else fill, values.dtype,
                                 target.get(cname))

    def lustre_layouts(self) -> dict[int, LustreLayout]:
        self.records()
        return self._lustre_layouts


def _check_table_size(table: _Table, n: int) -> None:
    """Refuse counter names that would make the columns far larger than the lines read.

    Every column spans all records: darshan-parser prints each record's whole counter set,
    so the table is about as large as the lines (a few shorter HEATMAP records aside). A
    dump naming a new counter in every record would need names x records cells (60,000
    records of one line each took 4 GiB)."""
    names = len({name for layout in table.values for name in layout})
    lines = sum(len(layout) * len(rows) for layout, rows in table.values.items())
    if names * n > max(MAX_SPARSE_CELLS, MAX_SPARSENESS * lines):
        raise DumpFormatError(f"{table.module} records name {names} different counters over {n} records "
                              f"from {lines} counter lines: not a darshan-parser dump")


def _record_ids(col: np.ndarray) -> np.ndarray | None:
    """Record ids printed unsigned, as the int64 bit patterns the log reader keeps."""
    try:
        return col.astype(np.uint64).view(np.int64)
    except (ValueError, OverflowError):
        return None


def _floats(col: np.ndarray) -> np.ndarray | None:
    """A counter that is not an integer, read as floats (APMPI's variances); None when a value
    is not a finite number: NaN is how the columns mark a counter a record lacks, and facts
    read these counters as sizes and counts (a NaN MAX_BYTE_READ reached numpy's maximum)."""
    try:
        values = col.astype(np.float64)
    except ValueError:
        return None
    return values if np.isfinite(values).all() else None


def _scatter(values: np.ndarray, rows: np.ndarray, n: int, fill, dtype, into: np.ndarray | None = None):
    if len(rows) == n and into is None:
        return values.astype(dtype, copy=False)
    out = into if into is not None else np.full(n, fill, dtype=dtype)
    out[rows] = values
    return out


def _record_id(text: str, line: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise DumpFormatError(f"malformed counter line {line[:100]!r}") from None
