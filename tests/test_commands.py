"""Each command module's own work, invoked on its click command in this process: the options it
reads, what it prints or writes, and its one-line refusals. The same commands run end to end as
`ioadvisor ...` subprocesses in the CLI, hook, fleet and model tests."""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.commands import calibrate, collect, hook, replay, report, show, train
from advisor.commands.diagnose import command as diagnose
from advisor.errors import InputError
from advisor.verify import default_np
from tests.conftest import CORPUS

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "traces" / "ior-small-shared-4k.darshan"


def invoke(command, *args: str):
    return CliRunner().invoke(command, [str(a) for a in args])


def test_python_dash_m_advisor_runs_the_command_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["ioadvisor", "--version"])
    runpy.run_module("advisor", run_name="__main__")  # main() returns after --version (no standalone exit)
    assert capsys.readouterr().out.startswith("ioadvisor, version ")


def test_show_prints_json_of_each_input_and_fails_on_a_bad_one(tmp_path):
    done = invoke(show.command, DEMO, "--json", "-", "--files", "2")
    doc = json.loads(done.stdout)
    assert done.exit_code == 0 and doc["schema"] == "ioadvisor/show/v1"
    (entry,) = doc["results"]
    assert entry["ok"] and entry["job"]["nprocs"] == 4 and len(entry["files"]) <= 2
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"not a log")
    done = invoke(show.command, DEMO, bad, "--json", str(tmp_path / "out.json"))
    results = json.loads((tmp_path / "out.json").read_text())["results"]
    assert done.exit_code == 2 and [r["ok"] for r in results] == [True, False]


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("saved") / "demo.json"
    done = invoke(diagnose, DEMO, "--json", out)
    assert done.exit_code in (0, 1), done.output
    return out


def test_report_renders_a_saved_diagnosis_as_text_and_html(saved, tmp_path):
    text = invoke(report.command, saved)
    assert text.exit_code == 0 and "IO001" in text.stdout
    page = tmp_path / "demo.html"
    html = invoke(report.command, saved, "--html", page)
    assert html.exit_code == 0 and html.stdout == "" and page.read_text().startswith("<!DOCTYPE html>")
    (again,) = report.load_diagnoses(saved)
    assert again.source == json.loads(saved.read_text())["source"]


@pytest.mark.parametrize("content, reason", [
    ("[]", "holds no diagnosis"),
    ('{"schema": "ioadvisor/show/v1"}', "not an ioadvisor/diagnosis/v1 document (schema: 'ioadvisor/show/v1')"),
    ("{", "not valid JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
    ('[{"schema": "ioadvisor/diagnosis/v1"}, 3]', "item 0"),
])
def test_report_refuses_what_is_not_a_saved_diagnosis(tmp_path, content, reason):
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        report.load_diagnoses(path)
    assert reason in err.value.reason
    with pytest.raises(InputError, match="is a directory"):
        report.load_diagnoses(tmp_path)


def test_collect_writes_a_snapshot_and_refuses_a_missing_directory(tmp_path):
    out = tmp_path / "node.json"
    done = invoke(collect.command, "--out", out)
    assert done.exit_code == 0 and json.loads(out.read_text())["schema"] == "ioadvisor/snapshot/v1"
    assert "written to" in done.stderr
    missing = invoke(collect.command, "--dir", tmp_path / "nowhere")
    assert isinstance(missing.exception, InputError) and missing.exception.reason == "no such directory"


def test_calibrate_refuses_a_target_that_does_not_exist(tmp_path):
    done = invoke(calibrate.command, "--target", tmp_path / "nowhere", "--out", tmp_path / "data", "--quiet")
    assert isinstance(done.exception, InputError) and "target does not exist" in str(done.exception)
    with calibrate._bar(10.0, quiet=True) as update:
        assert update is None


def test_train_refuses_too_few_rows_and_writes_no_model(tmp_path):
    done = invoke(train.command, CORPUS / "generated" / "b_small_io_shared_4k" / "case.darshan",
                  "--out", tmp_path / "m.skops")
    assert isinstance(done.exception, InputError) and "at least 20 are needed" in done.exception.reason
    assert not (tmp_path / "m.skops").exists()


def test_replay_fix_specs_name_a_transform_and_typed_parameters():
    assert replay._number("4m") == 4 << 20 and replay._number("64") == 64 and replay._number("at-close") == "at-close"
    fixes, proposers = replay._fixes(None, "coalesce:transfer_size=4m")
    assert fixes == [{"transform": "coalesce", "transfer_size": 4 << 20}]
    assert list(proposers.values()) == [["--fix coalesce:transfer_size=4m"]]
    assert replay._fixes(None, None) == ([], {})
    with pytest.raises(Exception, match="unknown parameter"):
        replay._fixes(None, "coalesce:size=4")


def test_replay_takes_the_fixes_of_the_findings_named():
    from advisor import api

    fixes, proposers = replay._fixes(api.load(DEMO), "IO001")
    assert fixes and all("transform" in f for f in fixes)
    assert any("IO001" in who for who in proposers.values())


def test_replay_plan_only_prints_the_plan_as_json():
    done = invoke(replay.command, DEMO, "--plan-only", "--json", "-", "--scale", "0.5")
    doc = json.loads(done.stdout)
    assert done.exit_code == 0 and doc["schema"] == replay.SCHEMA
    # the ranks the replay runs: the job's 4 folded onto the CPUs here
    assert doc["plan"]["np"] == default_np(4) and doc["plan"]["scale"] == pytest.approx(0.5, rel=0.1)
    assert "needs --target" in invoke(replay.command, DEMO).output


@pytest.fixture
def hook_config(tmp_path) -> Path:
    path = tmp_path / "site.toml"
    path.write_text(f'[hook]\nlog_dir = "{tmp_path}"\nwait_s = 0\n')
    return path


def test_hook_check_prints_the_config_and_what_it_would_do_for_a_job(hook_config, tmp_path):
    done = invoke(hook.command, "check", "--config", hook_config, "--jobid", "77", "--user", "alice",
                  "--uid", os.getuid(), "--gid", os.getgid(), "--workdir", tmp_path)
    assert done.exit_code == 0, done.output
    assert f"config {hook_config}: valid" in done.stdout and "wait_s = 0" in done.stdout
    plan = json.loads(done.stdout[done.stdout.index("{"):])
    assert plan["job"]["jobid"] == "77"
    half = invoke(hook.command, "check", "--config", hook_config, "--jobid", "77", "--user", "alice")
    assert "give all of --user --uid --gid --workdir, or none" in half.output


def test_hook_install_wrapper_prints_it_with_absolute_paths(hook_config):
    done = invoke(hook.command, "install-wrapper", "--config", hook_config, "--out", "-")
    assert done.exit_code == 0 and done.stdout.startswith("#!")
    assert str(hook_config) in done.stdout and sys.executable in done.stdout
    assert "--config is required" in invoke(hook.command, "install-wrapper", "--out", "-").output
