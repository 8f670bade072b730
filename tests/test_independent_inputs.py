"""One bad input never costs the others: each input is its own result, whatever its error.

Before, an internal error on one input ended `diagnose` with exit 3 and no JSON at all,
an empty directory was a TypeError, and an unreadable file a usage error that dropped
the good inputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from advisor import pipeline
from advisor.config import load_config
from tests.conftest import DATA

GOOD = DATA / "dumps" / "a_good_fpp_posix_1m.parser.txt"
GOOD2 = DATA / "ior" / "ior_csv_4.0.0.txt"


def _bad_inputs(tmp_path):
    """Unusable inputs of every kind ingest can meet, by name."""
    bad = {}
    bad["implausible"] = tmp_path / "nprocs.parser.txt"
    bad["implausible"].write_text(GOOD.read_text().replace("# nprocs: 4\n", "# nprocs: 1099511627776\n"))
    bad["empty_dir"] = tmp_path / "empty"
    bad["empty_dir"].mkdir()
    bad["fifo"] = tmp_path / "fifo.darshan"
    os.mkfifo(bad["fifo"])
    bad["missing"] = tmp_path / "missing.darshan"
    log = (DATA / "dumps" / "a_good_fpp_posix_1m.darshan").read_bytes()
    bad["truncated_log"] = tmp_path / "cut.darshan"
    bad["truncated_log"].write_bytes(log[:100])  # the header alone
    bad["ior_null_tests"] = tmp_path / "ior.json"
    doc = json.loads((DATA / "ior" / "ior_4.0.0_summary.json").read_text())
    bad["ior_null_tests"].write_text(json.dumps({**doc, "tests": None}))
    bad["empty_file"] = tmp_path / "empty.darshan"
    bad["empty_file"].write_bytes(b"")
    return bad


def test_diagnose_keeps_every_good_result_beside_every_kind_of_bad_input(tmp_path):
    bad = _bad_inputs(tmp_path)
    paths = [str(GOOD), *map(str, bad.values()), str(GOOD2)]
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", *paths, "--json", "-"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    docs = json.loads(out.stdout)
    assert [d["source"]["path"] for d in docs] == paths  # in input order
    assert docs[0]["error"] is None and docs[-1]["error"] is None
    assert docs[0]["findings"] is not None and docs[-1]["source"]["format"] == "ior-csv"
    for name, doc in zip(bad, docs[1:-1]):
        assert doc["error"], name
    errors = out.stderr.splitlines()
    assert len(errors) == len(bad) and all(line.startswith("ioadvisor: error: ") for line in errors)
    assert "darshan-parser dump, benchmark output, Recorder trace or snapshot in this directory" in out.stderr


def test_show_keeps_every_good_result_beside_every_kind_of_bad_input(tmp_path):
    bad = _bad_inputs(tmp_path)
    paths = [str(GOOD), *map(str, bad.values()), str(GOOD2)]
    out = subprocess.run([sys.executable, "-m", "advisor", "show", *paths, "--json", "-"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    results = json.loads(out.stdout)["results"]
    assert [r["ok"] for r in results] == [True] + [False] * len(bad) + [True]


def test_a_bug_met_on_one_input_costs_only_that_input(monkeypatch):
    # No input is known to reach a bug any more (those found are fixed), so one is planted in
    # the engine for one input: the pipeline must keep the others and say it was a bug.
    real = pipeline.diagnose

    def engine(profile, config, **kw):
        if profile.source.path == str(GOOD):
            raise ZeroDivisionError("planted")
        return real(profile, config, **kw)

    monkeypatch.setattr(pipeline, "diagnose", engine)
    config = load_config(None)
    done = pipeline.run([str(GOOD), str(GOOD2)], pipeline.Stages.from_config(config), config)
    assert [r.internal for r in done.results] == [True, False]
    assert done.results[0].diagnosis.error.startswith(f"{GOOD}: internal error: ZeroDivisionError: planted")
    assert done.results[1].diagnosis.error is None and done.exit_status == 3


def test_no_input_at_all_is_an_empty_run():
    config = load_config(None)
    assert pipeline.run([], pipeline.Stages.from_config(config), config).results == []


def test_a_log_in_an_unreadable_directory_is_one_error_line():
    """As a normal user (root reads through permission bits: as root the test runs the program
    as the Slurm tests' user, from their world-usable venv)."""
    import shutil
    import tempfile

    python, prefix = [sys.executable], []
    if os.geteuid() == 0:
        from tests.slurm import ensure_user, hook_venv

        python, prefix = [str(hook_venv() / "bin" / "python")], ["runuser", "-u", ensure_user().pw_name, "--"]
    top = Path(tempfile.mkdtemp(prefix="ioadv-unreadable-"))
    try:
        top.chmod(0o755)
        good = top / GOOD.name
        shutil.copy(GOOD, good)
        good.chmod(0o644)
        locked = top / "locked"
        locked.mkdir()
        (locked / GOOD.name).write_text(GOOD.read_text())
        if prefix:
            shutil.chown(locked, user=prefix[2])
        locked.chmod(0)
        out = subprocess.run([*prefix, *python, "-m", "advisor", "diagnose", str(good), str(locked / GOOD.name),
                              str(locked), "--json", "-"], capture_output=True, text=True, timeout=600, cwd=top)
    finally:
        (top / "locked").chmod(0o700)
        shutil.rmtree(top, ignore_errors=True)
    assert out.returncode == 2, out.stderr
    assert [d["error"] is None for d in json.loads(out.stdout)] == [True, False, False]
    assert "Permission denied" in out.stderr
