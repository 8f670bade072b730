"""Hand-built job profiles for fact unit tests: a few records with the counters a test names."""

from __future__ import annotations

from typing import Any

import numpy as np

from advisor.config import SiteConfig
from advisor.facts import FactContext
from advisor.profile import SHARED_RANK, JobInfo, JobProfile, ModuleInfo, ModuleRecords, MountPoint, Provenance

SHARED = SHARED_RANK


def module(name: str, rows: list[tuple[int, int, dict[str, Any]]]) -> ModuleRecords:
    """Records of one module: (record id, rank or SHARED, {counter: value}); ints are counters,
    floats fcounters; a counter a row does not name is 0 in that row."""
    names = {k for _, _, c in rows for k in c}
    ints = {k for k in names if all(isinstance(c.get(k, 0), int) for _, _, c in rows)}
    counters = {k: np.array([c.get(k, 0) for _, _, c in rows], np.int64) for k in sorted(ints)}
    fcounters = {k: np.array([float(c.get(k, 0.0)) for _, _, c in rows]) for k in sorted(names - ints)}
    return ModuleRecords(name, np.array([r[0] for r in rows], np.uint64), np.array([r[1] for r in rows], np.int64),
                         counters, fcounters)


def job(*modules: ModuleRecords, nprocs: int = 4, runtime_s: float = 100.0, names: dict[int, str] | None = None,
        mounts: list[tuple[str, str]] | None = None) -> JobProfile:
    """A Darshan-like profile of `modules`; record id i is the file /scratch/f<i> unless `names` says."""
    ids = {int(i) for m in modules for i in m.ids}
    return JobProfile(
        Provenance("hand-built", "darshan", "test"), JobInfo(jobid="1", nprocs=nprocs, runtime_s=runtime_s),
        modules={m.module: ModuleInfo(m.module, records=len(m)) for m in modules},
        records={m.module: m for m in modules},
        names={i: f"/scratch/f{i}" for i in ids} | (names or {}),
        mounts=[MountPoint(p, t) for p, t in (mounts or [("/scratch", "lustre")])])


def facts(profile: JobProfile, config: SiteConfig | None = None) -> FactContext:
    return FactContext(profile, config or SiteConfig())
