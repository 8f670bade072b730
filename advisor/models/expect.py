"""What the model expects of a job's own pattern, next to what the job measured.

The job's parts (its write and read sides, or an IOR test's phases) are predicted on the
model's file system and compared with the job's measured time (the slowest rank's, from
Darshan's timing counters, or IOR's bandwidth). The result
(:class:`advisor.expectation.JobExpectation`) is the fact context's model input, read by
the anomaly facts (:mod:`advisor.facts.model`).
"""

from __future__ import annotations


from advisor.expectation import JobExpectation
from advisor.ingest.ior.model import IorProfile
from advisor.models import mount
from advisor.models.features import Part
from advisor.models.train import Model
from advisor.profile import JobProfile
from advisor.units import MiB

MIN_BYTES = MiB
MIN_SECONDS = 1e-3


def measured(profile: JobProfile) -> tuple[list[Part], float]:
    """The job's parts and its measured I/O seconds (slowest rank), or ([], 0) when unknown."""
    if isinstance(profile, IorProfile):
        from advisor.models.sources.ior import ior_measured_mib_s, ior_parts

        for test in profile.run.tests:
            parts = ior_parts(test)
            rates = {op: ior_measured_mib_s(test, op) for op in parts}
            if parts and all(rates.values()):
                return list(parts.values()), sum(p.bytes / MiB / rates[op] for op, p in parts.items())
        return [], 0.0
    from advisor.models.sources.darshan import measured_parts, profile_parts

    parts = profile_parts(profile)
    times = measured_parts(profile)
    return [parts[d] for d in times], sum(m.seconds for m in times.values())


def expectation(model: Model, profile: JobProfile) -> JobExpectation:
    """The model's expectation of this job's pattern against its measured time."""
    from advisor.models.predict import predict_parts
    from advisor.models.store import describe

    exp = JobExpectation(model=describe(model.meta))
    parts, seconds = measured(profile)
    fstypes = {p.fstype for p in parts if p.fstype}
    trained = (model.meta.get("identity") or {}).get("fstype", "")
    if trained and fstypes and trained not in fstypes:
        exp.mount = ", ".join(sorted(fstypes))
        exp.mount_warning = (f"the job's files are on {', '.join(sorted(fstypes))}, the model learned "
                             f"{trained}: its numbers describe that file system, not the job's")
    exp.bytes = sum(p.bytes for p in parts)
    if not parts or exp.bytes < MIN_BYTES or seconds < MIN_SECONDS:
        exp.reason = "the job moved too little data, or too quickly, to judge its bandwidth"
        return exp
    if exp.mount_warning:
        exp.reason = exp.mount_warning
    exp.measured_s = seconds
    timing = predict_parts(model, parts)
    exp.expected_s, exp.expected_fast_s, exp.expected_slow_s = timing.seconds, timing.fast_s, timing.slow_s
    exp.extrapolation = timing.outside
    return exp


def mount_differences(model: Model, target) -> list[str]:
    """How the mount at `target` differs from the one the model learned ([] when the same)."""
    return mount.differences(model.meta.get("identity") or {}, mount.identity(target))
