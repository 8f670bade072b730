"""Units, one home for them: binary sizes, the quantities rules and site configs write, and the
unit kinds every fact declares (what a value is: bytes, seconds, a ratio, a share ...).

The replayer (``replay/``) keeps its own ``MiB``: it imports only numpy and mpi4py.
"""

from __future__ import annotations

import re
from typing import Any

from advisor.records import Frozen

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40

# What a number in a rule or a site config may carry: '4MiB', '10%', '500ms'.
UNITS = {
    "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB,
    "KB": 1000, "MB": 1000**2, "GB": 1000**3,
    "%": 0.01, "s": 1.0, "ms": 1e-3, "us": 1e-6,
}
NUMBER = r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_UNIT = "|".join(sorted(UNITS, key=len, reverse=True))
_QUANTITY = re.compile(rf"\s*(-?)\s*({NUMBER})({_UNIT})?\s*")


def with_unit(digits: str, unit: str | None) -> int | float:
    """The value of `digits` in `unit` (sizes stay integers when whole)."""
    value: float | int = float(digits) if any(c in digits for c in ".eE") else int(digits)
    if unit:
        value = value * UNITS[unit]
        if isinstance(value, float) and value.is_integer() and unit not in ("%", "ms", "us", "s"):
            value = int(value)
    return value


def quantity(value: Any) -> int | float:
    """A threshold value: a number, or text with a unit ('10%', '4MiB', '-2s'); ValueError if neither."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    m = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"{value!r} is not a number (units: {', '.join(UNITS)})")
    number = with_unit(m.group(2), m.group(3))
    return -number if m.group(1) else number


# ---- unit kinds: what a number (or a word) a user reads is --------------------------------

class UnitKind(Frozen):
    """What a value is, and the unit it has in JSON (`base`): every fact declares one."""

    name: str
    base: str  # the value's unit in the JSON documents ('' when it has none)
    doc: str


KINDS: dict[str, UnitKind] = {k.name: k for k in (
    UnitKind("bytes", "B", "an amount of data or a size"),
    UnitKind("seconds", "s", "a duration"),
    UnitKind("rate", "B/s", "bytes per second"),
    UnitKind("ratio", "x", "one quantity over another of the same unit, shown as a multiplier (3.0x)"),
    UnitKind("fraction", "1", "a share from 0 to 1, shown as a percentage"),
    UnitKind("percent", "%", "a share in percent, from 0 to 100"),
    UnitKind("count", "", "a number of things (files, OSTs, ranks, repetitions)"),
    UnitKind("ops", "", "a number of I/O operations (calls)"),
    UnitKind("index", "", "an identifier that is a number: a rank, an OST index"),
    UnitKind("path", "", "a file or directory"),
    UnitKind("enum", "", "one of a few fixed words"),
    UnitKind("text", "", "free text"),
    UnitKind("flag", "", "yes or no"),
    UnitKind("record", "", "an object whose fields declare their own kinds"),
)}

# Units a record field may keep instead of its kind's base unit (the field's name says which:
# read_ahead_kb, best_mib_s), with their factor to the base unit.
FIELD_UNITS = {"KiB": ("bytes", KiB), "MiB": ("bytes", MiB), "MiB/s": ("rate", MiB), "MB/s": ("rate", 1e6)}


class Field(Frozen):
    """A record field's kind, and its own unit when it is not the kind's base unit."""

    kind: str
    unit: str = ""

    @property
    def scale(self) -> float:
        return FIELD_UNITS[self.unit][1] if self.unit else 1

    @classmethod
    def parse(cls, spec: str) -> Field:
        """'count', 'rate MiB/s', 'bytes KiB'; ValueError for an unknown kind or unit."""
        kind, _, unit = spec.partition(" ")
        check_kind(kind)
        if unit and FIELD_UNITS.get(unit, ("",))[0] != kind:
            raise ValueError(f"unit {unit!r} is not one of kind {kind!r}")
        return cls(kind, unit)

    def meta(self) -> dict[str, str]:
        return {"kind": self.kind, "unit": self.unit or KINDS[self.kind].base}


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown unit kind {kind!r} (kinds: {', '.join(KINDS)})")
    return kind

STD_STREAMS = ("<STDIN>", "<STDOUT>", "<STDERR>")
"""Darshan's names of the standard streams: recorded like files, never counted as files."""
