"""The HTML report's drawing primitives: scales, round ticks, axis labels with units, and SVG
markup that escapes whatever text a trace carries."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from advisor.report.svg import Scale, Svg, byte_max, byte_ticks, nice_max, nice_ticks
from advisor.formatting import fmt_kind
from advisor.report.units import tick_bytes, tick_count, tick_rate, tick_seconds


def test_scales_map_the_ends_and_the_middle():
    lin = Scale(0, 100, 10, 210)
    assert (lin(0), lin(50), lin(100)) == (10, 110, 210)
    log = Scale(1, 1000, 0, 300, log=True)
    assert log(10) == 100 and log(0.001) == 0  # below the range: clamped to its start
    assert log.ticks() == [1.0, 10.0, 100.0, 1000.0]
    assert Scale(5, 5, 7, 9)(5) == 7  # an empty range does not divide by zero


@given(st.floats(0, 1e6), st.floats(1e-3, 1e9))
def test_nice_ticks_cover_the_range_with_round_even_steps(lo, span):
    hi = lo + span
    ticks = nice_ticks(lo, hi)
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
    assert len(steps) <= 1 and ticks[0] >= lo - 1e-9 and ticks[-1] <= hi + 1e-6 * hi
    if steps:
        (step,) = steps
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert round(mantissa, 6) in (1, 2, 5, 10)
    assert nice_max(hi) >= hi


@given(st.floats(1, 1 << 50))
def test_byte_axes_end_at_or_above_the_data_in_power_of_two_steps(hi):
    ticks = byte_ticks(hi)
    assert ticks[0] == 0 and byte_max(hi) >= hi
    step = ticks[1] - ticks[0] if len(ticks) > 1 else None
    assert step is None or math.log2(step).is_integer()


def test_tick_and_value_labels_carry_their_unit():
    assert tick_bytes(1536) == "1.5 KiB" and tick_bytes(4 << 20) == "4 MiB" and tick_bytes(512) == "512 B"
    assert tick_seconds(0.0123) == "12.3 ms" and tick_seconds(200) == "3 min 20 s"
    assert tick_seconds(0.0000005) == "0 us" and tick_seconds(8000) == "2 h 13 min"
    assert tick_count(12345) == "12,345" and tick_count(34_000_000) == "34M"
    assert tick_rate(512 << 20) == "512 MiB/s" and tick_rate(float("nan")) == "n/a"
    assert fmt_kind("bytes", 3 << 30) == "3 GiB" and fmt_kind("fraction", 0.5) == "50.0%"
    assert fmt_kind("seconds", 2.0) == "2.0 s" and fmt_kind("flag", True) == "yes"
    assert fmt_kind("count", list(range(20))).endswith("(20 in all)")


def test_svg_markup_is_well_formed_and_escapes_trace_text():
    svg = Svg(100, 50, 'rank <0> & "friends"', "desc")
    svg.rect(1, 2, -3, 4, "bar", tip="</title><script>x</script>")
    svg.text(5, 6, "/scratch/<evil>&", anchor="end")
    svg.polyline([(0, 0), (1.25, 2.0)], "line")
    root = ET.fromstring(str(svg.markup("p1")))
    assert root.find("{http://www.w3.org/2000/svg}title").text == 'rank <0> & "friends"'
    rect = root.find("{http://www.w3.org/2000/svg}rect")
    assert rect.get("width") == "0" and rect.find("{http://www.w3.org/2000/svg}title").text.startswith("</title>")
    assert root.find("{http://www.w3.org/2000/svg}text").text == "/scratch/<evil>&"
    assert root.find("{http://www.w3.org/2000/svg}polyline").get("points") == "0,0 1.2,2"
