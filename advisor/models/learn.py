"""A site's model learns from its own verifications: every measured fix of a ``--verify`` becomes
a row of the site's model data (:mod:`advisor.models.pairs`), which ``ioadvisor train`` folds in.

On by default (``[model] learn_from_verify``); the rows go to ``[model] data`` (default
``$XDG_DATA_HOME/ioadvisor/model-data/pairs.csv``). Each verified job is a family of its own,
so the interval a model trained on them reports is still calibrated on jobs it never saw.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.config import ModelConfig
from advisor.findings import Diagnosis
from advisor.profile import JobProfile

FAMILY = "verified:"  # family of a site's verified job: FAMILY + the job's log


def data_dir(config: ModelConfig) -> Path:
    """Where the site's measured fixes are appended."""
    if config.data:
        return Path(config.data).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ioadvisor" / "model-data"


def record(profile: JobProfile, diagnosis: Diagnosis, config: ModelConfig, np: int | None = None,
           scale: float | None = None) -> Path | None:
    """Append the measured fixes of `diagnosis` (after ``--verify``) to the site's data; the file, or
    None when nothing was measured or learning is off."""
    from advisor.fixes import fix_key, proposed_fixes
    from advisor.verify import replay_plan

    if not config.learn_from_verify:
        return None
    verified = {fix_key(f.fix): f.verification for f in diagnosis.findings
                if f.fix and f.verification is not None and f.verification.measured}
    # several findings may propose one fix: one row
    unique = [(fix, verified[key]) for key, (fix, _) in proposed_fixes(diagnosis.findings).items() if key in verified]
    if not unique:
        return None
    base = replay_plan(profile, np=unique[0][1].np or np, scale=unique[0][1].scale or scale)
    return record_measured(profile.source.path, base, unique, config)


def record_measured(workload: str, base, measured: list, config: ModelConfig) -> Path | None:
    """Append rows of `measured` [(fix or list of fixes, Verification that measured), ...] of the
    baseline plan `base` of `workload` (the log) to the site's data; the file, or None when learning
    is off or nothing measured."""
    from advisor.models import pairs
    from advisor.verify import apply_fixes

    measured = [(fix, v) for fix, v in measured if v.measured]
    if not config.learn_from_verify or not measured:
        return None
    fstype = measured[0][1].fstype or ""
    before = pairs.plan_features(base, fstype)
    rows = [pairs.row(FAMILY + workload, workload, fix, before, pairs.plan_features(apply_fixes(base, fix), fstype), v)
            for fix, v in measured]
    out = data_dir(config) / pairs.SITE_PAIRS_FILE
    pairs.append(out, rows)
    return out
