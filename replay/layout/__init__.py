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

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from replay.safety import mount_of

CEPH_FSTYPES = ("ceph", "fuse.ceph-fuse", "fuse.ceph")  # kernel client, ceph-fuse
LUSTRE_FSTYPES = ("lustre",)


class LayoutError(Exception):
    """A layout could not be set or read (the tool's own message, shortened)."""


class Unsupported(LayoutError):
    """The target cannot give the layout a plan wishes: the fix is not verifiable there."""


@dataclass(frozen=True)
class Layout:
    """A file's or directory's layout; 0 / "" / () leave a field to the file system."""

    stripe_count: int = 0  # -1: every storage target (Lustre)
    stripe_size: int = 0  # Lustre stripe size, CephFS stripe unit
    object_size: int = 0  # CephFS only
    pool: str = ""  # CephFS data pool, Lustre OST pool
    targets: tuple[int, ...] = ()  # Lustre: the OSTs of the file; CephFS: the OSDs of its pool, when known

    def as_dict(self) -> dict:
        out = {"stripe_count": self.stripe_count, "stripe_size": self.stripe_size}
        if self.object_size:
            out["object_size"] = self.object_size
        if self.pool:
            out["pool"] = self.pool
        if self.targets:
            out["targets"] = list(self.targets)
        return out


class Backend(Protocol):
    """What the replayer and the probe need of a striped file system."""

    fstype: str
    target_kind: str  # "OST", "OSD"

    def create(self, path: Path, layout: Layout) -> None:
        """Create the empty file `path` with `layout` (layouts are fixed once a file has data)."""

    def set_dir(self, path: Path, layout: Layout) -> None:
        """Make `layout` the default of the files created in directory `path` from now on."""

    def read(self, path: Path) -> Layout:
        """The layout `path` has (a directory: its default for new files)."""

    def targets(self) -> list[int]:
        """The storage targets of the file system under the mount."""

    def pinned(self, target: int) -> Layout:
        """A layout that puts a whole file on `target` alone."""

    def avoiding(self, bad: set[int]) -> dict:
        """A placement (plan meta) that keeps new files off the targets `bad`; Unsupported when none."""

    def placed(self, layout: Layout, placement: dict, fid: int) -> Layout:
        """`layout` of file `fid` with a placement from :meth:`avoiding` applied."""

    def resolve(self, layout: Layout, base: Layout) -> Layout:
        """`layout` made concrete and valid here over the directory default `base` (Unsupported if it cannot be)."""

    def respects(self, got: Layout, placement: dict) -> bool:
        """Whether a file with layout `got` stays inside `placement`."""


def can_set_layout(fstype: str) -> bool:
    """Whether layouts can be chosen per file and directory on a file system of this type."""
    return fstype in CEPH_FSTYPES + LUSTRE_FSTYPES


def backend_for(path: str | Path) -> Backend | None:
    """The layout control of the file system holding `path`, or None (ext4, GlusterFS ...)."""
    mount, fstype = mount_of(path)
    if fstype in CEPH_FSTYPES:
        from replay.layout.cephfs import CephFS

        return CephFS(Path(mount), fstype)
    if fstype in LUSTRE_FSTYPES:
        from replay.layout.lustre import Lustre

        return Lustre(Path(mount), fstype)
    return None


__all__ = ["Backend", "Layout", "LayoutError", "Unsupported", "backend_for", "can_set_layout"]
