"""Numbers on the HTML report: evidence values by their declared unit kind, compact bar labels.

Values a user reads (costs, evidence, tooltips, tables) use the engine's formatters
(:mod:`advisor.formatting`), so the page and the terminal report print the same
numbers the same way. Axis ticks are plain numbers in their axis's unit
(:class:`advisor.report.svg.Axis`).
"""

from __future__ import annotations


from advisor.formatting import fmt_bytes, fmt_kind, fmt_num, fmt_pct, fmt_rate, fmt_secs
from advisor.units import FIELD_UNITS, KINDS, Field

# The names other reporters import from here (advisor/report/show.py).
fmt_seconds, fmt_share, fmt_count = fmt_secs, fmt_pct, fmt_num
__all__ = ["fmt_bytes", "fmt_num", "fmt_pct", "fmt_rate", "fmt_secs", "fmt_seconds", "fmt_share", "fmt_count",
           "evidence_rows", "compact_count"]


def compact_count(n: float) -> str:
    """A count in three significant digits: 16384 -> '16.4k', 34000000 -> '34M' (bar labels)."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            text = f"{n / div:.3g}"
            return text + suffix
    return f"{n:.3g}"


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
