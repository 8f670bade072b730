"""The HTML report in a real Chromium (Debian's, driven by Playwright): reports of real traces
load offline without errors, plots draw, findings keep the terminal's order, copy buttons copy,
and a dump full of script and markup payloads renders them as text with nothing executed.

Needs /usr/bin/chromium (tests/system/install-components.sh) and playwright (the test extra);
never `playwright install`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest


pytestmark = pytest.mark.xdist_group("chromium")

GEN = "generated"
LOGS = {
    "small": f"{GEN}/b_small_io_shared_4k/case.darshan",  # DXT, small shared-file I/O
    "badost": "darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input/sample-badost.darshan",  # Lustre
    "imbalance": f"{GEN}/j_imbalance_rank0_10x/case.darshan",
    "mpiio": f"{GEN}/e_mpiio_collective_256k/case.darshan",
}
MARK = "__ioadvisor_pwned"
# Every wait (navigation, locators, wait_for_function) polls until this deadline: Playwright's
# 30 s default is too short while the other xdist worker loads the 2-core CI machine.
PAGE_TIMEOUT_MS = 120_000
PAYLOAD = (f'"><script>window.{MARK}=1;alert(1)</script><img src=x onerror="window.{MARK}=2">'
           f"<svg onload=alert(3)><iframe src=https://example.org/></iframe>")


def _ioadvisor(*args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, timeout=600)
    assert out.returncode in (0, 1), out.stderr
    return out


@pytest.fixture(scope="module")
def reports(corpus, tmp_path_factory) -> dict[str, Path]:
    """A page of four real logs (ioadvisor diagnose), its re-rendering (ioadvisor report),
    and a page of a darshan-parser dump whose exe, file name, hint and mount carry payloads."""
    out = tmp_path_factory.mktemp("reports")
    logs = [str(corpus / p) for p in LOGS.values()]
    _ioadvisor("diagnose", *logs, "--json", str(out / "jobs.json"), "--html", str(out / "jobs.html"))
    _ioadvisor("report", str(out / "jobs.json"), "--html", str(out / "again.html"))
    dump = (corpus / GEN / "b_small_io_shared_4k" / "darshan-parser.txt").read_text()
    dump = dump.replace("# exe: ior ", f"# exe: ior{PAYLOAD} ")
    dump = dump.replace("/scratch/b_small_io_shared_4k/testfile", f"/scratch/{PAYLOAD}/testfile")
    dump = dump.replace("# metadata: h = cb_nodes=1", f"# metadata: h = cb_nodes=1;{PAYLOAD}")
    (out / "hostile.txt").write_text(dump)
    _ioadvisor("diagnose", str(out / "hostile.txt"), "--json", str(out / "hostile.json"),
               "--html", str(out / "hostile.html"))
    return {"jobs": out / "jobs.html", "again": out / "again.html", "hostile": out / "hostile.html",
            "jobs_json": out / "jobs.json", "hostile_json": out / "hostile.json"}


class Visit:
    """A page opened offline, with everything it asked for and complained about."""

    def __init__(self, browser, path: Path, **context):
        self.context = browser.new_context(**context)
        self.context.set_default_timeout(PAGE_TIMEOUT_MS)
        self.page = self.context.new_page()
        self.requests, self.errors, self.dialogs = [], [], []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser):
    opened = []

    def open_(path: Path, **context) -> Visit:
        v = Visit(browser, path, **context)
        opened.append(v)
        return v

    yield open_
    for v in opened:
        v.close()


def _codes(doc: dict | list) -> list[list[str]]:
    docs = doc if isinstance(doc, list) else [doc]
    return [[f["code"] for f in d["findings"]] for d in docs]


def test_pages_load_offline_without_errors_or_requests(reports, visit):
    for name in ("jobs", "again", "hostile"):
        v = visit(reports[name])
        assert v.errors == [], (name, v.errors)
        assert v.requests == [v.url], (name, v.requests)  # the page itself, nothing else
        assert v.dialogs == []


def test_every_plot_is_drawn(reports, visit):
    v = visit(reports["jobs"])
    jobs = v.page.locator("section.job")
    assert jobs.count() == len(LOGS)
    expected = {"small": {"io-time", "ranks", "timeline", "top-files"}, "badost": {"io-time", "ranks", "osts"},
                "imbalance": {"ranks", "timeline"}, "mpiio": {"io-time", "sizes-mpi-io"}}
    for i, name in enumerate(LOGS):
        ids = set(jobs.nth(i).locator("figure.plot").evaluate_all("els => els.map(e => e.id)"))
        assert expected[name] <= ids, (name, ids)
    figures = v.page.locator("section.job figure.plot")
    for k in range(figures.count()):
        fig = figures.nth(k)
        svg = fig.locator("svg").first
        box = svg.bounding_box()
        assert box and box["width"] > 300 and box["height"] > 60, fig.get_attribute("id")
        marks = svg.locator("rect, circle, polyline").count()
        assert marks > 0, fig.get_attribute("id")
        assert fig.locator("figcaption strong").inner_text().strip()
        assert svg.locator("text.label").count() >= 1  # labelled axes
        assert len(svg.get_attribute("aria-labelledby").split()) == 2  # title + description


def test_findings_visible_in_the_terminal_order(reports, visit):
    saved = json.loads(reports["jobs_json"].read_text())
    terminal = subprocess.run([sys.executable, "-m", "advisor", "report", str(reports["jobs_json"]), "--text"],
                              capture_output=True, text=True, timeout=300, env={"NO_COLOR": "1", "PATH": "/usr/bin"})
    assert terminal.returncode == 0, terminal.stderr
    printed = re.findall(r"\b(?:HIGH|WARN|INFO)\s+([A-Z]+\d{3})\b", terminal.stdout)
    expected = _codes(saved)
    assert printed == [c for codes in expected for c in codes]
    v = visit(reports["jobs"])
    jobs = v.page.locator("section.job")
    assert sum(map(len, expected)) > 0
    for i, codes in enumerate(expected):
        cards = jobs.nth(i).locator("article.finding")
        assert cards.locator("span.code").all_inner_texts() == codes
        rows = jobs.nth(i).locator("table.summary tbody tr a.code").all_inner_texts()
        assert rows == codes
        for k in range(cards.count()):
            assert cards.nth(k).is_visible()


def test_copy_buttons_copy_the_command(reports, visit):
    v = visit(reports["jobs"])
    v.context.grant_permissions(["clipboard-read", "clipboard-write"])
    buttons = v.page.locator("button.copy")
    assert buttons.count() > 0
    for k in (0, buttons.count() - 1):
        button = buttons.nth(k)
        button.scroll_into_view_if_needed()
        assert button.is_visible()
        command = v.page.locator(f"#{button.get_attribute('data-target')}").inner_text()
        button.click()
        v.page.wait_for_function("b => b.textContent === 'Copied'", arg=button.element_handle())
        assert v.page.evaluate("navigator.clipboard.readText()") == command
    assert v.errors == []


def test_sorting_and_filtering(reports, visit):
    v = visit(reports["jobs"])
    job = v.page.locator("section.job").first
    header = job.locator("table.summary th", has_text="time lost")
    header.click()
    header.click()  # second click: descending
    costs = [float(x) for x in job.locator("table.summary tbody tr td:nth-child(4)").evaluate_all(
        "tds => tds.map(td => td.dataset.v)")]
    assert costs == sorted(costs, reverse=True) and len(costs) > 1
    box = job.locator("input.sev-filter[value=high]")
    box.uncheck()
    high = job.locator("article.finding.sev-high")
    assert high.count() > 0 and all(not high.nth(k).is_visible() for k in range(high.count()))
    assert job.locator("article.finding:not(.sev-high)").first.is_visible()


def test_readable_without_javascript_and_in_print(reports, visit):
    v = visit(reports["jobs"], java_script_enabled=False)
    assert v.page.locator("article.finding").first.is_visible()
    assert v.page.locator("figure.plot svg").first.is_visible()
    assert not v.page.locator("button.copy").first.is_visible()  # no dead buttons without JS
    p = visit(reports["jobs"])
    p.page.emulate_media(media="print")
    assert not p.page.locator("button.copy").first.is_visible()
    assert not p.page.locator(".filters").first.is_visible()


def test_dark_and_light_schemes(reports, visit):
    background = "getComputedStyle(document.documentElement).backgroundColor"
    light = visit(reports["jobs"], color_scheme="light").page.evaluate(background)
    dark = visit(reports["jobs"], color_scheme="dark").page.evaluate(background)
    assert light == "rgb(255, 255, 255)" and dark != light


def test_hostile_names_render_as_text_and_nothing_runs(reports, visit):
    v = visit(reports["hostile"])
    v.page.wait_for_timeout(300)  # give an injected handler the chance it must not get
    assert v.dialogs == [] and v.errors == []
    assert v.page.evaluate(f"typeof window.{MARK}") == "undefined"
    assert v.page.locator("img, iframe, section.job svg:not(.plot) ").count() == 0
    assert v.page.locator("script").count() == 1  # ours
    assert v.page.evaluate("[...document.querySelectorAll('*')].filter(e => [...e.attributes]"
                           ".some(a => a.name.startsWith('on'))).length") == 0
    body = v.page.locator("body").inner_text()
    assert f"ior{PAYLOAD}" in body  # the exe, shown as text
    assert f"/scratch/{PAYLOAD}/testfile" in body  # the file name, in the findings
    saved = json.loads(reports["hostile_json"].read_text())
    assert PAYLOAD in saved["job"]["exe"]  # kept verbatim in the JSON
    assert v.requests == [v.url]
