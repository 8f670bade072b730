"""Numbers on the HTML report: evidence values by their declared unit kind, compact axis ticks.

Values a user reads (costs, evidence, tooltips, tables) use the engine's formatters
(:mod:`advisor.formatting`), so the page and the terminal report print the same
numbers the same way. Axis ticks use the compact ``tick_*`` forms ('500 ms', '1.5 s',
'256 MiB'), which need no decimals for round values.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from advisor.formatting import fmt_bytes, fmt_kind, fmt_num, fmt_pct, fmt_rate, fmt_secs
from advisor.units import FIELD_UNITS, KINDS, Field

# The names other reporters import from here (advisor/report/show.py).
fmt_seconds, fmt_share, fmt_count = fmt_secs, fmt_pct, fmt_num
__all__ = ["fmt_bytes", "fmt_num", "fmt_pct", "fmt_rate", "fmt_secs", "fmt_seconds", "fmt_share", "fmt_count",
           "evidence_rows", "tick_bytes", "tick_seconds", "tick_count", "tick_rate"]

def _number(fmt: Callable[[float], str]) -> Callable[[float | None], str]:
    """A tick formatter that takes any number (or None) and says 'n/a' for what is not one."""
    @functools.wraps(fmt)
    def checked(x: float | None) -> str:
        if x is None or not math.isfinite(float(x)):
            return "n/a"
        return fmt(float(x))

    return checked


_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


@_number
def tick_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'; exact powers stay short ('4 KiB', '1 MiB')."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    unit = 0
    while n >= 1024 and unit < len(_BYTE_UNITS) - 1:
        n /= 1024
        unit += 1
    if unit == 0:
        return f"{sign}{int(n)} B"
    return f"{sign}{_short(n)} {_BYTE_UNITS[unit]}"


@_number
def tick_seconds(s: float) -> str:
    """Seconds with a unit that fits: '850 us', '12.3 ms', '4.20 s', '3 min 20 s', '2 h 05 min'."""
    if s == 0:
        return "0 s"
    if abs(s) < 1e-3:
        return f"{s * 1e6:.0f} us"
    if abs(s) < 1:
        return f"{s * 1e3:.3g} ms"
    if abs(s) < 120:
        return f"{s:.3g} s"
    if abs(s) < 7200:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


@_number
def tick_count(n: float) -> str:
    """12345 -> '12,345'; large counts abbreviated: 3.4M."""
    if abs(n) >= 10_000_000:
        for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
            if abs(n) >= div:
                return f"{_short(n / div)}{suffix}"
    if n == int(n):
        return f"{int(n):,}"
    return f"{n:,.3g}"


def tick_rate(bytes_per_s: float) -> str:
    """Bandwidth: '512 MiB/s'."""
    text = tick_bytes(bytes_per_s)
    return text if text == "n/a" else text + "/s"


def _short(x: float) -> str:
    """Three significant digits without trailing zeros: 1.50 -> '1.5', 4.00 -> '4'."""
    text = f"{x:.3g}" if x < 1000 else f"{x:.0f}"
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


def evidence_rows(evidence: dict, meta: dict | None, most: int = 40) -> list[tuple[str, str, str]]:
    """(name, label, value as its unit kind says) for each evidence value, at most `most`.

    The kinds come with the finding (``evidence_meta``); a diagnosis saved before they did
    takes them from the facts' declarations, and a name neither knows is shown as text."""
    rows = []
    for name, value in list(evidence.items())[:most]:
        info = (meta or {}).get(name)
        if not _valid(info):
            info = _declared(str(name))
        rows.append((str(name), str(info["label"]), fmt_kind(info["kind"], value, _fields(info.get("fields")))))
    return rows


def _valid(info) -> bool:
    return isinstance(info, dict) and info.get("kind") in KINDS and isinstance(info.get("label"), str)


def _declared(name: str) -> dict:
    from advisor.facts import meta_of  # the fact modules load only for a saved file without kinds

    return meta_of(name) or {"label": name, "kind": "text"}


def _fields(spec) -> dict | None:
    """A record's field kinds, back from their JSON form ({name: {kind, unit} or {kind: record, fields}})."""
    if not isinstance(spec, dict):
        return None
    out = {}
    for name, f in spec.items():
        if isinstance(f, dict) and f.get("kind") == "record":
            out[name] = _fields(f.get("fields")) or {}
        elif isinstance(f, dict) and f.get("kind") in KINDS:
            unit = f.get("unit") if f.get("unit") in FIELD_UNITS else ""
            out[name] = Field(f["kind"], unit)
    return out
