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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import require_command, require_root

INSTALL = "apt-get install glusterfs-server glusterfs-client fuse3 (tests/system/install-components.sh)"


# A loaded 2-core CI machine (the other xdist worker, brick processes, FUSE) stretches every
# step of glusterd's start from under a second to tens of seconds: each step polls for its
# outcome until a generous deadline instead of trusting one short probe or a fixed sleep.
START_DEADLINE_S = 180
CLI_TIMEOUT_S = 120  # one gluster CLI call (its own RPC timeout is 120 s)
PROBE_TIMEOUT_S = 30
SYSTEM_GLUSTERD_LOG = Path("/var/log/glusterfs/glusterd.log")  # a glusterd not started by us (default log)


class GlusterStartError(RuntimeError):
    """A step of bringing the volume up failed: the message names the step and the log to read."""


def _gluster(*args: str, timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(["gluster", "--mode=script", *args], capture_output=True, text=True,
                          timeout=timeout)


def _glusterd_answers() -> bool:
    try:
        return _gluster("volume", "list", timeout=PROBE_TIMEOUT_S).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _running_glusterd() -> int | None:
    """The pid of a glusterd process on this host (whether or not it answers yet), or None."""
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or (proc / "comm").read_text().strip() != "glusterd":
                continue
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX":  # not dead
                return int(proc.name)
        except OSError:
            continue  # exited while we looked
    return None


def _tail(log: Path, lines: int = 15) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({log} not readable)"


def _wait_answering(step: str, log: Path, alive=lambda: True) -> None:
    """Poll glusterd until it answers; fail naming `step` and `log` at the deadline or on its death."""
    deadline = time.monotonic() + START_DEADLINE_S
    while not _glusterd_answers():
        if not alive():
            raise GlusterStartError(f"{step}: glusterd exited before answering (see {log}):\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise GlusterStartError(f"{step}: glusterd does not answer `gluster volume list` after "
                                    f"{START_DEADLINE_S} s (see {log}):\n{_tail(log)}")
        time.sleep(0.5)


def _start_glusterd(log: Path) -> subprocess.Popen | None:
    """Our glusterd, answering; None when one was already running (it is then used, not doubled).

    Whether one runs is decided by the process table, not by a probe that a busy glusterd can
    miss: a second glusterd cannot bind the management port and exits.
    """
    existing = _running_glusterd()
    if existing is not None:
        _wait_answering(f"waiting for the running glusterd (pid {existing})",
                        SYSTEM_GLUSTERD_LOG, alive=lambda: _running_glusterd() is not None)
        return None
    # -N: in the foreground, so that we hold the very process and see it die.
    proc = subprocess.Popen([require_command("glusterd", INSTALL), "-N", f"--log-file={log}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_answering("starting glusterd", log, alive=lambda: proc.poll() is None)
    except BaseException:
        _stop(proc)
        raise
    return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _check(proc: subprocess.CompletedProcess, what: str, log: Path) -> None:
    if proc.returncode != 0:
        raise GlusterStartError(f"{what} failed: {(proc.stderr or proc.stdout).strip()} (see {log})")


def _mount(host: str, name: str, mnt: Path) -> None:
    """Mount the volume, retrying until the deadline while its brick processes start listening."""
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        proc = subprocess.run(["mount", "-t", "glusterfs", f"{host}:/{name}", str(mnt)],
                              capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
        if proc.returncode == 0 and os.path.ismount(mnt):
            return
        if time.monotonic() > deadline:
            log = Path("/var/log/glusterfs") / (str(mnt).strip("/").replace("/", "-") + ".log")
            raise GlusterStartError(f"mount of {host}:/{name} on {mnt} failed for {START_DEADLINE_S} s: "
                                    f"{proc.stderr.strip()} (see {log}):\n{_tail(log)}")
        time.sleep(1)


@contextmanager
def gluster_volume(base: Path, bricks: int = 4) -> Iterator[Path]:
    """A started, mounted distributed volume of `bricks` bricks under `base`; yields the mount."""
    host = socket.gethostname()
    name = f"ioadv{uuid.uuid4().hex[:10]}"
    base.mkdir(parents=True, exist_ok=True)
    mnt = base / "mnt"
    mnt.mkdir(exist_ok=True)
    glusterd_log = base.with_name(base.name + "-glusterd.log")  # outside `base`: kept after teardown
    glusterd = _start_glusterd(glusterd_log)
    log = glusterd_log if glusterd else SYSTEM_GLUSTERD_LOG  # where the running glusterd logs
    created = mounted = False
    try:
        paths = [base / f"brick{i}" for i in range(bricks)]
        _check(_gluster("volume", "create", name, *[f"{host}:{p}" for p in paths], "force"), "volume create", log)
        created = True
        _check(_gluster("volume", "start", name), "volume start", log)
        _mount(host, name, mnt)
        mounted = True
        yield mnt
    finally:
        if mounted and subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        if created:
            _gluster("volume", "stop", name, "force")
            _gluster("volume", "delete", name)
        if glusterd is not None and not _other_volumes():
            _stop(glusterd)
        shutil.rmtree(base, ignore_errors=True)


def _other_volumes() -> bool:
    """Whether started volumes of another test session live on glusterd (which that session found
    running and used): stopping glusterd under them would break it, so glusterd is left running."""
    try:
        info = _gluster("volume", "info", timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False
    return info.returncode == 0 and any(line.strip() == "Status: Started" for line in info.stdout.splitlines())


@pytest.fixture(scope="module")
def gluster_mount(tmp_path_factory) -> Iterator[Path]:
    """A fresh 4-brick GlusterFS volume mounted for this test module."""
    require_root("a GlusterFS volume (glusterd, FUSE mount)")
    require_command("glusterd", INSTALL)
    require_command("mount.glusterfs", INSTALL)
    with gluster_volume(Path(tmp_path_factory.mktemp("gluster"))) as mnt:
        yield mnt
