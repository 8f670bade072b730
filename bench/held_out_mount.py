"""Measure the held-out file system's sample on a real GlusterFS volume or CephFS started here.

    python bench/held_out_mount.py --out FILE [--target gluster|cephfs] [--budget MINUTES] [--base DIR]

Starts the other file system (``gluster``: a 4-brick distributed GlusterFS volume, tests/gluster.py,
glusterd and a FUSE mount; ``cephfs``: a CephFS of a mon, a mgr, 4 OSDs on BlueStore files, an MDS and
a ceph-fuse mount, tests/system/cephfs.sh through tests/cephfs.py, its daemons on the ports of
``CEPHFS_PORTS``, purged after; root only), measures the sample of campaign workloads of
:mod:`advisor.models.crossmount` on it with the campaign's protocol (:func:`advisor.models.campaign.run`,
``advisor.verify.measure``, 40 s a workload), appending every measured fix to FILE with the load it ran
under (resumes: workloads already in FILE are skipped), and tears the file system down. The load
average is printed every workload (stderr), the file system's identity and version at the start.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:] = [str(REPO)] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]


@contextmanager
def _gluster(base: Path) -> Iterator[tuple[Path, str]]:
    from tests.gluster import gluster_volume

    with gluster_volume(base) as mnt:
        yield mnt, _version(["glusterfs", "--version"])


@contextmanager
def _cephfs(base: Path) -> Iterator[tuple[Path, str]]:
    from tests.cephfs import ceph_cluster

    with ceph_cluster(base) as cluster:
        # the default layout of new files (CephFS: 4 MiB objects over the OSDs by hash): what was measured
        layout = subprocess.run(["getfattr", "-n", "ceph.dir.layout", "--only-values", str(cluster.mnt)],
                                capture_output=True, text=True).stdout.strip()
        yield cluster.mnt, f"{_version(['ceph', '--version'])}; {cluster.osds} OSDs; layout {layout or 'default'}"


def _version(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True).stdout.split("\n")[0]


TARGETS = {"gluster": _gluster, "cephfs": _cephfs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--target", choices=sorted(TARGETS), default="gluster", help="the other file system")
    ap.add_argument("--budget", type=float, default=45.0, help="minutes of measuring")
    ap.add_argument("--base", type=Path, default=None,
                    help="directory of the file system's data and mount (removed after; default "
                         "/var/tmp/ioadvisor-held-out-TARGET)")
    args = ap.parse_args()
    from advisor.models import campaign, crossmount
    from advisor.models.mount import identity

    base = args.base or Path(f"/var/tmp/ioadvisor-held-out-{args.target}")
    with TARGETS[args.target](base) as (mnt, version):
        scratch = mnt / "campaign"
        scratch.mkdir(exist_ok=True)
        print(f"mount {identity(scratch)}; {version}; load {os.getloadavg()}", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        rows = campaign.run(scratch, args.out.resolve(), args.budget * 60, 40.0, crossmount.order())
        print(f"{rows} fixes measured in {(time.monotonic() - t0) / 60:.1f} min; load {os.getloadavg()}",
              file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
