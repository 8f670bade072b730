"""Human-readable numbers for reports: bytes (binary units), seconds, counts, ratios."""

from __future__ import annotations

import math

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def fmt_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'; exact powers stay short ('4 KiB', '1 MiB')."""
    if n is None or not math.isfinite(float(n)):
        return "n/a"
    n = float(n)
    sign = "-" if n < 0 else ""
    n = abs(n)
    unit = 0
    while n >= 1024 and unit < len(_BYTE_UNITS) - 1:
        n /= 1024
        unit += 1
    if unit == 0:
        return f"{sign}{int(n)} B"
    return f"{sign}{_short(n)} {_BYTE_UNITS[unit]}"


def fmt_seconds(s: float) -> str:
    """Seconds with a unit that fits: '850 us', '12.3 ms', '4.20 s', '3 min 20 s', '2 h 05 min'."""
    if s is None or not math.isfinite(float(s)):
        return "n/a"
    s = float(s)
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


def fmt_count(n: float) -> str:
    """12345 -> '12,345'; large counts abbreviated: 3.4M."""
    if n is None or not math.isfinite(float(n)):
        return "n/a"
    n = float(n)
    if abs(n) >= 10_000_000:
        for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
            if abs(n) >= div:
                return f"{_short(n / div)}{suffix}"
    if n == int(n):
        return f"{int(n):,}"
    return f"{n:,.3g}"


def fmt_share(x: float) -> str:
    """A fraction in [0, 1] as a percentage: 0.4312 -> '43.1 %'."""
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    return f"{float(x) * 100:.3g} %"


def fmt_rate(bytes_per_s: float) -> str:
    """Bandwidth: '512 MiB/s'."""
    text = fmt_bytes(bytes_per_s)
    return text if text == "n/a" else text + "/s"


def _short(x: float) -> str:
    """Three significant digits without trailing zeros: 1.50 -> '1.5', 4.00 -> '4'."""
    text = f"{x:.3g}" if x < 1000 else f"{x:.0f}"
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


def fmt_value(key: str, value) -> str:
    """An evidence value formatted by the unit its key names (``*_bytes``, ``*_s``, ``*_frac``)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)):
        k = key.lower()
        if k.endswith(("_bw", "_bandwidth", "bytes_per_s", "_rate")):
            return fmt_rate(value)
        if "bytes" in k or k.endswith(("_size", "_b")) or k == "size":
            return fmt_bytes(value)
        if k.endswith(("_s", "_time", "_seconds", "seconds")):
            return fmt_seconds(value)
        if k.endswith(("frac", "_fraction", "share", "_ratio_frac")):
            return fmt_share(value)
        return fmt_count(value)
    if isinstance(value, (list, tuple)):
        shown = ", ".join(fmt_value(key, v) for v in list(value)[:12])
        return shown + (f", ... ({len(value)} in all)" if len(value) > 12 else "")
    if isinstance(value, dict):
        items = list(value.items())[:12]
        shown = ", ".join(f"{k}: {fmt_value(str(k), v)}" for k, v in items)
        return shown + (" ..." if len(value) > 12 else "")
    return str(value)
