"""tests/system/cephfs.sh itself: pools pinned to one OSD or kept off one, and the slow-disk throttle."""

from __future__ import annotations

import json
import os
import time

import pytest

pytestmark = [pytest.mark.xdist_group("cephfs"), pytest.mark.slow]

MiB = 1 << 20


def _pool_osds(cluster, pool: str) -> set[int]:
    pgs = json.loads(cluster.ceph("pg", "ls-by-pool", pool, "-f", "json"))
    pgs = pgs.get("pg_stats", pgs) if isinstance(pgs, dict) else pgs
    return {osd for pg in pgs for osd in pg["acting"]}


def test_each_osd_has_a_pinned_pool_and_a_pool_without_it(cephfs):
    every = set(range(cephfs.osds))
    assert _pool_osds(cephfs, "cephfs_data") == every
    for k in range(cephfs.osds):
        assert _pool_osds(cephfs, f"cephfs_osd{k}") == {k}
        assert _pool_osds(cephfs, f"cephfs_not_osd{k}") == every - {k}
    pools = json.loads(cephfs.ceph("fs", "ls", "-f", "json"))[0]["data_pools"]
    assert sorted(pools) == sorted(["cephfs_data"] + [f"cephfs_{p}osd{k}" for k in range(cephfs.osds)
                                                      for p in ("", "not_")])


def _write_seconds(path, nbytes: int) -> float:
    block = b"\0" * (4 * MiB)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(nbytes // len(block)):
            os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def test_slow_throttles_the_osd_it_names(cephfs):
    d = cephfs.mnt / "slow-check"
    d.mkdir()
    os.setxattr(d, "ceph.dir.layout.pool", b"cephfs_osd1")
    cephfs.slow(1, 16)
    try:
        seconds = _write_seconds(d / "f", 48 * MiB)
    finally:
        cephfs.slow(1, "off")
    # a lower bound only: 48 MiB cannot reach OSD 1 faster than 16 MiB/s once it is throttled
    assert seconds > 48 / 16 * 0.8
    assert not list(cephfs.root.glob("run/osd.*.blkio"))  # `off` removed the throttle's cgroup
