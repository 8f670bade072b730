"""Darshan binary logs (format 3.00 and later) through pydarshan's libdarshan-util.

Registers the input format "darshan". Parsing runs isolated in a child process
(native code reads untrusted files). Darshan 1.x/2.x logs (gzip files) are
recognised and refused with what to do instead; pydarshan reads 3.x only.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path
from typing import NoReturn

from advisor.errors import InputError
from advisor.ingest import InputFormat, register
from advisor.ingest.darshan_recompress import zlib_copy
from advisor.ingest.darshan_header import BZIP2, COMP_TYPE_AT, COMPRESSION, DARSHAN_MAGIC, ZLIB, comp_type
from advisor.ingest.darshan_lib import DarshanLog, ModuleUnreadable, open_log, pydarshan_version, text
from advisor.profile import JobInfo, JobProfile, ModuleInfo, MountPoint, Provenance

_VERSION = re.compile(rb"(\d)\.(\d{1,2})\x00")
_GZIP = b"\x1f\x8b"

# Modules ioadvisor knows but does not read, and why.
NOT_READ = {
    "APMPI": "AutoPerf MPI profiling counters; not used for I/O diagnosis",
    "APXC": "AutoPerf Cray XC network counters; not used for I/O diagnosis",
    "MDHIM": "MDHIM key-value store module; no reader in pydarshan",
}


def not_read(module: str) -> str | None:
    """Why the records of `module` are not used (in logs and parser dumps alike); None if they are."""
    from advisor.ingest.darshan_records import GENERIC

    if module in NOT_READ:
        return NOT_READ[module]
    if module in GENERIC or module in ("LUSTRE", "HEATMAP") or module.startswith("DXT_"):
        return None
    return "module unknown to ioadvisor; its records are not used"


def _header_version(head: bytes) -> str | None:
    """'3.41' when `head` starts like a Darshan log header (version string + magic)."""
    m = _VERSION.match(head[:8])
    if not m or len(head) < 16:
        return None
    magic_le = int.from_bytes(head[8:16], "little")
    magic_be = int.from_bytes(head[8:16], "big")
    if m.group(1) == b"3" and DARSHAN_MAGIC not in (magic_le, magic_be):
        return None
    return f"{m.group(1).decode()}.{m.group(2).decode()}"


def _gunzip_head(path: Path, n: int = 64) -> bytes:
    try:
        with gzip.open(path, "rb") as fh:
            return fh.read(n)
    except (OSError, EOFError, zlib.error):
        return b""


def sniff(path: Path, head: bytes) -> bool:
    """A Darshan 3.x log (libdarshan-util reads it)."""
    return head[:2] != _GZIP and _header_version(head) is not None and head[:1] == b"3"


def sniff_gzip(path: Path, head: bytes) -> bool:
    """A gzip file holding a Darshan log of any version (Darshan 1.x/2.x logs are gzip files)."""
    return head[:2] == _GZIP and _header_version(_gunzip_head(path)) is not None


def refuse_gzip(path: Path) -> NoReturn:
    """Say why a gzip-compressed Darshan log is not read, and what to do instead."""
    version = _header_version(_gunzip_head(path)) or "?"
    if version.startswith("3."):
        raise InputError(str(path), f"gzip-compressed Darshan {version} log: gunzip it first "
                         "(Darshan 3.x logs are compressed inside; ioadvisor reads them directly)")
    raise InputError(str(path), f"Darshan {version} log (pre-3.0 format): pydarshan reads Darshan 3.x "
                     "logs only; run darshan-parser from a Darshan 2.x darshan-util on it and give "
                     "ioadvisor that text dump")


def load(path: Path) -> JobProfile:
    """Read a Darshan 3.x log into a job profile; InputError for anything unusable.

    A bzip2-compressed or uncompressed log is read from a zlib copy of its regions
    (darshan_recompress): the libdarshan-util of the `darshan` wheel has no bzip2, and
    loses its place in uncompressed regions longer than 1 MiB."""
    with open(path, "rb") as fh:
        comp = comp_type(fh.read(COMP_TYPE_AT + 1))
    if comp not in COMPRESSION:
        raise InputError(str(path), f"unknown compression type {comp} in the Darshan log header "
                         "(Darshan writes 0 zlib, 1 bzip2, 2 none): the header is corrupt")
    if comp == ZLIB:
        return _load(str(path), path)
    with zlib_copy(path) as copy:
        profile = _load(copy, path)
    profile.source.parser += ("; bzip2 regions recompressed" if comp == BZIP2 else "; uncompressed regions "
                              "compressed") + " as zlib by ioadvisor"
    return profile


def _load(readable: str, path: Path) -> JobProfile:
    """The profile of the log at `readable`, reported as `path`."""
    with open_log(readable, name=str(path)) as log:
        profile = _read(log, path)
        profile.source.notes.extend(f"libdarshan-util: {ln}" for ln in log.stderr.new_lines())
    return profile


def _read(log: DarshanLog, path: Path) -> JobProfile:
    job = _job_info(log)
    profile = JobProfile(
        source=Provenance(path=str(path), format="darshan",
                          parser=f"pydarshan {pydarshan_version()} "
                                 f"(libdarshan-util {text(log.ffi, log.lib.darshan_log_get_lib_version())})",
                          log_version=log.format_version),
        job=job,
    )
    modules = log.modules()
    profile.names = log.names()
    profile.mounts = [MountPoint(path=p, fstype=t) for p, t in log.mounts()]
    for name, meta in modules.items():
        profile.modules[name] = _read_module(log, profile, name, meta)
    _check_usable(profile, path, modules)
    return profile


def _job_info(log: DarshanLog) -> JobInfo:
    job, runtime = log.job()
    j = job[0]
    metadata = {}
    for line in text(log.ffi, j.metadata).splitlines():
        key, sep, value = line.partition("=")
        if sep:
            metadata[key.strip()] = value.strip()
    start = j.start_time_sec + j.start_time_nsec * 1e-9
    end = j.end_time_sec + j.end_time_nsec * 1e-9
    return JobInfo(
        jobid=str(j.jobid), uid=int(j.uid), nprocs=int(j.nprocs),
        start_time=float(start) if j.start_time_sec > 0 else None,
        end_time=float(end) if j.end_time_sec > 0 else None,
        runtime_s=runtime, exe=log.exe(), library_version=metadata.get("lib_ver", ""),
        metadata=metadata,
    )


def _read_module(log: DarshanLog, profile: JobProfile, name: str, meta: dict) -> ModuleInfo:
    """Read one module into `profile`; its ModuleInfo says what came of it."""
    from advisor.ingest import darshan_dxt, darshan_records

    info = ModuleInfo(name=name, version=meta["ver"], partial=meta["partial"])
    if (why := not_read(name)) is not None:
        info.supported, info.note = False, why
        return info
    try:
        if name.startswith("DXT_"):
            trace, info.records = darshan_dxt.read_dxt(log, name, meta["idx"], partial=meta["partial"])
            profile.dxt[name] = trace
            if not trace.readable:
                trace.note += (f" (module version {meta['ver']}, as written by the Darshan that "
                               "recorded the job); the counters of the other modules are still used")
                info.supported, info.note = False, trace.note
                profile.source.notes.append(f"{name}: {trace.note}")  # said in every report, not only missed
            return info
        if name == "LUSTRE":
            records, profile.lustre = darshan_records.read_lustre(log, meta["idx"])
            if meta["ver"] < 2:
                info.note = ("pre-3.4.6 LUSTRE form: stripe size, count and OSTs per file "
                             "(file system OST/MDT counts are not kept by libdarshan-util)")
        elif name == "HEATMAP":
            records = darshan_records.read_heatmap(log, meta["idx"])
        else:
            records = darshan_records.read_generic(log, name, meta["idx"])
    except ModuleUnreadable as exc:
        info.supported = False
        info.note = f"records unreadable (version {meta['ver']}): {exc}"
        profile.source.notes.append(f"module {name} could not be read ({exc}); "
                                    "the log may be truncated or corrupt")
        return info
    profile.records[name] = records
    info.records = len(records)
    return info


def _check_usable(profile: JobProfile, path: Path, modules: dict) -> None:
    """Refuse logs that would otherwise be reported as if nothing happened."""
    read = sum(m.records for m in profile.modules.values())
    if profile.job.nprocs <= 0 and read == 0:
        raise InputError(str(path), "pydarshan reads this log as empty (0 processes, 0 records); "
                         "it may come from a non-stock Darshan build: give ioadvisor the "
                         "darshan-parser dump made by the darshan-util that wrote it")
    if read == 0 and not modules:
        raise InputError(str(path), f"empty log: job metadata only ({profile.job.nprocs} processes, "
                         f"exe {profile.job.exe or 'unknown'!r}), no Darshan module recorded any I/O")
    readable = [m for m in profile.modules.values() if m.supported]
    failed = [m for m in profile.modules.values() if not m.supported and m.note.startswith("records")]
    if modules and failed and not readable:
        raise InputError(str(path), f"no module could be read ({failed[0].name}: {failed[0].note}); "
                         "the log is truncated or corrupt")


FORMAT = register(InputFormat(name="darshan", sniff=sniff, load=load))
FORMAT_GZIP = register(InputFormat(name="darshan-gzip", sniff=sniff_gzip, load=refuse_gzip))
