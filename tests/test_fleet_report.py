"""`ioadvisor fleet report` and `fleet expect` on a small real archive with a hostile log name."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from advisor.fleet.expect import expected_bandwidth
from advisor.fleet.store import FleetStore
from advisor.models import bandwidth

pytestmark = pytest.mark.xdist_group("fleet-report")

HOSTILE = "<img src=x onerror=alert(1)>&\"'.darshan"


def ioadvisor(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def dataset(corpus: Path, tmp_path_factory) -> Path:
    """Small real logs (generated runs + the imbalanced ALCF log under a hostile name)."""
    tmp = tmp_path_factory.mktemp("fleet-report")
    archive = tmp / "archive"
    archive.mkdir()
    for i, log in enumerate(sorted(p for p in (corpus / "generated").rglob("*.darshan") if p.stat().st_size < 1 << 20)):
        (archive / f"{i:02d}-{log.parent.name}-{log.name}").symlink_to(log)
    (archive / HOSTILE).symlink_to(corpus / "darshan-logs/darshan_logs/imbalanced_io/imbalanced-io.darshan")
    run = ioadvisor("fleet", str(archive), "--out", str(tmp / "ds"), "--workers", "2", "--quiet")
    assert run.returncode == 0, run.stderr
    return tmp / "ds"


class _Refs(HTMLParser):
    """Every URL-bearing attribute and every element name of a page."""

    def __init__(self):
        super().__init__()
        self.urls, self.tags, self.csp = [], [], ""

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "meta" and dict(attrs).get("http-equiv") == "Content-Security-Policy":
            self.csp = dict(attrs)["content"]
        self.urls += [v for k, v in attrs if k in ("src", "href", "action", "data", "poster") and v]


def test_report_is_self_contained_escaped_and_links_job_pages(dataset: Path, tmp_path: Path):
    html = tmp_path / "fleet.html"
    run = ioadvisor("fleet", "report", str(dataset), "--html", str(html), "--top", "10")
    assert run.returncode == 0, run.stderr
    page = html.read_text()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    refs = _Refs()
    refs.feed(page)
    assert refs.csp.startswith("default-src 'none';") and "connect-src 'none'" in refs.csp
    assert "img" not in refs.tags and "iframe" not in refs.tags
    links = [u for u in refs.urls if not u.startswith("#")]
    assert links and all(re.fullmatch(r"fleet\.jobs/[0-9a-f]{32}\.html", u) for u in links)
    for link in links:  # every worst job opens its own report page, with the same CSP
        job_page = (tmp_path / link).read_text()
        assert "Content-Security-Policy" in job_page and "<img src=x" not in job_page
    for section in ("Core-hours lost by problem category", "Core-hours lost by application",
                    "Core-hours lost by user", "Core-hours lost per week", "Worst jobs", "By file system",
                    "Jobs far below what the machine usually delivers"):
        assert section in page
    worst = page[page.index('id="worst-table"'):]
    assert "imbalanced" not in worst[:200]  # the table starts with its header, then rows
    assert "&lt;img src=x onerror=alert(1)&gt;" in worst  # the hostile log is among the worst jobs


def test_expect_judges_each_job_with_a_model_that_never_saw_it(dataset: Path, tmp_path: Path):
    result = expected_bandwidth(dataset, below=2.0, model_path=str(tmp_path / "fleet.skops"))
    usable = FleetStore(dataset, create=False).jobs(["error", "bytes_read", "bytes_written", "io_time_s"]).to_pylist()
    n = sum(1 for j in usable if j["error"] is None and (j["bytes_read"] or 0) + (j["bytes_written"] or 0)
            >= bandwidth.MIN_BYTES and (j["io_time_s"] or 0) >= bandwidth.MIN_IO_TIME_S)
    assert not result.reason and result.jobs_used == n >= bandwidth.MIN_JOBS
    assert result.median_factor >= 1.0
    assert all(s.factor >= 2.0 and s.lost_s > 0 for s in result.slow)
    assert [s.lost_s for s in result.slow] == sorted((s.lost_s for s in result.slow), reverse=True)
    model = bandwidth.load(tmp_path / "fleet.skops")  # the saved model predicts new jobs
    assert model.cv_median_factor == pytest.approx(result.median_factor)
    run = ioadvisor("fleet", "expect", str(dataset), "--below", "2")
    assert run.returncode == 0, run.stderr
    assert f"{result.jobs_used} jobs learned from" in run.stdout


def test_expect_on_too_little_history_is_one_line(tmp_path: Path, corpus: Path):
    archive = tmp_path / "few"
    archive.mkdir()
    (archive / "one.darshan").symlink_to(corpus / "generated/a_good_fpp_posix_1m/case.darshan")
    assert ioadvisor("fleet", str(archive), "--out", str(tmp_path / "ds"), "--workers", "1", "--quiet").returncode == 0
    run = ioadvisor("fleet", "expect", str(tmp_path / "ds"))
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "are needed" in run.stderr


def test_report_of_a_folder_that_is_not_a_dataset_is_one_line(tmp_path: Path):
    run = ioadvisor("fleet", "report", str(tmp_path), "--html", str(tmp_path / "x.html"))
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "not a fleet dataset" in run.stderr
    assert not (tmp_path / "x.html").exists()


# -- the machine view's parts, called directly on the dataset ---------------------------------
def test_summary_adds_up_the_dataset_rows(dataset: Path):
    from advisor.fleet.aggregate import summarise

    jobs = FleetStore(dataset, create=False).jobs(["error", "cost_s", "nprocs", "bytes_read", "bytes_written"])
    rows = jobs.to_pylist()
    good = [j for j in rows if j["error"] is None]
    s = summarise(dataset, top=100)
    assert (s.jobs, s.errors) == (len(rows), len(rows) - len(good))
    assert s.with_findings == sum(1 for j in good if (j["cost_s"] or 0) > 0)
    lost = sum((j["cost_s"] or 0) * max(j["nprocs"] or 1, 1) for j in good) / 3600
    assert s.hours_lost == pytest.approx(lost)
    assert s.bytes_moved == sum((j["bytes_read"] or 0) + (j["bytes_written"] or 0) for j in good)
    # every finding has a category; a job's findings overlap (the job's loss is capped by its I/O
    # time, Diagnosis.lost_s), so what the categories claim adds up to at least the jobs' loss
    assert sum(r.hours for r in s.categories) >= lost * (1 - 1e-9)
    # the chart spans the recent weeks: the 2019 ALCF log's week is counted as left out
    assert s.weeks_left_out >= 1 and 0 < sum(sum(v) for v in s.weekly.values()) < lost
    assert [w.hours for w in s.worst] == sorted((w.hours for w in s.worst), reverse=True)
    assert len(summarise(dataset, top=2).worst) == 2


def test_ranking_chart_draws_one_bar_per_row_and_keeps_the_table():
    from advisor.fleet.aggregate import Ranked
    from advisor.fleet.charts import fmt_hours, ranking_chart

    rows = [Ranked("ior", 12.5, 3, 7, "small-io"), Ranked("<wrf>", 0.004, 1, 1)]
    plot = ranking_chart("by-app", "Core-hours lost by application", rows, "applications")
    assert plot.alt == "ior loses the most: 12.5 h in 3 jobs."
    assert str(plot.svg).count('class="c-hot"') == 2 and "&lt;wrf&gt;" in str(plot.svg)
    assert plot.headers[-1] == "worst category" and plot.rows[1] == ["<wrf>", "< 0.01 h", "1", "1", ""]
    assert ranking_chart("x", "t", [], "users").alt == "No users with findings."
    assert [fmt_hours(h) for h in (1234.4, 12.54, 0.421, 0.001, 0)] == ["1,234 h", "12.5 h", "0.421 h",
                                                                         "< 0.01 h", "0 h"]


def test_weekly_chart_stacks_categories_and_names_the_worst_week():
    from advisor.fleet.charts import weekly_chart

    plot = weekly_chart("weekly", ["2026-01-05", "2026-01-12"], {"small-io": [1.0, 3.0], "metadata": [0.5, 0.0]})
    assert plot.alt == "2 weeks from 2026-01-05 to 2026-01-12; the worst week starts 2026-01-12 with 3 h lost."
    assert "small-io" in str(plot.svg) and "metadata" in str(plot.svg)


def test_fleet_page_and_job_pages_written_directly(dataset: Path, tmp_path: Path):
    from advisor.fleet.report import write_fleet_html

    pages = write_fleet_html(dataset, tmp_path / "m.html", top=3)
    assert 1 <= pages == len(list((tmp_path / "m.jobs").glob("*.html")))
    assert "Core-hours lost by user" in (tmp_path / "m.html").read_text()


def test_a_second_run_over_the_same_archive_skips_everything_without_a_cluster(dataset: Path):
    from advisor.fleet.progress import summary_line
    from advisor.fleet.run import FleetOptions, run_fleet

    seen = []
    stats = run_fleet([str(dataset.parent / "archive")], str(dataset), FleetOptions(workers=1),
                      progress=lambda s, done: seen.append((s.analysed, done)))
    assert stats.found == stats.skipped > 0 and stats.analysed == stats.parts == 0
    assert seen == [(0, True)]
    assert summary_line(stats, "ds").startswith("fleet: analysed 0 logs (0 unreadable, 0 findings) in ")
    assert summary_line(stats, "ds").endswith(f"skipped {stats.skipped} already in ds; 0 parts written")


def test_a_broken_model_path_stops_the_run_before_any_log(dataset: Path, tmp_path: Path):
    from advisor.config import from_dict
    from advisor.errors import ConfigError
    from advisor.fleet.run import FleetOptions, run_fleet

    config = from_dict({"model": {"path": str(tmp_path / "none.skops")}})
    with pytest.raises(ConfigError, match=r"\[model\] path"):
        run_fleet([str(dataset.parent / "archive")], str(tmp_path / "ds"), FleetOptions(config=config))
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("values, message", [
    ({"workers": -1}, r"fleet.workers: -1 is outside \[0, 100000\]"),
    ({"batch": 0}, r"fleet.batch: 0 is outside"),
    ({"workers": 2, "slurm_jobs": 2}, "at most one of workers and slurm_jobs"),
])
def test_fleet_section_ranges(values, message):
    from advisor.errors import ConfigError
    from advisor.fleet.settings import FleetConfig, validate

    with pytest.raises(ConfigError, match=message):
        validate(FleetConfig(**values), "site.toml")
    assert validate(FleetConfig(workers=4), "site.toml").workers == 4
