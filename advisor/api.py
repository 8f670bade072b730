"""The library's entry points: load an input, diagnose it (:mod:`advisor.pipeline` does the work).

Both diagnose functions run the stages ``ioadvisor diagnose`` runs without options:
ingest, the learned model when the site config names one (``[model] path``), the engine.
"""

from __future__ import annotations

from pathlib import Path

import advisor.fleet.settings  # noqa: F401  registers [fleet]: a library caller reads the whole site file
import advisor.hooks.settings  # noqa: F401  registers [hook]
from advisor import pipeline
from advisor.config import SiteConfig, load_config
from advisor.findings import Diagnosis
from advisor.ingest import load_profile
from advisor.profile import JobProfile


def load(path: str | Path, *, timeout_s: float = 120.0) -> JobProfile:
    """Ingest one input file (isolated in a child process where the parser is native code)."""
    return load_profile(path, timeout_s=timeout_s)


def diagnose_profile(profile: JobProfile, config: SiteConfig | None = None) -> Diagnosis:
    """The diagnosis of one profile already loaded."""
    config = config if config is not None else load_config()
    return pipeline.diagnose_profile(profile, pipeline.Stages.from_config(config), config)


def diagnose_path(path: str | Path, config: SiteConfig | None = None, *, timeout_s: float = 120.0) -> Diagnosis:
    """Diagnose one input; an unusable input gives a Diagnosis whose `error` says why."""
    config = config if config is not None else load_config()
    stages = pipeline.Stages.from_config(config, timeout_s=timeout_s)
    return pipeline.run([path], stages, config).results[0].diagnosis
