"""IOzone throughput runs as a campaign: DUSCC's 1- and 64-thread runs (IOzone 3.493, one
128-core node, CIUK 2022) become write and read scaling curves, judged by the campaign rules
and by the benchmark rules over the whole sweep, and drawn in the HTML report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from advisor.campaign import build_campaign, load_runs
from advisor.config import from_dict
from advisor.pipeline import diagnose_campaign
from advisor.report.html import render_html
from advisor.report.views import figure_views
from tests.conftest import CORPUS

IOZONE = CORPUS / "iozone"
DUSCC = [IOZONE / f"tput_3.493_t{n}_{op}_duscc-bm.txt" for n in (1, 64) for op in ("write", "read")]
# what the DUSCC README's nodes state, in the site config's terms: 512 GiB of memory, one 100 Gb/s link
SITE = {"system": {"client_memory_bytes": 512 << 30, "client_peak_mib_s": 11920, "osses": 4, "oss_peak_mib_s": 2000}}


@pytest.fixture(scope="module")
def duscc(corpus):
    runs, skipped = load_runs(DUSCC)
    assert not skipped
    return runs


def test_the_runs_become_one_curve_per_test_with_the_printed_rates(duscc):
    campaign = build_campaign(duscc)
    assert campaign.benchmark == "IOzone" and campaign.x_label == "threads"
    curves = {c.label: [(p.tasks, round(p.bw_mib * 1024, 2)) for p in c.points] for c in campaign.curves}
    # 'Children see' kB/s of each file, back from MiB/s
    assert curves["IOzone initial writers · 1024 KiB records"] == [(1, 376423.19), (64, 367382.55)]
    assert curves["IOzone readers · 1024 KiB records"] == [(1, 15156862.0), (64, 108879387.38)]
    assert set(curves) == {"IOzone initial writers · 1024 KiB records", "IOzone rewriters · 1024 KiB records",
                           "IOzone readers · 1024 KiB records", "IOzone re-readers · 1024 KiB records"}


def test_the_sweep_is_judged_as_a_whole(duscc):
    """Writes stay at 1 thread's rate with 64 (359 MiB/s, with fsync: -e); reads, 14.5 GiB/s with 1
    thread and 104 GiB/s with 64, come from the page cache (10 GiB of data on a 512 GiB node). Against
    4 OSSs x 2,000 MiB/s the best write is 4 % of what the servers sustain (BEN021: the servers'
    checks) and the best read 1,329 % (BEN022: a cache)."""
    d = diagnose_campaign(duscc, from_dict(SITE))
    codes = {f.code: f for f in d.findings}
    assert d.source["format"] == "iozone-campaign"
    assert {"BEN021", "BEN022", "CAM004"} <= set(codes)
    write = next(r for r in codes["BEN021"].evidence["bench_peak_results"] if r["operation"] == "write")
    assert round(write["share"], 3) == round(376423.19 / 1024 / 8000, 3)
    assert "collect" in codes["BEN021"].recommendation.text and "SRV001" in codes["BEN021"].recommendation.text
    assert "64 threads" in codes["BEN022"].message
    # the campaign rules count IOzone's scale in threads, as its output does
    assert "at 64 threads" in codes["CAM004"].message and "tasks" not in codes["CAM004"].message
    assert codes["CAM004"].evidence["campaign_clients"] == "threads"


def test_the_html_report_draws_the_scaling_curve_against_threads(duscc):
    d = diagnose_campaign(duscc, from_dict(SITE))
    plots, _, problems = figure_views(d.figures)
    assert not problems
    write = next(p for p in plots if p.id == "campaign-write")
    assert "threads" in write.alt and [row[1:] for row in write.rows] == [["1", "368"], ["64", "359"]]
    page = render_html([d])
    assert 'id="campaign-write"' in page and 'id="campaign-read"' in page


def test_diagnose_of_the_files_adds_the_campaign(corpus, tmp_path):
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", *map(str, DUSCC), "--json", "-"],
                         capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    docs = json.loads(out.stdout)
    (campaign,) = [d for d in docs if d["source"]["format"] == "iozone-campaign"]
    assert campaign["data"]["campaign"]["x"] == "threads"
    assert len(campaign["data"]["campaign"]["curves"]) == 4


def test_an_automatic_mode_output_is_drawn_as_record_by_file_surfaces(corpus):
    """ODroid HC1, -a: 126 write cells (14 file sizes x 13 record sizes, the small records skipped from
    32 MiB files on); the shade falls where the files outgrow the page cache (write: 329,496 kB/s best,
    24,298 kB/s at 512 MiB)."""
    from advisor import pipeline
    from advisor.config import SiteConfig
    from advisor.report.surface import surface_data

    path = IOZONE / "auto_3.471_R_arm32_ericmountain.txt"
    (result,) = pipeline.run([path], pipeline.Stages(figures=True), SiteConfig()).results
    fig = result.diagnosis.figures["surface"]
    assert fig == surface_data(result.profile)
    write = next(t for t in fig["tests"] if t["test"] == "write")
    assert (len(write["files_kib"]), len(write["records_kib"])) == (14, 13)
    assert write["values"][0][:5] == [213925, 222250, 217039, 238015, 224480]
    plots, _, problems = figure_views(result.diagnosis.figures)
    assert not problems
    drawn = next(p for p in plots if p.id == "surface-write")
    assert len(drawn.rows) == 64 and drawn.more_rows == 126 - 64
    svg = str(drawn.svg)
    assert svg.count("<rect") == 126 and svg.count("c-write lv6") >= 1 and "512 MiB file, 16 MiB records" in svg


def test_one_log_of_appended_runs_is_a_sweep(corpus, tmp_path):
    """A wrapper script appending each thread count's output to one log: one input, a two-point curve."""
    log = tmp_path / "iozone.log"
    log.write_text("".join(p.read_text() for p in DUSCC if "write" in p.name))
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", str(log), "--json", "-"],
                         capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    docs = json.loads(out.stdout)
    (campaign,) = [d for d in docs if d["source"]["format"] == "iozone-campaign"]
    curve = next(c for c in campaign["data"]["campaign"]["curves"] if c["operation"] == "write")
    assert [(p["tasks"], round(p["max_mib_s"] * 1024, 2)) for p in curve["points"]] == [(1, 376423.19),
                                                                                        (64, 367382.55)]
