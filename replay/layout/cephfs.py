"""CephFS layouts: the ``ceph.file.layout`` / ``ceph.dir.layout`` virtual extended attributes.

A layout is ``stripe_unit=S stripe_count=C object_size=O pool=P``: a file's bytes go
round-robin in S-byte units over C objects at a time, each object holding O bytes, in data
pool P. It can be set on an empty file only, or on a directory, whose layout new files and
new subdirectories inherit (the analog of a Lustre directory default). The pieces must fit:
S a multiple of 64 KiB, O a multiple of S.

Objects are placed on OSDs by hash within the pool, so a file larger than an object spreads
over every OSD of its pool whatever its stripe count; a file is pinned to chosen OSDs only
through a pool whose placement rule holds those OSDs (tests/system/cephfs.sh makes one per
OSD, and one without each OSD). Which OSDs serve which pool is asked of the cluster with the
``ceph`` command (its config from CEPH_CONF or /etc/ceph), once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from replay.layout.model import Layout, LayoutError, Unsupported

FILE_XATTR, DIR_XATTR = "ceph.file.layout", "ceph.dir.layout"
MIN_STRIPE_UNIT = 64 << 10  # CEPH_MIN_STRIPE_UNIT
CLI_TIMEOUT_S = 30  # a cluster without a mgr makes some queries hang
_FIELDS = {"stripe_unit": "stripe_size", "stripe_count": "stripe_count", "object_size": "object_size"}


def _value(layout: Layout) -> bytes:
    parts = [f"{key}={getattr(layout, attr)}" for key, attr in _FIELDS.items() if getattr(layout, attr) > 0]
    if layout.pool:
        parts.append(f"pool={layout.pool}")
    return " ".join(parts).encode()


def parse(value: str) -> Layout:
    """'stripe_unit=4194304 stripe_count=1 object_size=4194304 pool=cephfs_data' as a Layout."""
    pairs = dict(p.split("=", 1) for p in value.split() if "=" in p)
    numbers = {attr: int(pairs[key]) for key, attr in _FIELDS.items() if pairs.get(key, "").isdigit()}
    return Layout(pool=pairs.get("pool", ""), **numbers)


class CephFS:
    """Layouts of one CephFS mount (kernel client or ceph-fuse)."""

    target_kind = "OSD"

    def __init__(self, mount: Path, fstype: str):
        self.mount, self.fstype = mount, fstype

    # -- files and directories -------------------------------------------------------------
    def create(self, path: Path, layout: Layout) -> None:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self._set(path, FILE_XATTR, layout)

    def set_dir(self, path: Path, layout: Layout) -> None:
        self._set(path, DIR_XATTR, layout)

    @staticmethod
    def _set(path: Path, name: str, layout: Layout) -> None:
        try:
            os.setxattr(path, name, _value(layout))
        except OSError as exc:
            raise LayoutError(f"setting {name}={_value(layout).decode()!r} on {path}: {exc.strerror}") from None

    def read(self, path: Path) -> Layout:
        """A file's layout; a directory's default, which it inherits from its nearest ancestor
        that has one when it has none of its own."""
        path = Path(path)
        name = DIR_XATTR if path.is_dir() else FILE_XATTR
        while True:
            try:
                value = os.getxattr(path, name).decode()
                break
            except OSError as exc:
                if name == FILE_XATTR or path == self.mount or path.parent == path:
                    raise LayoutError(f"reading {name} of {path}: {exc.strerror}") from None
                path = path.parent  # no layout of its own: the one it inherits
        return parse(value)  # the pool's OSDs cost cluster queries: pool_targets, where ioadvisor runs

    # -- the cluster: pools and OSDs -------------------------------------------------------
    @cached_property
    def _pool_osds(self) -> dict[str, set[int]]:
        """OSDs of each data pool of the mounted file system (from its placement groups)."""
        pools = {p["pool_id"]: p["pool_name"] for p in _ceph("osd", "pool", "ls", "detail")}
        brief = _ceph("pg", "dump", "pgs_brief")
        stats = brief.get("pg_stats", []) if isinstance(brief, dict) else brief
        osds: dict[str, set[int]] = {}
        for pg in stats:
            name = pools.get(int(pg["pgid"].split(".")[0]))
            if name is not None:
                osds.setdefault(name, set()).update(o for o in pg.get("up", []) if o >= 0)
        data = self._data_pools()
        return {name: osds.get(name, set()) for name in data}

    def _data_pools(self) -> list[str]:
        root_pool = parse(os.getxattr(self.mount, DIR_XATTR).decode()).pool
        for fs in _ceph("fs", "ls"):
            if root_pool in fs.get("data_pools", []):
                return list(fs["data_pools"])
        raise Unsupported(f"no file system of the cluster has the data pool {root_pool!r} of {self.mount}")

    def pool_targets(self, pool: str) -> tuple[int, ...]:
        """The OSDs serving data pool `pool` (Unsupported when the cluster cannot be asked)."""
        return tuple(sorted(self._pool_osds.get(pool, ())))

    def targets(self) -> list[int]:
        return sorted(set().union(*self._pool_osds.values()))

    def pinned(self, target: int) -> Layout:
        pools = sorted(p for p, osds in self._pool_osds.items() if osds == {target})
        if not pools:
            raise Unsupported(f"no data pool of the file system at {self.mount} holds OSD {target} alone "
                              "(a file reaches chosen OSDs only through such a pool: make one per OSD, as "
                              "tests/system/cephfs.sh does)")
        return Layout(stripe_count=1, pool=pools[0], targets=(target,))

    def avoiding(self, bad: set[int]) -> dict:
        unknown = sorted(bad - set(self.targets()))
        if unknown:
            raise Unsupported(f"OSD {', '.join(map(str, unknown))} does not serve the file system at {self.mount}")
        fits = [(len(osds), p) for p, osds in self._pool_osds.items() if osds and not osds & bad]
        if not fits:
            raise Unsupported(f"every data pool of the file system at {self.mount} uses OSD "
                              f"{', '.join(map(str, sorted(bad)))}: an administrator must add a pool without it")
        _, pool = max(fits, key=lambda f: (f[0], f[1]))  # the widest: striped files keep their parallelism
        return {"pool": pool, "targets": sorted(self._pool_osds[pool])}

    def placed(self, layout: Layout, placement: dict, fid: int) -> Layout:
        return replace(layout, pool=placement["pool"])

    def respects(self, got: Layout, placement: dict) -> bool:
        return got.pool == placement["pool"]

    def resolve(self, layout: Layout, base: Layout) -> Layout:
        """The full layout to set: unset fields from the directory's `base`, stripe count -1 as
        the pool's OSD count, the object size raised to a multiple of the stripe unit."""
        unit = layout.stripe_size or base.stripe_size
        if unit % MIN_STRIPE_UNIT:
            raise Unsupported(f"a stripe size of {unit} bytes is not a multiple of 64 KiB, as CephFS requires")
        count = layout.stripe_count or base.stripe_count
        pool = layout.pool or base.pool
        if count == -1:
            count = len(self._pool_osds.get(pool, ())) or 0
            if not count:
                raise Unsupported(f"stripe count -1 (all targets): the OSDs of pool {pool!r} are not known")
        size = layout.object_size or base.object_size or unit
        if size % unit:
            if layout.object_size:
                raise Unsupported(f"object size {size} is not a multiple of the stripe unit {unit}")
            size = -(-size // unit) * unit
        return Layout(stripe_count=count, stripe_size=unit, object_size=size, pool=pool)


def _ceph(*args: str):
    """JSON output of one ``ceph`` command; Unsupported when the cluster cannot be asked."""
    cmd = ["ceph", *args, "-f", "json"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    except FileNotFoundError:
        raise Unsupported("the 'ceph' command is not installed here: which OSDs serve which data pool "
                          "is unknown") from None
    except subprocess.TimeoutExpired:
        raise Unsupported(f"'{' '.join(cmd)}' did not answer within {CLI_TIMEOUT_S} s") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise Unsupported(f"'{' '.join(cmd)}' failed: {lines[-1][:200] if lines else f'exit {done.returncode}'}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise Unsupported(f"'{' '.join(cmd)}' did not print JSON") from None
