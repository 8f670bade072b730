"""Findings in one order everywhere: by severity, then by the time they cost (issue 13, item 6).

The case: s_big_dxt_1k with the shipped model, whose predictions (one per fix, shared by the
findings proposing it) once reordered the findings: IO004 (172 ms) came before MPI002 (924 ms).
"""

from __future__ import annotations

import io
import json
import re

import pytest
from click.testing import CliRunner

from advisor.commands.diagnose import command
from advisor.findings import SEVERITY_RANK, Diagnosis
from advisor.hooks.runner import render
from advisor.report.html import render_html
from advisor.report.terminal import console, print_report
from tests.conftest import CORPUS
from tests.helpers import require

LOG = CORPUS / "generated" / "s_big_dxt_1k" / "case.darshan"


@pytest.fixture(scope="module")
def diagnosis() -> Diagnosis:
    require(LOG.exists(), f"corpus log {LOG} not found")
    done = CliRunner().invoke(command, ["--model", "default", str(LOG), "--json", "-"], catch_exceptions=False)
    assert done.exit_code in (0, 1), done.output
    return Diagnosis.from_dict(json.loads(done.stdout))


def _expected(d: Diagnosis) -> list[str]:
    return [f.code for f in sorted(d.findings, key=lambda f: (SEVERITY_RANK[f.severity], -f.cost_s))]


def test_the_case_has_predictions_that_disagree_with_the_costs(diagnosis):
    by_saving = sorted((f for f in diagnosis.findings if f.severity == "warn" and f.prediction),
                       key=lambda f: -(f.prediction.time_saved_s or 0))
    assert [f.code for f in by_saving] != [f.code for f in sorted(by_saving, key=lambda f: -f.cost_s)]


def test_json_terminal_html_and_hook_list_findings_by_severity_then_cost(diagnosis):
    expected = _expected(diagnosis)
    assert [f["code"] for f in diagnosis.to_dict()["findings"]] == expected
    buffer = io.StringIO()
    print_report(diagnosis, console(buffer))
    shown = re.findall(r"^ (?:HIGH|WARN|INFO)\s+([A-Z]+\d{3}) ", buffer.getvalue(), re.M)
    assert shown == expected
    html = render_html([diagnosis])
    cards = re.findall(r'<article class="finding[^"]*" id="[^"]+"[^>]*>\s*<header>\s*<span[^>]*>[a-z]+</span>\s*'
                       r'<span class="code">([A-Z]+\d{3})</span>', html)
    assert cards == expected
    hook_json, _ = render([diagnosis], ["json"])
    assert [f["code"] for f in json.loads(hook_json["json"])["findings"]] == expected
