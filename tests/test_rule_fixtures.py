"""Every rule's own fixtures (`tests: {fires: [...], silent: [...]}` in its entry in rules/*.yaml):
the rule fires on each `fires` input and stays silent on each `silent` one. Paths are the
repository's, or the shared corpus's under `corpus/`."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from advisor import pipeline
from advisor.config import SiteConfig
from advisor.engine.rules import load_catalogue
from tests.conftest import CORPUS
from tests.helpers import require

REPO = Path(__file__).resolve().parents[1]
CASES = [(rule.code, kind, path) for rule in load_catalogue().rules
         for kind, paths in sorted(rule.tests.items()) for path in paths]


def resolve(path: str) -> Path:
    """A fixture path: under the shared corpus when it starts with corpus/, else the repository's."""
    return CORPUS / path.removeprefix("corpus/") if path.startswith("corpus/") else REPO / path


@cache
def found(path: str) -> frozenset[str]:
    """The codes of the findings of one input (each input diagnosed once per session)."""
    file = resolve(path)
    require(file.exists(), f"rule fixture {file} not found")
    (result,) = pipeline.run([file], pipeline.Stages(), SiteConfig()).results
    assert result.diagnosis.error is None, result.diagnosis.error
    return frozenset(f.code for f in result.diagnosis.findings)


@pytest.mark.parametrize("code, kind, path", CASES, ids=[f"{c}-{k}-{Path(p).parent.name or p}" for c, k, p in CASES])
def test_rule_fires_on_its_fixtures_and_stays_silent_on_the_others(code, kind, path):
    codes = found(path)
    if kind == "fires":
        assert code in codes, f"{code} does not fire on {path} (found: {sorted(codes)})"
    else:
        assert code not in codes, f"{code} fires on {path}, named as an input it must stay silent on"


def test_fixture_entries_name_existing_kinds_and_no_input_twice():
    for rule in load_catalogue().rules:
        fires, silent = set(rule.tests.get("fires", ())), set(rule.tests.get("silent", ()))
        assert not fires & silent, f"{rule.code}: {sorted(fires & silent)} both fires and silent"
