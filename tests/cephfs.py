"""A real CephFS cluster for tests: tests/system/cephfs.sh, once per test session.

The script starts a mon, a mgr, four OSDs on BlueStore files, an MDS and a ceph-fuse mount
under a temporary directory (~15 s, ~0.6 GiB), with data pools pinned to one OSD
(``cephfs_osdK``) and pools without one OSD (``cephfs_not_osdK``). Its daemons bind
ports of their own range (never Slurm's 6817). Tests using it carry
``pytest.mark.xdist_group("cephfs")`` so that one worker starts one cluster; the
``cephfs`` fixture is session-scoped. Root only (FUSE): tests fail under CI=true
instead of skipping when root or the Ceph packages are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

import pytest

from tests.helpers import require_command, require_root

SCRIPT = Path(__file__).resolve().parent / "system" / "cephfs.sh"
INSTALL = "apt-get install ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common attr " \
          "(tests/system/install-components.sh)"
OSDS = 4
UP_TIMEOUT_S = 600  # each step of the script has its own deadline; this bounds a hung script


class CephStartError(RuntimeError):
    """The script could not bring the cluster up: its message and the log directory."""


@dataclass
class CephCluster:
    """A running cluster: its directory, mount point and the environment clients need."""

    root: Path
    mnt: Path
    osds: int

    @property
    def conf(self) -> Path:
        return self.root / "ceph.conf"

    @property
    def env(self) -> dict[str, str]:
        """The environment of a process that talks to this cluster (the `ceph` CLI reads CEPH_CONF)."""
        return dict(os.environ, CEPH_CONF=str(self.conf))

    def slow(self, osd: int, mib_s: int | str) -> None:
        """Throttle OSD `osd` to `mib_s` MiB/s (cgroup v1 blkio), or lift it with "off"."""
        _script("slow", self.root, str(osd), str(mib_s))

    def ceph(self, *args: str) -> str:
        done = subprocess.run(["ceph", "-c", str(self.conf), *args], capture_output=True, text=True,
                              timeout=60, check=True)
        return done.stdout


def _script(*args) -> str:
    done = subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=UP_TIMEOUT_S)
    if done.returncode != 0:
        raise CephStartError(f"cephfs.sh {' '.join(map(str, args))}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def _leftovers(root: Path) -> list[str]:
    """Live processes whose command line names the cluster's directory (none after `down`)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit():
                continue
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                continue
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{root}/" in cmd:
            found.append(f"{proc.name}: {cmd.strip()}")
    return found


@contextmanager
def ceph_cluster(root: Path, osds: int = OSDS) -> Iterator[CephCluster]:
    """A cluster in `root` (tests/system/cephfs.sh up ... down --purge); its logs are kept beside
    it in `root`-logs; raises when `down` leaves a process of it running."""
    logs = root.with_name(root.name + "-logs")  # outside the cluster directory: kept after purge
    try:
        mnt = Path(_script("up", root, osds).strip().splitlines()[-1])
        yield CephCluster(root=root, mnt=mnt, osds=osds)
    finally:
        if (root / "log").is_dir():
            shutil.copytree(root / "log", logs, dirs_exist_ok=True)
        _script("down", root, "--purge")
        left = _leftovers(root)
        if left:
            raise CephStartError("cephfs.sh down left processes running:\n" + "\n".join(left))


@pytest.fixture(scope="session")
def cephfs(tmp_path_factory) -> Iterator[CephCluster]:
    """A CephFS cluster of four OSDs mounted for the whole session (one per xdist worker)."""
    require_root("a CephFS cluster (ceph daemons, FUSE mount)")
    for name in ("ceph-mon", "ceph-osd", "ceph-fuse", "ceph"):
        require_command(name, INSTALL)
    with ceph_cluster(Path(tmp_path_factory.mktemp("cephfs"))) as cluster:
        yield cluster
