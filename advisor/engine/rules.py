"""The rule catalogue: `rules/*.yaml` (installed as ``advisor._rules``) loaded and checked.

Each file is a YAML list of rule entries. Every mistake is reported at load time as a
:class:`ConfigError` naming the file and line: a YAML syntax error, a missing or unknown
field, a condition that does not parse, a name that is neither a fact nor a threshold,
``fired()`` of an unknown rule, a cycle of ``fired()`` references, a bad category.
The installed catalogue, once checked, is cached per user (:mod:`advisor.engine.cache`).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.engine import expr, render
from advisor.engine.evaluator import FUNCTIONS
from advisor.engine.significance import EVIDENCE_KINDS
from advisor.errors import ConfigError
from advisor.facts import PARAMS, index, registry, use_index
from advisor.findings import CATEGORIES, SEVERITIES
from advisor.units import quantity
from replay.transforms import FIXES, KINDS

if TYPE_CHECKING:
    import yaml

CODE = re.compile(r"^[A-Z]+[0-9]{3}$")
POOL = re.compile(r"^[a-z][a-z0-9_]*$")
INPUT_KINDS = ("darshan", "ior", "iozone", "fio", "mdtest", "campaign", "snapshot")
REQUIRED = ("code", "name", "title", "category", "severity", "condition", "message",
            "recommendation", "docs")
OPTIONAL = ("thresholds", "cost", "evidence", "files", "ranks", "fix", "references", "inputs",
            "cost_sets_severity", "evidence_kind", "timed_costs", "time_pools", "tests")
FIXTURE_KINDS = ("fires", "silent")  # a rule's `tests`: inputs it must fire on, and must stay silent on
DOC_PARTS = ("what", "why", "how", "example")
TEMPLATE_NAMES = {"cost_s", "cost_share", "files", "ranks", "fix", "nprocs", "runtime_s"}
"""Names every message template may use besides the rule's evidence and thresholds."""
TEMPLATE_KINDS = {"cost_s": "seconds", "cost_share": "fraction", "files": "path", "ranks": "index",
                  "nprocs": "count", "runtime_s": "seconds"}


@dataclass
class Rule:
    """One rule entry, its parsed expressions and where it was defined."""

    code: str
    name: str
    title: str
    category: str
    severity: str  # the highest severity; lowered when the cost is a small share of the run
    condition: expr.Node
    condition_text: str
    message: str  # Jinja2 template
    recommendation: dict[str, Any]  # text (template) + commands (templates)
    docs: dict[str, str]
    thresholds: dict[str, Any] = field(default_factory=dict)
    cost: expr.Node | None = None
    cost_text: str = ""
    evidence: list[str] = field(default_factory=list)  # fact names quoted in the finding
    files: expr.Node | None = None  # expression giving the file paths concerned
    ranks: expr.Node | None = None
    # the fix's alternatives, first whose `when` holds (none: the last): literals, or "=expr" per job
    fix: list[dict[str, Any]] | None = None
    references: list[str] = field(default_factory=list)
    inputs: tuple[str, ...] = ("darshan",)
    cost_sets_severity: bool = True
    evidence_kind: str = "counts"  # what the cost rests on: "timing" (compared times) or "counts"
    # facts of a counted cost that are timings (a difference of two layers' times): when the cost is
    # one of them, that finding rests on timing (its confidence weighs it against the timing noise)
    timed_costs: list[str] = field(default_factory=list)
    # the seconds its cost is drawn from (e.g. small_writes): findings sharing a pool lose the same
    # seconds, offered two ways; they are said to overlap and never summed (Diagnosis.lost_s)
    time_pools: tuple[str, ...] = ()
    source: str = ""  # file:line
    depends_on: set[str] = field(default_factory=set)  # codes used in fired()
    # inputs (repository paths; corpus/... in the shared corpus) it fires on and stays silent on,
    # checked by tests/test_rule_fixtures.py
    tests: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def expressions(self) -> list[expr.Node]:
        nodes = [self.condition, self.cost, self.files, self.ranks]
        return [n for n in nodes if n is not None] + self.fix_expressions()

    def fix_expressions(self) -> list[expr.Node]:
        return [v for alternative in self.fix or [] for v in alternative.values() if isinstance(v, expr.Node)]


# ---------------------------------------------------------------- YAML with line numbers

class _Where:
    def __init__(self, path: str):
        self.path = path

    def at(self, node: yaml.Node | None) -> str:
        return f"{self.path}:{node.start_mark.line + 1}" if node is not None else self.path


def _construct(node: yaml.Node) -> Any:
    import yaml

    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _fields(node: yaml.MappingNode) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    import yaml

    return {k.value: (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def load_file(path: Path | str, text: str | None = None) -> list[Rule]:
    """Rules of one YAML file; ConfigError with file:line for any mistake."""
    import yaml  # here, not at the top: a cached catalogue needs no YAML

    # libyaml (C) composes 20x faster than the pure-Python loader and keeps line marks.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    path = str(path)
    where = _Where(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read rule file: {exc}") from None
    try:
        root = yaml.compose(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: YAML syntax error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: YAML error: {exc}") from None
    if root is None:
        return []
    if not isinstance(root, yaml.SequenceNode):
        raise ConfigError(f"{where.at(root)}: a rule file is a list of rule entries")
    return [_rule(entry, where) for entry in root.value]


def _rule(node: yaml.Node, where: _Where) -> Rule:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{where.at(node)}: a rule entry must be a mapping")
    fields = _fields(node)
    for key, (knode, _) in fields.items():
        if key not in REQUIRED and key not in OPTIONAL:
            raise ConfigError(f"{where.at(knode)}: unknown rule field '{key}'")
    for key in REQUIRED:
        if key not in fields:
            raise ConfigError(f"{where.at(node)}: rule is missing '{key}'")
    value = {k: _construct(v) for k, (_, v) in fields.items()}
    at = {k: where.at(v) for k, (_, v) in fields.items()}

    def need(key: str, ok: bool, what: str) -> None:
        if not ok:
            raise ConfigError(f"{at.get(key, where.at(node))}: '{key}' must be {what}")

    code = value["code"]
    need("code", isinstance(code, str) and bool(CODE.match(code)), "letters then 3 digits, e.g. IO001")
    for key in ("name", "title", "message", "condition"):
        need(key, isinstance(value[key], str) and value[key].strip() != "", "non-empty text")
    need("category", value["category"] in CATEGORIES, "one of " + ", ".join(CATEGORIES))
    need("severity", value["severity"] in SEVERITIES, "one of " + ", ".join(SEVERITIES))
    rec = value["recommendation"]
    need("recommendation", isinstance(rec, dict) and isinstance(rec.get("text"), str)
         and set(rec) <= {"text", "commands"}
         and all(isinstance(c, str) for c in rec.get("commands", []) or []),
         "a mapping with 'text' and a list of 'commands'")
    docs = value["docs"]
    need("docs", isinstance(docs, dict) and set(docs) == set(DOC_PARTS)
         and all(isinstance(v, str) for v in docs.values()), "a mapping with " + ", ".join(DOC_PARTS))
    thresholds = value.get("thresholds") or {}
    need("thresholds", isinstance(thresholds, dict), "a mapping of names to numbers")
    try:
        thresholds = {str(k): quantity(v) for k, v in thresholds.items()}
    except ValueError as exc:
        raise ConfigError(f"{at['thresholds']}: {exc}") from None
    evidence = value.get("evidence") or []
    need("evidence", isinstance(evidence, list) and all(isinstance(e, str) for e in evidence),
         "a list of fact names")
    inputs = value.get("inputs") or ["darshan"]
    need("inputs", isinstance(inputs, list) and set(inputs) <= set(INPUT_KINDS),
         "a list of " + ", ".join(INPUT_KINDS))
    refs = value.get("references") or []
    need("references", isinstance(refs, list) and all(isinstance(r, str) for r in refs), "a list of text")
    kind = value.get("evidence_kind")
    need("evidence_kind", kind in EVIDENCE_KINDS or (kind is None and value.get("cost") is None),
         "one of " + ", ".join(EVIDENCE_KINDS) + " (what the cost rests on: compared times, or counted "
         "operations and bytes; every rule with a cost states it)")
    timed = value.get("timed_costs") or []
    need("timed_costs", isinstance(timed, list) and all(isinstance(t, str) for t in timed)
         and (not timed or (kind == "counts" and value.get("cost") is not None)),
         "a list of fact names in a counted cost whose values are timings")
    pools = value.get("time_pools") or []
    need("time_pools", isinstance(pools, list) and all(isinstance(p, str) and POOL.match(p) for p in pools)
         and (not pools or value.get("cost") is not None),
         "a list of snake_case names of the seconds a rule with a cost draws from")
    tests = value.get("tests") or {}
    need("tests", isinstance(tests, dict) and set(tests) <= set(FIXTURE_KINDS)
         and all(isinstance(v, list) and all(isinstance(p, str) and p for p in v) for v in tests.values()),
         "a mapping of fires and silent to lists of input paths")
    fix = value.get("fix")
    alternatives = fix if isinstance(fix, list) else [] if fix is None else [fix]
    need("fix", (fix is None or bool(alternatives))
         and all(isinstance(a, dict) and isinstance(a.get("transform"), str) for a in alternatives)
         and all("when" in a for a in alternatives[:-1]),
         "null, a mapping with 'transform', or a list of them where all but the last have a 'when' condition")

    def parse(key: str, text: Any) -> expr.Node | None:
        if text is None:
            return None
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            text = repr(text)
        need(key, isinstance(text, str), "an expression")
        try:
            return expr.parse(text)
        except expr.ExprError as exc:
            raise ConfigError(f"{at[key]}: bad {key} expression: {exc}") from None

    for alternative in alternatives:
        _check_fix(alternative, at["fix"])
    fix = [{k: parse("fix", v) if k == "when" else parse("fix", v[1:]) if isinstance(v, str) and v.startswith("=")
            else v for k, v in alternative.items()} for alternative in alternatives] or None
    rule = Rule(
        code=code, name=value["name"], title=value["title"], category=value["category"],
        severity=value["severity"], condition=parse("condition", value["condition"]),
        condition_text=value["condition"], message=value["message"],
        recommendation={"text": rec["text"], "commands": list(rec.get("commands") or [])},
        docs=docs, thresholds=thresholds, cost=parse("cost", value.get("cost")),
        cost_text=str(value.get("cost") or ""), evidence=evidence,
        files=parse("files", value.get("files")), ranks=parse("ranks", value.get("ranks")),
        fix=fix, references=refs, inputs=tuple(inputs),
        cost_sets_severity=bool(value.get("cost_sets_severity", True)),
        evidence_kind=kind or "counts", timed_costs=timed, time_pools=tuple(pools), source=where.at(node),
        tests={k: tuple(v) for k, v in tests.items()},
    )
    _check_names(rule, at)
    return rule


def _check_fix(fix: dict[str, Any], at: str) -> None:
    """A fix names a transform of the replayer and only its parameters; a literal value has the
    parameter's type (an '=expression' is sized per job, so checked when the rule fires)."""
    name = fix["transform"]
    if name not in FIXES:
        raise ConfigError(f"{at}: unknown fix transform '{name}' (the replayer's: {', '.join(FIXES)})")
    params = FIXES[name][1]
    for key, value in fix.items():
        if key in ("transform", "when"):
            continue
        if key not in params:
            known = ", ".join(params) or "none"
            raise ConfigError(f"{at}: fix '{name}' has no parameter '{key}' (its parameters: {known})")
        if isinstance(value, str) and value.startswith("="):
            continue
        try:
            params[key](value)
        except (TypeError, ValueError):
            raise ConfigError(f"{at}: fix '{name}': {key} must be {KINDS.get(params[key], params[key].__name__)}, "
                              f"got {value!r}") from None


def _check_names(rule: Rule, at: dict[str, str]) -> None:
    facts = registry()
    clash = set(rule.thresholds) & set(facts)
    if clash:
        raise ConfigError(f"{at['thresholds']}: threshold '{sorted(clash)[0]}' has the name of a fact")
    for key, node in (("condition", rule.condition), ("cost", rule.cost), ("files", rule.files),
                      ("ranks", rule.ranks)):
        _check_expr(rule, key, node, at)
    for node in rule.fix_expressions():
        _check_expr(rule, "fix", node, at)
    for name in rule.evidence:
        if name not in facts and name not in PARAMS:  # facts and parameters declare their unit kind
            raise ConfigError(f"{at['evidence']}: unknown fact '{name}' in evidence")
    for name in rule.timed_costs:
        if name not in expr.names(rule.cost):
            raise ConfigError(f"{at['timed_costs']}: '{name}' is not a fact of the cost")
    known = set(rule.evidence) | set(rule.thresholds) | TEMPLATE_NAMES
    kinds = {**{n: facts[n].kind for n in rule.evidence if n in facts},
             **{n: PARAMS[n].kind for n in rule.evidence if n in PARAMS}, **TEMPLATE_KINDS}
    render.check(rule.message, known, at["message"], kinds)
    render.check(rule.recommendation["text"], known, at["recommendation"], kinds)
    for command in rule.recommendation["commands"]:
        render.check(command, known, at["recommendation"], kinds)


def _check_expr(rule: Rule, key: str, node: expr.Node | None, at: dict[str, str]) -> None:
    if node is None:
        return
    facts = registry()
    for name in sorted(expr.names(node)):
        if name not in facts and name not in rule.thresholds and name not in PARAMS:
            raise ConfigError(f"{at[key]}: unknown fact or threshold '{name}' in {key}")
    for call in expr.calls(node):
        if call.func == "fired":
            arg = call.args[0] if len(call.args) == 1 else None
            if not (isinstance(arg, expr.Const) and isinstance(arg.value, str)):
                raise ConfigError(f"{at[key]}: fired() takes one rule code in quotes")
            rule.depends_on.add(arg.value)
        elif call.func not in FUNCTIONS:
            raise ConfigError(f"{at[key]}: unknown function '{call.func}' in {key}")


# ---------------------------------------------------------------- the catalogue

@dataclass
class Catalogue:
    """All rules, in an order where every rule comes after the rules it names in fired()."""

    rules: list[Rule]
    # the module defining each fact and parameter: with a cached catalogue the engine imports only
    # the fact modules of the names it asks for (advisor.facts.use_index)
    defined_by: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_code = {r.code: r for r in self.rules}

    def get(self, code: str) -> Rule | None:
        return self.by_code.get(code.upper())


def rule_files() -> list[Path]:
    """The YAML files of the installed catalogue."""
    # The package's folder from its spec: importlib.resources.files() gives the same folder but
    # imports zipfile and its readers for it (~10 ms of a one-log diagnosis's CPU).
    spec = importlib.util.find_spec("advisor._rules")
    if spec is not None and spec.origin and spec.submodule_search_locations:
        root = Path(spec.origin).parent
    else:  # a namespace or zipped package: what importlib.resources makes of it
        from importlib import resources

        root = resources.files("advisor._rules")
    return sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith((".yaml", ".yml")))


def build_catalogue(rules: list[Rule]) -> Catalogue:
    """Check codes are unique, fired() targets exist and have no cycle; order by dependency."""
    seen: dict[str, Rule] = {}
    for rule in rules:
        if rule.code in seen:
            raise ConfigError(f"{rule.source}: rule code {rule.code} already defined at {seen[rule.code].source}")
        seen[rule.code] = rule
    for rule in rules:
        for dep in sorted(rule.depends_on):
            if dep not in seen:
                raise ConfigError(f"{rule.source}: fired('{dep}') names no rule")
    ordered: list[Rule] = []
    state: dict[str, int] = {}

    def visit(rule: Rule, chain: list[str]) -> None:
        if state.get(rule.code) == 2:
            return
        if state.get(rule.code) == 1:
            raise ConfigError(f"{rule.source}: fired() cycle: {' -> '.join(chain + [rule.code])}")
        state[rule.code] = 1
        for dep in sorted(rule.depends_on):
            visit(seen[dep], chain + [rule.code])
        state[rule.code] = 2
        ordered.append(rule)

    for rule in rules:
        visit(rule, [])
    return Catalogue(ordered, index())


def load_catalogue(paths: list[Path] | None = None) -> Catalogue:
    """The rule catalogue from `paths` (default: every installed rule file)."""
    if paths is None:
        return _installed()
    rules: list[Rule] = []
    for path in paths:
        rules.extend(load_file(path))
    return build_catalogue(rules)


@lru_cache(maxsize=1)
def _installed() -> Catalogue:
    from advisor.engine import cache

    files = rule_files()
    catalogue = cache.cached(files, lambda: load_catalogue(files))
    use_index(catalogue.defined_by)
    return catalogue
