"""The `[fleet]` site config section: defaults for `ioadvisor fleet run`, overridden by flags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from advisor.commands.fleet import fleet_options
from advisor.config import from_dict, load_config
from advisor.errors import ConfigError
from advisor.fleet.store import FleetStore
from advisor.fleet.walk import DEFAULT_PATTERNS

SITE = {"fleet": {"slurm_jobs": 16, "timeout_s": 30.0, "batch": 50, "patterns": ["*.darshan"],
                  "slurm_queue": "io", "slurm_account": "staff", "slurm_walltime": "02:00:00"}}


def _flags(**given) -> dict:
    names = ("workers", "scheduler", "slurm_jobs", "timeout_s", "batch", "slurm_queue", "slurm_account",
             "slurm_walltime", "slurm_memory")
    return {name: None for name in names} | {"patterns": ()} | given


def test_site_section_gives_the_defaults():
    options = fleet_options(from_dict(SITE, "site.toml"), _flags())
    assert (options.slurm_jobs, options.timeout_s, options.batch) == (16, 30.0, 50)
    assert options.patterns == ("*.darshan",)
    assert options.slurm == {"queue": "io", "account": "staff", "walltime": "02:00:00"}


def test_flags_override_the_site_section():
    options = fleet_options(from_dict(SITE, "site.toml"),
                            _flags(workers=3, timeout_s=5.0, batch=7, patterns=("*.txt",), slurm_queue="debug"))
    assert options.slurm_jobs is None and options.workers == 3  # a cluster flag replaces the site's cluster
    assert (options.timeout_s, options.batch, options.patterns) == (5.0, 7, ("*.txt",))
    assert options.slurm["queue"] == "debug" and options.slurm["account"] == "staff"
    assert fleet_options(from_dict(SITE, "s"), _flags(scheduler="tcp://h:8786")).slurm_jobs is None


def test_without_a_section_the_built_in_defaults_apply():
    options = fleet_options(load_config(None), _flags())
    assert (options.slurm_jobs, options.timeout_s, options.batch) == (None, 120.0, 200)
    assert options.patterns == DEFAULT_PATTERNS and options.slurm == {} and options.workers >= 1


@pytest.mark.parametrize("table, named", [({"batch": 0}, "fleet.batch"), ({"timeout_s": 0.5}, "fleet.timeout_s"),
                                          ({"workers": 2, "slurm_jobs": 2}, "at most one")])
def test_out_of_range_values_are_named(table, named):
    with pytest.raises(ConfigError, match=named):
        fleet_options(from_dict({"fleet": table}, "site.toml"), _flags())


def test_unknown_key_is_named():
    with pytest.raises(ConfigError, match="unknown key 'queue'"):
        from_dict({"fleet": {"queue": "io"}}, "site.toml")


def test_run_takes_batch_and_patterns_from_the_site_file(corpus: Path, tmp_path: Path):
    """A real run: the site's batch size cuts the parts, its patterns pick the files."""
    archive = tmp_path / "archive"
    archive.mkdir()
    logs = sorted(p for p in (corpus / "generated").glob("*/case.darshan"))[:3]
    for i, log in enumerate(logs):
        (archive / f"{i}.darshan").symlink_to(log)
        (archive / f"{i}.darshan.txt").write_text("not picked: the site's pattern is *.darshan\n")
    site = tmp_path / "site.toml"
    site.write_text('[fleet]\nworkers = 1\nbatch = 1\npatterns = ["*.darshan"]\n')
    out = tmp_path / "ds"
    run = subprocess.run([sys.executable, "-m", "advisor", "fleet", str(archive), "--out", str(out),
                          "--config", str(site), "--quiet"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    jobs = FleetStore(out, create=False).jobs(["path"]).to_pylist()
    assert sorted(Path(j["path"]).name for j in jobs) == ["0.darshan", "1.darshan", "2.darshan"]
    assert len(list((out / "jobs").glob("part-*.parquet"))) == 3  # one part per log (batch = 1)


def test_bad_site_section_is_one_line(tmp_path: Path):
    site = tmp_path / "site.toml"
    site.write_text("[fleet]\nbatch = 0\n")
    run = subprocess.run([sys.executable, "-m", "advisor", "fleet", str(tmp_path), "--out", str(tmp_path / "ds"),
                          "--config", str(site)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "fleet.batch" in run.stderr
    assert not (tmp_path / "ds").exists()
