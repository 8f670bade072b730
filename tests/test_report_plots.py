"""Each plot of the HTML report from the figure data of real logs: one mark per data point, the
table under it holding the same numbers, the text alternative naming what stands out."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor import api
from advisor.report import plots
from advisor.report.figures import figure_data

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demo() -> dict:
    return figure_data(api.load(REPO / "traces" / "ior-small-shared-4k.darshan"))


@pytest.fixture(scope="module")
def badost() -> dict:
    return figure_data(api.load(REPO / "traces" / "sample-badost.darshan"))


def test_io_time_plot_has_a_stack_per_module_and_its_table(demo):
    fig = demo["io_time"]
    plot = plots.io_time_plot(fig)
    assert [row[0] for row in plot.rows] == fig["modules"] and plot.headers[-1] == "total"
    totals = [r + w + m for r, w, m in zip(fig["read"], fig["write"], fig["meta"])]
    top = fig["modules"][totals.index(max(totals))]
    assert plot.alt.startswith(f"Of the modules, {top} records the most I/O time")
    assert str(plot.svg).startswith("<svg") and plot.marks >= len(fig["modules"])


def test_access_size_plots_skip_modules_without_requests(demo):
    fig = demo["access_sizes"]
    drawn = plots.access_size_plots(fig)
    with_requests = [m for m, c in fig["modules"].items() if sum(c.get("read", [])) + sum(c.get("write", []))]
    assert len(drawn) == len(with_requests) >= 1
    assert all(len(p.rows) == len(fig["bins"]) for p in drawn)


def test_rank_plot_marks_one_bar_per_rank(demo):
    fig = demo["ranks"]
    plot = plots.rank_plot(fig)
    assert len(plot.rows) == len(fig["labels"]) == 4
    assert plot.marks >= 4


def test_ost_plot_marks_the_slow_ost(badost):
    fig = badost["osts"]
    plot = plots.ost_plot(fig)
    assert len(plot.rows) == len(fig["ost"]) and plot.alt.startswith(f"{len(fig['ost'])} OSTs, median ")
    outliers = [row[0] for row in plot.rows if row[-1] == "yes"]
    assert outliers == [str(o) for o in sorted(fig["outliers"])] and outliers
    assert f"Outliers (slow): OST {', '.join(outliers)}." in plot.alt


def test_top_files_plot_lists_the_files_in_order(badost):
    fig = badost["top_files"]
    plot = plots.top_files_plot(fig)
    assert len(plot.rows) == len(fig["files"]) >= 1


def test_a_long_table_is_cut_and_says_how_much(demo):
    plot = plots.with_table(plots.io_time_plot(demo["io_time"]), ["n"], [[str(i)] for i in range(100)])
    assert len(plot.rows) == plots.TABLE_ROWS and plot.more_rows == 100 - plots.TABLE_ROWS
