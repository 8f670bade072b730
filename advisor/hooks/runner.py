"""Diagnose a job's logs and write its reports in a child with hard time and memory limits.

The child runs as the job's user (so the logs are read, and the reports written, with
that user's rights only), in its own process group with RLIMIT_AS; the parent kills
the whole group when the time limit passes. Only a small summary comes back.
"""

from __future__ import annotations

from typing import Any

from advisor.findings import SEVERITY_RANK, Diagnosis, diagnoses_json
from advisor.hooks import writer
from advisor.hooks.child import ChildResult, run_as_user
from advisor.hooks.job import JobContext
from advisor.hooks.settings import HookConfig


def diagnose_logs(logs: list[str], site_config: Any) -> list[Diagnosis]:
    """Each log's diagnosis with the figure data the HTML report draws (error set if unusable):
    the stages `ioadvisor diagnose --html` runs, the site's [model] included."""
    # Imported here: the epilog of every job loads this module, and most jobs leave no log
    # (numpy, the engine and the parsers would cost each of them; bench/hook.py).
    from advisor import pipeline
    from advisor.config import load_config

    config = site_config if site_config is not None else load_config()
    # Parsed in this process, not in a further child started from a fresh interpreter: this
    # child already is the isolation (own process group, time and memory limits, the user's
    # rights), and an interpreter start would cost more than most diagnoses.
    stages = pipeline.Stages.from_config(config, figures=True, isolate=False)
    return [r.diagnosis for r in pipeline.run(logs, stages, config).results]


def above_threshold(diagnoses: list[Diagnosis], min_severity: str) -> bool:
    """Whether the job deserves a report: a finding at least `min_severity` ('none': any job)."""
    usable = [d for d in diagnoses if d.error is None]
    if not usable:
        return False
    if min_severity == "none":
        return True
    limit = SEVERITY_RANK[min_severity]
    return any(SEVERITY_RANK[f.severity] <= limit for d in usable for f in d.findings)


def summarize(diagnoses: list[Diagnosis]) -> dict[str, Any]:
    """The site-log fields of a job: executable, categories, time lost, findings by severity."""
    counts = {s: 0 for s in SEVERITY_RANK}
    categories: list[str] = []
    lost = 0.0
    for d in diagnoses:
        lost += d.lost_s()
        for f in d.sorted_findings():
            counts[f.severity] += 1
            if f.category not in categories:
                categories.append(f.category)
    errors = [d.error for d in diagnoses if d.error]
    exe = next((d.job.get("exe") for d in diagnoses if d.job.get("exe")), "")
    return {"exe": exe, "categories": categories, "lost_s": round(lost, 3),
            "findings": counts, "error": "; ".join(errors) or None}


def render(diagnoses: list[Diagnosis], formats: list[str]) -> tuple[dict[str, bytes], list[str]]:
    """The report files' contents by format, and notes on formats that could not be made."""
    contents: dict[str, bytes] = {}
    notes: list[str] = []
    usable = [d for d in diagnoses if d.error is None]
    if "html" in formats:
        try:
            from advisor.report.html import render_html
        except ModuleNotFoundError:
            notes.append("HTML report not available in this build")
        else:
            contents["html"] = render_html(usable).encode()
    if "json" in formats:
        contents["json"] = diagnoses_json(usable).encode()  # the document `diagnose --json` writes
    return contents, notes


def diagnose_and_write(job: JobContext, cfg: HookConfig, site_config: Any, logs: list[str],
                       dest: str) -> dict[str, Any]:
    """The child's work, as the job's user: diagnose, gate on severity, write the reports."""
    diagnoses = diagnose_logs(logs, site_config)
    summary = summarize(diagnoses)
    if all(d.error for d in diagnoses):
        summary["status"] = "error"
        return summary
    if not above_threshold(diagnoses, cfg.min_severity):
        summary["status"] = "below-threshold"
        return summary
    contents, notes = render(diagnoses, cfg.formats)
    summary["reports"] = writer.write_reports(dest, job.jobid, contents, job.uid,
                                              create=cfg.destination == "user-dir",
                                              site_mode=cfg.file_mode())
    summary["status"] = "reported"
    if notes:
        summary["note"] = "; ".join(notes)
    return summary


def run_diagnosis(job: JobContext, cfg: HookConfig, site_config: Any, logs: list[str],
                  dest: str) -> ChildResult:
    """`diagnose_and_write` in a child as the job's user, killed after the time limit."""
    return run_as_user(lambda: diagnose_and_write(job, cfg, site_config, logs, dest),
                       uid=job.uid, gid=job.gid, timeout_s=cfg.time_limit_s,
                       memory_mb=cfg.memory_limit_mb)
