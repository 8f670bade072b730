"""A tiny SVG writer for report plots: every text and attribute value is escaped.

Plots are drawn by hand rather than with matplotlib: a chart is a few hundred
elements, renders in milliseconds, stays a few kilobytes, and takes its colours
from the page's CSS classes, so one SVG follows the light and dark themes and
prints well (bench/report.py measures both backends).

Trace data (file names, host names) reaches SVG text; :func:`escape` (control
characters made visible, then markup escaped) is applied to every string here, and the
result is a :class:`markupsafe.Markup` the template can insert as is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from markupsafe import Markup, escape as escape_markup

from advisor.formatting import printable


def escape(text: object) -> Markup:
    """Text from a trace as SVG markup: no raw control characters, no markup."""
    return escape_markup(printable(text))


def _num(x: float) -> str:
    """Coordinates with 1 decimal (sub-pixel precision is wasted bytes)."""
    text = f"{float(x):.1f}"
    return text[:-2] if text.endswith(".0") else text


# Advance widths of DejaVu Sans (the report's fallback font, and Debian Chromium's sans-serif)
# in em: enough to keep labels apart and inside the image without a browser.
_NARROW, _WIDE = set(".,:;'!|il1 ()[]-/"), set("mwMW%@")


def text_width(text: str, size: float = 10.0) -> float:
    """Estimated width in pixels of `text` at font `size` (digits 0.64 em, DejaVu Sans)."""
    em = sum(0.34 if c in _NARROW else 0.95 if c in _WIDE else 0.72 if c.isupper() else 0.64 for c in str(text))
    return em * size


@dataclass
class Svg:
    """An SVG image of `width` x `height` user units with a title and a description."""

    width: float
    height: float
    title: str
    desc: str
    parts: list[str] = field(default_factory=list)

    def rect(self, x: float, y: float, w: float, h: float, cls: str, tip: str | None = None) -> None:
        attrs = f'x="{_num(x)}" y="{_num(y)}" width="{_num(max(w, 0))}" height="{_num(max(h, 0))}"'
        self._shape("rect", attrs, cls, tip)

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str, tip: str | None = None) -> None:
        attrs = f'x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}"'
        self._shape("line", attrs, cls, tip)

    def circle(self, cx: float, cy: float, r: float, cls: str, tip: str | None = None) -> None:
        self._shape("circle", f'cx="{_num(cx)}" cy="{_num(cy)}" r="{_num(r)}"', cls, tip)

    def polyline(self, points: list[tuple[float, float]], cls: str) -> None:
        pts = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
        self._shape("polyline", f'points="{pts}"', cls, None)

    def path(self, d: str, cls: str, tip: str | None = None) -> None:
        """A path whose `d` is built from numbers by the caller (never from trace text)."""
        self._shape("path", f'd="{escape(d)}"', cls, tip)

    def text(self, x: float, y: float, s: str, cls: str = "", anchor: str = "start",
             rotate: bool = False, tip: str | None = None) -> None:
        transform = f' transform="rotate(-90 {_num(x)} {_num(y)})"' if rotate else ""
        title = f"<title>{escape(tip)}</title>" if tip else ""
        self.parts.append(
            f'<text x="{_num(x)}" y="{_num(y)}" class="{escape(cls)}" text-anchor="{escape(anchor)}"'
            f"{transform}>{title}{escape(s)}</text>")

    def _shape(self, tag: str, attrs: str, cls: str, tip: str | None) -> None:
        if tip:
            self.parts.append(f'<{tag} {attrs} class="{escape(cls)}"><title>{escape(tip)}</title></{tag}>')
        else:
            self.parts.append(f'<{tag} {attrs} class="{escape(cls)}"/>')

    def markup(self, plot_id: str) -> Markup:
        pid = escape(plot_id)
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {_num(self.width)} '
                f'{_num(self.height)}" role="img" aria-labelledby="{pid}-t {pid}-d">'
                f'<title id="{pid}-t">{escape(self.title)}</title><desc id="{pid}-d">{escape(self.desc)}</desc>')
        return Markup(head + "".join(self.parts) + "</svg>")


@dataclass
class Scale:
    """A linear (or log10) map from data [lo, hi] to pixels [p0, p1]."""

    lo: float
    hi: float
    p0: float
    p1: float
    log: bool = False

    def __call__(self, v: float) -> float:
        lo, hi, v = (self.lo, self.hi, v)
        if self.log:
            lo, hi, v = math.log10(lo), math.log10(hi), math.log10(max(v, self.lo))
        if hi == lo:
            return self.p0
        return self.p0 + (v - lo) / (hi - lo) * (self.p1 - self.p0)

    def ticks(self, n: int = 5) -> list[float]:
        if self.log:
            first, last = math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi))
            step = max(1, (last - first) // n)
            return [10.0 ** e for e in range(first, last + 1, step) if self.lo <= 10.0 ** e <= self.hi * 1.0001]
        return nice_ticks(self.lo, self.hi, n)


# ---- value axes in one unit ------------------------------------------------------------------

# (unit, base units per unit) from the smallest: an axis takes the largest unit its end reaches.
_AXIS_UNITS = {
    "seconds": (("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0)),
    "bytes": (("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40), ("PiB", 1 << 50)),
    "rate": (("B/s", 1), ("KiB/s", 1 << 10), ("MiB/s", 1 << 20), ("GiB/s", 1 << 30), ("TiB/s", 1 << 40)),
    "count": (("", 1), ("millions", 1e6), ("billions", 1e9)),
}
# Where a time axis changes unit: below 1 ms in us, up to 2 min in s, up to 2 h in min.
_TIME_LIMITS = {"us": 1e-3, "ms": 1.0, "s": 120.0, "min": 7200.0}
_STEPS = {"bytes": (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)}  # powers of two for sizes; 1-2-5 for the rest


@dataclass(frozen=True)
class Axis:
    """A value axis in one unit: the title says the unit, the ticks are plain numbers in it
    (round steps: 1, 2, 5 x 10^k, powers of two for sizes), from 0 to the first tick past the data."""

    kind: str  # seconds, bytes, rate or count (values in base units: s, B, B/s)
    unit: str
    factor: float  # base units per axis unit
    ticks: tuple[float, ...]  # in base units

    @property
    def end(self) -> float:
        return self.ticks[-1]

    def title(self, what: str) -> str:
        """'I/O time (ms)'; `what` may place the unit itself: 'time ({unit}), mean per process'."""
        if "{unit}" in what:
            return what.replace(" ({unit})", "" if not self.unit else f" ({self.unit})")
        return f"{what} ({self.unit})" if self.unit else what

    def label(self, value: float) -> str:
        """A tick's number in the axis unit, with as many decimals as the step needs: '0.5', '1,024'."""
        step = (self.ticks[1] - self.ticks[0]) / self.factor if len(self.ticks) > 1 else 1.0
        decimals = next((d for d in range(10) if abs(round(step, d) - step) < 1e-9 * max(step, 1)), 9)
        return f"{value / self.factor:,.{decimals}f}"


def axis(kind: str, hi: float, n: int = 5) -> Axis:
    """An axis from 0 covering `hi` (base units of `kind`) with about `n` steps."""
    hi = hi if math.isfinite(hi) and hi > 0 else 0.0
    units = _AXIS_UNITS[kind]
    unit, factor = units[0]
    for name, f in units:
        if hi >= f:
            unit, factor = name, f
    if kind == "seconds":
        unit, factor = next((u, f) for u, f in units if hi < _TIME_LIMITS.get(u, math.inf))
    top = hi / factor
    steps = _STEPS.get(kind)
    if top <= 0:
        return Axis(kind, unit, factor, (0.0, 1.0 * factor))
    raw = top / max(n, 1)
    if steps and raw >= 1:
        step = float(next((m for m in steps if m >= raw), steps[-1]))
    else:
        mag = 10 ** math.floor(math.log10(raw))
        step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * (1 - 1e-9))
    count = max(1, math.ceil(top / step - 1e-9))
    return Axis(kind, unit, factor, tuple(i * step * factor for i in range(count + 1)))


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About `n` round tick values covering [lo, hi] (steps of 1, 2 or 5 x 10^k)."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step + 1e-9) + 1)]


def nice_max(hi: float) -> float:
    """The smallest round number >= hi (axis end)."""
    if hi <= 0:
        return 1.0
    ticks = nice_ticks(0, hi, 5)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else hi
    return ticks[-1] if ticks[-1] >= hi else ticks[-1] + step
