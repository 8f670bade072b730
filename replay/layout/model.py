"""The layout of a file or directory, and the backend protocol each striped file system implements."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


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

    def pool_targets(self, pool: str) -> tuple[int, ...]:
        """The storage targets of a pool named by a layout (CephFS data pools), () when not known."""

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
