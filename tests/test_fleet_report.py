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
