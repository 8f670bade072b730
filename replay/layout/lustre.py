"""Lustre layouts with ``lfs``: ``setstripe`` on new files and directories, ``getstripe`` back.

Storage targets are OSTs (their indices in ``lfs df``). A file is pinned to one OST with
``-i N -c 1``; a file kept off some OSTs gets an explicit OST list (``-o``) of healthy ones,
rotating over them file by file as the MDS's allocator would over an OST pool (a pool
itself needs the administrator: ``lctl pool_new`` on the MGS). Reading back uses the plain
``lfs getstripe`` form of a new file (the full parser of every form, for collected text, is
advisor/lustre_tools.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

from replay.layout.model import Layout, LayoutError, Unsupported

TIMEOUT_S = 60


class Lustre:
    """Layouts of one Lustre client mount."""

    target_kind = "OST"

    def __init__(self, mount: Path, fstype: str):
        self.mount, self.fstype = mount, fstype
        self.lfs = shutil.which("lfs")

    def _run(self, *args: str) -> str:
        if self.lfs is None:
            raise Unsupported("'lfs' is not available here: Lustre layouts cannot be set or read")
        done = subprocess.run([self.lfs, *args], capture_output=True, text=True, timeout=TIMEOUT_S)
        if done.returncode != 0:
            raise LayoutError(f"lfs {args[0]} failed: {(done.stderr or done.stdout).strip()[:200]}")
        return done.stdout

    @staticmethod
    def _options(layout: Layout) -> list[str]:
        opts = []
        if len(layout.targets) == 1:
            opts += ["-i", str(layout.targets[0]), "-c", "1"]
        elif layout.targets:
            opts += ["-o", ",".join(map(str, layout.targets))]
        elif layout.stripe_count:
            opts += ["-c", str(layout.stripe_count)]
        if layout.stripe_size:
            opts += ["-S", str(layout.stripe_size)]
        if layout.pool:
            opts += ["-p", layout.pool]
        return opts

    def create(self, path: Path, layout: Layout) -> None:
        self._run("setstripe", *self._options(layout), str(path))

    def set_dir(self, path: Path, layout: Layout) -> None:
        self._run("setstripe", *self._options(layout), str(path))

    def read(self, path: Path) -> Layout:
        path = Path(path)
        text = self._run("getstripe", *(["-d"] if path.is_dir() else []), str(path))
        return parse_plain(text)

    def pool_targets(self, pool: str) -> tuple[int, ...]:
        return ()  # a Lustre file's own OSTs are in its layout (lfs getstripe)

    def targets(self) -> list[int]:
        text = self._run("df", str(self.mount))
        return sorted({int(m) for m in re.findall(r"\[OST:(\d+)\]", text)})

    def pinned(self, target: int) -> Layout:
        return Layout(stripe_count=1, targets=(target,))

    def avoiding(self, bad: set[int]) -> dict:
        osts = self.targets()
        unknown = sorted(bad - set(osts))
        if unknown:
            raise Unsupported(f"OST {', '.join(map(str, unknown))} is not an OST of {self.mount}")
        healthy = [o for o in osts if o not in bad]
        if not healthy:
            raise Unsupported(f"every OST of {self.mount} is to be avoided")
        return {"targets": healthy}

    def placed(self, layout: Layout, placement: dict, fid: int) -> Layout:
        healthy = placement["targets"]
        count = len(healthy) if layout.stripe_count == -1 else min(max(layout.stripe_count, 1), len(healthy))
        first = fid * count
        return replace(layout, stripe_count=count,
                       targets=tuple(healthy[(first + k) % len(healthy)] for k in range(count)))

    def respects(self, got: Layout, placement: dict) -> bool:
        return bool(got.targets) and set(got.targets) <= set(placement["targets"])

    def resolve(self, layout: Layout, base: Layout) -> Layout:
        if layout.object_size:
            raise Unsupported("Lustre has no object size (a CephFS layout field)")
        return layout  # lfs itself applies the directory default to what is left unset


def parse_plain(text: str) -> Layout:
    """The first component of ``lfs getstripe`` output (plain, PFL, or a directory's one-line
    default): stripe count and size, pool, and the OSTs of its objects."""
    starts = [m.start() for m in re.finditer(r"lcme_id:", text)]
    if len(starts) > 1:
        text = text[:starts[1]]  # a PFL file: its first component

    def number(key: str) -> int:
        m = re.search(rf"\b{key}:\s+(-?\d+)", text)
        return int(m.group(1)) if m else 0

    pool = re.search(r"\b(?:lmm_)?pool:\s+(\S+)", text)
    osts = re.findall(r"^\s+(\d+)\s+\d+\s+0x", text, re.M) or re.findall(r"l_ost_idx:\s*(\d+)", text)
    return Layout(stripe_count=number("lmm_stripe_count") or number("stripe_count"),
                  stripe_size=number("lmm_stripe_size") or number("stripe_size"),
                  pool=pool.group(1) if pool else "", targets=tuple(int(t) for t in osts))
