"""Rule files: every mistake is rejected at load time with file and line."""

from __future__ import annotations

import textwrap

import pytest

from advisor.engine.expr import Node
from advisor.engine.rules import build_catalogue, load_catalogue, load_file
from advisor.errors import ConfigError

GOOD = """\
- code: TST001
  name: test-rule
  title: A test rule
  category: small-io
  severity: warn
  thresholds: {min_count: 10}
  condition: small_write_count >= min_count
  cost: small_write_cost_s
  evidence_kind: counts
  evidence: [small_write_count]
  message: "{{ small_write_count }} small writes"
  recommendation: {text: do less, commands: ["echo {{ min_count }}"]}
  fix: null
  docs: {what: w, why: y, how: h, example: e}
"""


def _load(tmp_path, text, name="r.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return load_file(path)


def test_good_rule_loads(tmp_path):
    (rule,) = _load(tmp_path, GOOD)
    assert rule.code == "TST001" and rule.thresholds == {"min_count": 10}
    assert rule.source.endswith("r.yaml:1")


@pytest.mark.parametrize("change,line,words", [
    (("condition: small_write_count >= min_count", "condition: small_write_count >="), 7, "bad condition"),
    (("condition: small_write_count >= min_count", "condition: no_such_fact > 1"), 7,
     "unknown fact or threshold 'no_such_fact'"),
    (("evidence: [small_write_count]", "evidence: [nope]"), 10, "unknown fact 'nope'"),
    (("category: small-io", "category: sloth"), 4, "'category' must be"),
    (("severity: warn", "severity: critical"), 5, "'severity' must be"),
    (("  fix: null", "  fixx: null"), 13, "unknown rule field 'fixx'"),
    (("message: \"{{ small_write_count }} small writes\"", "message: \"{{ secret }}\""), 11, "template uses 'secret'"),
    (("evidence_kind: counts", "evidence_kind: vibes"), 9, "'evidence_kind' must be one of timing, counts"),
    (("  evidence_kind: counts\n", ""), 1, "every rule with a cost states it"),
    (("cost: small_write_cost_s", "cost: fired('ZZZ999')"), 1, "names no rule"),
    (("condition: small_write_count >= min_count", "condition: eval('1')"), 7, "unknown function 'eval'"),
    (("  fix: null", "  fix: {transform: coalesse}"), 13, "unknown fix transform 'coalesse'"),
    (("  fix: null", "  fix: {transform: coalesce, size: 4096}"), 13, "no parameter 'size'"),
    (("  fix: null", "  fix: {transform: coalesce, transfer_size: \"=nope(\"}"), 13, "bad fix expression"),
    (("  fix: null", "  fix: {transform: stripe, count: many}"), 13, "count must be int, got 'many'"),
    (("  fix: null", "  fix: [{transform: sequential}, {transform: coalesce}]"), 13, "all but the last have a 'when'"),
    (("  fix: null", "  fix: [{when: \"nope >\", transform: sequential}, {transform: coalesce}]"), 13,
     "bad fix expression"),
    (("  fix: null", "  fix: [{when: nope > 1, transform: sequential}, {transform: coalesce}]"), 13,
     "unknown fact or threshold 'nope'"),
    (("  fix: null", "  fix: null\n  tests: {fires: traces/x.darshan}"), 14, "'tests' must be a mapping of fires"),
    (("  fix: null", "  fix: null\n  tests: {passes: [traces/x.darshan]}"), 14, "'tests' must be a mapping of fires"),
])
def test_mistakes_name_file_and_line(tmp_path, change, line, words):
    text = GOOD.replace(*change)
    with pytest.raises(ConfigError) as err:
        build_catalogue(_load(tmp_path, text))
    assert f"r.yaml:{line}" in str(err.value) and words in str(err.value)


def test_a_fix_the_replayer_knows_loads(tmp_path):
    text = GOOD.replace("  fix: null", "  fix: {transform: coalesce, transfer_size: \"=min_count * 4096\"}")
    (rule,) = _load(tmp_path, text)
    assert rule.fix[0]["transform"] == "coalesce"


def test_a_fix_with_alternatives_loads_each_checked(tmp_path):
    text = GOOD.replace("  fix: null", "  fix: [{when: small_write_count > min_count, transform: coalesce},\n"
                                       "        {transform: align, boundary: 4096}]")
    first, last = _load(tmp_path, text)[0].fix
    assert first["transform"] == "coalesce" and isinstance(first["when"], Node) and "when" not in last


def test_yaml_syntax_error_has_line(tmp_path):
    with pytest.raises(ConfigError, match=r"r\.yaml:3: YAML syntax error"):
        _load(tmp_path, "- code: X001\n  name: a\n  title: a: b\n")


def test_duplicate_codes_and_cycles(tmp_path):
    rules = _load(tmp_path, GOOD) + _load(tmp_path, GOOD, "s.yaml")
    with pytest.raises(ConfigError, match="already defined"):
        build_catalogue(rules)
    a = GOOD.replace("condition: small_write_count >= min_count", "condition: fired('TST002')")
    b = a.replace("TST001", "TST002").replace("fired('TST002')", "fired('TST001')")
    with pytest.raises(ConfigError, match="cycle"):
        build_catalogue(_load(tmp_path, a) + _load(tmp_path, b, "s.yaml"))


def test_chained_rules_are_ordered_after_their_premises(tmp_path):
    later = GOOD.replace("TST001", "TST002").replace(
        "condition: small_write_count >= min_count", "condition: fired('TST001')")
    catalogue = build_catalogue(_load(tmp_path, later, "a.yaml") + _load(tmp_path, GOOD, "b.yaml"))
    assert [r.code for r in catalogue.rules] == ["TST001", "TST002"]


def test_installed_catalogue_loads_and_is_complete():
    catalogue = load_catalogue()
    codes = {r.code for r in catalogue.rules}
    for code in ("IO001", "IO002", "IO003", "IO010", "IO020", "IO030", "MPI001", "MPI003", "MD001",
                 "MD010", "IMB001", "IMB002", "IMB003", "LUS001", "LUS002", "LUS004", "LUS010",
                 "SUB001", "DAR001"):
        assert code in codes
    for rule in catalogue.rules:
        assert all(rule.docs[p].strip() for p in ("what", "why", "how", "example")), rule.code
