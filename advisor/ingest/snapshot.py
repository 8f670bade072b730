"""Node snapshots (``ioadvisor collect``, ``ioadvisor/snapshot/vN``) as an input format.

The profile (:class:`SnapshotProfile`) carries the validated document and the node's
mount table in ``mounts``. A snapshot written by a newer ioadvisor (a schema version
this one does not know) is refused with a clear one-line error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from dataclasses import dataclass
from typing import Any, ClassVar

from advisor.collect import SCHEMA_VERSION
from advisor.errors import InputError
from advisor.ingest import InputFormat, jsondoc, register
from advisor.profile import JobInfo, JobProfile, MountPoint, Provenance

MAX_BYTES = 64 << 20
_SCHEMA_MARK = re.compile(rb'"schema"\s*:\s*"ioadvisor/snapshot/v(\d+)"')


def schema() -> dict[str, Any]:
    """The JSON schema of the snapshot version this ioadvisor writes and reads."""
    return jsondoc.schema(f"snapshot-v{SCHEMA_VERSION}")


def _sniff(path: Path, head: bytes) -> bool:
    return head.lstrip().startswith(b"{") and bool(_SCHEMA_MARK.search(head))


def validate(doc: Any, path: str) -> dict[str, Any]:
    """The document if it is a snapshot this version reads; InputError (one line) otherwise."""
    if not isinstance(doc, dict):
        raise InputError(path, "not an ioadvisor snapshot (not a JSON object)")
    m = re.fullmatch(r"ioadvisor/snapshot/v(\d+)", str(doc.get("schema", "")))
    if not m:
        raise InputError(path, "not an ioadvisor snapshot (no 'schema': 'ioadvisor/snapshot/vN')")
    version = int(m.group(1))
    if version > SCHEMA_VERSION:
        raise InputError(path, f"snapshot schema v{version} is newer than this ioadvisor reads "
                               f"(v{SCHEMA_VERSION}): upgrade ioadvisor or collect with this version")
    jsondoc.validate(doc, f"snapshot-v{SCHEMA_VERSION}", path, "snapshot")
    if "probe" in doc:  # written by `ioadvisor probe --snapshot`
        jsondoc.validate(doc["probe"], "probe-v1", path, "probe section of the snapshot")
    return doc


def load(path: Path) -> JobProfile:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise InputError(str(path), "too large for a snapshot")
        doc = jsondoc.decode(path.read_text(encoding="utf-8"), str(path), "snapshot")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"snapshot is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    return profile_of(validate(doc, str(path)), str(path))


@dataclass(kw_only=True)
class SnapshotProfile(JobProfile):
    """The profile of a node snapshot: its validated document, for the server and client rules."""

    kind: ClassVar[str] = "snapshot"
    settings: dict[str, Any]

    def results_data(self) -> dict[str, Any]:
        from advisor.ingest.ior.view import snapshot_data  # the JSON view, only for snapshots

        return {"snapshot": snapshot_data(self.settings)}


def profile_of(doc: dict[str, Any], path: str) -> SnapshotProfile:
    """The profile of a validated snapshot document."""
    host = doc["host"].get("hostname", "")
    job = JobInfo(jobid="", exe=f"node snapshot of {host}", start_time=float(doc["collected_at"]),
                  end_time=float(doc["collected_at"]), library_version=f"ioadvisor {doc['tool']['version']}",
                  metadata={"hostname": host, "kernel": doc["host"].get("kernel", "")})
    source = Provenance(path=path, format="snapshot", parser="ioadvisor snapshot",
                        log_version=doc["schema"].rsplit("/", 1)[-1], notes=list(doc.get("notes", [])))
    mounts = [MountPoint(path=m["path"], fstype=m["fstype"]) for m in doc["mounts"]]
    return SnapshotProfile(source=source, job=job, mounts=mounts, settings=doc)


FORMAT = register(InputFormat(name="snapshot", sniff=_sniff, load=load))
