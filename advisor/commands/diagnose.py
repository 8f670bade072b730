"""`ioadvisor diagnose PATH...`: findings with evidence, cost and fix, for every input.

Each input is diagnosed on its own (:func:`advisor.pipeline.run`); an input that cannot
be read is one error line and the others go on (exit status 2 at the end). ``--fail-on``
turns findings into exit status 1 for pipelines.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from advisor import fileio
from advisor.formatting import printable
from advisor.gcpolicy import loading


@click.command(name="diagnose")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=True, readable=False, path_type=str))
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Site config (TOML); default $IOADVISOR_CONFIG.")
@click.option("--json", "json_out", metavar="FILE|-", default=None,
              help="Write the diagnosis as JSON (ioadvisor/diagnosis/v1); '-' for stdout. One input file "
                   "gives one object; several inputs or a directory give a list, one object per input "
                   "in order (an unreadable one as its error).")
@click.option("--html", "html_out", metavar="FILE", default=None, help="Write a self-contained HTML report.")
@click.option("--fail-on", type=click.Choice(["high", "warn"]), default=None,
              help="Exit with status 1 when a finding of this severity or worse exists.")
@click.option("--verify", is_flag=True, help="Replay the job with each fix on --target and measure.")
@click.option("--target", type=click.Path(file_okay=False), default=None, help="Scratch directory for --verify.")
@click.option("--repeat", type=click.IntRange(2, 1000), default=None,
              help="Replay exactly N rounds per fix and decide once (default: rounds until the verdict is "
                   "certain or the [replay] budget is spent).")
@click.option("--np", "nprocs", type=click.IntRange(1, 100000), default=None, help="Ranks for the replay.")
@click.option("--scale", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="Replay this fraction of the bytes.")
@click.option("--model", "model_path", type=click.Path(dir_okay=False), default=None,
              help="Apply a trained bandwidth model to each job ('default': the one shipped; "
                   "default: the site config's [model] path).")
@click.option("--tune-json", "tune_json", metavar="FILE", type=click.Path(dir_okay=False), default=None,
              help="A result of `ioadvisor tune --json` for this job: shown as the report's tune section.")
@click.option("--baseline", "baselines", multiple=True, type=click.Path(), help="Baseline run(s) for a campaign.")
@click.option("-v", "--verbose", is_flag=True, help="Show evidence, all commands and every unchecked rule.")
def command(paths, config_path, json_out, html_out, fail_on, verify, target, repeat, nprocs, scale,
            model_path, baselines, verbose, tune_json=None):
    """Diagnose jobs: findings with evidence, cost and fix."""
    # numpy's OpenBLAS starts a thread per core at import that spins, waiting for linear
    # algebra a diagnosis never asks for, on the core the parsing child needs. Set before
    # anything here imports numpy; a caller's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    with loading():  # modules, which live as long as the process
        from advisor import pipeline  # after OPENBLAS_NUM_THREADS: it imports numpy
        from advisor.config import load_config
        from advisor.ingest import expand_inputs

    if verify and not target:
        raise click.UsageError("--verify needs --target DIR (a scratch directory on the mount to test)")
    config = load_config(config_path)
    tuned = None
    if tune_json:
        from advisor.tune.result import read

        tuned = read(tune_json)  # a bad file is refused before anything runs
    checked = pipeline.Verify(Path(target), repeat, nprocs, scale, config.section("replay"),
                              quiet=json_out == "-") if verify else None
    stages = pipeline.Stages.from_config(config, model=model_path, verify=checked,
                                         figures=bool(json_out or html_out), campaign=True,
                                         baselines=tuple(baselines))
    done = pipeline.run(expand_inputs(paths), stages, config)
    from advisor.findings import SEVERITY_RANK, diagnoses_json  # loaded by run() beside the first parse

    for failure in done.failures:
        click.echo(printable(f"ioadvisor: error: {failure.error}"), err=True)
    for note in done.notes:
        click.echo(printable(f"ioadvisor: {note}"), err=True)
    diagnoses = done.diagnoses
    if tuned is not None:
        _attach_tune(diagnoses, tuned)

    if json_out:  # every input in order, an unusable one as its error result
        several = len(paths) > 1 or any(os.path.isdir(p) for p in paths)  # the shape follows the command line
        fileio.write_atomic(json_out, diagnoses_json([r.diagnosis for r in done.results], as_list=several))
    if html_out and diagnoses:
        from advisor.report.html import write_html  # Jinja2 and the plots: only for --html

        write_html(Path(html_out), diagnoses)
    if json_out != "-":
        from advisor.report.terminal import console, print_report  # rich: only when printing

        out = console()
        for diagnosis in diagnoses:
            print_report(diagnosis, out, verbose=verbose)
    if done.exit_status:
        sys.exit(done.exit_status)
    if fail_on and any(SEVERITY_RANK[f.severity] <= SEVERITY_RANK[fail_on]
                       for d in diagnoses for f in d.findings):
        sys.exit(1)


def _attach_tune(diagnoses, tuned: dict) -> None:
    """The tune result joins the diagnosis of its job: the only one, or the one of its input."""
    def same(d) -> bool:
        try:
            return Path(str(d.source.get("path"))).resolve() == Path(str(tuned.get("input"))).resolve()
        except OSError:
            return False

    for d in diagnoses if len(diagnoses) == 1 else [d for d in diagnoses if same(d)]:
        if not d.error:
            d.data["tune"] = tuned
