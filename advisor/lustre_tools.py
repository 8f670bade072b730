"""Parsers for the text ``lfs`` and ``lctl`` print (the formats of the Lustre manual).

- ``lfs getstripe`` in its three forms: plain (``lmm_*`` lines and the ``obdidx``
  table), composite/PFL (``lcm_*``/``lcme_*`` with a sub-layout per component, also
  the ``-v`` YAML-ish form) and the one-line directory form
  (``stripe_count: 1 stripe_size: 1048576 pattern: 0 stripe_offset: -1``);
- ``lfs df`` (1K blocks or ``-h``) per MDT/OST and the file system summary;
- ``lctl get_param`` (``name=value``, values continued on following lines).

Layout components reuse :class:`advisor.profile.LustreComponent`.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from advisor.profile import LustreComponent

_HUMAN = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_LAYOUT_KEYS = ("lmm_", "lcm_", "lcme_", "stripe_count:", "composite_header:", "components:",
                "obdidx", "sub_layout:", "lmv_", "- ")


# ---- lfs getstripe -----------------------------------------------------------------

@dataclass
class StripeLayout:
    """One path's layout as ``lfs getstripe`` printed it."""

    path: str
    components: list[LustreComponent] = field(default_factory=list)
    composite: bool = False  # a PFL/FLR layout (lcm_* header)
    inline: bool = False  # the one-line form lfs prints for directories

    @property
    def stripe_count(self) -> int:
        """Stripe count of the first component (-1 means all OSTs)."""
        return self.components[0].stripe_count if self.components else 0

    @property
    def stripe_size(self) -> int:
        return self.components[0].stripe_size if self.components else 0

    @property
    def ost_ids(self) -> list[int]:
        return [ost for c in self.components for ost in c.ost_ids]


def _int(text: str, default: int = 0) -> int:
    text = text.strip()
    if text.upper() == "EOF":
        return -1
    try:
        return int(text, 0)
    except ValueError:
        return default


def _pattern(value: str) -> str:
    # lfs prints the pattern as a name or as its number (1 = raid0, 0 = unset)
    value = value.strip()
    return {"0": "raid0", "1": "raid0", "": "raid0"}.get(value, value)


def _is_layout_line(line: str) -> bool:
    return line[:1] in (" ", "\t") or line.startswith(_LAYOUT_KEYS)


class _GetstripeParser:
    def __init__(self) -> None:
        self.layouts: list[StripeLayout] = []
        self.layout: StripeLayout | None = None
        self.comp: LustreComponent | None = None
        self.in_table = False

    def _component(self, new: bool = False) -> LustreComponent:
        if self.layout is None:
            self.layout = StripeLayout(path="")
            self.layouts.append(self.layout)
        if new or self.comp is None:
            self.comp = LustreComponent()
            self.layout.components.append(self.comp)
        return self.comp

    def feed(self, raw: str) -> None:
        line = raw.rstrip()
        text = line.strip()
        if not text or text == "..." or text in ("lmm_objects:", "components:", "sub_layout:"):
            return
        if not _is_layout_line(line):
            self.layout = StripeLayout(path=text)
            self.layouts.append(self.layout)
            self.comp, self.in_table = None, False
            return
        if text.startswith("obdidx"):
            self.in_table = True
            return
        if self.in_table and re.match(r"^\d+\s", text):
            self._component().ost_ids.append(int(text.split()[0]))
            return
        self.in_table = False
        if m := re.search(r"l_ost_idx:\s*(\d+)", text):
            self._component().ost_ids.append(int(m.group(1)))
            return
        pairs = re.findall(r"([\w.]+):\s+(\S+)", text)
        if text.startswith("stripe_count:") and len(pairs) > 1:
            self._inline(dict(pairs))
            return
        for key, value in pairs[:1]:
            self._key(key, value)

    def _inline(self, values: dict[str, str]) -> None:
        comp = self._component(new=self.comp is not None and self.comp.stripe_size > 0)
        comp.stripe_count = _int(values.get("stripe_count", "0"))
        comp.stripe_size = _int(values.get("stripe_size", "0"))
        comp.stripe_offset = _int(values.get("stripe_offset", "-1"), -1)
        comp.pattern = _pattern(values.get("pattern", ""))
        comp.pool = values.get("pool", "")
        if self.layout is not None:
            self.layout.inline = True

    def _key(self, key: str, value: str) -> None:
        if key.startswith("lcm_"):
            if self.layout is None:
                self.layout = StripeLayout(path="")
                self.layouts.append(self.layout)
            self.layout.composite = True
            return
        if key == "lcme_id":
            self._component(new=True)
            return
        comp = self._component()
        if key == "lcme_extent.e_start":
            comp.extent_start = _int(value)
        elif key == "lcme_extent.e_end":
            comp.extent_end = _int(value)
        elif key == "lmm_stripe_count":
            comp.stripe_count = _int(value)
        elif key == "lmm_stripe_size":
            comp.stripe_size = _int(value)
        elif key == "lmm_stripe_offset":
            comp.stripe_offset = _int(value, -1)
        elif key == "lmm_pattern":
            comp.pattern = _pattern(value)
        elif key == "lmm_pool":
            comp.pool = value


def parse_getstripe(text: str) -> list[StripeLayout]:
    """Every path's layout in ``lfs getstripe`` output (plain, composite or directory form)."""
    parser = _GetstripeParser()
    for line in text.splitlines():
        parser.feed(line)
    return [layout for layout in parser.layouts if layout.components]


# ---- lfs df ------------------------------------------------------------------------

@dataclass
class TargetUsage:
    """One MDT or OST line of ``lfs df``."""

    uuid: str
    kind: str  # "MDT" or "OST"
    index: int
    total_bytes: int
    used_bytes: int
    avail_bytes: int
    use_pct: int
    mount: str


@dataclass
class FsUsage:
    """One file system of ``lfs df``: its targets and its summary line."""

    mount: str
    targets: list[TargetUsage] = field(default_factory=list)
    total_bytes: int = 0
    used_bytes: int = 0
    avail_bytes: int = 0
    inactive: list[str] = field(default_factory=list)  # targets lfs could not reach

    @property
    def osts(self) -> list[TargetUsage]:
        return [t for t in self.targets if t.kind == "OST"]

    @property
    def mdts(self) -> list[TargetUsage]:
        return [t for t in self.targets if t.kind == "MDT"]


def _size(token: str, kib: bool) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTPE]?)", token)
    if not m:
        return 0
    if m.group(2) or not kib:
        return int(float(m.group(1)) * _HUMAN[m.group(2)])
    return int(m.group(1)) * 1024


def parse_lfs_df(text: str) -> list[FsUsage]:
    """File systems of ``lfs df`` / ``lfs df -h`` output (sizes in bytes)."""
    systems: dict[str, FsUsage] = {}
    kib = True
    for line in text.splitlines():
        tokens = line.split()
        if not tokens or tokens[0] == "...":
            continue
        if tokens[0] == "UUID":
            kib = "1K-blocks" in tokens
            continue
        target = re.fullmatch(r"(.*)\[(MDT|OST):(\d+)\]", tokens[-1])
        if tokens[0] == "filesystem_summary:" and len(tokens) >= 6:
            fs = systems.setdefault(tokens[-1], FsUsage(mount=tokens[-1]))
            fs.total_bytes, fs.used_bytes, fs.avail_bytes = (_size(t, kib) for t in tokens[1:4])
        elif target and len(tokens) >= 6:
            mount = target.group(1)
            fs = systems.setdefault(mount, FsUsage(mount=mount))
            total, used, avail = (_size(t, kib) for t in tokens[1:4])
            fs.targets.append(TargetUsage(tokens[0], target.group(2), int(target.group(3)), total,
                                          used, avail, int(tokens[4].rstrip("%") or 0), mount))
        elif re.match(r"\S+_UUID", tokens[0]) or "inactive device" in line:
            for fs in systems.values() or [systems.setdefault("", FsUsage(mount=""))]:
                fs.inactive.append(line.strip())
                break
    return list(systems.values())


# ---- lctl get_param ----------------------------------------------------------------

_PARAM = re.compile(r"^([A-Za-z0-9_][\w.\-*:@]*)=(.*)$")


def parse_get_param(text: str) -> dict[str, str]:
    """``name=value`` lines of ``lctl get_param``; a value continued on later lines is joined."""
    params: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        m = _PARAM.match(line.strip()) if line[:1] not in (" ", "\t") else None
        if m:
            last = m.group(1)
            params[last] = m.group(2).strip()
        elif last is not None and line.strip():
            params[last] = (params[last] + "\n" + line.strip()).strip()
    return params


def select(params: dict[str, str], pattern: str) -> dict[str, str]:
    """The parameters whose name matches the ``lctl`` glob `pattern` (``osc.*.max_dirty_mb``)."""
    return {name: value for name, value in params.items() if fnmatch.fnmatchcase(name, pattern)}


def client_oscs(params: dict[str, str], pattern: str) -> dict[str, str]:
    """Like :func:`select`, without the OSCs an MDT uses to reach the OSTs (``-osc-MDT0000``)."""
    return {k: v for k, v in select(params, pattern).items() if not re.search(r"-osc-MDT[0-9a-f]{4}", k)}
