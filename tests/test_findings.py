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
