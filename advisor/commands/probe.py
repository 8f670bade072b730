"""``ioadvisor probe --target DIR``: every storage target of the file system measured, slow ones flagged."""

from __future__ import annotations

import json
from pathlib import Path

import click

from advisor.errors import InputError
from advisor.fileio import write_atomic, write_json
from advisor.formatting import printable

MiB = 1 << 20


@click.command(name="probe")
@click.option("--target", required=True, type=click.Path(file_okay=False),
              help="A directory on the file system to probe (files only in a scratch directory inside).")
@click.option("--json", "json_out", metavar="FILE|-", default=None, help="Write the result as JSON ('-': stdout).")
@click.option("--snapshot", "snapshot_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a node snapshot (as `ioadvisor collect`) holding the probe, for `ioadvisor diagnose`.")
@click.option("--size", "size_mib", type=click.IntRange(1, 4096), default=16, show_default=True,
              help="MiB written and read per target and round.")
@click.option("--max-rounds", type=click.IntRange(3, 100), default=12, show_default=True,
              help="Rounds at most (at least 3; it stops earlier once every rate is stable).")
@click.option("--budget", "budget_s", type=click.FloatRange(1, 86400), default=180, show_default=True,
              help="Seconds after which no new round starts (once 3 are done).")
def command(target, json_out, snapshot_out, size_mib, max_rounds, budget_s):
    """Measure each storage target (Lustre OST, CephFS OSD) with a short write and read pinned
    to it, repeated until the rates are stable, and flag the slow ones with the slow-OST
    rule's statistic (a median rate slow_ost_factor times below the typical target's).

    Lustre: files pinned with lfs setstripe -i N -c 1 (OSTs from lfs df). CephFS: through
    data pools that hold one OSD each. The snapshot (--snapshot) is what `ioadvisor
    diagnose` reads to report the slow target with a way to keep new files off it.
    """
    from advisor.config import load_config
    from advisor.probe import Settings, probe
    from advisor.targets import FACTOR, FACTOR_PARAM

    if snapshot_out is not None and not snapshot_out.parent.is_dir():
        raise InputError(str(snapshot_out), "its directory does not exist")
    factor = float(load_config().threshold(FACTOR_PARAM, FACTOR))
    settings = Settings(file_bytes=size_mib * MiB, max_rounds=max_rounds, budget_s=budget_s, factor=factor)
    doc = probe(target, settings, progress=None if json_out == "-" else _progress(settings.file_bytes))
    if json_out:
        write_json(doc, json_out)
    if snapshot_out is not None:
        _write_snapshot(doc, snapshot_out)
    if json_out != "-":
        _print(doc)


def _progress(file_bytes: int):
    def show(rounds: int, targets) -> None:
        rates = ", ".join(f"{t.id}: {t.rates(file_bytes)[-1] / MiB:,.0f}" for t in targets)
        click.echo(f"round {rounds} (MiB/s) {rates}", err=True)

    return show


def _write_snapshot(doc: dict, out: Path) -> None:
    from advisor.collect import collect

    snap = collect()
    snap["probe"] = doc
    write_atomic(out, json.dumps(snap, indent=1) + "\n")
    click.echo(printable(f"snapshot with the probe written to {out}"), err=True)


def _print(doc: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    from advisor.report.terminal import console

    out = console()
    kind = doc["target_kind"]
    out.print(escape(printable(f"probe of {doc['mount']} ({doc['fstype']}): {len(doc['targets'])} {kind}s, "
                               f"{doc['file_bytes'] // MiB} MiB per {kind} and round, {doc['rounds']} rounds "
                               f"({'stable' if doc['stable'] else 'not stable'}), {doc['elapsed_s']:.0f} s")))
    table = Table(box=None, pad_edge=False)
    for col in (kind, "write MiB/s", "read MiB/s", "rate MiB/s", ""):
        table.add_column(col, justify="right" if col not in ("", kind) else "left")
    for t in doc["targets"]:
        flag = f"[red]slow[/] ({doc['typical_mib_s'] / max(t['rate_mib_s'], 1e-9):.1f}x below typical)" \
            if t["slow"] else ""
        table.add_row(str(t["id"]), _med(t["write_mib_s"]), _med(t["read_mib_s"]), f"{t['rate_mib_s']:,.1f}", flag)
    out.print(table)
    if doc["slow"]:
        out.print(escape(printable(f"slow {kind}: {', '.join(map(str, doc['slow']))} (median rate "
                                   f"{doc['factor']:g}x or more below the typical {doc['typical_mib_s']:,.1f} MiB/s)")))
        if doc["avoid"]:
            out.print(escape(printable(f"new files avoid it with: {_placement(doc)}")))
        elif doc["avoid_reason"]:
            out.print(escape(printable(f"no placement without it: {doc['avoid_reason']}")))
    else:
        out.print(f"no slow {kind} (none {doc['factor']:g}x below the typical {doc['typical_mib_s']:,.1f} MiB/s)")
    for note in doc["notes"]:
        out.print(escape(printable(f"note: {note}")))


def _med(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{ordered[len(ordered) // 2]:,.1f}" if ordered else "-"


def _placement(doc: dict) -> str:
    avoid = doc["avoid"]
    if avoid.get("pool"):
        return f"data pool {avoid['pool']} (OSDs {', '.join(map(str, avoid['targets']))})"
    return f"OSTs {', '.join(map(str, avoid['targets']))}"

