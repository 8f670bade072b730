"""A real GlusterFS volume for tests: one node, 4 bricks, FUSE-mounted, torn down after.

glusterd is started directly (no systemd here) unless one already runs; the brick
host must be the machine's hostname, and `force` because the bricks sit on the root
file system. Root only (FUSE mounts and glusterd): tests call `require_root`, which
fails under CI=true instead of skipping.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers import require_command, require_root

INSTALL = "apt-get install glusterfs-server glusterfs-client fuse3 (tests/system/install-components.sh)"


def _gluster(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["gluster", "--mode=script", *args], capture_output=True, text=True,
                          timeout=timeout)


def _glusterd_up() -> bool:
    try:
        return _gluster("volume", "list", timeout=15).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _start_glusterd(state: Path) -> int | None:
    """Start glusterd unless one answers already; its pid when we started it."""
    if _glusterd_up():
        return None
    pidfile = state / "glusterd.pid"
    started = subprocess.run([require_command("glusterd", INSTALL), "-p", str(pidfile),
                              f"--log-file={state / 'glusterd.log'}"], timeout=30)
    if started.returncode != 0:
        # On a loaded machine a running glusterd can miss the 15 s `volume list` probe; a
        # second glusterd then refuses to start. Use the running one if it answers now.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _glusterd_up():
                return None
            time.sleep(1)
        raise RuntimeError(f"glusterd exited with {started.returncode} (see {state / 'glusterd.log'})")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _glusterd_up():
            return int(pidfile.read_text().strip()) if pidfile.exists() else None
        time.sleep(0.5)
    raise RuntimeError(f"glusterd did not come up (see {state / 'glusterd.log'})")


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed: {(proc.stderr or proc.stdout).strip()}")


@contextmanager
def gluster_volume(base: Path, bricks: int = 4) -> Iterator[Path]:
    """A started, mounted distributed volume of `bricks` bricks under `base`; yields the mount."""
    host = socket.gethostname()
    name = f"ioadv{uuid.uuid4().hex[:10]}"
    base.mkdir(parents=True, exist_ok=True)
    mnt = base / "mnt"
    mnt.mkdir(exist_ok=True)
    started = _start_glusterd(base)
    created = mounted = False
    try:
        paths = [base / f"brick{i}" for i in range(bricks)]
        _check(_gluster("volume", "create", name, *[f"{host}:{p}" for p in paths], "force"), "volume create")
        created = True
        _check(_gluster("volume", "start", name), "volume start")
        for attempt in range(10):  # the volume's brick processes take a moment to listen
            proc = subprocess.run(["mount", "-t", "glusterfs", f"{host}:/{name}", str(mnt)],
                                  capture_output=True, text=True, timeout=60)
            if proc.returncode == 0 and os.path.ismount(mnt):
                mounted = True
                break
            time.sleep(1)
        if not mounted:
            raise RuntimeError(f"mount of {host}:/{name} failed: {proc.stderr.strip()}")
        yield mnt
    finally:
        if mounted:
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        if created:
            _gluster("volume", "stop", name, "force")
            _gluster("volume", "delete", name)
        if started:
            try:
                os.kill(started, signal.SIGTERM)
            except ProcessLookupError:
                pass
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def gluster_mount(tmp_path_factory) -> Iterator[Path]:
    """A fresh 4-brick GlusterFS volume mounted for this test module."""
    require_root("a GlusterFS volume (glusterd, FUSE mount)")
    require_command("glusterd", INSTALL)
    require_command("mount.glusterfs", INSTALL)
    with gluster_volume(Path(tmp_path_factory.mktemp("gluster"))) as mnt:
        yield mnt
