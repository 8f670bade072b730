"""The result model: typed predictions survive the JSON round trip; a failed input's diagnosis."""

from __future__ import annotations

import json

from advisor.findings import Diagnosis, Finding, Prediction, diagnoses_json


def _finding(prediction) -> Finding:
    return Finding(code="IO001", category="small-io", severity="warn", title="t", message="m",
                   cost_s=2.0, fix={"transform": "coalesce", "transfer_size": 1 << 20}, prediction=prediction)


def test_a_prediction_survives_json_and_ranks_by_time_saved():
    saved = Prediction(speedup=3.5, interval=[2.0, 6.1], time_saved_s=5.0, model="bandwidth-rf",
                       extrapolated=True, extrapolation=["log2_nprocs"])
    d = Diagnosis(source={"path": "x"}, job={}, findings=[_finding(None), _finding(saved)])
    d.findings[0].code = "IO002"  # costs 2 s, no prediction: ranked after the fix saving 5 s
    back = Diagnosis.from_dict(json.loads(diagnoses_json([d])))
    assert [f.code for f in back.sorted_findings()] == ["IO001", "IO002"]
    assert back.sorted_findings()[0].prediction == saved
    assert back.to_dict()["summary"]["fixes"][0]["predicted_speedup"] == 3.5


def test_a_saved_prediction_from_elsewhere_is_read_defensively():
    doc = Diagnosis(source={"path": "x"}, job={}, findings=[_finding(None)]).to_dict()
    doc["findings"][0]["prediction"] = {"speedup": 2.0, "from_a_later_version": 1}
    assert Diagnosis.from_dict(doc).findings[0].prediction == Prediction(speedup=2.0)
    doc["findings"][0]["prediction"] = "not an object"
    assert Diagnosis.from_dict(doc).findings[0].prediction is None


def test_shown_leaves_out_what_says_nothing():
    assert Prediction(reason="metadata only").shown() == [("no prediction because", "text", "metadata only")]
    assert Prediction(speedup=2.0, baseline_mib_s=3.0).shown() == [("predicted speedup", "ratio", 2.0),
                                                                 ("bandwidth before", "rate", 3.0 * 2**20)]


def test_a_failed_input_names_itself():
    d = Diagnosis.failed("/logs/a.darshan", "/logs/a.darshan: not a Darshan log")
    doc = d.to_dict()
    assert doc["error"].endswith("not a Darshan log") and doc["source"]["path"] == "/logs/a.darshan"
    assert not d.findings and doc["job"]["nprocs"] == 0


def test_a_jobs_loss_does_not_count_overlapping_findings_twice():
    """The demo's findings describe the same small writes several times over (IO001, IO002, IO003,
    ...): their costs add up to more than the job spent in I/O. The hook and the fleet report
    the job's loss, which is capped by its I/O time but keeps the costliest finding whole."""
    from advisor.api import diagnose_path
    from tests.conftest import REPO

    d = diagnose_path(REPO / "traces" / "ior-small-shared-4k.darshan")
    costs = [f.cost_s for f in d.findings]
    io = d.summary["io_time_s"]
    assert sum(costs) > io  # the overlap the sum would count
    assert max(costs) <= d.lost_s() <= io
    straggler = Diagnosis(source={"path": "x"}, job={"runtime_s": 100.0}, summary={"io_time_s": 2.0},
                          findings=[_finding(None)])
    straggler.findings[0].cost_s = 8.0  # the slowest rank's excess, above the mean I/O time
    assert straggler.lost_s() == 8.0
