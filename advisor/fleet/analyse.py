"""One log -> its fleet rows (runs on a Dask worker).

The stages of ``ioadvisor diagnose --html`` (:func:`advisor.pipeline.run`, the site's
``[model]`` included); the figure data is kept in the job row's diagnosis, so a job's
page is drawn later without the log. Whatever goes wrong with one log becomes that
log's error row; only a wrong site config, rule set or model is raised, because it
would fail every log alike.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from advisor import __version__, pipeline
from advisor.config import SiteConfig, load_config
from advisor.errors import ConfigError, InputError
from advisor.findings import Diagnosis, Finding
from advisor.fleet.walk import LogFile, content_hash
from advisor.profile import JobProfile

INTERPRETERS = ("python", "python2", "python3", "bash", "sh", "perl", "Rscript", "julia", "ruby", "java")


def analyse_log(log: LogFile, config: Any, timeout_s: float) -> dict[str, Any]:
    """``{"job": row, "findings": [rows]}`` for one log; unusable logs give an error row."""
    from advisor.metrics import shared_tables

    with shared_tables():  # the row's model features read the tables the diagnosis computed
        return _analyse(log, config, timeout_s)


def _analyse(log: LogFile, config: Any, timeout_s: float) -> dict[str, Any]:
    started = time.perf_counter()
    config = config if config is not None else load_config()
    try:
        digest = content_hash(log.path)
        done = pipeline.run([log.path], fleet_stages(config, timeout_s), config).results[0]
    except OSError as exc:
        return failed_log(log, f"cannot read: {exc.strerror or exc}", started)
    except ConfigError:
        raise  # the site config or the rule set is wrong: every log would fail, stop the run
    except InputError as exc:  # the model file
        raise ConfigError(str(exc)) from None
    except Exception as exc:  # a bug on one log must not stop a run over millions
        return failed_log(log, f"internal error: {type(exc).__name__}: {exc}", started, digest)
    profile, diagnosis = done.profile, done.diagnosis
    if profile is None:
        return failed_log(log, diagnosis.error.removeprefix(f"{log.path}: "), started, digest)
    return _rows(log, digest, profile, diagnosis, time.perf_counter() - started)


def fleet_stages(config: SiteConfig, timeout_s: float) -> pipeline.Stages:
    """What a fleet worker runs per log: what `diagnose --html` runs."""
    return pipeline.Stages.from_config(config, figures=True, timeout_s=timeout_s)


def failed_log(log: LogFile, reason: str, started: float | None = None, digest: str = "") -> dict[str, Any]:
    """The error row of a log that could not be diagnosed."""
    job = _base_row(log, digest, (time.perf_counter() - started) if started else 0.0)
    job["error"] = reason.splitlines()[0] if reason else "unknown error"
    return {"job": job, "findings": []}


def _base_row(log: LogFile, digest: str, elapsed: float) -> dict[str, Any]:
    return {"path": log.path, "content_hash": digest, "size": log.size, "mtime_ns": log.mtime_ns,
            "analysed_s": elapsed, "analysed_at": datetime.now(UTC),
            "worker": f"{socket.gethostname()}:{os.getpid()}",
            "tool_version": __version__, "error": None}


def _rows(log: LogFile, digest: str, profile: JobProfile, diagnosis: Diagnosis,
          elapsed: float) -> dict[str, Any]:
    job_info = profile.job
    summary = diagnosis.summary
    label = _labeller(profile)
    mounts = _job_mounts(profile, label)
    app = app_name(job_info.exe)
    start = _when(job_info.start_time)
    findings = diagnosis.sorted_findings()
    job = _base_row(log, digest, elapsed) | {
        "format": profile.source.format, "jobid": str(job_info.jobid),
        "uid": job_info.uid, "user": job_info.user or _uid_name(job_info.uid),
        "exe": job_info.exe, "app": app,
        "start_time": start, "end_time": _when(job_info.end_time),
        "runtime_s": float(diagnosis.job.get("runtime_s") or job_info.runtime_s or 0.0),
        "nprocs": int(job_info.nprocs),
        "bytes_read": int(summary.get("bytes_read") or 0),
        "bytes_written": int(summary.get("bytes_written") or 0),
        "io_time_s": float(summary.get("io_time_s") or 0.0),
        "mounts": [label for label, _ in mounts],
        "categories": sorted({f.category for f in findings}),
        "codes": [{"code": f.code, "category": f.category, "severity": f.severity,
                   "cost_s": float(f.cost_s)} for f in findings],
        "cost_s": float(diagnosis.lost_s()),  # overlapping costs: at most the I/O time
        "n_findings": len(findings),
        "features": _features(profile),
        "diagnosis": json.dumps(diagnosis.to_dict(), default=str),
    }
    main_mount = mounts[0][0] if mounts else ""
    rows = [_finding_row(job, f, _finding_mount(f, label) or main_mount) for f in findings]
    return {"job": job, "findings": rows}


def _finding_row(job: dict[str, Any], finding: Finding, mount: str) -> dict[str, Any]:
    return {"path": job["path"], "content_hash": job["content_hash"], "jobid": job["jobid"],
            "user": job["user"], "app": job["app"], "start_time": job["start_time"],
            "code": finding.code, "category": finding.category, "severity": finding.severity,
            "title": finding.title, "cost_s": float(finding.cost_s), "mount": mount,
            "n_files": len(finding.files), "n_ranks": len(finding.ranks)}


def app_name(exe: str) -> str:
    """A short application name from Darshan's command line (``python3 train.py`` for scripts)."""
    try:
        words = shlex.split(exe or "")
    except ValueError:
        words = (exe or "").split()
    if not words:
        return ""
    name = os.path.basename(words[0])
    if name.rstrip("0123456789.") in INTERPRETERS or name in INTERPRETERS:
        return f"{name} {_script(words[1:])}".strip()
    return name


def _script(args: list[str]) -> str:
    """What an interpreter runs: a script's name, ``-m module``, or ``-c``."""
    for i, word in enumerate(args):
        if word == "-m" and i + 1 < len(args):
            return f"-m {args[i + 1]}"
        if word == "-c":
            return "-c"
        if not word.startswith("-"):
            return os.path.basename(word)
    return ""


def mount_label(profile: JobProfile, path: str) -> str:
    """``"/lustre/scratch (lustre)"`` for the job mount holding `path` (longest prefix), else ""."""
    return _labeller(profile)(path)


def _labeller(profile: JobProfile) -> Callable[[str], str]:
    """:func:`mount_label` for many paths of one job: its mounts ordered once, longest first (the
    first of equal length as in the table)."""
    ordered = [(m.path, f"{m.path} ({m.fstype})") for m in sorted(profile.mounts, key=lambda m: -len(m.path))]
    folders: dict[str, tuple[str, list[tuple[str, str]]]] = {}

    def label(path: str) -> str:
        # a job's files share a few folders: a mount point no longer than the folder starts the
        # path if it starts the folder (found once per folder); a longer one is tried per path
        cut = path.rfind("/") + 1
        folder = path[:cut]
        known = folders.get(folder)
        if known is None:
            within = next((text for point, text in ordered if len(point) <= cut and folder.startswith(point)), "")
            longer = [(point, text) for point, text in ordered if len(point) > cut and point.startswith(folder)]
            known = folders[folder] = (within, longer)
        return next((text for point, text in known[1] if path.startswith(point)), known[0])

    return label


def _job_mounts(profile: JobProfile, label: Callable[[str], str]) -> list[tuple[str, int]]:
    """Mounts of the job's files, most files first."""
    counts: dict[str, int] = {}
    for name in profile.names.values():
        text = label(name)
        if text:
            counts[text] = counts.get(text, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _finding_mount(finding: Finding, label: Callable[[str], str]) -> str:
    return next((text for f in finding.files if (text := label(f))), "")


def _features(profile: JobProfile) -> dict[str, float]:
    from advisor.models.sources.darshan import job_features

    return job_features(profile)


def _when(posix: float | None) -> datetime | None:
    if not posix or posix <= 0:
        return None
    try:
        return datetime.fromtimestamp(float(posix), UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _uid_name(uid: int | None) -> str:
    """Darshan records the uid; the name is only known where the log was written."""
    return "" if uid is None else f"uid {uid}"
