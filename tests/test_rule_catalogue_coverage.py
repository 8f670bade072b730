"""Every rule of the catalogue is named in a test: adding a rule means adding its test."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.engine.rules import load_catalogue

TESTS = Path(__file__).parent


# Files that name codes without exercising them (this one; the catalogue's presence check).
NOT_RULE_TESTS = {"test_rule_catalogue_coverage.py", "test_engine_rules.py"}


def _codes_named_in_tests() -> set[str]:
    text = "\n".join(p.read_text(errors="replace") for p in TESTS.rglob("*.py") if p.name not in NOT_RULE_TESTS)
    return set(re.findall(r"\b[A-Z]{2,4}\d{3}\b", text))


def test_every_rule_has_a_test():
    codes = [r.code for r in load_catalogue().rules]
    missing = sorted(set(codes) - _codes_named_in_tests())
    assert not missing, (f"rules without a test that names them: {', '.join(missing)} "
                         "(add a test that makes each fire and checks its evidence, and one where it stays silent)")


def test_catalogue_is_not_empty():
    assert len(load_catalogue().rules) > 50
