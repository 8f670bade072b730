"""`ioadvisor replay PATH`: replay a job on a real mount, as recorded and with fixes applied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from advisor.formatting import counted, fmt_num, printable

SCHEMA = "ioadvisor/replay/v1"


def _fixes(profile, spec: str | None) -> tuple[list[dict], dict[str, list[str]]]:
    """Fix dicts to measure and, per fix, the finding codes that proposed it.

    `spec`: a finding code (IO001), ``all`` (every finding with a fix), or a transform with
    parameters (``coalesce:transfer_size=4194304``, ``fsync``)."""
    from advisor.fixes import fix_key, proposed_fixes
    from replay.transforms import FIXES, check_fix

    if not spec:
        return [], {}
    name, _, params = spec.partition(":")
    if name in FIXES:
        fix: dict[str, Any] = {"transform": name}
        for item in filter(None, params.split(",")):
            key, _, value = item.partition("=")
            fix[key.strip()] = _number(value.strip())
        try:
            check_fix(fix)
        except ValueError as exc:
            raise click.UsageError(f"--fix {spec}: {exc}") from None
        return [fix], {fix_key(fix): [f"--fix {spec}"]}
    from advisor import pipeline
    from advisor.config import load_config

    # the findings alone: their fixes are what gets replayed (no model, no figures)
    diagnosis = pipeline.run([profile], pipeline.Stages(), load_config()).results[0].diagnosis
    chosen = [f for f in diagnosis.findings if f.fix and (spec == "all" or f.code == spec.upper())]
    if not chosen:
        codes = sorted({f.code for f in diagnosis.findings if f.fix})
        raise click.UsageError(f"--fix {spec}: no finding with that code has a fix "
                               f"(findings with fixes here: {', '.join(codes) or 'none'}; "
                               f"transforms: {', '.join(FIXES)})")
    measured = proposed_fixes(chosen)
    every = proposed_fixes(diagnosis.findings)  # every finding that proposes a measured fix
    return [fix for fix, _ in measured.values()], {key: every[key][1] for key in measured}


def _number(text: str) -> Any:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    low = text.lower()
    if low[-1:] in units and low[:-1].isdigit():
        return int(low[:-1]) * units[low[-1]]
    try:
        return int(text)
    except ValueError:
        return text


@click.command(name="replay")
@click.argument("path", metavar="PATH")
@click.option("--plan-only", is_flag=True, help="Build the replay plan and print its summary; run nothing.")
@click.option("--json", "json_out", metavar="FILE|-", default=None, help="Write the result as JSON ('-': stdout).")
@click.option("--target", type=click.Path(file_okay=False), default=None,
              help="Directory on the mount to test; the replay writes only in a fresh scratch directory inside.")
@click.option("--fix", "fix_spec", metavar="CODE|all|TRANSFORM[:k=v,...]", default=None,
              help="Also replay with the fix of this finding (or of all findings, or this transform).")
@click.option("--repeat", type=click.IntRange(1, 1000), default=None,
              help="Exactly N rounds (one sample of every variant each) and one look; default: rounds until "
                   "every fix's verdict is certain or the [replay] budget is spent.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Site config (TOML; its [replay] section); default $IOADVISOR_CONFIG.")
@click.option("--np", "nprocs", type=click.IntRange(1, 1_000_000), default=None,
              help="Replay ranks (the job's ranks are folded onto them); default: the job's, at most the CPUs here.")
@click.option("--scale", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="Replay this fraction of the bytes and requests; default: automatic (<= 256 MiB, 200k requests).")
@click.option("--source", type=click.Choice(["auto", "dxt", "counters", "ior"]), default="auto",
              show_default=True, help="Where the plan comes from.")
@click.option("--think-time", is_flag=True, help="Keep the idle time between a rank's requests (DXT only).")
@click.option("--odirect", is_flag=True, help="O_DIRECT for aligned POSIX requests (keeps the page cache out).")
@click.option("--keep", is_flag=True, help="Keep the scratch directory (its path is printed).")
def command(path, plan_only, json_out, target, fix_spec, repeat, config_path, nprocs, scale, source, think_time,
            odirect, keep):
    """Replay a job (Darshan log, DXT or counters; IOR output) on a real mount and measure.

    Without --fix the recorded workload runs alone, with a per-file check of what it
    did against the source. With --fix the baseline and the fixed workload run in
    rounds of auto-ranged samples until a sequential paired test decides (improved,
    regressed, equivalent) or the budget runs out (inconclusive); the result gives the
    speedup with its 95 % interval, each side's time per pass, passes per sample and
    run-to-run spread. --scale and --np are always stated in the result.
    """
    from advisor import api
    from advisor.config import load_config
    from advisor.verify import measure, replay_plan

    profile = api.load(path)
    if plan_only:  # the plan the replay would run: ranks folded onto the CPUs here, the same scale
        plan = replay_plan(profile, np=nprocs, scale=scale, think_time=think_time, source=source)
        doc = {"schema": SCHEMA, "input": path, "plan": plan.summary()}
        _emit(doc, json_out, _print_plan)
        return
    if not target:
        raise click.UsageError("replay needs --target DIR (or --plan-only)")
    settings = load_config(config_path).section("replay")
    fixes, proposers = _fixes(profile, fix_spec)
    probed = _probe_for(fixes, proposers, Path(target), quiet=json_out == "-")
    base = replay_plan(profile, np=nprocs, scale=scale, think_time=think_time, source=source)
    from advisor.report.progress import steps

    with steps(f"replaying {Path(path).name} on {target}", quiet=json_out == "-") as on_progress:
        result = measure(profile, fixes, Path(target), repeat=repeat, odirect=odirect, think_time=think_time,
                         keep=keep, base=base, settings=settings, on_progress=on_progress)
    doc = _document(path, profile, result, proposers)
    doc["probe"] = probed
    _emit(doc, json_out, _print_result)


def _probe_for(fixes: list[dict], proposers: dict[str, list[str]], target: Path, quiet: bool) -> dict | None:
    """An avoid-targets fix naming no targets avoids the ones a probe of the target flags now
    (filled in place); the probe's result, or None when no fix needed one."""
    from advisor.fixes import fix_key
    from advisor.probe import ProbeError, Settings, probe

    todo = [f for f in fixes if f.get("transform") == "avoid-targets" and not f.get("targets")]
    if not todo:
        return None
    try:
        doc = probe(target, Settings(max_rounds=8, budget_s=90))
    except ProbeError as exc:  # the fix then stays without targets: not verifiable, saying why
        if not quiet:
            click.echo(printable(f"probe: {exc}"), err=True)
        return {"error": str(exc)}
    for fix in todo:
        key = fix_key(fix)
        if doc["slow"]:
            fix["targets"] = list(doc["slow"])
            proposers[fix_key(fix)] = proposers.pop(key, [])
    if not quiet:
        kind = doc["target_kind"]
        click.echo(printable(f"probe of {doc['mount']}: " + (f"slow {kind} {', '.join(map(str, doc['slow']))} "
                   f"at {min(t['rate_mib_s'] for t in doc['targets']):,.1f} MiB/s against {doc['typical_mib_s']:,.1f}"
                   if doc["slow"] else f"no slow {kind} among {len(doc['targets'])}")), err=True)
    return doc


def _document(path: str, profile, result, proposers: dict[str, list[str]]) -> dict:
    from advisor.fixes import fix_key
    from advisor.replay_plan.fidelity import compare

    base = result.baseline
    record = base["record"] if base else None
    ctx = result.context
    fidelity = compare(profile, ctx["source"], record, scale=ctx["scale"]) if record else []
    verifications = [{"fix": fix, **v.to_dict(), "proposed_by": proposers.get(fix_key(fix), [])}
                     for fix, v in zip(result.fixes, result.verifications)]
    return {
        "schema": SCHEMA, "input": path,
        **{k: ctx.get(k) for k in ("target", "fstype", "source", "scale", "np", "nprocs_source",
                                   "repeat", "cache_policy")},
        "launcher": result.launcher,
        "scratch_kept": result.scratch_kept,
        "plan": result.plan,
        "baseline": _runs(base) if base else None,
        "fidelity": {"worst_error": max((f.worst_error() for f in fidelity), default=0.0),
                     "files": [{"source": f.source, "name": f.name, "expected": f.expected,
                                "replayed": f.replayed} for f in fidelity[:200]]},
        "verifications": verifications,
    }


def _runs(variant: dict) -> dict:
    first = variant["runs"][0]
    return {"runs_s": [r["time_s"] for r in variant["runs"]], "passes": variant["passes"],
            "bytes_read": first["bytes_read"], "bytes_written": first["bytes_written"],
            "data_ops": first["data_ops"], "phases": first["phases"],
            "record_totals": variant["record"]["totals"], "layouts": variant.get("layouts")}


def _emit(doc: dict, json_out: str | None, printer) -> None:
    from advisor.fileio import write_json

    if json_out:
        write_json(doc, json_out)
    if json_out != "-":
        printer(doc)


def _print_plan(doc: dict) -> None:
    from advisor.report.terminal import console

    p, out = doc["plan"], console()
    out.print(f"[bold]replay plan[/] of {_shown(doc['input'])}: source {p['source']}, scale {p['scale']:g}, "
              + _ranks(p["np"], p["nprocs_source"]))
    out.print(f"  {counted(p['nfiles'], 'file')} ({fmt_num(p['shared_files'])} shared) in "
              f"{counted(p['directories'], 'directory')}, {counted(p['phases'], 'phase')}")
    out.print("  operations: " + ", ".join(f"{k} {v:,}" for k, v in p["ops"].items()))
    out.print(f"  bytes: read {_mib(p['bytes_read'])}, written {_mib(p['bytes_written'])}; "
              f"needs {_mib(p['planned_bytes'])} on the target")
    for note in p.get("notes", []):
        out.print(f"  note: {_shown(note)}")


def _ranks(np: int, job_ranks: int) -> str:
    """'2 ranks (the job's 2,048 folded onto them)': what the replay runs, beside the job."""
    if np == job_ranks:
        return f"{counted(np, 'rank')}, as the job"
    return f"{counted(np, 'rank')} (the job's {fmt_num(job_ranks)} folded onto them)"


def _print_result(doc: dict) -> None:
    from advisor.report.terminal import console

    out = console()
    out.print(f"[bold]replay[/] of {_shown(doc['input'])} on {_shown(doc['target'])} "
              f"({_shown(doc['fstype'] or 'unknown fs')}): source {doc['source']}, scale {doc['scale']:g}, "
              f"{doc['np']} ranks (job: {doc['nprocs_source']}), {doc['repeat']} rounds")
    if doc["cache_policy"]:
        out.print(f"  cache: {_shown(doc['cache_policy'])}")
    b = doc["baseline"]
    if b:
        times = sorted(b["runs_s"])
        med = times[len(times) // 2]
        moved = b["bytes_read"] + b["bytes_written"]
        out.print(f"  recorded workload: median {med:.3f} s per pass ({b['passes']} per sample), "
                  f"{moved / (1 << 20) / med:,.0f} MiB/s ({b['data_ops']:,} requests, {_mib(moved)})")
        out.print(f"  fidelity: worst per-file deviation from the source {doc['fidelity']['worst_error']:.2%}")
        if b.get("layouts"):
            out.print(f"  layouts: {_shown(layouts_text(b['layouts']))}")
    for v in doc["verifications"]:
        who = ", ".join(v.get("proposed_by", [])) or "fix"
        color = {"improved": "green", "regressed": "red", "equivalent": "cyan"}.get(v["verdict"], "yellow")
        out.print(f"  {who}: {v['fix'].get('transform')}: [{color}]{_shown(v['reason'])}[/]")
        if v["baseline"] and v["fixed"]:
            out.print(f"    time per pass {_side(v['baseline'])} -> {_side(v['fixed'])}")
        if v.get("layouts"):
            out.print(f"    layouts read back: {_shown(layouts_text(v['layouts']['fixed']))}")
    if doc.get("scratch_kept"):
        out.print(f"  scratch kept: {_shown(doc['scratch_kept'])}")


def _shown(text) -> str:
    """A path, file system or reason as rich markup prints it: control characters escaped
    (advisor.formatting.printable), brackets not taken for markup."""
    from rich.markup import escape

    from advisor.formatting import printable

    return escape(printable(text))


def layouts_text(readback: dict) -> str:
    """'4 files: 4 stripes of 4 MiB, 4 MiB objects, pool cephfs_data (OSDs 0, 1, 2, 3)'."""
    if readback.get("error"):
        return f"not read back ({readback['error']})"
    parts = []
    for group in readback["layouts"]:
        lay, what = group["layout"], []
        what.append(f"{lay['stripe_count']} stripe{'s' if lay['stripe_count'] != 1 else ''}"
                    + (f" of {_size(lay['stripe_size'])}" if lay.get("stripe_size") else ""))
        if lay.get("object_size"):
            what.append(f"{_size(lay['object_size'])} objects")
        if lay.get("pool"):
            what.append(f"pool {lay['pool']}")
        if lay.get("targets"):
            what.append(f"{'OSDs' if readback['fstype'] != 'lustre' else 'OSTs'} "
                        f"{', '.join(map(str, lay['targets']))}")
        parts.append(f"{group['files']} file{'s' if group['files'] != 1 else ''}: {', '.join(what)}")
    if readback["wished"]:
        parts.append(f"{readback['matched']} of {readback['wished']} as asked")
    return "; ".join(parts) or "no files left to read"


def _size(n: int) -> str:
    from advisor.formatting import fmt_bytes

    return fmt_bytes(n)


def _side(side: dict) -> str:
    spread = f", spread +-{side['spread']:.0%}" if side.get("spread") is not None else ""
    return f"{side['median_s']:.3f} s ({side['passes']} per sample{spread})"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB"

