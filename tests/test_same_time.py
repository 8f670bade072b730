"""Findings whose costs are drawn from the same seconds (a rule's `time_pools`) say so, on every
reporter, and the job's loss counts them once."""

from __future__ import annotations

import io
import json

import jsonschema
import pytest

from advisor import api
from advisor.engine.rules import load_file
from advisor.errors import ConfigError
from advisor.findings import Diagnosis, Finding
from advisor.report.html import render_html
from advisor.report.terminal import console, print_report
from tests.conftest import CORPUS, REPO
from tests.helpers import require

SCHEMA = json.loads((REPO / "advisor" / "schemas" / "diagnosis-v1.json").read_text())


@pytest.fixture(scope="module")
def segments() -> Diagnosis:
    """IOR -s 16 -t 4k on one shared file: small writes (IO001, IO003, MPI002), small reads (IO002,
    IO004) and the slowest rank's excess (IMB003), 0.081 s of I/O per process."""
    path = CORPUS / "generated" / "h3_segments_s16" / "case.darshan"
    require(path.exists(), f"corpus log {path} not found")
    return api.diagnose_path(path)


def test_findings_of_one_pool_name_each_other_and_no_other(segments):
    same = {f.code: set(f.same_time_as) for f in segments.findings}
    assert same["IO001"] == {"IO003", "MPI002"} and same["IO003"] == {"IO001", "MPI002"}
    assert same["IO002"] == {"IO004", "MPI002"}  # reads: another pool, joined by MPI002 (both)
    assert same["IMB003"] == set()  # the slowest rank's excess is other seconds
    assert all(code in same[other] for code, others in same.items() for other in others)


def test_the_jobs_loss_counts_a_pool_once(segments):
    """Summed, the findings claim every second of the job's I/O (0.081 s: the cap held it there);
    a pool counted once at its largest (MPI002, small writes and reads: 0.027 s) plus the slowest
    rank's excess (0.015 s) is what they lose together."""
    cost = {f.code: f.cost_s for f in segments.findings}
    assert sum(cost.values()) > segments.summary["io_time_s"]
    assert segments.lost_s() == pytest.approx(cost["MPI002"] + cost["IMB003"])


def test_unlinked_costs_still_add_up_to_the_io_time_cap():
    a = Finding(code="IO001", category="small-io", severity="warn", title="t", message="m", cost_s=2.0)
    b = Finding(code="IO003", category="small-io", severity="warn", title="t", message="m", cost_s=3.0)
    d = Diagnosis(source={"path": "x"}, job={"runtime_s": 100.0}, summary={"io_time_s": 10.0}, findings=[a, b])
    assert d.lost_s() == 5.0
    a.same_time_as, b.same_time_as = ["IO003"], ["IO001"]
    assert d.lost_s() == 3.0


def test_every_reporter_says_it(segments):
    doc = json.loads(json.dumps(segments.to_dict()))
    jsonschema.validate(doc, SCHEMA)
    assert {f["code"]: f["same_time_as"] for f in doc["findings"]}["IO003"] == ["IO001", "MPI002"]
    buffer = io.StringIO()
    print_report(segments, console(buffer))
    text = " ".join(buffer.getvalue().split())  # lines wrap at the terminal's width
    assert "the same seconds as IO001, MPI002: another way to win them back, not more" in text
    assert "the same seconds as IO003, MPI002" in render_html([segments])


@pytest.mark.parametrize("edit", [
    ("time_pools: [small_writes]", "time_pools: [Small-Writes]"),  # not a snake_case name
    ("  cost: small_write_cost_s\n", ""),  # a pool of seconds without a cost drawn from it
])
def test_a_pool_is_a_name_of_a_costed_rule(tmp_path, edit):
    entry = "- code: " + (REPO / "rules" / "requests.yaml").read_text().split("\n- code: ")[1]
    assert edit[0] in entry
    bad = tmp_path / "r.yaml"
    bad.write_text(entry.replace(*edit))
    with pytest.raises(ConfigError, match="time_pools"):
        load_file(bad)
    bad.write_text(entry)
    assert [r.time_pools for r in load_file(bad)] == [("small_writes",)]  # the entry as shipped loads
