"""Figure data and the HTML page, without a browser (tests/test_report_browser.py has one)."""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import io
import json
import re
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

from advisor.findings import Diagnosis, Finding, NotChecked, Prediction, Recommendation
from advisor.verification import Side, Verification, sentence
from advisor.profile import DXT_READ, DXT_WRITE, DxtTrace, JobInfo, JobProfile, Provenance
from advisor.report import figures as fig_mod
from advisor.report.figures import figure_data, stragglers
from advisor.report.html import render_html, write_html
from advisor.report.plots import rank_plot
from advisor.report.terminal import console, print_report
from advisor.report.timeline import BINS, LONGEST, MAX_ROWS, timeline_data
from advisor.report.views import figure_views, rank_ranges, reference
from tests.helpers import require

GEN = "generated"
REPO_LOGS = "darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input"
FIXED = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture(scope="module")
def profiles(corpus):
    from advisor.ingest import load_profile

    paths = {"small": f"{GEN}/b_small_io_shared_4k/case.darshan",
             "imbalance": f"{GEN}/j_imbalance_rank0_10x/case.darshan",
             "badost": f"{REPO_LOGS}/sample-badost.darshan", "goodost": f"{REPO_LOGS}/sample-goodost.darshan",
             "mpiio": f"{GEN}/e_mpiio_collective_256k/case.darshan"}
    return {k: load_profile(corpus / p) for k, p in paths.items()}


def _profile_with_trace(rank, op, start, end, length, nprocs, runtime) -> JobProfile:
    n = len(rank)
    trace = DxtTrace("DXT_POSIX", np.asarray(rank, np.int32), np.zeros(n, np.uint64), np.asarray(op, np.int8),
                     np.zeros(n, np.int64), np.asarray(length, np.int64), np.asarray(start, float),
                     np.asarray(end, float))
    return JobProfile(Provenance("synthetic", "darshan", "test"), JobInfo(nprocs=nprocs, runtime_s=runtime),
                      dxt={"DXT_POSIX": trace})


# -- figure data --------------------------------------------------------------------------
def test_figure_data_is_strict_json_and_small(profiles):
    for name, profile in profiles.items():
        data = figure_data(profile)
        text = json.dumps(data, allow_nan=False)  # no NaN/inf, no numpy scalars
        assert json.loads(text) == data, name
        assert len(text) < 200_000, (name, len(text))
        assert {"io_time", "access_sizes", "top_files"} <= set(data), (name, sorted(data))


def test_io_time_matches_the_counters(profiles):
    profile = profiles["small"]
    io = figure_data(profile)["io_time"]
    posix = profile.records["POSIX"]
    i = io["modules"].index("POSIX")
    expected = posix.get("POSIX_F_WRITE_TIME").sum() / profile.job.nprocs
    assert io["write"][i] == pytest.approx(expected, rel=1e-3)


def test_access_sizes_show_the_4k_requests(profiles):
    sizes = figure_data(profiles["small"])["access_sizes"]
    posix = sizes["modules"]["POSIX"]
    k = sizes["bins"].index("1K-10K")
    assert posix["write"][k] == 16384 and posix["read"][k] == 16384  # IOR -t 4k, 4 ranks x 16 MiB


def test_imbalanced_rank_is_marked_from_the_trace(profiles):
    ranks = figure_data(profiles["imbalance"])["ranks"]
    assert ranks["source"].startswith("DXT")
    assert ranks["stragglers"] == [0]  # rank 0 writes 10x the bytes
    assert ranks["bytes_written"][0] == pytest.approx(10 * ranks["bytes_written"][1], rel=0.01)


def test_slow_ost_is_the_outlier_and_healthy_twin_has_none(profiles):
    bad, good = figure_data(profiles["badost"])["osts"], figure_data(profiles["goodost"])["osts"]
    assert bad["outliers"] == [14] and len(bad["ost"]) == 24
    assert good["outliers"] == []


def test_many_ranks_are_grouped_keeping_the_slowest(profiles):
    ranks = figure_data(profiles["badost"])["ranks"]  # 2048 processes
    assert ranks["grouped"] and len(ranks["labels"]) == fig_mod.MAX_RANK_BARS
    assert max(ranks["time_max_s"]) >= max(ranks["time_s"]) * 1.5
    assert ranks["straggler_index"], "the ranks on the slow OST are stragglers"
    # the job's 512 GiB, not the sum of the 128 group means (32 GiB, as the page once said)
    assert ranks["bytes_total"] == pytest.approx(512 * 2**30, rel=0.01)
    assert "total 512 GiB" in rank_plot(ranks).alt


def test_stragglers_need_both_ratio_and_spread():
    assert stragglers(np.array([1.0, 1.0, 1.1, 0.9, 5.0])).tolist() == [4]
    assert stragglers(np.array([1.0, 1.2, 1.4, 1.6])).tolist() == []  # a spread, no outlier
    assert stragglers(np.array([0.0, 0.0, 0.0])).tolist() == []


def test_timeline_conserves_operations_bytes_and_busy_time():
    rng = np.random.default_rng(7)
    n = 5000
    start = np.sort(rng.random(n) * 10)
    dur = rng.exponential(0.05, n)
    dur[:20] = 3.0  # long operations crossing many bins
    end = np.minimum(start + dur, 12.0)
    rank, op = rng.integers(0, 70, n), rng.integers(0, 2, n)
    data = timeline_data(_profile_with_trace(rank, op, start, end, np.full(n, 4096), 70, 12.0))
    assert len(data["rows"]) <= MAX_ROWS and data["rows"][-1]["ranks"][1] == 69
    ops = sum(sum(r["write_ops"]) + sum(r["read_ops"]) for r in data["rows"])
    nbytes = sum(sum(r["write_bytes"]) + sum(r["read_bytes"]) for r in data["rows"])
    busy = sum(sum(r["write_busy"]) + sum(r["read_busy"]) for r in data["rows"])
    assert ops == n and nbytes == 4096 * n
    assert busy == pytest.approx((end - start).sum(), rel=1e-3)
    longest = data["longest"]
    assert len(longest) == LONGEST and longest[0][3] - longest[0][2] == pytest.approx(max(end - start), rel=1e-4)


def test_timeline_keeps_reads_and_writes_apart():
    profile = _profile_with_trace([0, 0], [DXT_WRITE, DXT_READ], [0.0, 5.0], [1.0, 6.0], [100, 200], 1, 10.0)
    row = timeline_data(profile)["rows"][0]
    assert sum(row["write_bytes"]) == 100 and sum(row["read_bytes"]) == 200
    assert row["write_busy"].index(max(row["write_busy"])) < row["read_busy"].index(max(row["read_busy"]))


def test_million_segment_trace_is_downsampled(corpus):
    from advisor.ingest import load_profile

    profile = load_profile(corpus / GEN / "s_big_dxt_1k" / "case.darshan")
    data = figure_data(profile)
    tl = data["timeline"]
    assert tl["segments"] == 1_048_576
    assert sum(sum(r["write_ops"]) + sum(r["read_ops"]) for r in tl["rows"]) == 1_048_576
    plots, _, problems = figure_views(data)
    assert not problems
    timeline = next(p for p in plots if p.id == "timeline")
    assert timeline.marks <= 2 * MAX_ROWS * BINS + LONGEST + 20
    assert len(json.dumps(data)) < 100_000


# -- plots ---------------------------------------------------------------------------------
def test_every_plot_has_title_axes_and_text_alternative(profiles):
    for name, profile in profiles.items():
        plots, _, problems = figure_views(figure_data(profile))
        assert plots and not problems, name
        for p in plots:
            svg = str(p.svg)
            assert p.title and f"<title id=\"{p.id}-t\">" in svg and "<desc" in svg, (name, p.id)
            assert 'class="label"' in svg, (name, p.id)  # axis labels
            assert len(p.alt) > 20 and p.rows, (name, p.id)
            assert p.marks > 0, (name, p.id)


def test_malformed_figure_data_becomes_a_note():
    bad = {"io_time": {"modules": ["POSIX"]}, "ranks": "x", "timeline": {"rows": [{}], "bins": 3, "t1": 1},
           "osts": {"ost": [1, 2], "bandwidth": ["a", "b"], "bytes": [1, 2]}, "campaign": {"series": [{}]}}
    plots, _, problems = figure_views(bad)
    assert plots == [] and len(problems) == 5


# -- the page ------------------------------------------------------------------------------
def _diagnosis(**over) -> Diagnosis:
    finding = Finding(code="IO001", category="small-io", severity="high", title=f"Small writes {PAYLOAD}",
                      message=f"on {PAYLOAD}", evidence={f"k{PAYLOAD}": PAYLOAD, "bytes_written": 1 << 20},
                      files=[f"/scratch/{PAYLOAD}"], ranks=[0, 1, 2, 5], cost_s=2.0,
                      recommendation=Recommendation(f"Do {PAYLOAD}.", [f"lfs setstripe -c 4 '{PAYLOAD}'"]),
                      references=["javascript:alert(1)", f"https://example.org/{PAYLOAD}"],
                      verification=Verification(verdict="improved", speedup=2.0, ci95=[1.5, 2.5], pairs=3,
                                                 reason=sentence("improved", 2.0, [1.5, 2.5], 3),
                                                 baseline=Side(median_s=2.0), fixed=Side(median_s=1.0)))
    second = Finding(code="LUS002", category="striping", severity="warn", title="Stripe", message="m", cost_s=9.0)
    info = Finding(code="IO009", category="stdio", severity="info", title="STDIO", message="m", cost_s=30.0)
    doc = dict(source={"path": f"/x/{PAYLOAD}.darshan", "format": "darshan", "notes": [PAYLOAD]},
               job={"jobid": PAYLOAD, "nprocs": 4, "runtime_s": 10.0, "exe": PAYLOAD},
               findings=[info, second, finding], not_checked=[NotChecked(PAYLOAD, PAYLOAD)],
               summary={"bytes_read": 1, "interfaces": [PAYLOAD]},
               figures={"top_files": {"files": [{"path": PAYLOAD, "read_s": 1.0}]}})
    doc.update(over)
    return Diagnosis(**doc)


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[tuple[str, list]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))


def _elements(page: str) -> list[tuple[str, list]]:
    parser = _Elements()
    parser.feed(page)
    return parser.found


def test_trace_text_is_escaped_everywhere():
    page = render_html([_diagnosis()])
    tags = {tag for tag, _ in _elements(page)}
    assert not tags & {"img", "iframe", "object", "embed", "link", "base", "form"}
    assert "<img" not in page and "alert(1)>" not in page
    assert page.count("<script") == 1  # ours, at the end
    assert 'href="javascript:' not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page


def test_csp_forbids_loads_and_names_the_inline_style_and_script():
    page = render_html([_diagnosis()])
    csp = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    for body in (style, script):
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    for tag, attrs in _elements(page):
        names = {name for name, _ in attrs}
        assert not any(n.startswith("on") for n in names), tag  # inline handlers: blocked, and none made
        assert "style" not in names and "src" not in names, tag  # nothing to load, no inline style


def test_findings_in_the_same_order_as_the_terminal_report():
    d = _diagnosis()
    page = render_html([d])
    codes = re.findall(r'<article class="finding sev-\w+" id="job0-f\d+"[^>]*>\s*<header>\s*<span[^>]*>\w+</span>\s*'
                       r'<span class="code">(\w+)</span>', page)
    assert codes == [f.code for f in d.sorted_findings()] == ["IO001", "LUS002", "IO009"]


def test_saved_diagnosis_re_renders_the_same_page(profiles):
    from advisor.report.figures import figure_data

    d = _diagnosis(figures=figure_data(profiles["small"]))
    again = Diagnosis.from_dict(json.loads(json.dumps(d.to_dict())))
    assert render_html([again], generated=FIXED) == render_html([d], generated=FIXED)


def test_write_html_is_atomic(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("old report")
    with pytest.raises(AttributeError):
        write_html(target, [object()])  # rendering fails half-way: an object() is no Diagnosis
    assert target.read_text() == "old report" and [p.name for p in tmp_path.iterdir()] == ["report.html"]
    write_html(target, [_diagnosis()])
    assert target.read_text().startswith("<!DOCTYPE html>")


def test_helpers():
    assert rank_ranges([5, 0, 1, 2, 3, 7, 8]) == "0-3, 5, 7-8"
    assert rank_ranges([0, 2, 4], total=300) == "0, 2, 4, ... (300 ranks)"  # the first of 300 listed
    assert reference("see https://doc.lustre.org/manual.html.")["href"] == "https://doc.lustre.org/manual.html"
    assert reference("javascript:alert(1)")["href"] == ""


# -- ioadvisor report ----------------------------------------------------------------------
def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_report_command_re_renders_and_rejects_bad_input(tmp_path):
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps([_diagnosis().to_dict(), _diagnosis().to_dict()]))
    out = _cli("report", str(saved), "--html", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "r.html").read_text()
    assert page.count('<section class="job"') == 2
    cases = {"bad.json": "{", "other.json": '{"schema": "ioadvisor/snapshot/v1"}',
             "partial.json": '{"schema": "ioadvisor/diagnosis/v1", "source": {}}'}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        out = _cli("report", str(tmp_path / name), "--html", str(tmp_path / "x.html"))
        assert out.returncode == 2 and out.stderr.count("\n") == 1, (name, out.stderr)
        assert name in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "x.html").exists()


# -- campaigns and snapshots ---------------------------------------------------------------
def test_campaign_curves_with_knee_osts_and_baseline(tmp_path):
    from advisor.campaign import load_runs
    from advisor.pipeline import diagnose_campaign
    from advisor.config import from_dict
    from tests.test_campaign_jaguar import write_ior_log

    runs = {1: (60, 90), 4: (260, 400), 16: (1500, 1500), 48: (4200, 4300), 64: (3500, 3000), 96: (5200, 5000),
            256: (5300, 5200), 1024: (5400, 5300)}
    for clients, (w, r) in runs.items():
        write_ior_log(tmp_path / "new" / f"ior_{clients}.txt", clients=clients, write_mbs=w, read_mbs=r, fpp=True,
                      block=1 << 30)
        write_ior_log(tmp_path / "old" / f"ior_{clients}.txt", clients=clients, write_mbs=w * 1.2, read_mbs=r,
                      fpp=True, block=1 << 30)
    config = from_dict({"system": {"osts": 48}})
    d = diagnose_campaign(load_runs([tmp_path / "new"])[0], config, load_runs([tmp_path / "old"])[0])
    plots, _, problems = figure_views(d.figures)
    assert not problems and [p.id for p in plots] == ["campaign-write", "campaign-read"]
    write = str(plots[0].svg)
    assert 'class="knee"' in write and 'class="limit"' in write  # knee, clients exceed the 48 OSTs
    assert 'class="series-base"' in write  # the baseline overlay
    assert "tasks" in plots[0].alt and plots[0].rows
    page = render_html([d])
    assert 'id="campaign-write"' in page


def test_snapshot_table_flags_what_the_findings_name(tmp_path):
    out = _cli("collect", "--out", str(tmp_path / "snap.json"))
    assert out.returncode == 0, out.stderr
    snap = json.loads((tmp_path / "snap.json").read_text())
    shown = [d for d in snap["block_devices"] if d.get("size_bytes") or not d.get("virtual")]
    require(bool(shown), "this node has no real block device for `collect` to report")
    device = shown[0]
    device["read_ahead_kb"] = 16  # below the site target of 4096
    (tmp_path / "snap.json").write_text(json.dumps(snap))
    (tmp_path / "site.toml").write_text(f'[targets]\nstorage_devices = ["{device["name"]}"]\n')
    out = _cli("diagnose", str(tmp_path / "snap.json"), "--config", str(tmp_path / "site.toml"),
               "--json", str(tmp_path / "d.json"))
    assert out.returncode in (0, 1), out.stderr
    (d,) = [Diagnosis.from_dict(json.loads((tmp_path / "d.json").read_text()))]
    assert "SRV002" in [f.code for f in d.findings]
    page = render_html([d])
    row = re.search(r'<tr class="flagged"><td>' + re.escape(device["name"]) + r"</td>.*?</tr>", page)
    assert row and "SRV002" in row.group(0) and "<td>16</td>" in row.group(0)
    assert page.count('<tr class="flagged">') == 1


def test_predicted_speedup_shown_where_a_model_gave_one():
    f = Finding(code="IO001", category="small-io", severity="high", title="t", message="m", cost_s=1.0,
                fix={"transform": "coalesce", "transfer_size": 4 << 20},  # a prediction is a fix's
                prediction=Prediction(speedup=1.8, interval=[1.2, 2.6], model="bandwidth-rf"))
    model = {"model": "bandwidth-rf", "measured_mib_s": 210.0, "expected_mib_s": 350.0,
             "expected_interval_mib_s": [250.0, 480.0]}
    page = render_html([_diagnosis(findings=[f], summary={"model": model})])
    assert "predicted 1.80x (1.20x-2.60x)" in page and "bandwidth-rf" in page
    assert ("This job&#39;s pattern usually reaches 250-480 MiB/s on this file system; it reached 210 MiB/s, "
            "below that range: slower than this file system usually runs this pattern.") in page
    assert "predicted" not in render_html([_diagnosis()]).split("<main>")[1]


@pytest.mark.parametrize("measured, says", [(1555.0, "above that range"), (900.0, "within that range"),
                                            (40.0, "below that range")])
def test_the_model_box_says_where_the_job_stands_against_the_usual_range(measured, says):
    from advisor.report.views import _model_text

    text = _model_text({"model": "calibration of 6184 rows (ext4); CV median abs. error 10%, R^2 0.97",
                        "measured_mib_s": measured, "expected_mib_s": 1032.0,
                        "expected_interval_mib_s": [833.0, 1521.0]})
    assert text.startswith(f"This job's pattern usually reaches 833-1,521 MiB/s on this file system; it reached "
                           f"{measured:,.0f} MiB/s, {says}")
    assert "R^2" not in text and "(Model: calibration of 6184 rows (ext4).)" in text


def test_every_reporter_counts_the_files_and_ranks_a_finding_lists_only_the_first_of():
    """A finding over 8,000 files and 300 ranks keeps 50 of each: every reporter says how many there are."""
    listed = Finding(code="MD003", category="metadata", severity="warn", title="Many small files", message="m",
                     files=[f"/scratch/f{i}" for i in range(50)], files_total=8000,
                     ranks=list(range(0, 100, 2)), ranks_total=300, cost_s=1.0)
    d = _diagnosis(findings=[listed])
    buffer = io.StringIO()
    print_report(d, console(buffer))
    text = " ".join(buffer.getvalue().split())
    assert "and 7,997 more" in text and "and 292 more" in text
    page = render_html([d])
    assert "and 7,980 more files" in page and "(300 ranks)" in page
    again = Diagnosis.from_dict(json.loads(json.dumps(d.to_dict())))
    assert again.findings[0].file_count == 8000 and again.findings[0].rank_count == 300
