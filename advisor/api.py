"""The pipeline in one place: ingest -> job profile -> facts -> rules/models -> findings.

Other stages (CLI commands, the Slurm hook, fleet workers, the HTML report) call
these functions rather than wiring the stages themselves.
"""

from __future__ import annotations

from pathlib import Path

from advisor.errors import AdvisorError
from advisor.findings import Diagnosis
from advisor.profile import JobProfile


def load(path: str | Path, *, timeout_s: float = 120.0) -> JobProfile:
    """Ingest one input file (isolated in a child process where the parser is native code)."""
    from advisor.ingest import load_profile

    return load_profile(path, timeout_s=timeout_s)


def diagnose_profile(profile: JobProfile, config=None) -> Diagnosis:
    """Run facts and rules (and a model, when the config names one) over one profile."""
    from advisor.engine import diagnose

    return diagnose(profile, config)


def diagnose_path(path: str | Path, config=None, *, timeout_s: float = 120.0) -> Diagnosis:
    """Diagnose one input; an unusable input gives a Diagnosis whose `error` says why."""
    try:
        return diagnose_profile(load(path, timeout_s=timeout_s), config)
    except AdvisorError as exc:
        return Diagnosis(source={"path": str(path), "format": "unknown"},
                         job={"jobid": "", "nprocs": 0, "runtime_s": 0.0, "exe": ""},
                         error=str(exc))
