"""Units, one home for them: binary sizes and the quantities rules and site configs write.

The replayer (``replay/``) keeps its own ``MiB``: it imports only numpy and mpi4py.
"""

from __future__ import annotations

import re
from typing import Any

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
