"""IOR results as data (issue 16, item 2): `show --json -` and `diagnose --json -` carry every IOR
bandwidth of the corpus as numbers equal to the ones the IOR output prints.

The printed numbers are read back with the independent regular expressions of
tests/test_corpus_sweep_ior.py (result rows, "Summary of all tests" rows, "Max Write/Read"
lines, JSON ``bwMiB``/``bwMaxMIB``, CSV rows), never with the parser's code, and compared
with the typed numbers of the JSON (``ior.tests[].operations[op]``: ``iterations[].bw_mib_s``,
``max/min/mean_mib_s``; ``max_mib_s`` for the Max lines). The files are split into chunks
(one CLI call each, several paths per call) so pytest-xdist can spread them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

import advisor
from advisor.cli import cli
from tests.conftest import CORPUS
from tests.helpers import require
from tests.test_corpus_sweep_ior import _ior_files, _printed_csv, _printed_json, _printed_text, _round

CHUNKS = 4


def _chunk(i: int) -> list[Path]:
    return _ior_files(CORPUS)[i::CHUNKS] if CORPUS.is_dir() else []


def _json_numbers(ior: dict) -> dict[str, Counter]:
    ops = [(op, o) for t in ior["tests"] for op, o in t["operations"].items()]
    return {"rows": Counter((op, it["bw_mib_s"]) for op, o in ops for it in o["iterations"]),
            "summary": Counter((op, o["max_mib_s"], o["min_mib_s"], o["mean_mib_s"])
                               for op, o in ops if o.get("source") == "summary"),
            "max": Counter((op, bw) for t in ior["tests"] for op, bw in t["max_mib_s"].items())}


def _check(path: str, ior: dict) -> None:
    printed = {"ior-json": _printed_json, "ior-csv": _printed_csv}.get(ior["format"], _printed_text)(
        Path(path).read_text(errors="replace"))
    got = _json_numbers(ior)
    assert sum(got["rows"].values()) + sum(got["summary"].values()) > 0, path
    for key in ("rows", "summary", "max"):
        if key == "max" and ior["format"] == "ior-json":
            continue  # the -v JSON "max" block repeats the row maxima
        assert _round(got[key]) == _round(printed[key]), (path, key)


def _run(*args: str) -> list | dict:
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output and "internal error" not in result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_show_json_carries_every_printed_bandwidth(corpus, chunk):
    files = _chunk(chunk)
    require(bool(files), "no IOR files in the corpus")
    results = _run("show", "--json", "-", *map(str, files))["results"]
    checked = 0
    for r in results:
        if r["ok"] and "ior" in r:
            _check(r["path"], r["ior"])
            checked += 1
    assert checked >= 100, checked  # 430 of the ~700 files are IOR outputs with results


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_diagnose_json_carries_every_printed_bandwidth(corpus, chunk):
    files = _chunk(chunk)
    require(bool(files), "no IOR files in the corpus")
    docs = _run("diagnose", "--json", "-", *map(str, files))
    schema = json.loads((Path(advisor.__file__).parent / "schemas" / "diagnosis-v1.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    runs = [d for d in docs if "ior" in d.get("data", {})]
    for d in runs:
        validator.validate(d)
        _check(d["source"]["path"], d["data"]["ior"])
    assert len(runs) >= 100, len(runs)
    (campaign,) = [d for d in docs if d["source"]["format"] == "ior-campaign"]
    validator.validate(campaign)
    points = {(c["operation"], p["tasks"], p["max_mib_s"], p["source"])
              for c in campaign["data"]["campaign"]["curves"] for p in c["points"]}
    # every point of a curve is the max of a test of one of the runs, as that run's JSON says
    maxima = {(op, t["params"]["tasks"], o["max_mib_s"], d["source"]["path"])
              for d in runs for t in d["data"]["ior"]["tests"] for op, o in t["operations"].items()
              if "max_mib_s" in o}
    assert points and points <= maxima


def test_show_tables_are_drawn_from_the_data(corpus):
    path = corpus / "ior-versions"
    files = sorted(p for p in path.iterdir() if p.suffix in (".txt", ".json"))
    results = _run("show", "--json", "-", *map(str, files))["results"]
    shown = [r for r in results if r["ok"] and "ior" in r]
    assert shown
    for r in shown:
        (_title, columns, rows), = r["extra_tables"]
        maxima = [row[columns.index("max MiB/s")] for row in rows]
        expected = [f"{o['max_mib_s']:,.2f}" for t in r["ior"]["tests"] for o in t["operations"].values()
                    if "max_mib_s" in o]
        assert maxima == expected, r["path"]


def test_snapshot_settings_are_numbers_in_both_documents(tmp_path):
    """A client snapshot (collected here, lctl answered from lab102's recorded output): every
    setting is in the JSON, the Lustre parameters as the numbers lctl printed."""
    from tests.test_rules_client import _snapshot

    snap = _snapshot(tmp_path, max_rpcs_in_flight=8, max_dirty_mb=32)
    (shown,) = _run("show", "--json", "-", str(snap))["results"]
    diagnosed = _run("diagnose", "--json", "-", str(snap))
    settings = json.loads(snap.read_text())
    for data in (shown["snapshot"], diagnosed["data"]["snapshot"]):
        params = data["lustre"]["params"]
        rpcs = {k: v for k, v in params.items() if k.endswith(".max_rpcs_in_flight")}
        assert rpcs and set(rpcs.values()) == {8}
        assert {k: v for k, v in params.items() if k.endswith(".max_dirty_mb")} and all(
            v == 32 for k, v in params.items() if k.endswith(".max_dirty_mb"))
        assert data["block_devices"] == settings["block_devices"] and data["cpu"] == settings["cpu"]
        assert data["lustre"]["layouts"] == settings["lustre"]["layouts"]
    params = [row for title, _, rows in shown["extra_tables"] if title == "Lustre parameters" for row in rows]
    assert all(row[1] == str(shown["snapshot"]["lustre"]["params"][row[0]]) for row in params)
