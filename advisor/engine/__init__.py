"""The expert system: facts (Python) + rules (data) -> a :class:`Diagnosis`.

``diagnose(profile, config)`` computes the facts a rule asks for (lazily, once), runs the
rule catalogue by forward chaining, ranks findings by severity and time lost, and fills
the job summary and the list of checks that could not run.
"""

from __future__ import annotations

from advisor import __version__
from advisor.config import SiteConfig, load_config
from advisor.engine import render
from advisor.engine.chain import run
from advisor.engine.rules import Catalogue, load_catalogue
from advisor.errors import ConfigError
from advisor.expectation import JobExpectation
from advisor.facts import PARAMS, Fact, FactContext, known, registry
from advisor.facts.layers import layer_section
from advisor.findings import Diagnosis, NotChecked
from advisor.profile import JobProfile

SUMMARY_FACTS = ("bytes_read", "bytes_written", "io_time_s", "io_share", "io_layer", "read_time_s",
                 "write_time_s", "meta_time_s", "base_layer", "files_accessed", "modules", "interfaces",
                 "counter_notes")


def check_thresholds(config: SiteConfig, catalogue: Catalogue) -> None:
    """Every [thresholds] name must be a rule's threshold or a fact parameter (ConfigError)."""
    if not config.thresholds:
        return
    registry()
    declared = set(PARAMS) | {n for r in catalogue.rules for n in r.thresholds}
    for key, value in config.thresholds.items():
        if isinstance(value, dict):
            rule = catalogue.get(key)
            if rule is None:
                raise ConfigError(f"{config.path}: [thresholds.{key}] names no rule")
            for name in value:
                if name not in rule.thresholds and name not in PARAMS:
                    known = ", ".join(sorted(rule.thresholds)) or "none"
                    raise ConfigError(f"{config.path}: [thresholds.{key}] unknown key '{name}' "
                                      f"(thresholds of {key}: {known})")
        elif key not in declared:
            raise ConfigError(f"{config.path}: [thresholds] unknown key '{key}'")


def diagnose(profile: JobProfile, config: SiteConfig | None = None,
             catalogue: Catalogue | None = None, *, expectation: JobExpectation | None = None) -> Diagnosis:
    """Facts and rules over one profile, in one forward-chaining pass (the anomaly rules
    judge the job against `expectation` when a learned model gave one)."""
    config = config if config is not None else load_config()
    catalogue = catalogue or load_catalogue()
    check_thresholds(config, catalogue)
    ctx = FactContext(profile, config, expectation)
    try:
        return _diagnosis(profile, catalogue, ctx)
    finally:
        ctx.release()
        render.save()  # the templates first compiled here, for the next runs


def _diagnosis(profile: JobProfile, catalogue: Catalogue, ctx: FactContext) -> Diagnosis:
    runtime = ctx.value("runtime_s") or 0.0
    outcome = run(catalogue, ctx, profile.kind, float(runtime))
    job = profile.job
    diagnosis = Diagnosis(
        source={"path": profile.source.path, "format": profile.source.format,
                "parser": profile.source.parser, "log_version": profile.source.log_version,
                "notes": list(profile.source.notes)},
        job={"jobid": str(job.jobid), "nprocs": int(job.nprocs), "runtime_s": float(runtime),
             "exe": job.exe, "user": job.user, "start_time": job.start_time,
             "end_time": job.end_time, "library_version": job.library_version},
        findings=outcome.findings,
        not_checked=_dedupe(outcome.not_checked),
        summary=_summary(ctx),
        tool={"name": "ioadvisor", "version": __version__, "rules": len(catalogue.rules),
              "rule_errors": outcome.errors},
        data=profile.results_data(),
    )
    diagnosis.findings = diagnosis.sorted_findings()
    return diagnosis


def _summary(ctx: FactContext) -> dict:
    from advisor.engine.chain import json_ready

    summary = {}
    for name in SUMMARY_FACTS:
        if isinstance(known(name), Fact):
            value = ctx.value(name)
            if value is not None:
                summary[name] = json_ready(value)
    layers = layer_section(ctx)
    if layers is not None:
        summary["layers"] = json_ready(layers)
    return summary


def _dedupe(items: list[NotChecked]) -> list[NotChecked]:
    seen, out = set(), []
    for item in items:
        if (item.check, item.reason) not in seen:
            seen.add((item.check, item.reason))
            out.append(item)
    return out
