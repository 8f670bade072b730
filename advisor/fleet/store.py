"""The fleet dataset: Parquet parts of job rows and finding rows under one folder.

Layout of ``DIR``::

    fleet.json                      what this folder is (schema id, tool version)
    jobs/part-<run>-<seq>.parquet   one row per log (an unreadable log is a row with `error`)
    findings/part-<run>-<seq>.parquet  one row per finding, same part name as its jobs part

A batch is committed by renaming its jobs part into place, after its findings part:
an interrupted run leaves at most a findings part without its jobs part, which the
next run deletes, so the dataset never holds half a batch and never a duplicate.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from advisor import __version__
from advisor.errors import InputError

SCHEMA_ID = "ioadvisor/fleet/v1"
MANIFEST = "fleet.json"


def _pandas_unasked() -> None:
    """Answer pyarrow's one question about pandas without importing it.

    pyarrow's first conversion of a Python list imports pandas only to ask whether the list is
    a pandas object (ours never are): 0.7 s of CPU, a fleet run's largest start-up cost. Asked
    once here with pandas hidden, pyarrow notes it as absent for that question; anything that
    does want pandas from pyarrow (`to_pandas`, `from_pandas`) still imports it then. Only while
    no other thread runs (one that imported pandas meanwhile would fail) and pandas is not loaded.
    """
    if "pandas" in sys.modules or threading.active_count() > 1:
        return
    sys.meta_path.insert(0, _NoPandas)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(_NoPandas)


class _NoPandas:
    """An import finder for which pandas is not installed."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pandas":
            raise ImportError("pandas hidden from pyarrow's probe", name=name)
        return None


_pandas_unasked()

_COST = pa.struct([("code", pa.string()), ("category", pa.string()),
                   ("severity", pa.string()), ("cost_s", pa.float64())])
_TIME = pa.timestamp("ms", tz="UTC")  # Parquet has no seconds unit

JOB_SCHEMA = pa.schema([
    ("path", pa.string()), ("content_hash", pa.string()),
    ("size", pa.int64()), ("mtime_ns", pa.int64()),
    ("format", pa.string()), ("jobid", pa.string()),
    ("uid", pa.int64()), ("user", pa.string()),
    ("exe", pa.string()), ("app", pa.string()),
    ("start_time", _TIME), ("end_time", _TIME),
    ("runtime_s", pa.float64()), ("nprocs", pa.int64()),
    ("bytes_read", pa.int64()), ("bytes_written", pa.int64()),
    ("io_time_s", pa.float64()),  # cumulative over ranks (read + write + metadata)
    ("mounts", pa.list_(pa.string())),  # "mount point (fstype)" of the files the job used
    ("categories", pa.list_(pa.string())),
    ("codes", pa.list_(_COST)),
    ("cost_s", pa.float64()),  # sum of the findings' estimated time lost
    ("n_findings", pa.int32()),
    ("features", pa.map_(pa.string(), pa.float64())),  # model inputs (advisor.models.features)
    ("error", pa.string()),
    ("diagnosis", pa.large_string()),  # the Diagnosis JSON (without figures)
    ("analysed_s", pa.float64()),
    ("worker", pa.string()),  # host:pid of the process that analysed the log
    ("analysed_at", _TIME), ("tool_version", pa.string()),
])

FINDING_SCHEMA = pa.schema([
    ("path", pa.string()), ("content_hash", pa.string()),
    ("jobid", pa.string()), ("user", pa.string()), ("app", pa.string()),
    ("start_time", _TIME),
    ("code", pa.string()), ("category", pa.string()), ("severity", pa.string()),
    ("title", pa.string()), ("cost_s", pa.float64()),
    ("mount", pa.string()),  # "mount point (fstype)" of the finding's files, else the job's main one
    ("n_files", pa.int32()), ("n_ranks", pa.int32()),
])


def storable(text: str) -> str:
    """`text` as Parquet can hold it (UTF-8): a log's name whose bytes are not UTF-8 holds
    lone surrogates in Python, which made the whole run an internal error; such bytes are
    kept as \\xNN. The run looks logs up by this form of their path too."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that is no escaped byte (from JSON, say)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _storable(value: Any) -> Any:
    """Rows with every string in them :func:`storable`."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list):
        return [_storable(v) for v in value]
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Seen:
    """What the dataset already holds for one path."""

    size: int
    mtime_ns: int
    content_hash: str
    failed: bool  # the row is an error row


class FleetStore:
    """One fleet dataset folder, opened for appending by one run at a time."""

    def __init__(self, root: str | Path, *, create: bool = True):
        self.root = Path(root)
        self.jobs_dir = self.root / "jobs"
        self.findings_dir = self.root / "findings"
        self._lock_fh = None
        self._run = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self._seq = 0
        _check_or_create(self.root, create)

    # -- writing -------------------------------------------------------------
    def lock(self) -> FleetStore:
        """Take the folder's writer lock; a second concurrent run is refused, not interleaved."""
        self._lock_fh = open(self.root / ".lock", "w")  # noqa: SIM115 -- held until unlock(): the lock lives with it
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_fh.close()
            self._lock_fh = None
            raise InputError(str(self.root), "another fleet run is writing this dataset") from None
        self._drop_incomplete()
        return self

    def _drop_incomplete(self) -> None:
        """Remove what an interrupted run left: temp files and findings parts never committed."""
        committed = {p.name for p in self.jobs_dir.glob("part-*.parquet")}
        for folder in (self.jobs_dir, self.findings_dir):
            for tmp in folder.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)
        for part in self.findings_dir.glob("part-*.parquet"):
            if part.name not in committed:
                part.unlink(missing_ok=True)

    def write_batch(self, jobs: list[dict[str, Any]], findings: list[dict[str, Any]]) -> str:
        """Commit one batch of rows (findings first, jobs last); returns the part name."""
        self._seq += 1
        name = f"part-{self._run}-{self._seq:06d}.parquet"
        _write_atomic(pa.Table.from_pylist(_storable(findings), schema=FINDING_SCHEMA), self.findings_dir / name)
        _write_atomic(pa.Table.from_pylist(_storable(jobs), schema=JOB_SCHEMA), self.jobs_dir / name)
        return name

    def discard(self) -> None:
        """Remove a dataset this run created and never committed to (only its own files)."""
        if list(self.jobs_dir.glob("part-*")):
            return
        for folder in (self.jobs_dir, self.findings_dir):
            for leftover in folder.glob("*"):
                leftover.unlink(missing_ok=True)
            folder.rmdir()
        (self.root / MANIFEST).unlink(missing_ok=True)
        (self.root / ".lock").unlink(missing_ok=True)
        self.close()
        if not any(self.root.iterdir()):
            self.root.rmdir()

    def close(self) -> None:
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    # -- reading -------------------------------------------------------------
    def seen(self) -> dict[str, Seen]:
        """Path -> what was recorded for it (the latest part wins when a log changed)."""
        index: dict[str, Seen] = {}
        for batch in self.scan_jobs(["path", "size", "mtime_ns", "content_hash", "error"]):
            cols = batch.to_pydict()
            for path, size, mtime, digest, error in zip(cols["path"], cols["size"], cols["mtime_ns"],
                                                        cols["content_hash"], cols["error"]):
                index[path] = Seen(size, mtime, digest, error is not None)
        return index

    def scan_jobs(self, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Committed job rows, batch by batch, in commit order."""
        yield from _scan(self.jobs_dir, columns, committed=None)

    def scan_findings(self, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Finding rows of committed batches only."""
        committed = {p.name for p in self.jobs_dir.glob("part-*.parquet")}
        yield from _scan(self.findings_dir, columns, committed=committed)

    def jobs(self, columns: list[str] | None = None) -> pa.Table:
        """The latest row per path, as one table (for reports; pass only the columns needed)."""
        cols = _with_keys(columns)
        return _latest(_table(self.scan_jobs(cols), JOB_SCHEMA, cols), columns)

    def findings(self, columns: list[str] | None = None) -> pa.Table:
        """Finding rows whose job row is the latest for its path."""
        keys = self.jobs(["path", "content_hash"])
        cols = _with_keys(columns)
        table = _table(self.scan_findings(cols), FINDING_SCHEMA, cols)
        table = table.join(keys, ["path", "content_hash"], join_type="inner")
        return table.select(columns) if columns else table


def _check_or_create(root: Path, create: bool) -> None:
    """A fleet folder is created empty or reused when its manifest says it is one."""
    manifest = root / MANIFEST
    if manifest.is_file():
        try:
            doc = json.loads(manifest.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(str(root), f"unreadable {MANIFEST}: {exc}") from None
        if doc.get("schema") != SCHEMA_ID:
            raise InputError(str(root), f"not an {SCHEMA_ID} dataset (schema {doc.get('schema')!r})")
        return
    if not create:
        raise InputError(str(root), f"not a fleet dataset (no {MANIFEST}); create one with 'ioadvisor fleet'")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InputError(str(root), "exists and is not a fleet dataset; choose a new or empty folder")
    for folder in (root / "jobs", root / "findings"):
        folder.mkdir(parents=True, exist_ok=True)
    _write_text_atomic(manifest, json.dumps({"schema": SCHEMA_ID, "created_by": f"ioadvisor {__version__}",
                                             "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) + "\n")


def _write_atomic(table: pa.Table, dest: Path) -> None:
    tmp = dest.with_name(f".{dest.name}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())  # the rename must not publish a part whose data is not on disk
    os.replace(tmp, dest)


def _write_text_atomic(dest: Path, text: str) -> None:
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, dest)


def _scan(folder: Path, columns, committed: set[str] | None) -> Iterator[pa.RecordBatch]:
    """Batches part by part, in commit order (part names sort by run start, then sequence)."""
    for part in sorted(folder.glob("part-*.parquet")):
        if committed is None or part.name in committed:
            yield from pq.ParquetFile(part).iter_batches(columns=columns)


def _with_keys(columns: list[str] | None) -> list[str] | None:
    if columns is None:
        return None
    return list(dict.fromkeys(["path", "content_hash", *columns]))


def _table(batches: Iterator[pa.RecordBatch], schema: pa.Schema, columns: list[str] | None) -> pa.Table:
    """The batches as one table; an empty one still has the columns asked for."""
    batches = list(batches)
    if batches:
        return pa.Table.from_batches(batches)
    return (schema if columns is None else pa.schema([schema.field(c) for c in columns])).empty_table()


def _latest(table: pa.Table, columns: list[str] | None) -> pa.Table:
    """Keep the last row of each path (a log rewritten in place is analysed again)."""
    paths = table.column("path").to_pylist()
    last: dict[str, int] = {}
    for i, path in enumerate(paths):
        last[path] = i
    if len(last) != len(paths):
        table = table.take(sorted(last.values()))
    return table.select(columns) if columns else table
