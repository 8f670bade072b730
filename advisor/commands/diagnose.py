"""`ioadvisor diagnose PATH...`: findings with evidence, cost and fix, for every input.

Each input is diagnosed on its own; an input that cannot be read is one error line and
the others go on (exit status 2 at the end). ``--fail-on`` turns findings into exit
status 1 for pipelines. Optional parts (HTML report, replay verification, learned model,
IOR campaigns) are called only when their module is installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import click

from advisor import fileio
from advisor.errors import AdvisorError, ConfigError
from advisor.findings import SEVERITY_RANK, Diagnosis, diagnoses_json

if TYPE_CHECKING:
    from advisor.profile import JobProfile


def _optional(module: str, attr: str):
    """`module.attr`, or None when that part is not in this build."""
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except ModuleNotFoundError:
        return None
    return getattr(importlib.import_module(module), attr, None)


def _need(module: str, attr: str, option: str):
    fn = _optional(module, attr)
    if fn is None:
        raise ConfigError(f"{option} is not available in this build (no {module}.{attr})")
    return fn


def _failed_error(path: str, exc: Exception) -> Diagnosis:
    return Diagnosis(source={"path": path, "format": "unknown"},
                     job={"jobid": "", "nprocs": 0, "runtime_s": 0.0, "exe": ""}, error=str(exc))


@click.command(name="diagnose")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=True, path_type=str))
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Site config (TOML); default $IOADVISOR_CONFIG.")
@click.option("--json", "json_out", metavar="FILE|-", default=None,
              help="Write the diagnosis as JSON (ioadvisor/diagnosis/v1); '-' for stdout.")
@click.option("--html", "html_out", metavar="FILE", default=None, help="Write a self-contained HTML report.")
@click.option("--fail-on", type=click.Choice(["high", "warn"]), default=None,
              help="Exit with status 1 when a finding of this severity or worse exists.")
@click.option("--verify", is_flag=True, help="Replay the job with each fix on --target and measure.")
@click.option("--target", type=click.Path(file_okay=False), default=None, help="Scratch directory for --verify.")
@click.option("--repeat", type=click.IntRange(1, 100), default=3, show_default=True,
              help="Replay repetitions per variant.")
@click.option("--np", "nprocs", type=click.IntRange(1, 100000), default=None, help="Ranks for the replay.")
@click.option("--scale", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="Replay this fraction of the bytes.")
@click.option("--model", "model_path", type=click.Path(dir_okay=False), default=None,
              help="Apply a trained bandwidth model to each job ('default': the one shipped; "
                   "default: the site config's [model] path).")
@click.option("--baseline", "baselines", multiple=True, type=click.Path(), help="Baseline run(s) for a campaign.")
@click.option("-v", "--verbose", is_flag=True, help="Show evidence, all commands and every unchecked rule.")
def command(paths, config_path, json_out, html_out, fail_on, verify, target, repeat, nprocs, scale,
            model_path, baselines, verbose):
    """Diagnose jobs: findings with evidence, cost and fix."""
    # numpy's OpenBLAS starts a thread per core at import that spins, waiting for linear
    # algebra a diagnosis never asks for, on the core the parsing child needs. Set before
    # anything here imports numpy; a caller's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from advisor import api
    from advisor.config import load_config
    from advisor.engine import check_thresholds
    from advisor.engine.rules import load_catalogue

    if verify and not target:
        raise click.UsageError("--verify needs --target DIR (a scratch directory on the mount to test)")
    inputs = _ParseAhead(_expand(paths))  # the first log parses in its child while we set up
    config = load_config(config_path)
    check_thresholds(config, load_catalogue())
    figure_data = _optional("advisor.report.figures", "figure_data") if (json_out or html_out) else None
    write_html = _need("advisor.report.html", "write_html", "--html") if html_out else None
    verify_findings = _need("advisor.verify", "verify_findings", "--verify") if verify else None
    model_path = model_path or config.section("model").path or None  # [model] path: the site default
    apply_model = _need("advisor.models.predict", "apply_model", "--model") if model_path else None
    if apply_model:
        _need("advisor.models.predict", "load", "--model")(model_path)  # a bad model fails once, up front

    diagnoses: list[Diagnosis] = []
    profiles = []
    failed = False
    for profile_of in inputs:
        try:
            profile = profile_of()
            diagnosis = api.diagnose_profile(profile, config)
            if apply_model:
                apply_model(model_path, profile, diagnosis, config=config)
            if verify_findings:
                verify_findings(profile, diagnosis, Path(target), repeat, nprocs, scale)
            if figure_data:
                diagnosis.figures = figure_data(profile)
        except AdvisorError as exc:
            click.echo(f"ioadvisor: error: {exc}", err=True)
            failed = True
            continue
        diagnoses.append(diagnosis)
        profiles.append(profile)
    diagnoses += _campaign(profiles, config, baselines)

    if json_out:
        fileio.write_atomic(json_out, diagnoses_json(diagnoses))
    if html_out and diagnoses:
        write_html(Path(html_out), diagnoses)
    if json_out != "-":
        from advisor.report.terminal import console, print_report  # rich: only when printing

        out = console()
        for diagnosis in diagnoses:
            print_report(diagnosis, out, verbose=verbose)
    if failed:
        sys.exit(2)
    if fail_on and any(SEVERITY_RANK[f.severity] <= SEVERITY_RANK[fail_on]
                       for d in diagnoses for f in d.findings):
        sys.exit(1)


class _ParseAhead:
    """Each input's profile getter, its parse started one input ahead.

    Logs parse in a child process (advisor.ingest.isolate); started early, a parse runs on
    the other core while this process loads the rule catalogue (first input) or diagnoses
    the input before it. An input that cannot even be started fails in its turn.
    """

    def __init__(self, paths: list[str]):
        self.paths = paths
        self.ahead = _start(paths[0]) if paths else None

    def __iter__(self) -> Iterator[Callable[[], JobProfile]]:
        for following in [*self.paths[1:], None]:
            current, self.ahead = self.ahead, _start(following) if following else None
            yield current


def _start(path: str) -> Callable[[], JobProfile]:
    from advisor.ingest import start_profile

    try:
        return start_profile(path)
    except AdvisorError as exc:
        error = exc

        def failed() -> JobProfile:
            raise error

        return failed


def _campaign(profiles: list, config, baselines: tuple[str, ...]) -> list[Diagnosis]:
    """A campaign diagnosis when two or more inputs are IOR runs (and the part is installed)."""
    from advisor.engine import input_kind

    runs = [p for p in profiles if input_kind(p) == "ior"]
    if not runs or (len(runs) < 2 and not baselines):
        return []
    diagnose_campaign = _optional("advisor.campaign", "diagnose_campaign")
    if diagnose_campaign is None:
        return []
    from advisor.campaign import load_runs

    base, skipped = load_runs(list(baselines))
    for reason in skipped:
        click.echo(f"ioadvisor: baseline skipped: {reason}", err=True)
    if baselines and not base:
        raise ConfigError(f"--baseline: no IOR run in {', '.join(baselines)}")
    return [diagnose_campaign(runs, config, base)]


def _expand(paths: tuple[str, ...]) -> list[str]:
    """Directories stand for the inputs in them (one level, recognised formats only)."""
    from advisor.errors import InputError
    from advisor.ingest import detect

    out: list[str] = []
    for path in paths:
        if not os.path.isdir(path):
            out.append(path)
            continue
        for entry in sorted(Path(path).iterdir()):
            try:
                if entry.is_file() and detect(entry):
                    out.append(str(entry))
            except InputError:
                continue  # READMEs, scripts, per-rank CSVs next to the logs
    return out
