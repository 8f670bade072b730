"""One pipeline for every entry point: the Slurm hook and a fleet worker give, for the same log
and site config, the findings, predictions and figures that `ioadvisor diagnose` gives."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor import pipeline
from advisor.commands.diagnose import command as diagnose_command
from advisor.config import SiteConfig, load_config
from advisor.errors import InputError
from advisor.fleet.analyse import analyse_log
from advisor.fleet.walk import LogFile
from advisor.hooks.job import JobContext
from advisor.hooks.runner import run_diagnosis
from advisor.hooks.settings import HookConfig

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "traces" / "ior-small-shared-4k.darshan"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A site config naming the shipped model: the stage the hook and the fleet used to skip."""
    path = tmp_path_factory.mktemp("site") / "site.toml"
    path.write_text('[model]\npath = "default"\n')
    return path


def _by_diagnose(log: Path, site: Path) -> dict:
    result = CliRunner().invoke(diagnose_command, [str(log), "--config", str(site), "--json", "-"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _by_hook(log: Path, site: Path, workdir: Path) -> dict:
    job = JobContext(jobid="77", user="me", uid=os.getuid(), gid=os.getgid(), workdir=str(workdir))
    cfg = HookConfig(formats=["json"], min_severity="none", wait_s=0)
    done = run_diagnosis(job, cfg, load_config(site), [str(log)], str(workdir))
    assert done.error is None and done.value["status"] == "reported", done
    return json.loads((workdir / "ioadvisor-77.json").read_text())


def _by_fleet(log: Path, site: Path) -> dict:
    st = log.stat()
    rows = analyse_log(LogFile(str(log), st.st_size, st.st_mtime_ns), load_config(site), 120.0)
    assert rows["job"]["error"] is None, rows["job"]["error"]
    return json.loads(rows["job"]["diagnosis"])


def _essence(doc: dict) -> dict:
    """What a user reads: the findings with their predictions, the summary and the figures."""
    return {"findings": doc["findings"], "summary": doc["summary"], "figures": doc["figures"],
            "not_checked": doc["not_checked"]}


def test_hook_and_fleet_diagnose_like_diagnose(site: Path, tmp_path: Path):
    expected = _essence(_by_diagnose(DEMO, site))
    assert expected["summary"]["model"]["path"].endswith("model.skops")
    assert any(f["prediction"] for f in expected["findings"]), "the model stage ran"
    assert expected["figures"].get("io_time"), "the figure stage ran"
    assert _essence(_by_hook(DEMO, site, tmp_path)) == expected
    assert _essence(_by_fleet(DEMO, site)) == expected


def test_an_unreadable_input_fails_alone(tmp_path: Path):
    bad = tmp_path / "broken.darshan"
    bad.write_bytes(b"\x00" * 64)
    done = pipeline.run([str(bad), str(DEMO)], pipeline.Stages(), SiteConfig())
    failed, good = done.results
    assert failed.profile is None and failed.diagnosis.error and str(bad) in failed.diagnosis.error
    assert good.diagnosis.error is None and good.diagnosis.findings
    assert [d.source["path"] for d in done.diagnoses] == [str(DEMO)]


def test_a_missing_model_fails_before_any_input(tmp_path: Path):
    with pytest.raises(InputError, match="no such model file"):
        pipeline.run([str(DEMO)], pipeline.Stages(model=str(tmp_path / "none.skops")), SiteConfig())


def test_the_site_model_is_the_default_stage(site: Path):
    assert pipeline.Stages.from_config(load_config(site)).model == "default"
    assert pipeline.Stages.from_config(load_config(site), model="other.skops").model == "other.skops"
    assert pipeline.Stages.from_config(SiteConfig()).model is None
