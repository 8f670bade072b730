"""One test per rule: a real log where it fires (with its evidence rendered), and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.config import from_dict
from advisor.engine import diagnose
from advisor.engine.rules import load_catalogue
from tests.test_diagnose_corpus import CORPUS, LOGS, PYDARSHAN, case, diagnosis

FIRES_ON = {
    "IO001": case("b_small_io_shared_4k"), "IO002": case("s_big_dxt_1k"), "IO003": case("b_small_io_shared_4k"),
    "IO004": case("b_small_io_shared_4k"),
    "IO010": case("c_random_shared_64k"), "IO011": case("c_random_shared_64k"),
    "IO020": case("i_misaligned_1000000"), "IO021": f"{LOGS}/imbalanced_io/imbalanced-io.darshan",
    "IO030": f"{LOGS}/dlio_logs/snyder_python3_id3116902-2110483_12-19-66980-15861026832475351160_1.darshan",
    "IO031": case("h4_repetitions_i3"), "IO040": f"{PYDARSHAN}/sample-goodost.darshan",
    "MPI001": "traps/T03/case.darshan", "MPI002": case("b_small_io_shared_4k"),
    "MPI003": case("d_mpiio_independent_256k"), "MPI004": f"{LOGS}/imbalanced_io/imbalanced-io.darshan",
    "MPI005": f"{LOGS}/imbalanced_io/imbalanced-io.darshan", "MPI007": "traps/T02/case.darshan",
    "STD001": "traps/T03/case.darshan",
    "MD001": case("g_mdtest_files_n2000"),
    "MD002": "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/dxt.darshan",
    "MD003": case("g2_mdtest_n2000_default_mem_partial"), "MD010": case("n_fsync_per_write_Y_4k"),
    "IMB001": case("j2_straggler_rank0_slow"), "IMB002": case("j_imbalance_rank0_10x"),
    "IMB003": case("j_imbalance_rank0_10x"),
    "LUS002": f"{LOGS}/imbalanced_io/imbalanced-io.darshan",
    "LUS005": f"{LOGS}/e3sm_io_heatmaps_and_dxt/e3sm_io_heatmap_only.darshan",
    "LUS007": f"{LOGS}/imbalanced_io/imbalanced-io.darshan", "LUS008": f"{LOGS}/imbalanced_io/imbalanced-io.darshan",
    "LUS010": f"{PYDARSHAN}/sample-badost.darshan", "SUB001": f"{PYDARSHAN}/sample-badost.darshan",
    "DAR001": case("g2_mdtest_n2000_default_mem_partial"),
}


@pytest.mark.parametrize("code", sorted(FIRES_ON))
def test_rule_fires_on_its_case(code):
    d = diagnosis(FIRES_ON[code])
    (finding,) = [f for f in d.findings if f.code == code]
    rule = load_catalogue().get(code)
    assert finding.category == rule.category and finding.title == rule.title
    assert finding.message and "{{" not in finding.message and finding.recommendation.text
    assert set(rule.evidence) <= set(finding.evidence)


def test_forward_chaining_lus001_when_the_root_cause_rule_is_switched_off():
    from advisor import api

    profile = api.load(CORPUS / LOGS / "imbalanced_io/imbalanced-io.darshan")
    config = from_dict({"thresholds": {"LUS002": {"min_share": 2}}})
    found = {f.code: f for f in diagnose(profile, config).findings}
    assert "LUS002" not in found and "LUS001" in found
    assert found["LUS001"].fix == {"transform": "stripe", "count": 55, "size": 4194304}


def test_partial_log_gives_exact_darshan_settings():
    (f,) = [f for f in diagnosis(case("g2_mdtest_n2000_default_mem_partial")).findings if f.code == "DAR001"]
    lines = f.evidence["darshan_config_lines"]
    assert lines[0].startswith("MAX_RECORDS ") and "POSIX" in lines[0]
    assert any(line.startswith("MODMEM ") for line in lines) and any(line.startswith("NAMEMEM ") for line in lines)
    assert any("DARSHAN_CONFIG_PATH" in c for c in f.recommendation.commands)


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, timeout=600, **kw)


def test_cli_rules_and_explain():
    out = _cli("rules")
    assert out.returncode == 0 and "LUS010" in out.stdout and "bad-ost" in out.stdout
    out = _cli("rules", "explain", "lus010")
    assert out.returncode == 0 and "What it does" in out.stdout and "How to fix it" in out.stdout
    out = _cli("rules", "explain", "NOPE001")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    short = _cli("rules", "LUS010")  # as `ruff rule CODE`
    assert short.returncode == 0 and "What it does" in short.stdout and "LUS010" in short.stdout
    short = _cli("rules", "NOPE001")
    assert short.returncode == 2 and "NOPE001" in short.stderr and short.stderr.count("\n") == 1


@pytest.mark.parametrize("columns", ["200", "60"])
def test_rules_code_prints_each_command_verbatim(columns):
    """C comments and '*' are not Markdown: every command of every rule comes out as written
    (its template outlined), one per line (a narrow terminal may wrap a long one, never join two)."""
    from advisor.engine.render import outline
    from advisor.engine.rules import load_catalogue

    for code in ("IO001", "LUS002", "MPI007", "SRV002"):
        out = _cli("rules", code, env={**os.environ, "COLUMNS": columns})
        assert out.returncode == 0, out.stderr
        printed = out.stdout.splitlines()
        for command in map(lambda c: outline(c, code=True), load_catalogue().get(code).recommendation["commands"]):
            if len(command) < int(columns) - 4:
                assert any(line.strip() == command.strip() for line in printed), (code, command)
            # wrapped or not: the command's words in order, nothing else between them
            words = " ".join(" ".join(printed).split())
            assert " ".join(command.split()) in words, (code, command)
        assert "/* instead of many small write() calls */" in " ".join(out.stdout.split()) or code != "IO001"


def test_cli_diagnose_bad_input_is_one_line_and_others_go_on(tmp_path):
    bad = tmp_path / "junk.darshan"
    bad.write_bytes(b"\x00junk" * 10)
    good = CORPUS / case("n_fsync_per_write_Y_4k")
    out = _cli("diagnose", "--json", "-", "--fail-on", "high", str(bad), str(good))
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "junk.darshan" in out.stderr and "Traceback" not in out.stderr
    bad_doc, good_doc = json.loads(out.stdout)  # every input in order, the unusable one as its error result
    assert bad_doc["error"] and bad_doc["source"]["path"] == str(bad) and not bad_doc["findings"]
    assert good_doc["findings"] and not good_doc.get("error")


def test_cli_fail_on(tmp_path):
    good = str(CORPUS / case("a_good_fpp_posix_1m"))
    bad = str(CORPUS / case("n_fsync_per_write_Y_4k"))
    assert _cli("diagnose", "--fail-on", "high", good).returncode == 0
    out = _cli("diagnose", "--fail-on", "high", bad, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 1 and "MD010" in out.stdout and "\x1b[" not in out.stdout


def test_corpus_sweep_has_no_traceback(tmp_path):
    logs = sorted(str(p) for p in CORPUS.rglob("*.darshan"))
    out = _cli("diagnose", "--json", str(tmp_path / "all.json"), *logs)
    assert "Traceback" not in out.stderr and "internal error" not in out.stderr, out.stderr[-2000:]
    assert out.returncode in (0, 2)
    docs = json.loads((tmp_path / "all.json").read_text())
    failed = [line for line in out.stderr.splitlines() if line.startswith("ioadvisor: error:")]
    assert len(docs) == len(logs)  # one result per input, in order, errors included
    assert [d["source"]["path"] for d in docs] == logs
    assert len([d for d in docs if d.get("error")]) == len(failed)


def test_docs_rules_md_is_current():
    """docs/rules.md holds every rule's page as `ioadvisor rules CODE` prints it."""
    from advisor.commands.rules import docs_page
    from advisor.engine.rules import load_catalogue

    docs = Path(__file__).parents[1] / "docs" / "rules.md"
    current = docs.read_text(encoding="utf-8")
    rules = sorted(load_catalogue().rules, key=lambda r: r.code)
    assert docs_page(current, rules) == current, "run `make docs` (ioadvisor rules --write-docs docs/rules.md)"
    assert all(f"# {r.code} " in current for r in rules)


def test_docs_rules_md_prose_quotes_the_current_defaults():
    """The hand-written part above the generated pages names the severity parameters and their defaults."""
    from advisor.commands.rules import DOCS_MARKER
    from advisor.engine.significance import HIGH_SHARE, MIN_SHARE, WARN_SHARE
    from advisor.facts import PARAMS

    prose = (Path(__file__).parents[1] / "docs" / "rules.md").read_text(encoding="utf-8").split(DOCS_MARKER)[0]
    high, warn, least = (PARAMS[n].default * 100 for n in (HIGH_SHARE, WARN_SHARE, MIN_SHARE))
    for quoted in (f">= {high:g} % high", f">= {warn:g} % warn", f"below {least:g} % no finding",
                   f"`{HIGH_SHARE}`", f"`{WARN_SHARE}`", f"`{MIN_SHARE}`"):
        assert quoted in " ".join(prose.split()), quoted
