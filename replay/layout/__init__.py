"""Storage layouts on the replay target: set with the file system's own controls, read back.

A plan carries layout wishes per file (stripe count and size, CephFS object size, whether
the wish is the file's or its directory's default, whether the file must stay off some
storage targets). Each striped file system says them its own way:

- Lustre (:mod:`replay.layout.lustre`): ``lfs setstripe``/``lfs getstripe``; storage targets
  are OSTs (``lfs df``), a file is pinned with ``-i``, kept off some with an OST list ``-o``;
- CephFS (:mod:`replay.layout.cephfs`): the ``ceph.file.layout``/``ceph.dir.layout`` virtual
  extended attributes (stripe unit, stripe count, object size, data pool); storage targets
  are OSDs, reached through data pools whose placement rule holds chosen OSDs.

Other file systems have no layout control: a plan that wishes one is not verifiable there.
Lustre and CephFS are spoken to only through their command-line tools and extended
attributes, so this package (like all of ``replay/``) needs nothing beyond the standard
library and numpy on a compute node.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from replay.layout.cephfs import CephFS
from replay.layout.lustre import Lustre
from replay.layout.model import Backend, Layout, LayoutError, Unsupported
from replay.safety import mount_of

CEPH_FSTYPES = ("ceph", "fuse.ceph-fuse", "fuse.ceph")  # kernel client, ceph-fuse
LUSTRE_FSTYPES = ("lustre",)


def can_set_layout(fstype: str) -> bool:
    """Whether layouts can be chosen per file and directory on a file system of this type."""
    return fstype in CEPH_FSTYPES + LUSTRE_FSTYPES


def backend_for(path: str | Path) -> Backend | None:
    """The layout control of the file system holding `path`, or None (ext4, GlusterFS ...)."""
    mount, fstype = mount_of(path)
    if fstype in CEPH_FSTYPES:
        return _cephfs(str(mount), fstype, os.environ.get("CEPH_CONF", ""))
    if fstype in LUSTRE_FSTYPES:
        return Lustre(Path(mount), fstype)
    return None


@functools.lru_cache(maxsize=8)
def _cephfs(mount: str, fstype: str, conf: str) -> CephFS:
    """One CephFS backend per mount (and cluster config) and process: which OSDs serve which pool
    is asked of the cluster once (three ``ceph`` commands, 5-7 s at load 7), not at every
    measurement (a tune search makes one per rung)."""
    return CephFS(Path(mount), fstype)


__all__ = ["Backend", "Layout", "LayoutError", "Unsupported", "backend_for", "can_set_layout"]
