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


def byte_max(hi: float) -> float:
    """The smallest power-of-two-friendly tick >= hi (end of a byte axis)."""
    ticks = byte_ticks(hi)
    if ticks[-1] >= hi:
        return ticks[-1]
    return ticks[-1] + (ticks[1] - ticks[0] if len(ticks) > 1 else hi)


def byte_ticks(hi: float, n: int = 5) -> list[float]:
    """Ticks in powers-of-two-friendly steps (1, 2, 4, 8 x 2^10k) for byte axes."""
    if hi <= 0:
        return [0.0]
    raw = hi / n
    unit = 1024 ** max(0, math.floor(math.log(max(raw, 1), 1024)))
    step = next((m * unit for m in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if m * unit >= raw), raw)
    return [i * step for i in range(int(hi / step + 1e-9) + 1)]
