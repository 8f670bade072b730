"""Every number a user reads has a label and its declared unit (issue 16, item 1).

Facts declare their unit kind and label once (``@fact(name, kind, doc, label=...)``); the
finding's JSON carries them (``evidence_meta``) and the terminal and HTML evidence tables show
them (advisor/report/units.py ``evidence_rows``, one formatter per kind). Over every diagnosis
of the shared corpus (Darshan logs, parser dumps, IOR outputs and a campaign of them), the
Jaguar campaign, and node snapshots, every evidence value must render in its kind's form: bytes
with a byte unit, a ratio as '3.0x' with thousands separators, a fraction as a percentage.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

import advisor
from advisor import pipeline
from advisor.config import from_dict
from advisor.engine import diagnose, render
from advisor.errors import ConfigError
from advisor.facts import PARAMS, meta_of, registry
from advisor.findings import Diagnosis, diagnoses_json
from advisor.formatting import fmt_field, fmt_kind
from advisor.ingest import load_profile
from advisor.report.units import evidence_rows
from advisor.units import KINDS, Field
from tests.test_campaign_jaguar import CONFIG as JAGUAR_CONFIG
from tests.test_campaign_jaguar import jaguar  # noqa: F401  (the fixture)
from tests.test_corpus_sweep_ior import _ior_files
from tests.test_rules_client import _snapshot
from tests.test_snapshot_ingest import _fake_server

MiB = 1 << 20
# A site that states what the IOR, campaign and Lustre rules need, so that their facts are computed.
SITE = from_dict({"system": {"osts": 64, "default_stripe_count": 1, "default_stripe_size": MiB,
                             "client_memory_bytes": 256 << 30, "peak_write_mib_s": 11444,
                             "peak_read_mib_s": 11444, "ost_peak_mib_s": 500, "rpc_size": 4 * MiB}})

NUM = r"-?\d{1,3}(?:,\d{3})*(?:\.\d+)?"  # thousands separated: '3,133,070.6', never '3133070.6'
FORMS = {
    "bytes": rf"{NUM} (?:B|KiB|MiB|GiB|TiB|PiB)",
    "seconds": rf"{NUM} (?:us|ms|s|min|h)",
    "rate": rf"{NUM} (?:B|KiB|MiB|GiB)/s",
    "ratio": rf"{NUM}x",
    "fraction": r"(?:<0\.1|\d+\.\d)%",
    "percent": r"\d+\.\d%",
    "count": NUM,
    "ops": NUM,
    "index": r"\d+",
    "flag": r"yes|no",
}


def _inputs(corpus: Path) -> list[str]:
    darshan = sorted(corpus.rglob("*.darshan"))
    dumps = sorted(p for p in (corpus / "generated").glob("*/*.txt") if "parser" in p.name)
    return [str(p) for p in [*darshan, *dumps, *_ior_files(corpus)]]


@pytest.fixture(scope="module")
def diagnoses(corpus, jaguar, tmp_path_factory) -> list[Diagnosis]:  # noqa: F811
    """Every diagnosis of the corpus (and a campaign of its IOR runs), the Jaguar campaign, snapshots."""
    run = pipeline.run(_inputs(corpus), pipeline.Stages(isolate=False, campaign=True), SITE)
    out = [r.diagnosis for r in run.results if not r.diagnosis.error]
    study = pipeline.run([str(p) for p in sorted(jaguar.rglob("*.txt"))],
                         pipeline.Stages(isolate=False, campaign=True), JAGUAR_CONFIG)
    out += [r.diagnosis for r in study.results if r.diagnosis.source.get("format") == "ior-campaign"]
    tmp = tmp_path_factory.mktemp("snapshots")
    server = tmp / "server"
    server.mkdir()
    snapshots = [(load_profile(_snapshot(tmp)), {"system": {"rpc_size": 16 * MiB, "default_stripe_count": 4,
                                                             "default_stripe_size": MiB},
                                                  "targets": {"max_dirty_mb": 256}}),
                 (load_profile(_write(tmp / "oss.json", _fake_server(server))), {})]
    out += [diagnose(profile, from_dict(site)) for profile, site in snapshots]
    return out


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_every_fact_and_parameter_declares_a_kind_and_a_label():
    for name, fact in registry().items():
        assert fact.kind in KINDS, name
        assert fact.label and fact.label != name, name
        assert (fact.kind == "record") == (fact.fields is not None), name
    for name, param in PARAMS.items():
        assert param.kind in KINDS and param.label, name


def test_the_sweep_sees_findings_of_every_input_kind(diagnoses):
    formats = {d.source.get("format", "") for d in diagnoses if d.findings}
    assert {"darshan", "ior-campaign", "snapshot"} <= formats and any(f.startswith("ior") for f in formats), formats
    assert sum(len(d.findings) for d in diagnoses) > 1000


def test_json_evidence_carries_each_value_s_declared_label_kind_and_unit(diagnoses):
    schema = json.loads((Path(advisor.__file__).parent / "schemas" / "diagnosis-v1.json").read_text())
    assert schema["$defs"]["unit_kind"]["enum"] == list(KINDS)
    validator = jsonschema.Draft202012Validator(schema)
    for d in diagnoses:
        validator.validate(json.loads(diagnoses_json([d])))
        for f in d.findings:
            assert set(f.evidence_meta) == set(f.evidence), f.code
            for name, meta in f.evidence_meta.items():
                expected = meta_of(name) or {"label": "share of the run lost", "kind": "fraction", "unit": "1"}
                assert meta == expected, (f.code, name)
                assert meta["unit"] == KINDS[meta["kind"]].base


def _check_form(kind: str, value, text: str, where) -> None:
    """`text` (one rendered value) has the form of `kind`; a list is checked item by item."""
    if value is None:
        assert text == "unknown", where
        return
    if isinstance(value, list):
        if kind in FORMS and value:
            items = text.split(" ... (")[0].split(", ")
            for item in items:
                assert re.fullmatch(FORMS[kind], item.rstrip(",")), (where, kind, text)
        return
    if kind in FORMS:
        assert isinstance(value, (int, float)) or kind == "flag", (where, kind, value)
        assert re.fullmatch(FORMS[kind], text), (where, kind, value, text)
    elif kind in ("path", "enum", "text"):
        assert isinstance(value, str) and text == value, (where, kind, value)


def _check_record(fields: dict, value, where) -> None:
    for item in value if isinstance(value, list) else [value]:
        assert isinstance(item, dict), where
        for name, spec in fields.items():
            if spec is None or name not in item:
                continue
            if isinstance(spec, dict):
                _check_record(spec, item[name], (where, name))
                continue
            scaled = item[name] * spec.scale if isinstance(item[name], (int, float)) and spec.unit else item[name]
            _check_form(spec.kind, scaled, fmt_field(spec, item[name]), (where, name))


def test_every_rendered_evidence_value_has_its_kind_s_form(diagnoses):
    checked: dict[str, int] = {}
    for d in diagnoses:
        for f in d.findings:
            rows = {name: text for name, _, text in evidence_rows(f.evidence, f.evidence_meta, most=1000)}
            for name, value in f.evidence.items():
                kind = f.evidence_meta[name]["kind"]
                where = (d.source.get("path"), f.code, name)
                if kind == "record":
                    _check_record(registry()[name].fields, value, where)
                else:
                    _check_form(kind, value, rows[name], where)
                checked[kind] = checked.get(kind, 0) + 1
    assert {"bytes", "seconds", "rate", "ratio", "fraction", "count", "ops", "record"} <= set(checked), checked


def test_each_kind_s_own_form():
    assert fmt_kind("ratio", 3133070.6) == "3,133,070.6x" and fmt_kind("ratio", 3.0) == "3.00x"
    assert fmt_kind("fraction", 0.245092) == "24.5%" and fmt_kind("bytes", 3 * MiB) == "3 MiB"
    assert fmt_kind("rate", 1555 * MiB) == "1.5 GiB/s" and fmt_kind("flag", False) == "no"
    assert fmt_kind("count", list(range(20))).endswith("(20 in all)")
    assert fmt_kind("seconds", "a word from a hand-edited file") == "a word from a hand-edited file"
    assert fmt_field(Field("bytes", "KiB"), 128) == "128 KiB"
    assert fmt_field(Field("rate", "MiB/s"), 12.5) == "12.5 MiB/s"


def test_reports_show_labels_not_fact_names(corpus):
    (log,) = corpus.rglob("imbalanced-io.darshan")
    d = pipeline.run([str(log)], pipeline.Stages(isolate=False), SITE).results[0].diagnosis
    assert d.findings
    import io

    from advisor.report.html import render_html
    from advisor.report.terminal import console, print_report

    page = render_html([d])
    buffer = io.StringIO()
    print_report(d, console(buffer), verbose=True)
    text = buffer.getvalue()
    for f in d.findings:
        for name, label, value in evidence_rows(f.evidence, f.evidence_meta):
            assert f'title="{name}">{_html(label)}</th><td>{_html(value)}</td>' in page, (f.code, name)
            assert f"{label}: {value}" in " ".join(text.split()), (f.code, name)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;").replace(
        '"', "&#34;")


@pytest.mark.parametrize("template, kind, wrong", [
    ("{{ x | bytes }}", "seconds", "through 'bytes'"),
    ("{{ x }}", "fraction", "bare"),
    ("{{ '%.1f' % x }}x", "ratio", None),  # not a direct print: checked by the evidence form instead
    ("{{ x | num }}", "ratio", "through 'num'"),
    ("{{ x | pct }}", "count", "through 'pct'"),
])
def test_templates_must_show_a_fact_with_its_kind_s_filter(template, kind, wrong):
    if wrong is None:
        render.check(template, {"x"}, "here", {"x": kind})
        return
    with pytest.raises(ConfigError, match=re.escape(wrong)):
        render.check(template, {"x"}, "here", {"x": kind})
