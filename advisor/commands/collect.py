"""``ioadvisor collect``: snapshot this node's storage-relevant settings as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from advisor.errors import InputError
from advisor.fileio import write_atomic
from advisor.formatting import counted, printable


@click.command(name="collect")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the snapshot here (default: standard output).")
@click.option("--dir", "dirs", multiple=True, type=click.Path(path_type=Path),
              help="A directory whose default Lustre layout to record (lfs getstripe -d); repeatable.")
def command(out: Path | None, dirs: tuple[Path, ...]) -> None:
    """Snapshot this node: CPU topology, memory, block-device queues, mounts, and Lustre
    client/server parameters where lctl and lfs exist (missing tools are noted, not errors).

    The JSON is ``ioadvisor/snapshot/v1``; feed it to ``ioadvisor diagnose`` with the site
    config to check it against the site's targets.
    """
    from advisor.collect import collect, storage_devices

    for d in dirs:
        if not d.exists():
            raise InputError(str(d), "no such directory")
    doc = collect([str(d) for d in dirs])
    text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
    if out is None:
        sys.stdout.write(text)
        return
    if out.parent and not out.parent.is_dir():
        raise InputError(str(out), "its directory does not exist")
    write_atomic(out, text)  # never half-written
    devices, notes = counted(len(storage_devices(doc)), "block device"), counted(len(doc["notes"]), "note")
    click.echo(printable(f"snapshot of {doc['host']['hostname']} written to {out} ({devices}, {notes})"), err=True)
