"""Forward chaining over one job: which rules fire, in which order, with what cost, severity,
message and fix; what is reported as not checked and why (rules written here, facts computed
on a hand-built profile)."""

from __future__ import annotations

import textwrap

import pytest

from advisor.config import from_dict
from advisor.engine import chain
from advisor.engine.rules import build_catalogue, load_file
from tests.profiles import facts, job, module
from tests.test_facts_access import RANKS, _posix

RULES = """\
- code: TST001
  name: random-reads
  title: Random reads
  category: random-access
  severity: high
  thresholds: {min_count: 10}
  condition: random_read_count >= min_count
  cost: random_read_cost_s
  evidence_kind: counts
  evidence: [random_read_count]
  files: random_files
  message: "{{ random_read_count }} random reads"
  recommendation: {text: "read in order", commands: ["echo {{ min_count }}", "{% if false %}never{% endif %}"]}
  fix: {transform: sequential}
  docs: {what: w, why: y, how: h, example: e}
- code: TST002
  name: after-random
  title: Follows TST001
  category: random-access
  severity: info
  condition: fired('TST001')
  message: "chained"
  recommendation: {text: t, commands: []}
  fix: null
  docs: {what: w, why: y, how: h, example: e}
- code: TST003
  name: instead-of-random
  title: Only without TST001
  category: random-access
  severity: warn
  condition: not fired('TST001')
  message: "never here"
  recommendation: {text: t, commands: []}
  fix: null
  docs: {what: w, why: y, how: h, example: e}
- code: TST004
  name: needs-nodes
  title: Needs the node count
  category: imbalance
  severity: warn
  condition: compute_nodes > 1
  message: "m"
  recommendation: {text: t, commands: []}
  fix: null
  docs: {what: w, why: y, how: h, example: e}
- code: TST005
  name: ior-only
  title: For IOR runs
  category: small-io
  severity: warn
  inputs: [ior]
  condition: "true"
  message: "m"
  recommendation: {text: t, commands: []}
  fix: null
  docs: {what: w, why: y, how: h, example: e}
"""


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "t.yaml"
    path.write_text(textwrap.dedent(RULES))
    # listed with the chained rules first: the catalogue orders them after their premise
    rules = load_file(path)
    return build_catalogue(rules[1:3] + rules[:1] + rules[3:])


def _run(catalogue, config=None, runtime_s=10.0):
    ctx = facts(job(_posix(), nprocs=RANKS, runtime_s=runtime_s), config)
    return ctx, chain.run(catalogue, ctx, "darshan", runtime_s)


def test_rules_fire_in_dependency_order_with_their_cost_and_rendered_text(catalogue):
    ctx, out = _run(catalogue)
    assert [f.code for f in out.findings] == ["TST001", "TST002"] and out.errors == []
    first = out.findings[0]
    assert first.cost_s == pytest.approx(ctx.get("random_read_cost_s"))
    assert first.evidence == {"random_read_count": 40, "cost_share": pytest.approx(first.cost_s / 10.0, abs=1e-6)}
    assert first.message == "40 random reads" and first.files == ["/scratch/f1"]
    assert first.recommendation.commands == ["echo 10"]  # a command rendered blank does not apply
    assert first.fix == {"transform": "sequential"}
    assert first.confidence["reason"].startswith("counted (random_read_count 40)")
    assert out.findings[1].severity == "info" and out.findings[1].cost_s == 0  # declared, no cost


def test_a_rule_whose_fact_is_unknown_is_not_checked_with_the_reason(catalogue):
    _, out = _run(catalogue)
    (nc,) = out.not_checked
    assert nc.check == "TST004 needs-nodes" and "number of compute nodes is unknown" in nc.reason


def test_site_thresholds_override_the_rules_and_the_chain_follows(catalogue):
    _, out = _run(catalogue, from_dict({"thresholds": {"TST001": {"min_count": 1000}}}))
    assert [f.code for f in out.findings] == ["TST003"]


def test_severity_follows_the_share_of_the_run_the_cost_is(catalogue):
    graded = {}
    for runtime_s in (2.0, 10.0, 50.0, 1e6):  # the same 0.4 s: 20 %, 4 %, 0.8 %, 0.00004 % of the run
        _, out = _run(catalogue, runtime_s=runtime_s)
        graded[runtime_s] = [(f.code, f.severity) for f in out.findings]
    assert graded == {2.0: [("TST001", "high"), ("TST002", "info")], 10.0: [("TST001", "warn"), ("TST002", "info")],
                      50.0: [("TST001", "info"), ("TST002", "info")],
                      1e6: [("TST003", "warn")]}  # too small to be a finding: its dependants follow


def test_json_ready_turns_numpy_and_tuples_into_plain_values():
    import numpy as np

    assert chain.json_ready({"a": np.int64(3), "b": (np.float32(0.5), [np.bool_(True)])}) == \
        {"a": 3, "b": [0.5, [True]]}


LISTING = """\
- code: TST006
  name: many-small-files
  title: Many small files
  category: metadata
  severity: warn
  condition: len(small_files) > 0
  files: small_files
  message: "{{ files | length }} small files"
  recommendation: {text: t, commands: []}
  fix: null
  docs: {what: w, why: y, how: h, example: e}
"""


def test_a_finding_lists_the_first_files_and_counts_them_all(tmp_path):
    """8,000 small files: the message counts 8,000, the finding lists 50 and says 8,000 (mdtest: the
    terminal said 'and 7 more' of a list cut at 10)."""
    path = tmp_path / "t.yaml"
    path.write_text(LISTING)
    files = [(i, i % RANKS, {"POSIX_OPENS": 1, "POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 100,
                             "POSIX_F_META_TIME": 0.01}) for i in range(1, 8001)]
    ctx = facts(job(module("POSIX", files), nprocs=RANKS, runtime_s=10.0))
    (found,) = chain.run(build_catalogue(load_file(path)), ctx, "darshan", 10.0).findings
    assert found.message == "8000 small files"
    assert len(found.files) == chain.MAX_LISTED and found.files_total == found.file_count == 8000
    assert found.ranks == [] and found.ranks_total is None and found.rank_count == 0
