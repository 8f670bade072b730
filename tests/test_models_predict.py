"""A model in diagnosis: predictions on the findings' fixes (compared with the replayer's measured
speedups on generated corpus cases), the fixes' ranking, the anomaly rule, the site default, extrapolation."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from advisor import api
from advisor.config import SiteConfig, from_dict
from advisor.errors import ConfigError
from advisor.findings import SEVERITY_RANK
from advisor.models.check import compare, median_error
from advisor.models.predict import OUTSIDE, load
from advisor.pipeline import Stages, diagnose_profile
from tests.conftest import CORPUS
from tests.helpers import require

GEN = CORPUS / "generated"
COMPARED = ("b_small_io_shared_4k", "n_fsync_per_write_Y_4k", "d_mpiio_independent_256k")


def _diagnose(*args: str) -> dict:
    """`ioadvisor diagnose ARGS --json -` in this process (the model stays loaded between tests)."""
    from click.testing import CliRunner

    from advisor.commands.diagnose import command

    done = CliRunner().invoke(command, [*args, "--json", "-"], catch_exceptions=False)
    assert done.exit_code in (0, 1), done.output
    return json.loads(done.stdout)


def test_predicted_vs_measured_speedups_on_corpus_cases(corpus, tmp_path, record_property):
    """Predict each fix with the shipped model and replay it on the local file system; record both
    (bench/models.py prints the same comparison for more cases and more repetitions)."""
    require((Path(sys.executable).parent / "mpiexec").exists(), "no mpiexec in the venv (pip install mpich)")
    model = load("default")
    rows = []
    for case in COMPARED:
        found = compare(model, api.load(GEN / case / "case.darshan"), tmp_path, repeat=3, label=case)
        assert any(c.error is not None for c in found), (case, found)  # predicted and measured
        rows += found
    table = [{"case": c.job, "fix": c.fix, "predicted": c.predicted, "interval": c.interval,
              "measured": c.measured, "measured_ci95": c.measured_ci95, "error": c.error,
              "extrapolated": c.extrapolated, "verdict": c.verdict} for c in rows]
    record_property("models_comparison", json.dumps(table))
    (tmp_path / "comparison.json").write_text(json.dumps(table, indent=1))
    for row in table:
        print(f"{row['case']:28} {row['fix']['transform']:11} predicted {row['predicted']} "
              f"measured {row['measured']} error {row['error']}")
    med = median_error(rows)
    print(f"median absolute error {med:.1%} over {sum(r['error'] is not None for r in table)} fixes")
    record_property("models_median_error", med)
    assert math.isfinite(med)
    for c in rows:
        if c.predicted and c.interval:
            assert c.interval[0] <= c.predicted <= c.interval[1]
    # fsync after every write -> once at close is the largest effect in the corpus: both sides see it
    (fsync,) = [c for c in rows if c.job == "n_fsync_per_write_Y_4k" and c.fix["transform"] == "fsync"]
    assert fsync.predicted > 1.5 and fsync.measured > 1.5


def test_diagnose_with_the_default_model_predicts_ranks_and_flags(corpus):
    doc = _diagnose(str(GEN / "b_small_io_shared_4k" / "case.darshan"), "--model", "default")
    summary = doc["summary"]["model"]
    assert "calibration of" in summary["model"] and summary["trained_on"]
    assert summary["expected_mib_s"] > 0 and summary["measured_mib_s"] > 0
    with_fix = [f for f in doc["findings"] if f["fix"]]
    assert with_fix and all(f["prediction"] and f["prediction"]["model"] for f in with_fix)
    for f in with_fix:
        p = f["prediction"]
        # a number with its interval, or none and the reason: outside what the model measured
        assert (p["speedup"] > 0 and p["interval"][0] <= p["speedup"] <= p["interval"][1]
                or p["speedup"] is None and p["reason"].startswith(OUTSIDE)), p
        assert isinstance(p["extrapolation"], list) and p["extrapolated"] == bool(p["extrapolation"])
        assert p["np"] >= 1 and "time_saved_s" in p
    # the job ran 4 ranks, the model knows at most 2: the expectation says it is extrapolating
    assert any(e.startswith("log2_nprocs") for e in summary["extrapolation"])
    # findings by severity then time lost; a prediction is a fix's (shared by findings) and ranks the fixes
    keys = [(SEVERITY_RANK[f["severity"]], -f["cost_s"]) for f in doc["findings"]]
    assert keys == sorted(keys)
    saved = [s["time_saved_s"] for s in doc["summary"]["fixes"] if s["time_saved_s"] is not None]
    assert saved == sorted(saved, reverse=True)


@pytest.mark.parametrize("case", sorted(d.name for d in GEN.iterdir() if (d / "case.darshan").is_file())
                         if GEN.is_dir() else [])
def test_every_generated_case_diagnoses_with_the_default_model(corpus, case):
    """A prediction or a reason for every fix, whatever the workload (mdtest moves no data)."""
    doc = _diagnose(str(GEN / case / "case.darshan"), "--model", "default")
    for f in doc["findings"]:
        if f["fix"]:
            p = f["prediction"]
            assert p["speedup"] is None and p["reason"] or p["speedup"] > 0, (f["code"], p)


def _with_model(profile):
    """The diagnosis of `profile` with the shipped model's stage (expectation, then one engine pass)."""
    return diagnose_profile(profile, Stages(model="default"), SiteConfig())


def test_anomaly_fires_when_a_job_is_far_below_the_model(corpus):
    """O_DIRECT 4 KiB requests: the counters show a plain small-request pattern, which the page
    cache of this file system serves far faster than the job got - the anomaly rule's case."""
    diagnosis = _with_model(api.load(GEN / "o_small_io_odirect_4k" / "case.darshan"))
    (anm,) = [f for f in diagnosis.findings if f.code == "ANM001"]
    assert anm.category == "anomaly" and anm.evidence["model_shortfall"] >= 3
    assert anm.evidence["model_measured_rate"] < anm.evidence["model_expected_low_rate"]
    assert "x as long as it should have" in anm.message and anm.cost_s > 0
    d2 = _with_model(api.load(GEN / "a_good_fpp_posix_1m" / "case.darshan"))
    assert not [f for f in d2.findings if f.code == "ANM001"]


def test_without_a_model_the_anomaly_rule_is_silent(corpus):
    d = api.diagnose_profile(api.load(GEN / "o_small_io_odirect_4k" / "case.darshan"))
    assert not [f for f in d.findings if f.code == "ANM001"]
    assert not [n for n in d.not_checked if n.check.startswith("ANM001")]


def test_a_job_on_another_file_system_is_warned_not_judged(corpus):
    log = CORPUS / "darshan-repo-logs" / "darshan-util" / "pydarshan" / "darshan" / "examples" / \
        "example_logs" / "sample-badost.darshan"
    require(log.exists(), f"{log} not in the corpus")
    diagnosis = _with_model(api.load(log))
    warnings = diagnosis.summary["model"]["warnings"]
    assert any("lustre" in w and "ext4" in w for w in warnings)
    assert [n for n in diagnosis.not_checked if n.check.startswith("ANM001") and "lustre" in n.reason]
    assert all(f.prediction.warning for f in diagnosis.findings if f.fix and f.prediction)


def test_site_config_names_the_default_model(corpus, tmp_path):
    site = tmp_path / "site.toml"
    site.write_text('[model]\npath = "default"\n')
    doc = _diagnose(str(GEN / "n_fsync_per_write_Y_4k" / "case.darshan"), "--config", str(site))
    assert doc["summary"]["model"]["path"].endswith("model.skops")
    assert any(f["prediction"] for f in doc["findings"])
    with pytest.raises(ConfigError, match="unknown key 'file'"):
        from_dict({"model": {"file": "x.skops"}})
