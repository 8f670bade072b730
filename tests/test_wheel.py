"""The wheel built from the tree installs into a fresh venv and runs outside the source tree.

The venv gets the wheel only (no editable install); its dependencies come from the
test venv's site-packages through a plain path entry (no .pth processing there, so
the test venv's editable `advisor` can never leak in). The wheel is built by `make dist`
(what docs/hook.md tells a site to run) in a copy of the sources, so the tree gets no build/
or egg-info litter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("advisor", "rules", "reports", "replay", "setup.cfg", "pyproject.toml", "README.md", "LICENSE")


def _run(cmd: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif path.exists():
            shutil.copy2(path, src / name)
    shutil.copy2(REPO / "Makefile", src / "Makefile")
    venv_dir = Path(sys.executable).parent.parent  # `make dist` as docs/hook.md says, with this venv
    # -o: never remake this venv's stamp from the copy (a setup.cfg newer than the stamp made make
    # run `pip install -e` of the temporary copy into the developer's venv)
    _run(["make", "-C", str(src), "-o", f"{venv_dir}/.installed", "dist", f"VENV={venv_dir}"], cwd=src)
    [whl] = (src / "dist").glob("ioadvisor-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=env_dir).stdout.strip())
    (site / "ioadvisor-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q", str(wheel)],
         cwd=env_dir)
    return env_dir


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "IOADVISOR_DEBUG", "VIRTUAL_ENV")}
    env["NO_COLOR"] = "1"
    return env


def test_wheel_carries_rules_and_report_templates(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("advisor/_rules/") and n.endswith(".yaml") for n in names)
    assert any(n.startswith("advisor/_reports/templates/") for n in names)
    assert any(n.startswith("advisor/_reports/assets/") for n in names)
    assert "advisor/ingest/darshan_log.py" in names and "advisor/schemas/diagnosis-v1.json" in names


def test_wheel_carries_every_module_of_the_tree(wheel):
    """A package left out of setup.cfg's list imports in the tree and fails once installed."""
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(REPO).as_posix() for package in ("advisor", "replay")
               for p in (REPO / package).rglob("*.py")}
    assert sorted(modules - names) == []


def test_installed_wheel_runs_outside_the_tree(installed, tmp_path):
    env = _clean_env()
    where = _run([str(installed / "bin" / "python"), "-c", "import advisor; print(advisor.__file__)"],
                 cwd=tmp_path, env=env).stdout.strip()
    assert where.startswith(str(installed)) and not where.startswith(str(REPO))
    version = _run([str(installed / "bin" / "ioadvisor"), "--version"], cwd=tmp_path, env=env)
    assert version.stdout.startswith("ioadvisor, version ")
    trace = tmp_path / "trace.darshan"
    shutil.copy(REPO / "traces" / "ior-small-shared-4k.darshan", trace)
    show = _run([str(installed / "bin" / "ioadvisor"), "show", str(trace)], cwd=tmp_path, env=env)
    assert "job 12999, 4 processes" in show.stdout and "DXT_POSIX" in show.stdout
    rules = _run([str(installed / "bin" / "python"), "-c",
                  "from importlib.resources import files; "
                  "print(sorted(p.name for p in files('advisor._rules').iterdir() if p.name.endswith('.yaml')))"],
                 cwd=tmp_path, env=env)
    assert ".yaml" in rules.stdout
