"""Every labelled case diagnosed right: what must be flagged is (warn or high), no false high.

The labels are the corpus's traps (../shared/corpus/traps/LABELS.tsv) and ours for the generated
cases (bench/labels/generated.tsv) and for real applications' logs (bench/labels/applications.tsv,
which also name the fixes that must not be proposed: what the job already does); bench/accuracy.py
prints the same scores beside Drishti's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from advisor import api
from advisor.config import SiteConfig
from tests.conftest import CORPUS
from tests.helpers import require

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import labels  # noqa: E402  (bench/labels.py: shared with bench/accuracy.py)

CASES = {c.name: c for c in labels.all_cases(CORPUS)}
TRAPS = ("T01", "T02", "T03", "T04", "T05", "T06", "T07")


def test_every_trap_is_labelled_and_found(corpus):
    assert set(TRAPS) <= set(CASES), sorted(set(TRAPS) - set(CASES))


def test_scoring_counts_misses_and_false_highs():
    case = labels.Case("x", Path("x"), frozenset({"small-io", "stdio"}), frozenset({"imbalance"}))
    s = labels.score(case, [("small-io", "warn"), ("stdio", "info"), ("imbalance", "high")])
    assert (s.missed, s.false_high, s.right) == ({"stdio"}, {"imbalance"}, False)
    assert labels.score(case, [("small-io", "high"), ("stdio", "warn"), ("imbalance", "warn")]).right


def test_scoring_counts_fixes_the_job_already_applies():
    case = labels.Case("x", Path("x"), frozenset(), frozenset(), must_not_propose=frozenset({"collective"}))
    assert labels.score(case, [], proposed={"collective", "hints"}).wrong_fixes == {"collective"}
    assert labels.score(case, [], proposed={"hints"}).right


def test_real_applications_are_labelled(corpus):
    apps = [c for c in CASES.values() if c.group == "applications"]
    assert len(apps) >= 9 and any(c.must_not_propose for c in apps)


@pytest.mark.parametrize("name", sorted(CASES) or ["(none)"])
def test_labelled_case_is_diagnosed_right(corpus, name):
    require(name in CASES, "no labelled cases in the corpus")
    case = CASES[name]
    d = api.diagnose_path(case.log, SiteConfig())
    assert d.error is None, d.error
    s = labels.score(case, [(f.category, f.severity) for f in d.findings],
                     proposed={fix.fix["transform"] for fix in d.fixes()})
    shown = [f"{f.severity} {f.code} {f.category}: {f.message[:120]}" for f in d.sorted_findings()]
    assert not s.missed, f"{name}: not flagged {sorted(s.missed)}; findings: {shown}"
    assert not s.false_high, f"{name}: false high {sorted(s.false_high)}; findings: {shown}"
    assert not s.wrong_fixes, f"{name}: proposes what the job already does {sorted(s.wrong_fixes)}; findings: {shown}"
