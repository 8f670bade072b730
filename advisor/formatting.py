"""Human-readable I/O quantities, shared by every reporter (terminal, HTML, show, rule messages),
and :func:`printable`, the one filter every untrusted string passes before it reaches a terminal,
a log line or a page.

Kept free of heavy imports so that `show`, the hook and fleet workers stay quick to start.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from advisor.units import KINDS, Field, MiB

IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def printable(text: Any, multiline: bool = False) -> str:
    """`text` with every character a terminal or a reader would not show as itself escaped
    visibly: C0 and C1 controls (ESC sequences that clear the screen or set the window title,
    CR and newline that would split a line or forge another ``ioadvisor: error:`` line), DEL,
    bidi overrides and isolates (which reorder what is displayed), other invisible format
    characters, and the lone surrogates a file name's invalid UTF-8 bytes become (which would
    not even encode on output).

    File names, exe strings, hints and host names come from traces anyone can write, so every
    reporter passes them through here: the terminal report, ``show``, error lines, the hook's
    stderr and syslog lines, fleet output, and the HTML report (where Jinja2's autoescape
    handles markup but not control bytes).

    `multiline` keeps the newlines of a text that has lines by design (a suggested heredoc)
    and escapes everything else in each line.
    """
    text = str(text)
    if text.isprintable():  # the common case, in C
        return text
    if multiline:
        return "\n".join(printable(line) for line in text.split("\n"))
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(c: str) -> str:
    """\\xNN for an ASCII control or a byte that was not UTF-8, \\uNNNN for a character:
    unambiguous, and the notation of bash's $'...' (which :func:`shell_word` relies on)."""
    code = ord(c)
    if code < 0x80:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte that was not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def shell_word(value: Any) -> str:
    """One shell word for a command users paste: a name from a trace may hold `;`, `$(...)` or
    quotes (quoted as POSIX sh does), or control characters, written as bash's $'...' so that the
    word stays exact, on one line, and visible."""
    word = str(value)
    if word.isprintable():
        return shlex.quote(word)
    return "$'" + printable(word.replace("\\", "\\\\").replace("'", "\\'")) + "'"


def fmt_bytes(n: Any) -> str:
    """1536 -> '1.5 KiB'; a whole number of units shows none ('1 MiB'), and so does an amount that
    rounds to one: 64 MiB + 2 KiB of stdout is '64 MiB', as 64 MiB is, never '64.0 MiB' beside it."""
    if n is None:
        return "?"
    value = float(n)
    for unit in IEC:
        if abs(value) < 1024 or unit == IEC[-1]:
            if unit == "B":
                return f"{int(value):,} B"
            text = f"{value:,.1f}"
            return f"{text.removesuffix('.0')} {unit}"
        value /= 1024
    return f"{value:.1f} PiB"  # unreachable


def fmt_pct(x: Any, digits: int = 1) -> str:
    """0.1234 -> '12.3%'; tiny non-zero shares do not round to a misleading 0."""
    if x is None:
        return "?"
    pct = float(x) * 100
    if 0 < abs(pct) < 10 ** -digits:
        return f"<{10 ** -digits:g}%"
    return f"{pct:.{digits}f}%"


def fmt_secs(x: Any) -> str:
    if x is None:
        return "?"
    s = float(x)
    if s >= 3600:
        return f"{s / 3600:,.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    if s >= 1:
        return f"{s:.1f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us" if s > 0 else "0 s"


def fmt_num(x: Any) -> str:
    if x is None:
        return "?"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:,.2f}" if abs(x) < 100 else f"{x:,.0f}"
    return f"{int(x):,}"


def counted(n: Any, noun: str, many: str = "") -> str:
    """'1 file', '2,048 processes', '1 directory': a count and its noun, singular for one (plural:
    `many`, else the noun + 'es' after s/x/sh/ch, 'ies' for a consonant + y, else + 's')."""
    if n == 1:
        return f"1 {noun}"
    if not many:
        many = (noun + "es" if noun.endswith(("s", "x", "sh", "ch")) else
                noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s")
    return f"{fmt_num(n)} {many}"


def fmt_rate(x: Any) -> str:
    """Bytes per second as MiB/s (GiB/s from 1,024 MiB/s; KiB/s or B/s below 1 MiB/s)."""
    if x is None:
        return "?"
    rate = float(x)
    if abs(rate) < MiB:  # a latency-bound rate: '0.0 MiB/s' would say nothing
        return f"{rate / 1024:,.1f} KiB/s" if abs(rate) >= 1024 else f"{rate:,.0f} B/s"
    mib = rate / MiB
    return f"{mib / 1024:,.1f} GiB/s" if mib >= 1024 else f"{mib:,.1f} MiB/s"


def size_arg(n: int, upper: bool = False) -> str:
    """A byte count as command-line size arguments take it, exact and never rounded:
    ``4m`` for IOR's -t/-b, ``4M`` (`upper`) for `lfs setstripe -S`; ``47008`` when no unit divides it."""
    n = int(n)
    for suffix, unit in (("t", 1 << 40), ("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix.upper() if upper else suffix}"
    return str(n)


def fmt_ratio(x: Any) -> str:
    """One quantity over another: '0.25x', '3.00x', '48.2x', '3,133,070.6x'."""
    if x is None:
        return "?"
    x = float(x)
    return f"{x:.2f}x" if abs(x) < 10 else f"{x:,.1f}x"


def fmt_speedup(x: float) -> str:
    """'3.54x': a speedup (time before / time after), as every reporter writes it."""
    return f"{float(x):.2f}x"


SPEEDUP_SHOWN = 10_000.0  # an interval of 2 pairs (a Student-t of 1 degree of freedom) may reach 1e23x


def fmt_speedup_range(pair: Any) -> str:
    """'2.30x-5.45x' for an interval of two speedups, '' for anything else; a top beyond
    ``SPEEDUP_SHOWN`` reads '0.00x to over 10,000x' (its digits would say nothing)."""
    if isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(v, (int, float)) for v in pair):
        if pair[1] > SPEEDUP_SHOWN:
            return f"{fmt_speedup(pair[0])} to over {SPEEDUP_SHOWN:,.0f}x"
        return f"{fmt_speedup(pair[0])}-{fmt_speedup(pair[1])}"
    return ""


def fmt_middle(text: str, most: int, mark: str = "...") -> str:
    """`text` cut in the middle to at most `most` characters: a path keeps its file name whole when
    it can, and its top directories ('/lus/theta-fs0/pr.../restart_0012.h5')."""
    text = str(text)
    if len(text) <= most:
        return text
    keep = max(most - len(mark), 2)
    tail = keep // 2
    name = text.rsplit("/", 1)[-1]
    if "/" in text and tail < len(name) + 1 <= keep - 4:  # the file name whole, the directories cut
        tail = len(name) + 1
    return text[: keep - tail] + mark + text[len(text) - tail:]


def fmt_list(items: Iterable[Any] | None, limit: int = 3) -> str:
    """'a, b and 3 more'."""
    items = [str(i) for i in (items or [])]
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"


MAX_ITEMS = 12  # items of a list value shown, then a count


def fmt_kind(kind: str, value: Any, fields: Mapping[str, Any] | None = None, unit: str = "") -> str:
    """A value as its declared unit kind says (advisor.units.KINDS); lists item by item.

    `unit` is a record field's own unit (KiB, MiB/s) when it is not the kind's base unit;
    `fields` the record's field kinds. Values from a saved (possibly hand-edited) JSON file
    that do not fit their kind are shown as they are, never raise."""
    if value is None:
        return "unknown"
    if isinstance(value, (list, tuple)):
        shown = [fmt_kind(kind, v, fields, unit) for v in list(value)[:MAX_ITEMS]]
        more = f", ... ({len(value)} in all)" if len(value) > MAX_ITEMS else ""
        return ("; " if kind == "record" else ", ").join(shown) + more
    try:
        return _FORMATS.get(kind, str)(value) if kind != "record" else fmt_record(value, fields or {})
    except (TypeError, ValueError, OverflowError):
        return str(value)


def fmt_field(spec: Any, value: Any) -> str:
    """A record field's value: `spec` is a Field, a nested record's field mapping, or None."""
    if isinstance(spec, Mapping):
        return fmt_kind("record", value, spec)
    if isinstance(spec, Field):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and spec.unit:
            value = value * spec.scale
        return fmt_kind(spec.kind, value)
    return fmt_kind("text", value)


def fmt_record(value: Any, fields: Mapping[str, Any]) -> str:
    """'test 0 (shared file, 4 tasks): transfer size 256 KiB, below rpc yes': the fields it
    declares, in order, the first one as a heading when it names the thing (text, path);
    fields declared None are left out (a second unit of the same number)."""
    if not isinstance(value, Mapping):
        return str(value)
    parts, head = [], ""
    for i, (name, spec) in enumerate(fields.items()):
        if spec is None or name not in value:
            continue
        text = fmt_field(spec, value[name])
        if i == 0 and isinstance(spec, Field) and spec.kind in ("text", "path"):
            head = text
        else:
            parts.append(f"{field_label(name)} {text}")
    body = ", ".join(parts)
    return f"{head}: {body}" if head and body else head or body


def field_label(name: str) -> str:
    """A record field's label: its name without the unit suffix, in words (read_ahead_kb -> read ahead)."""
    for suffix in ("_mib_s", "_mb_s", "_kb", "_s", "_bytes"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return name.replace("_", " ")


def _fmt_index(x: Any) -> str:
    return str(int(x)) if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _fmt_percent(x: Any) -> str:
    return f"{float(x):.1f}%"


def _fmt_flag(x: Any) -> str:
    return "yes" if x is True else "no" if x is False else str(x)


def _numeric(fmt):
    """A number formatter that shows a value of another type (a word in a saved file) as it is."""
    def checked(x: Any) -> str:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            return str(x)
        return fmt(x)
    return checked


_FORMATS = {
    "bytes": _numeric(fmt_bytes), "seconds": _numeric(fmt_secs), "rate": _numeric(fmt_rate),
    "ratio": _numeric(fmt_ratio), "fraction": _numeric(fmt_pct), "percent": _numeric(_fmt_percent),
    "count": _numeric(fmt_num), "ops": _numeric(fmt_num), "index": _fmt_index, "flag": _fmt_flag,
    "path": str, "enum": str, "text": str,
}
assert set(_FORMATS) | {"record"} == set(KINDS), "a unit kind without a format"
