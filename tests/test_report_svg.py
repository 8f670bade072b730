"""The HTML report's drawing primitives: scales, round ticks, axis labels with units, and SVG
markup that escapes whatever text a trace carries, bar labels that never touch, both bars of a
before/after chart with their range, no outlier called among OSTs that cannot be compared."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from advisor.report.plots import _bar_label, ost_plot, verification_plot
from advisor.report.svg import Scale, Svg, axis, nice_max, nice_ticks, text_width
from advisor.report.units import compact_count


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


@given(st.sampled_from(["seconds", "bytes", "rate", "count"]), st.floats(1e-7, 1e16))
def test_axes_tick_in_round_steps_of_one_unit_their_title_names(kind, hi):
    """Ticks are plain numbers in the axis unit (never '8 min 20 s'), 1-2-5 x 10^k steps (powers of
    two for sizes) from 0 past the data, at most 11 of them, the title says the unit."""
    ax = axis(kind, hi)
    assert ax.ticks[0] == 0 and ax.end >= hi * (1 - 1e-9) and 2 <= len(ax.ticks) <= 11
    step = (ax.ticks[1] - ax.ticks[0]) / ax.factor
    if kind == "bytes" and step >= 1:
        assert math.log2(step).is_integer()
    else:
        assert round(step / 10 ** math.floor(math.log10(step)), 6) in (1, 2, 5, 10)
    labels = [ax.label(t) for t in ax.ticks]
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d+)?", label) for label in labels), labels
    assert len(set(labels)) == len(labels)  # enough decimals to tell the ticks apart
    assert ax.title("time") == (f"time ({ax.unit})" if ax.unit else "time")
    assert ax.title("time ({unit}), mean per process").startswith("time (" if ax.unit else "time, ")


def test_time_axes_change_unit_where_a_reader_would():
    assert [axis("seconds", hi).unit for hi in (5e-4, 0.0819, 3.2, 500, 8000)] == ["us", "ms", "s", "min", "h"]
    ax = axis("seconds", 500)
    assert [ax.label(t) for t in ax.ticks] == ["0", "2", "4", "6", "8", "10"] and ax.title("time") == "time (min)"
    assert [axis("bytes", 32 << 20, 4).label(t) for t in axis("bytes", 32 << 20, 4).ticks] == ["0", "8", "16", "24",
                                                                                           "32"]
    assert axis("rate", 1555 << 20).unit == "GiB/s" and axis("count", 34e6).title("requests") == "requests (millions)"


def test_bar_labels_shorten_or_vanish_rather_than_touch():
    assert _bar_label(16384, 60) == "16,384" and _bar_label(16384, 34) == "16.4k" and _bar_label(16384, 10) == ""
    assert compact_count(34_000_000) == "34M" and text_width("16,384") > text_width("16.4k")


def test_verification_chart_draws_the_range_of_both_bars():
    v = {"verdict": "improved", "repeat": 3, "baseline": {"median_s": 0.05, "runs_s": [0.048, 0.05, 0.061]},
         "fixed": {"median_s": 0.02, "runs_s": [0.018, 0.02, 0.023]}}
    plot = verification_plot(v, "v")
    whiskers = [t for t in re.findall(r"<title>([^<]*)</title>", str(plot.svg)) if "samples" in t]
    assert whiskers == ["before: samples 48.0 ms to 61.0 ms", "after fix: samples 18.0 ms to 23.0 ms"]
    assert "replay time per pass (ms)" in str(plot.svg) and "before median 50.0 ms per pass" in plot.alt


def test_an_ost_chart_without_enough_comparable_osts_calls_no_outlier():
    fig = {"ost": [5, 9, 29], "bandwidth": [643.8, 2741.0, 1.6e8], "bytes": [15, 6128, 1.06e11],
           "compared": [29], "median": 0, "outliers": [], "min_file_bytes": 1 << 20}
    plot = ost_plot(fig)
    assert "no outlier called" in plot.alt and "median" not in plot.alt
    assert "c-hot" not in str(plot.svg) and str(plot.svg).count("c-faint") == 2


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
