"""One layer account, four reporters: for every corpus log, `show` (text and JSON), the terminal
report, the JSON diagnosis and the HTML page state the same time for every layer, and the same
header figure with its layer.

Each log is loaded and diagnosed once; all four outputs are drawn from that one profile and
diagnosis (the corpus in CHUNKS parts, as tests/test_corpus_shares.py).
"""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path

import jsonschema
import pytest

import advisor

from advisor.config import SiteConfig
from advisor.engine import diagnose
from advisor.errors import InputError
from advisor.findings import diagnoses_json
from advisor.formatting import fmt_secs
from advisor.ingest import load_profile
from advisor.report.html import render_html
from advisor.report.layers import layer_lines
from advisor.report.show import Sections, show_entry
from advisor.report.terminal import console, print_report
from tests.helpers import require
from tests.test_corpus_shares import NOT_TEXT, TAG, corpus_logs

CHUNKS = 6
WIDTH = 1000  # no line wrapped: a layer's sentence is compared whole
SCHEMA = json.loads((Path(advisor.__file__).parent / "schemas" / "diagnosis-v1.json").read_text())
SECTION = {**SCHEMA["$defs"]["layerAccount"], "$defs": SCHEMA["$defs"]}  # summary.layers alone


def _flat(text: str) -> str:
    return " ".join(text.split())


def outputs(log) -> dict | None:
    """The four outputs of one log from one load and one diagnosis; None for a log that cannot be read."""
    try:
        profile = load_profile(log)
    except InputError:
        return None  # the empty and broken logs: their error result has no summary
    d = diagnose(profile, SiteConfig())
    buffer = io.StringIO()
    print_report(d, console(buffer))
    entry = show_entry(profile)
    page = render_html([d])
    return {"json": json.loads(diagnoses_json([d])), "terminal": _flat(buffer.getvalue()),
            "html": _flat(html.unescape(TAG.sub(" ", NOT_TEXT.sub(" ", page)))),
            "show": _flat(Sections.of(entry).plain(WIDTH)), "show_json": json.loads(json.dumps(entry))}


def disagreements(out: dict) -> list[str]:
    """Every layer figure one reporter states differently from the JSON summary (or not at all)."""
    summary = out["json"]["summary"]
    section = summary.get("layers")
    if out["show_json"].get("layers") != section:
        return ["show's layers section differs from the diagnosis's"]
    if section is None:
        return []
    bad = [f"schema: {e.message}" for e in jsonschema.Draft202012Validator(SECTION).iter_errors(section)][:1]
    runtime = section["runtime_s"]
    for row in section["rows"]:
        if row["time_s"] is not None and runtime and row["time_s"] > runtime * (1 + 1e-6):
            bad.append(f"{row['layer']}: {row['time_s']} s per process in a {runtime} s run")
    io_time = section["io_time"]
    expected = [*layer_lines(section)]
    if io_time:
        assert summary["io_time_s"] == io_time["total"] and summary["io_layer"] == io_time["layer"]
        expected.append(f"{fmt_secs(io_time['total'])} per process in {io_time['layer']}")
    for line in expected:
        bad += [f"{where} lacks: {line}" for where in ("terminal", "html", "show") if _flat(line) not in out[where]]
    return bad


def test_the_check_finds_a_reporter_that_differs():
    row = {"layer": "MPI-IO", "modules": ["MPI-IO"], "time_s": 4.0, "bytes_read": 0, "bytes_written": 1 << 20,
           "reads": 0, "writes": 4, "meta_ops": 1, "files": 1, "below": "POSIX", "below_time_s": 1.0,
           "own_time_s": 3.0, "byte_amplification": 1.0, "op_amplification": 1.0, "notes": []}
    section = {"nprocs": 4, "runtime_s": 10.0, "io_time": None, "base_time": None, "rows": [row], "files": [],
               "files_total": 1}
    line = layer_lines(section)[0]
    out = {"json": {"summary": {"layers": section}}, "show_json": {"layers": section},
           "terminal": line, "html": line, "show": line.replace("4.0 s", "4.1 s")}
    assert disagreements(out) == [f"show lacks: {line}"]
    differs = ["show's layers section differs from the diagnosis's"]
    assert disagreements({**out, "show_json": {"layers": None}}) == differs
    broken = {**section, "rows": [{**row, "files": -1}]}
    assert disagreements({**out, "json": {"summary": {"layers": broken}}, "show_json": {"layers": broken}})[0] \
        == "schema: -1 is less than the minimum of 0"


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_every_reporter_gives_every_layer_the_same_time(corpus, chunk, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.setenv("NO_COLOR", "1")
    logs = corpus_logs()[chunk::CHUNKS]
    require(bool(logs), "no Darshan logs in the corpus")
    problems, accounted = {}, 0
    for log in logs:
        out = outputs(log)
        if out is None:
            continue
        accounted += bool(out["json"]["summary"].get("layers"))
        bad = disagreements(out)
        if bad:
            problems[re.sub(r".*/corpus/", "", str(log))] = bad[:3]
    assert not problems, problems
    assert accounted >= len(logs) // 2  # most logs have layers to account for
