"""The distinct fixes of a diagnosis, best first (advisor.fixes), and how every reporter shows them:
the order on findings built here, then the JSON (schema), terminal and HTML reports of one real
`diagnose --verify --model default` run of the demo trace (one replay serves every test)."""

from __future__ import annotations

import io
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from advisor.findings import Diagnosis, Finding, Prediction, Recommendation
from advisor.fixes import caution, describe, fix_summaries, fixes_not_to_apply
from advisor.verification import DECIDED, MEASURED, Verification, sentence
from advisor.report.html import render_html
from advisor.report.terminal import console, print_report
from replay.transforms import FIXES
from tests.helpers import require

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "traces" / "ior-small-shared-4k.darshan"  # the Makefile's demo trace
SCHEMA = json.loads((REPO / "advisor/schemas/diagnosis-v1.json").read_text())
HOSTILE = "/scratch/<script>alert(1)</script>"

COALESCE = {"transform": "coalesce", "transfer_size": 4 << 20}
COLLECTIVE = {"transform": "collective", "cb_nodes": 4}
FSYNC = {"transform": "fsync", "mode": "at-close"}
AGGREGATE = {"transform": "aggregate", "aggregators": 8}
STRIPE = {"transform": "stripe", "count": 8, "size": 4 << 20}
SEQUENTIAL = {"transform": "sequential"}


def measured(verdict: str, speedup: float, target: str = "/scratch/t") -> Verification:
    ci = [speedup * 0.8, speedup * 1.2]
    return Verification(verdict=verdict, speedup=speedup, ci95=ci, pairs=5, target=target, fstype="ext4",
                        reason=sentence(verdict, speedup, ci, 5))


def finding(code: str, fix: dict | None, cost_s: float = 1.0, verification=None, prediction=None,
            severity: str = "warn") -> Finding:
    return Finding(code=code, category="small-io", severity=severity, title=f"{code} title", message="m",
                   cost_s=cost_s, recommendation=Recommendation(f"Fix {code}."), fix=fix,
                   verification=verification, prediction=prediction)


# -- the order, on findings built here -------------------------------------------------------
def test_fixes_are_distinct_and_best_first():
    fixes = fix_summaries([
        finding("IO003", COLLECTIVE, 5.0, measured("regressed", 0.62)),
        finding("IO001", COALESCE, 1.0, measured("improved", 2.74)),
        finding("IO002", COALESCE, 3.0, measured("improved", 2.74)),
        finding("MD010", FSYNC, 0.1, prediction=Prediction(speedup=3.81, interval=[2.0, 7.3], time_saved_s=0.06)),
        finding("LUS002", STRIPE, 9.0, Verification.not_verifiable("no stripe layout control on ext4",
                                                                   target="/scratch/t", fstype="ext4")),
        finding("IO009", SEQUENTIAL, 2.0),
        finding("MPI003", AGGREGATE, 1.0, measured("equivalent", 1.01)),
        finding("IMB001", None, 50.0),  # no fix: not a fix summary
    ])
    # speedups >= 1 (measured, else predicted) first, then unknown by time lost; slower: not ranked
    assert [f.fix["transform"] for f in fixes] == ["fsync", "coalesce", "aggregate", "stripe", "sequential"]
    coalesce = fixes[1]
    assert coalesce.codes == ["IO001", "IO002"] and coalesce.cost_s == 3.0
    assert coalesce.outcome() == "improved: 2.74x faster (95 % CI 2.19x-3.29x, 5 pairs) on /scratch/t (ext4)"
    assert fixes[0].outcome() == "predicted 3.81x (2.00x-7.30x), saves ~60.0 ms"
    assert fixes[3].outcome() == "not verifiable: no stripe layout control on ext4"
    assert fixes[4].outcome() == "not verified"


def test_a_fix_measured_slower_is_not_ranked_but_listed_not_to_apply():
    slow = finding("IO003", COLLECTIVE, 5.0, measured("regressed", 0.62))
    (avoid,) = fixes_not_to_apply([slow, finding("IO001", COALESCE)])
    assert avoid.slower and avoid.avoid
    assert avoid.outcome().endswith("5 pairs) on /scratch/t (ext4), do not apply as is")
    assert [f.fix["transform"] for f in fix_summaries([slow, finding("IO001", COALESCE)])] == ["coalesce"]


def test_a_measured_speedup_outranks_the_prediction_of_the_same_fix():
    slow = finding("IO001", COALESCE, 1.0, measured("regressed", 0.7), prediction=Prediction(speedup=5.0))
    unknown = finding("IO009", SEQUENTIAL, 0.5)
    assert [f.fix["transform"] for f in fix_summaries([slow, unknown])] == ["sequential"]
    assert [f.fix["transform"] for f in fixes_not_to_apply([slow, unknown])] == ["coalesce"]
    faster = finding("IO001", COALESCE, 1.0, measured("improved", 2.0),
                     prediction=Prediction(speedup=0.3, interval=[0.2, 0.5]))
    assert fix_summaries([faster])[0].merit() == 2.0 and not fixes_not_to_apply([faster])


def test_a_fix_predicted_slower_is_not_ranked():
    """Slower means the whole interval below 1: a prediction that may be either is ranked."""
    slower = finding("IO003", COLLECTIVE, 5.0, prediction=Prediction(speedup=0.34, interval=[0.21, 0.54]))
    either = finding("IO001", COALESCE, 1.0, prediction=Prediction(speedup=0.9, interval=[0.6, 1.3]))
    assert [f.fix["transform"] for f in fix_summaries([slower, either])] == ["coalesce"]
    (avoid,) = fixes_not_to_apply([slower, either])
    assert avoid.predicted_slower and avoid.outcome() == "predicted 0.34x (0.21x-0.54x)"


def test_only_warn_and_high_findings_rank_a_fix_and_severity_comes_first():
    """ior-imbalance-rank0-10x: IMB003 (info, low confidence) ranked its collective fix first."""
    info = finding("IMB003", COLLECTIVE, 50.0, severity="info")
    high = finding("IMB002", AGGREGATE, 0.1, severity="high")
    warn = finding("IO001", COALESCE, 9.0, measured("improved", 3.0))
    assert [(f.fix["transform"], f.severity) for f in fix_summaries([info, warn, high])] == [
        ("aggregate", "high"), ("coalesce", "warn")]
    shared = fix_summaries([finding("IO003", COLLECTIVE, 1.0, severity="high"), info])
    assert shared[0].codes == ["IO003"] and shared[0].cost_s == 1.0  # the info finding adds nothing
    assert not fix_summaries([info]) and not fixes_not_to_apply([info])


def test_every_transform_is_described_in_words():
    samples = {"coalesce": COALESCE, "collective": COLLECTIVE, "fsync": FSYNC, "aggregate": AGGREGATE,
               "stripe": STRIPE, "sequential": SEQUENTIAL, "align": {"transform": "align", "boundary": 1 << 20},
               "layout": {"transform": "layout", "mode": "fpp"},
               "avoid-targets": {"transform": "avoid-targets", "targets": [3]},
               "hints": {"transform": "hints", "romio_ds_write": "disable", "cb_buffer_size": 4 << 20},
               "mpiio_calls": {"transform": "mpiio_calls", "call_bytes": 4 << 20}}
    assert set(samples) == set(FIXES)
    words = {name: describe(fix) for name, fix in samples.items()}
    assert words["coalesce"] == "coalesce requests to 4 MiB"
    assert words["stripe"] == "stripe over 8 OSTs in 4 MiB stripes"
    assert words["layout"] == "one file per process"
    assert words["avoid-targets"] == "keep new files off storage target 3"
    assert words["hints"] == "ROMIO hints: romio_ds_write=disable, cb_buffer_size=4 MiB"
    assert words["mpiio_calls"] == "MPI-IO calls of up to 4 MiB per rank"
    assert all("=" not in text and text != name for name, text in words.items() if name != "hints")
    assert describe({"transform": "new", "depth": 2}) == "new (depth=2)"


def test_caution_only_when_measured_slower():
    assert caution(measured("regressed", 0.6)) == "measured slower on /scratch/t (ext4): do not apply as is"
    assert caution(measured("improved", 2.0)) == caution(None) == ""


# -- one real verified run of the demo trace -------------------------------------------------
@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> dict:
    """`ioadvisor diagnose DEMO --verify --model default` once: JSON, HTML and terminal text."""
    require((Path(sys.executable).parent / "mpiexec").exists(), "no mpiexec in the venv (pip install mpich)")
    from advisor.commands.diagnose import command

    tmp = tmp_path_factory.mktemp("demo")
    (tmp / "target").mkdir()
    args = [str(DEMO), "--verify", "--target", str(tmp / "target"), "--np", "2",
            "--model", "default", "--json", str(tmp / "demo.json"), "--html", str(tmp / "demo.html")]
    done = CliRunner().invoke(command, args, env={"COLUMNS": "400"}, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return {"doc": json.loads((tmp / "demo.json").read_text()), "page": (tmp / "demo.html").read_text(),
            "text": done.stdout}


def test_json_fixes_validate_and_match_the_findings(demo_run):
    doc = demo_run["doc"]
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    ranked, avoid = doc["summary"]["fixes"], doc["summary"]["fixes_not_to_apply"]
    fixes = ranked + avoid
    codes = {f["fix"]["transform"]: set(f["codes"]) for f in fixes}
    assert codes["coalesce"] >= {"IO001", "IO002"} and codes["collective"] >= {"IO003", "IO004", "MPI002"}
    for fix in fixes:
        proposing = [f for f in doc["findings"] if f["code"] in fix["codes"]]
        assert all(f["fix"] == fix["fix"] for f in proposing) and len(proposing) == len(fix["codes"])
        v, p = proposing[0]["verification"], proposing[0]["prediction"]
        assert fix["verdict"] in MEASURED and (fix["speedup"], fix["ci95"]) == (v["speedup"], v["ci95"])
        assert fix["predicted_speedup"] == p["speedup"] and fix["time_saved_s"] == p.get("time_saved_s")
        assert fix["cost_s"] == max(f["cost_s"] for f in proposing)
    merits = [f["speedup"] for f in ranked if f["verdict"] in DECIDED]  # measured: faster first
    assert merits == sorted(merits, reverse=True) and all(m >= 1 for m in merits)
    for fix in avoid:  # measured slower, or not measured and predicted slower
        assert fix["verdict"] == "regressed" or (fix["verdict"] not in DECIDED and fix["predicted_interval"][1] < 1)
    assert not [f for f in ranked if f["verdict"] == "regressed"]


def test_saved_fixes_are_recomputed_from_the_findings(demo_run):
    doc = json.loads(json.dumps(demo_run["doc"]))
    doc["summary"]["fixes"] = doc["summary"]["fixes_not_to_apply"] = [{"stale": True}]
    again = Diagnosis.from_dict(doc).to_dict()
    for key in ("fixes", "fixes_not_to_apply"):
        assert again["summary"][key] == demo_run["doc"]["summary"][key]


def test_schema_keeps_fixes_optional_and_checks_them(demo_run):
    validator = jsonschema.Draft202012Validator(SCHEMA)
    doc = json.loads(json.dumps(demo_run["doc"]))
    del doc["summary"]["fixes"], doc["summary"]["fixes_not_to_apply"]
    validator.validate(doc)  # v1 documents written before the fields stay valid
    doc["summary"]["fixes"] = [{"fix": COALESCE, "action": "x", "codes": []}]
    assert not validator.is_valid(doc)


def test_terminal_lists_the_fixes_after_the_findings(demo_run):
    summary = demo_run["doc"]["summary"]
    text, fixes = demo_run["text"], summary["fixes"] + summary["fixes_not_to_apply"]
    block = text[text.index("Fixes, best first:"):text.index("Not checked")]
    assert text.rindex("fix: ") < text.index("Fixes, best first:")
    lines: list[str] = []
    for line in (raw.strip() for raw in block.splitlines()[1:] if raw.strip()):
        if re.match(r"\d+\. |Do not apply|\(diagnose --verify", line) or not lines:
            lines.append(line)
        else:  # a fix line the terminal's width wrapped
            lines[-1] += " " + line
    lines = [line for line in lines if not line.startswith("(diagnose --verify")]
    if summary["fixes_not_to_apply"]:  # numbered on under their own heading
        assert lines.pop(len(summary["fixes"])) == "Do not apply as is (measured or predicted slower):"
    assert len(lines) == len(fixes)
    for i, (line, fix) in enumerate(zip(lines, fixes), 1):
        assert line.startswith(f"{i}. {describe(fix['fix'])} ({', '.join(fix['codes'])}) - {fix['reason']}")
        assert f"{fix['speedup']:.2f}x" in line and f"predicted {fix['predicted_speedup']:.2f}x" in line
        assert ("do not apply as is" in line) == (fix["verdict"] == "regressed")
    regressed = [f for f in demo_run["doc"]["findings"] if (f["verification"] or {}).get("verdict") == "regressed"]
    assert text.count(": do not apply as is)") == len(regressed)  # on each of their fix lines


def test_a_finding_shows_its_own_cost_and_the_saving_is_the_fix_s(demo_run):
    """IO002 loses 10.6 ms; the ~59 ms its fix saves is said once, on the fix's line (issue 16)."""
    text, doc = demo_run["text"], demo_run["doc"]
    fixes = doc["summary"]["fixes"] + doc["summary"]["fixes_not_to_apply"]
    block = text.index("Fixes, best first:")
    assert text.count("saves") == sum(isinstance(f["time_saved_s"], (int, float)) for f in fixes)
    assert "saves" not in text[:block]
    number = {code: i for i, f in enumerate(fixes, 1) for code in f["codes"]}
    flat = " ".join(text[:block].split())
    for f in doc["findings"]:
        if f["code"] in number:
            assert f"replayed and predicted: fix {number[f['code']]} below" in flat, f["code"]
    cards = re.findall(r'<article class="finding.*?</article>', demo_run["page"], re.S)
    assert cards and not [c for c in cards if "time saved" in c.lower()]


def test_html_table_follows_the_result_model(demo_run):
    page, summary = demo_run["page"], demo_run["doc"]["summary"]
    fixes = summary["fixes"] + summary["fixes_not_to_apply"]
    rows = _fix_rows(page) + _fix_rows(page, "fixes avoid")
    assert [r["cells"][1] for r in rows] == [describe(f["fix"]) for f in fixes]
    assert [r["cells"][0] for r in rows] == [str(i) for i in range(1, len(fixes) + 1)]
    for row, fix in zip(rows, fixes):
        assert row["codes"] == fix["codes"] and ("slower" in row["class"]) == (fix in summary["fixes_not_to_apply"])
        assert row["cells"][5].startswith(fix["reason"])  # the verdict's one sentence, as in terminal and JSON
        for code, href in zip(row["codes"], row["hrefs"]):  # each code links to its finding's card
            assert re.search(rf'<article [^>]*id="{href[1:]}"[^>]*>\s*<header>.*?<span class="code">{code}</span>',
                             page, re.S)
    assert page.index('id="job0-fixes"') < page.index('id="job0-findings"')


def test_html_shows_each_fix_s_measurement_once_linked_from_its_findings(demo_run):
    """Issue 16: the replay chart and the model's prediction of a fix appear once, in its section
    under the fixes table, whatever the number of findings proposing it (the collective fix has
    four); a finding's card and summary row link there."""
    page, summary = demo_run["page"], demo_run["doc"]["summary"]
    fixes, findings = summary["fixes"] + summary["fixes_not_to_apply"], demo_run["doc"]["findings"]
    assert page.count('-verify"') == sum(bool(f["verdict"]) for f in fixes) < len([f for f in findings if f["fix"]])
    assert page.count("Predicted by the model") == sum(f["predicted_speedup"] is not None for f in fixes)
    cards = re.findall(r'<article class="finding.*?</article>', page, re.S)
    assert cards and not [c for c in cards if "-verify" in c or "Predicted by the model" in c]
    for i, fix in enumerate(fixes, 1):
        section = re.search(rf'<section class="fix-detail" id="job0-fix{i}".*?</section>', page, re.S)
        assert section and describe(fix["fix"]) in section.group(0)
        assert ("time saved" in section.group(0)) == isinstance(fix["time_saved_s"], (int, float))
        for code in fix["codes"]:  # every finding the fix covers points at it, from its card and its row
            card = next(c for c in cards if f'<span class="code">{code}</span>' in c)
            assert f'href="#job0-fix{i}"' in card
            row = re.search(rf'<tr class="sev-\w+"[^>]*>(?:(?!</tr>).)*>{code}</a>.*?</tr>', page, re.S)
            assert row and f'href="#job0-fix{i}"' in row.group(0)
    assert page.index('id="job0-by-finding"') < page.index('id="job0-fix1"') < page.index('id="job0-findings"')


# -- a regressed fix reads as a warning, and hostile text stays text -----------------------
def _regressed_diagnosis() -> Diagnosis:
    hostile_fix = {"transform": "<img src=x onerror=alert(2)>"}
    return Diagnosis(source={"path": "x.darshan", "format": "darshan"},
                     job={"jobid": "1", "nprocs": 4, "runtime_s": 10.0, "exe": "a.out"},
                     findings=[finding("IO003", COLLECTIVE, 2.0, measured("regressed", 0.62, HOSTILE)),
                               finding("IO001", COALESCE, 1.0, measured("improved", 2.74, HOSTILE)),
                               finding("IO005", hostile_fix, 0.5)])


def test_terminal_warns_on_a_fix_measured_slower(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    buffer = io.StringIO()
    print_report(_regressed_diagnosis(), console(buffer))
    text = buffer.getvalue()
    assert f"fix: Fix IO003. (measured slower on {HOSTILE} (ext4): do not apply as is)" in text
    (improved,) = [line for line in text.splitlines() if "fix: Fix IO001." in line]
    assert "measured slower" not in improved  # an improved fix reads as plain advice
    assert (f"3. collective MPI-IO with 4 aggregators (IO003) - regressed: 1.61x slower (speedup 0.62x, "
            f"95 % CI 0.50x-0.74x, 5 pairs) on {HOSTILE} (ext4), do not apply as is") in text


def test_html_warns_on_a_fix_measured_slower_and_escapes_it():
    page = render_html([_regressed_diagnosis()])
    assert [r["codes"] for r in _fix_rows(page)] == [["IO001"], ["IO005"]]
    (avoid,) = _fix_rows(page, "fixes avoid")
    assert avoid["codes"] == ["IO003"] and avoid["cells"][0] == "3"
    assert "slower" in avoid["class"] and "do not apply as is" in avoid["cells"][5]
    assert page.index('id="job0-fixes"') < page.index('id="job0-avoid"') < page.index("Do not apply as is</h3>")
    escaped = "measured slower on /scratch/&lt;script&gt;alert(1)&lt;/script&gt; (ext4): do not apply as is"
    assert page.count(escaped) == 2  # the finding's summary row and its card
    assert "<img" not in page and "<script>alert" not in page and page.count("<script") == 1


class _FixRows(HTMLParser):
    """The rows of the page's 'fixes' tables (best first, and not to apply): class, cell texts, code
    texts, links and table."""

    def __init__(self):
        super().__init__()
        self.rows: list[dict] = []
        self.depth = 0  # inside table.fixes
        self.table = ""
        self.in_cell = self.in_code = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("class") in ("fixes", "fixes avoid"):
            self.depth, self.table = 1, attrs["class"]
        elif self.depth and tag == "tr":
            self.rows.append({"class": attrs.get("class") or "", "cells": [], "codes": [], "hrefs": [],
                              "table": self.table})
        elif self.depth and tag == "td":
            self.rows[-1]["cells"].append("")
            self.in_cell = True
        elif self.depth and tag == "a" and "code" in (attrs.get("class") or ""):
            self.rows[-1]["hrefs"].append(attrs.get("href"))
        self.in_code = self.depth and "code" in (attrs.get("class") or "")

    def handle_endtag(self, tag):
        if tag == "table":
            self.depth = 0
        self.in_cell = self.in_cell and tag != "td"
        self.in_code = False

    def handle_data(self, data):
        if self.depth and self.in_cell:
            self.rows[-1]["cells"][-1] += data
            if self.in_code:
                self.rows[-1]["codes"].append(data)


def _fix_rows(page: str, table: str = "fixes") -> list[dict]:
    """The rows of the 'Fixes, best first' table, or of 'Do not apply as is' (table="fixes avoid")."""
    parser = _FixRows()
    parser.feed(page)
    return [r for r in parser.rows if r["cells"] and r["table"] == table]  # the header row has no <td>


def test_a_measurement_says_the_load_it_ran_beside():
    """Two measurements of one fix that differ in size usually differ in load: the place says it."""
    from advisor.fixes import place

    assert place("/s", "ext4", {"start": 2.13, "end": 5.81, "cores": 2}) == "/s (ext4, load 2.1-5.8 on 2 cores)"
    assert place("/s", "ext4", {"start": 0.5, "end": 0.46, "cores": 1}) == "/s (ext4, load 0.5 on 1 core)"
    assert place("/s", "ext4", {"start": None, "end": 1.0, "cores": 2}) == "/s (ext4)"  # unknown: not said
    assert place("/s", None, "1.0") == "/s"
    assert place("/s", None, {"start": 1, "end": 1, "cores": 4}) == "/s (load 1.0 on 4 cores)"
    assert place("/s", "ext4", {"start": 2.0, "end": 2.2, "min": 1.9, "max": 5.8, "cores": 2}) == \
        "/s (ext4, load 1.9-5.8 on 2 cores)"  # the range the samples saw, not only the ends


def test_one_pair_reads_no_interval_in_every_reporter(monkeypatch):
    """A one-pair measurement (--repeat 1) printed '95 % CI nanx-nanx': now the terminal, the HTML and
    the JSON say '1 pair: no interval', and the JSON's ci95 is null."""
    from advisor.verify import Variant, _verification
    from replay import stats

    side = {"runs": [{"time_s": 1.0, "sample_s": 1.0, "bytes_read": 0, "bytes_written": 1, "passes": 1,
                      "data_ops": 1}]}
    fast = {"runs": [{**side["runs"][0], "time_s": 0.8, "sample_s": 0.8}]}
    v = _verification(Variant("fix", COALESCE, plan=object()), {"runs": {"baseline": side, "fix": fast},
                      "stop_reason": "rounds done", "cache_policy": "evict"}, {"target": "/s", "fstype": "ext4"},
                      stats.Policy.fixed(1))
    diagnosis = Diagnosis(source={"path": "x.darshan", "format": "darshan"}, job={"jobid": "1", "nprocs": 4},
                          findings=[finding("IO001", COALESCE, 1.0, v)])
    monkeypatch.setenv("COLUMNS", "400")
    buffer = io.StringIO()
    print_report(diagnosis, console(buffer))
    doc = json.loads(json.dumps(diagnosis.to_dict()))
    for text in (buffer.getvalue(), render_html([diagnosis]), doc["findings"][0]["verification"]["reason"]):
        assert "speedup 1.25x, 1 pair: no interval" in text and "nanx" not in text
    assert doc["findings"][0]["verification"]["ci95"] is None
