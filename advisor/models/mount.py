"""The identity of the mount a model learned: which file system, on which device, seen where.

A model of one file system says nothing about another: calibration data and model files
carry this identity, and :func:`differences` says how two identities differ.
"""

from __future__ import annotations

import socket
from pathlib import Path

NETWORK_FS = ("lustre", "gpfs", "nfs", "nfs4", "beegfs", "fuse.glusterfs", "cifs", "ceph", "fuse.ceph-fuse",
              "panfs")


def identity(target: str | Path) -> dict[str, str]:
    """fstype, source device and mount point of the mount holding `target` (from the
    ``ioadvisor collect`` mount table), and the host (which matters for a local file system)."""
    from advisor.collect import Collector

    path = str(Path(target).resolve())
    best = {"path": "", "fstype": "", "device": ""}
    for m in Collector().mounts():
        mount = m["path"].rstrip("/") or "/"
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best["path"]):
            best = m
    return {"fstype": best["fstype"], "source": best["device"], "mount_point": best["path"],
            "host": socket.gethostname(), "target": path}


def differences(model: dict, here: dict) -> list[str]:
    """What differs between the identity a model learned and another one ([] when the same).

    A network file system is the same from any client; a local one only on its host."""
    out = []
    for key in ("fstype", "source", "mount_point"):
        if model.get(key) and here.get(key) and model[key] != here[key]:
            out.append(f"{key} {model[key]!r} vs {here[key]!r}")
    if model.get("fstype") not in NETWORK_FS and model.get("host") and here.get("host") \
            and model["host"] != here["host"]:
        out.append(f"host {model['host']!r} vs {here['host']!r} (a local file system)")
    return out
