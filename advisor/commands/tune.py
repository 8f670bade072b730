"""`ioadvisor tune LOG --target DIR`: search each proposed fix's settings by replaying the job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from advisor.formatting import printable

SCHEMA = "ioadvisor/tune/v1"
DEFAULTS: dict[str, dict[str, Any]] = {
    "coalesce": {"transfer_size": 4 << 20}, "collective": {"cb_nodes": 1}, "aggregate": {"aggregators": 1},
    "align": {"boundary": 1 << 20}, "mpiio_calls": {"call_bytes": 4 << 20}, "fsync": {"mode": "at-close"},
    "stripe": {"count": 4, "size": 4 << 20}, "hints": {"cb_nodes": 1}, "layout": {"mode": "shared"},
}
"""A transform named without its settings (``--fix stripe``) starts from these."""


def proposals(profile, specs: tuple[str, ...]) -> list[tuple]:
    """[(fix, codes proposing it[, parameters pinned])]: the fixes of the warn-or-high findings, or
    those `specs` name (finding codes; transforms, whose settings given stay as given:
    ``stripe:size=4m`` searches the stripe count alone)."""
    from advisor.commands.replay import _fixes
    from advisor.fixes import RANKED, fix_key, proposed_fixes
    from replay.transforms import FIXES

    if not specs:
        from advisor import pipeline
        from advisor.config import load_config

        diagnosis = pipeline.run([profile], pipeline.Stages(), load_config()).results[0].diagnosis
        found = list(proposed_fixes([f for f in diagnosis.findings if f.severity in RANKED]).values())
        if not found:
            raise click.UsageError("no finding of this job proposes a fix: nothing to tune "
                                   f"(name one with --fix TRANSFORM; transforms: {', '.join(FIXES)})")
        return found
    out: dict[str, tuple] = {}
    for spec in specs:
        name, _, params = spec.partition(":")
        if name in DEFAULTS:  # a transform: its settings are what is searched, from its defaults
            given = _fixes(profile, spec)[0][0] if params else {"transform": name}
            fix = {"transform": name, **DEFAULTS[name], **given}
            out.setdefault(fix_key(fix), (fix, [f"--fix {spec}"], sorted(set(given) - {"transform"})))
            continue
        fixes, codes = _fixes(profile, spec)
        for fix in fixes:
            out.setdefault(fix_key(fix), (fix, codes.get(fix_key(fix), [])))
    return list(out.values())


@click.command(name="tune")
@click.argument("path", metavar="LOG")
@click.option("--target", type=click.Path(file_okay=False), required=True,
              help="Directory on the mount to tune for; replays write only in scratch directories inside, "
                   "and the search's state file is kept there (rerun the command to resume).")
@click.option("--budget", "budget_min", type=click.FloatRange(0.1, 24 * 60), default=10.0, show_default=True,
              help="Replay time the search may spend, in minutes (all its sessions together).")
@click.option("--fix", "fix_specs", metavar="CODE|TRANSFORM[:k=v,...]", multiple=True,
              help="Search this fix's settings (repeatable); default: every fix the warn or high findings propose.")
@click.option("--json", "json_out", metavar="FILE|-", default=None, help="Write the result as JSON ('-': stdout).")
@click.option("--html", "html_out", metavar="FILE", default=None, help="Write the result as an HTML page.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Site config (TOML; its [replay] and [model] sections); default $IOADVISOR_CONFIG.")
@click.option("--np", "nprocs", type=click.IntRange(1, 1_000_000), default=None,
              help="Replay ranks (the job's ranks are folded onto them); default: the job's, at most the CPUs here.")
@click.option("--scale", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="Replay this fraction of the bytes and requests; default: automatic (<= 256 MiB, 200k requests).")
@click.option("--source", type=click.Choice(["auto", "dxt", "counters", "ior"]), default="auto", show_default=True)
@click.option("--fresh", is_flag=True, help="Start afresh even if the target holds this search's state.")
def command(path, target, budget_min, fix_specs, json_out, html_out, config_path, nprocs, scale, source, fresh):
    """Find the best settings of a job's fixes on this file system by replaying the job.

    The search space is every setting of each proposed fix (coalesce size, aggregators and
    collective buffer size, stripe count and size where layouts can be set, alignment, ...) and
    pairs of fixes combined. Candidates race in rungs of paired replays against the recorded
    job, starting from the speedup model's predictions; one is dropped as soon as another is
    faster with confidence, the better half go on (successive halving), and the settings next
    to the leader's join. The result: the best configuration with its speedup and 95 % interval,
    the runners-up that cannot be told apart from it, what was ruled out and why, and the
    replay time spent.
    """
    from advisor import api
    from advisor.config import load_config
    from advisor.report.progress import steps
    from advisor.tune.search import Options, tune, usable_target

    profile = api.load(path)
    config = load_config(config_path)
    usable_target(Path(target), config.section("replay"))  # refused before anything is shown
    proposed = proposals(profile, fix_specs)
    options = Options(budget_s=budget_min * 60, np=nprocs, scale=scale, source=source, fresh=fresh)
    with steps(f"tuning {Path(path).name} on {target}", quiet=json_out == "-") as on_progress:
        result = tune(profile, proposed, Path(target), config.section("replay"), config.section("model"),
                      options, on_progress=on_progress)
    doc = {"schema": SCHEMA, "input": path, "tune": result}
    if json_out:
        from advisor.fileio import write_json

        write_json(doc, json_out)
    if html_out:
        from advisor.report.html import write_tune_html

        write_tune_html(html_out, doc)
    if json_out != "-":
        from advisor.report.tune import text

        for line in text(result, Path(path).name):
            click.echo(printable(line))
