"""Forward chaining: evaluate the catalogue's rules over one job's facts.

Rules run in dependency order (a rule after every rule it names in ``fired()``), so one
pass reaches the fixed point even with ``not fired(...)``. A rule whose condition holds
becomes a :class:`Finding`: its cost (seconds of run time lost) is evaluated, its severity
follows the cost's share of the run time, and its templates are rendered with the evidence.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from advisor.config import SiteConfig
from advisor.engine import expr, render
from advisor.engine.evaluator import Evaluator
from advisor.engine.rules import Catalogue, Rule
from advisor.engine.significance import DECLARED, Confidence, Impact, Limits, grade, impact_level
from advisor.facts import (Assumption, Fact, FactContext, Missing, NotApplicable, describe, is_param, known,
                           meta_of)
from advisor.facts.fix_cost import changes_nothing, recovered_s
from advisor.facts.requests import DEFAULT_REQUEST_LATENCY_S
from advisor.fixes import hints_handoff, unchecked
from advisor.formatting import fmt_num
from advisor.findings import Finding, NotChecked, Recommendation

MAX_LISTED = 50  # files/ranks listed in one finding; files_total/ranks_total count them all
COST_SHARE = describe("share of the run lost", "fraction")  # the evidence every costed finding adds


@dataclass
class Outcome:
    """What one pass over the catalogue produced."""

    findings: list[Finding] = field(default_factory=list)
    not_checked: list[NotChecked] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # rule evaluation errors (a rule bug)


class _RuleScope:
    """Name lookup for one rule: its thresholds (site overrides first), then facts."""

    def __init__(self, rule: Rule, ctx: FactContext, config: SiteConfig):
        self.rule, self.ctx, self.config = rule, ctx, config
        self.missing: dict[str, Missing] = {}

    def lookup(self, name: str) -> Any:
        if name in self.rule.thresholds:
            return self.config.threshold(name, self.rule.thresholds[name], self.rule.code)
        if is_param(name):
            return self.ctx.param(name)
        try:
            return _plain(self.ctx.get(name))
        except Missing as exc:
            self.missing[name] = exc
            return None


def run(catalogue: Catalogue, ctx: FactContext, kind: str, runtime_s: float) -> Outcome:
    """Evaluate every rule that applies to inputs of `kind` ("darshan", "ior", ...)."""
    out = Outcome()
    fired: set[str] = set()
    for rule in catalogue.rules:
        if kind not in rule.inputs:
            continue
        with ctx.tracing() as assumed:
            finding = _evaluate(rule, ctx, fired, runtime_s, out)
            if finding is not None:
                _say_assumed(finding, list(assumed))
        if finding is not None:
            out.findings.append(finding)
            fired.add(rule.code)
    _mark_same_time(out.findings, {r.code: r.time_pools for r in catalogue.rules})
    return out


def _mark_same_time(findings: list[Finding], pools: dict[str, tuple[str, ...]]) -> None:
    """Each costed finding names the others whose cost is drawn from a pool of seconds it draws from
    too (small writes and small writes to a shared file): the same seconds, another fix."""
    costed = [f for f in findings if f.cost_s > 0 and pools.get(f.code)]
    for f in costed:
        mine = set(pools[f.code])
        f.same_time_as = sorted(g.code for g in costed if g is not f and mine & set(pools[g.code]))


def _evaluate(rule: Rule, ctx: FactContext, fired: set[str], runtime_s: float, out: Outcome) -> Finding | None:
    scope = _RuleScope(rule, ctx, ctx.config)
    evaluator = Evaluator(scope.lookup, fired.__contains__)
    try:
        holds = evaluator.evaluate(rule.condition)
    except expr.ExprError as exc:
        out.errors.append(f"{rule.code}: {exc}")
        out.not_checked.append(NotChecked(_label(rule), f"rule could not be evaluated: {exc}"))
        return None
    if holds is None:
        _unknown(rule, scope, out)
        return None
    if not holds:
        return None
    try:
        return _finding(rule, scope, evaluator, runtime_s)
    except (expr.ExprError, ValueError, TypeError) as exc:
        out.errors.append(f"{rule.code}: {exc}")
        out.not_checked.append(NotChecked(_label(rule), f"rule could not be evaluated: {exc}"))
        return None


def _say_assumed(finding: Finding, assumed: list[Assumption]) -> None:
    """A finding resting on values neither the input nor the site config gave says so, and
    names what would make each exact, as data in `assumptions`: the reporters list them once
    per report and mark the findings that use them (advisor.report.assumed)."""
    if assumed:
        finding.assumptions = [{k: v for k, v in asdict(a).items() if v or k != "ran_on"} for a in assumed]


def _label(rule: Rule) -> str:
    return f"{rule.code} {rule.name}"


def _unknown(rule: Rule, scope: _RuleScope, out: Outcome) -> None:
    if any(isinstance(m, NotApplicable) for m in scope.missing.values()):
        return
    reasons = sorted({m.reason for m in scope.missing.values()}) or ["the facts it needs are unknown"]
    out.not_checked.append(NotChecked(_label(rule), "; ".join(reasons)))


def _finding(rule: Rule, scope: _RuleScope, ev: Evaluator, runtime_s: float) -> Finding | None:
    with scope.ctx.tracing() as cost_assumed:
        cost = ev.evaluate(rule.cost) if rule.cost is not None else None
    cost_s = float(cost) if isinstance(cost, (int, float)) and math.isfinite(cost) and cost > 0 else 0.0
    share = cost_s / runtime_s if runtime_s > 0 else None
    estimate = _lustre_defaults_elsewhere(cost_assumed)
    if estimate[0] and _same_severity_with_local_latency(rule, scope, cost_s, runtime_s):
        estimate = ("", "")  # the assumption does not decide the severity: the count does
    severity, confidence = _graded(rule, scope, cost_s, runtime_s, estimate)
    if severity is None:
        return None  # evidence too small to matter
    evidence = {name: scope.lookup(name) for name in rule.evidence}
    files = _listed(ev.evaluate(rule.files)) if rule.files is not None else []
    ranks = [int(r) for r in _listed(ev.evaluate(rule.ranks))] if rule.ranks is not None else []
    fix = _fix(rule, ev, scope.ctx)
    values = {**{k: scope.lookup(k) for k in rule.thresholds}, **evidence,
              "cost_s": cost_s, "cost_share": share, "files": files, "ranks": ranks, "fix": fix,
              "nprocs": scope.ctx.profile.job.nprocs, "runtime_s": runtime_s}
    if share is not None and cost_s > 0:  # a finding without a cost (declared) has no share to show
        evidence = {**evidence, "cost_share": round(share, 6)}
    return Finding(
        code=rule.code, category=rule.category, severity=severity, title=rule.title,
        message=render.render(rule.message, values),
        evidence=json_ready(evidence), evidence_meta=_evidence_meta(evidence),
        files=[str(f) for f in files[:MAX_LISTED]], ranks=ranks[:MAX_LISTED],
        files_total=len(files) if len(files) > MAX_LISTED else None,
        ranks_total=len(ranks) if len(ranks) > MAX_LISTED else None,
        cost_s=round(cost_s, 6),
        recovered_s=round(recovered_s(scope.ctx, cost_s, fix), 6) if fix and cost_s > 0 else None,
        recommendation=_recommendation(rule, values, scope, fix),
        fix=fix, references=list(rule.references), confidence=confidence.to_dict(),
    )


def _evidence_meta(evidence: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Label, unit kind and unit of each evidence value: facts and parameters declare them."""
    return {name: COST_SHARE if name == "cost_share" else meta_of(name) for name in evidence}


def _commands(rule: Rule, values: dict[str, Any]) -> list[str]:
    """The rule's commands as rendered; one whose condition left it blank does not apply here."""
    rendered = (render.render(c, values) for c in rule.recommendation["commands"])
    return [c for c in rendered if c.strip()]


def _recommendation(rule: Rule, values: dict[str, Any], scope: _RuleScope,
                    fix: dict[str, Any] | None) -> Recommendation:
    """The rule's advice as rendered, saying what the input could not check: settings (MPI-IO hints, HDF5
    properties) the job may already make."""
    commands = _with_handoff(_commands(rule, values), scope, fix)
    text = render.render(rule.recommendation["text"], values)
    ctx = scope.ctx
    hints_passed = ctx.value("mpiio_hints_passed") if ctx.value("uses_mpiio") else None  # no MPI-IO: no hints yet
    said = unchecked(text, commands, fix, hints_passed, ctx.value("hdf5_properties_recorded"))
    return Recommendation(text=f"{text} {said}" if said else text, commands=commands)


def _with_handoff(commands: list[str], scope: _RuleScope, fix: dict[str, Any] | None) -> list[str]:
    """The commands with, second (the terminal shows two), the line that passes a hints fix on
    through the library the application calls, where there is one."""
    if not fix or fix.get("transform") != "hints":
        return commands
    line = hints_handoff(fix, scope.ctx.value("app_library"))
    return commands if line is None else [*commands[:1], line, *commands[1:]]


def _lustre_defaults_elsewhere(assumed: dict[Assumption, None]) -> tuple[str, str]:
    """(the Lustre defaults a cost assumed, the file systems the job ran on instead): ('', '') when it
    assumed none, or the job's files are on Lustre or on no known file system (a Recorder trace)."""
    elsewhere = [a for a in assumed if a.ran_on]
    return ("; ".join(a.value for a in elsewhere), elsewhere[0].ran_on) if elsewhere else ("", "")


LOCAL_LATENCY_S = DEFAULT_REQUEST_LATENCY_S / 10
"""A request's fixed cost on a file system without network RPCs (a local call and copy: ~10 us), the other
end of what the assumed Lustre RPC latency (100 us) may be off the job's file system."""


def _same_severity_with_local_latency(rule: Rule, scope: _RuleScope, cost_s: float, runtime_s: float) -> bool:
    """Whether the rule's cost gives the same severity were a request's latency a local call's, not a Lustre
    RPC's: then the assumed latency does not decide it (16,384 writes of 4 KiB lose most of their time at
    either; 1,024 of 256 KiB lose a third at 100 us, 6 % at 10 us)."""
    ctx = scope.ctx

    def local() -> FactContext:
        config = replace(ctx.config, system=replace(ctx.config.system, request_latency_s=LOCAL_LATENCY_S))
        return FactContext(ctx.profile, config, ctx.expectation)

    if rule.cost is None or ctx.config.system.request_latency_s:
        return True
    there = ctx.memo("chain.local_latency", local)
    try:
        alt = Evaluator(_RuleScope(rule, there, there.config).lookup, lambda code: False).evaluate(rule.cost)
    except (expr.ExprError, ValueError, TypeError):
        return False  # cannot say: the assumption may decide it
    if not isinstance(alt, (int, float)) or not math.isfinite(alt):
        return False
    limits = Limits.of(scope.config, rule.code)
    io_time = ctx.value("io_time_s")
    return impact_level(Impact(float(alt), runtime_s, io_time), limits) == impact_level(
        Impact(cost_s, runtime_s, io_time), limits)


def _graded(rule: Rule, scope: _RuleScope, cost_s: float, runtime_s: float,
            estimate: tuple[str, str] = ("", "")) -> tuple[str | None, Confidence]:
    """Severity and confidence (advisor.engine.significance); the declared severity for rules
    whose cost does not set it. `estimate`: the Lustre defaults a counted cost rests on, and the file
    system the job ran on instead (the cost is then an estimate: at most warn)."""
    if rule.cost is None or not rule.cost_sets_severity:
        return rule.severity, DECLARED
    ctx = scope.ctx
    impact = Impact(cost_s, runtime_s, ctx.value("io_time_s"))
    if rule.evidence_kind == "timing":
        return grade(rule.severity, "timing", impact, ctx.value("timing_noise"), Limits.of(scope.config, rule.code))
    if _timed(rule, scope, cost_s):  # a per-process mean of a timing: the noise of a mean over the ranks
        noise = ctx.value("timing_noise")
        noise = noise and {**noise, "seconds": noise.get("mean_seconds"), "why": noise.get("mean_why")}
        return grade(rule.severity, "timing", impact, noise, Limits.of(scope.config, rule.code))
    return grade(rule.severity, "counts", impact, None, Limits.of(scope.config, rule.code), _counted(rule, scope),
                 estimate)


def _timed(rule: Rule, scope: _RuleScope, cost_s: float) -> bool:
    """The cost is one of the rule's `timed_costs`: this finding rests on that timing, not on counts."""
    for name in rule.timed_costs:
        value = scope.lookup(name)
        if isinstance(value, (int, float)) and value > 0 and math.isclose(float(value), cost_s, rel_tol=1e-9):
            return True
    return False


def _counted(rule: Rule, scope: _RuleScope) -> str:
    """The first operation count the rule quotes as evidence: 'small_write_count 262,144'."""
    for name in rule.evidence:
        found = known(name)
        value = scope.lookup(name) if isinstance(found, Fact) and found.kind == "ops" else None
        if isinstance(value, (int, float)) and value > 0:
            return f"{name} {fmt_num(value)}"
    return ""


def _fix(rule: Rule, ev: Evaluator, ctx: FactContext) -> dict[str, Any] | None:
    """The rule's first fix alternative whose `when` holds for this job, sized for it, passing over one
    that, so sized, changes nothing (MD001's aggregation through min(ranks, 8) offered to IOR's 4 ranks:
    every rank still moves its own bytes; review12)."""
    for alternative in rule.fix or []:
        if "when" not in alternative or ev.evaluate(alternative["when"]):
            fix = _sized(alternative, ev)
            if fix is None or not changes_nothing(ctx, fix):
                return fix
    return None


def _sized(alternative: dict[str, Any], ev: Evaluator) -> dict[str, Any] | None:
    fix: dict[str, Any] = {}
    for key, value in alternative.items():
        if key == "when":
            continue
        if isinstance(value, expr.Node):
            value = _plain(ev.evaluate(value))
            if value is None:
                return None  # a fix we cannot size is no fix
            if isinstance(value, float) and value.is_integer():
                value = int(value)
        fix[key] = value
    return fix


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)  # whole: a message counts them ("{{ ranks | length }} rank(s)")
    return [value]


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python values (the condition language knows only those)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def json_ready(value: Any) -> Any:
    """`value` as JSON holds it: plain Python values, string keys, floats to 6 places (NaN, inf as null)."""
    value = _plain(value)
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    return value
