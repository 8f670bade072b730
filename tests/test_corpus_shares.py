"""No impossible share anywhere: every corpus log's terminal, JSON and HTML output, read back;
and no cheap high finding that does not say why it is high.

A share of the run or of the I/O over 100 % states something that cannot be (times summed over
threads, overlapping calls). The counters may hold such sums; what we print must not. Each chunk
of the corpus is diagnosed in one CLI call writing all three outputs, then every percentage in
the text, every `*share*` and `*percent*`/`*pct*` value in the JSON, is checked.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from click.testing import CliRunner

from advisor.cli import cli
from tests.conftest import CORPUS
from tests.helpers import require

CHUNKS = 6
PERCENT = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s?%")
NOT_TEXT = re.compile(r"<(style|script|svg)\b.*?</\1>", re.S | re.I)
TAG = re.compile(r"<[^>]+>")
SHARE_NAME = re.compile(r"(^|_)share($|_)")  # io_share, cost_share; not shared_read_ops


def corpus_logs() -> list:
    return sorted(p for p in CORPUS.rglob("*.darshan") if p.is_file()) if CORPUS.is_dir() else []


def percentages_over_100(text: str) -> list[str]:
    """Every 'N %' in `text` whose N exceeds 100, with a little context."""
    return [text[max(0, m.start() - 60):m.end()].replace("\n", " ")
            for m in PERCENT.finditer(text) if float(m.group(1).replace(",", "")) > 100.0]


def impossible_shares(value, path: str = "") -> list[str]:
    """JSON members named as shares (0..1) or percentages (0..100) that fall outside their range."""
    if isinstance(value, dict):
        return [bad for k, v in value.items() for bad in impossible_shares(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [bad for i, v in enumerate(value) for bad in impossible_shares(v, f"{path}[{i}]")]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        name = path.rsplit(".", 1)[-1].lower()
        if SHARE_NAME.search(name) and not 0.0 <= value <= 1.0:
            return [f"{path} = {value}"]
        if ("percent" in name or name.endswith("pct")) and not 0.0 <= value <= 100.0:
            return [f"{path} = {value}"]
    return []


def test_percentages_are_found_and_judged():
    found = percentages_over_100("took 763.6 % of the run, 12.5% of I/O, 1,200% faster")
    assert len(found) == 2 and found[0].endswith("763.6 %") and found[1].endswith("1,200%")
    assert percentages_over_100("100.0% of the run; 99.95 %; 3.14x; width:120") == []
    assert impossible_shares({"summary": {"io_share": 7.6}, "f": [{"cost_share": 0.2, "pct": 101}]}) == [
        ".summary.io_share = 7.6", ".f[0].pct = 101"]


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_no_share_over_100_percent_in_any_output(corpus, chunk, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # no number split over two lines
    monkeypatch.setenv("NO_COLOR", "1")
    logs = corpus_logs()[chunk::CHUNKS]
    require(bool(logs), "no Darshan logs in the corpus")
    out_json, out_html = tmp_path / "d.json", tmp_path / "d.html"
    result = CliRunner().invoke(cli, ["diagnose", "-v", "--json", str(out_json), "--html", str(out_html),
                                      *map(str, logs)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    docs = json.loads(out_json.read_text())
    docs = docs if isinstance(docs, list) else [docs]
    assert len(docs) == len(logs)  # one result per input, the empty log's as its error result
    assert len([d for d in docs if d.get("error")]) == result.stderr.count("ioadvisor: error: ")
    page = html.unescape(TAG.sub(" ", NOT_TEXT.sub(" ", out_html.read_text())))
    problems = {
        "terminal": percentages_over_100(result.stdout),
        "json": [bad for d in docs for bad in impossible_shares(d)]
        + [bad for d in docs for bad in percentages_over_100(json.dumps(d, ensure_ascii=False))],
        "html": percentages_over_100(page),
    }
    assert not any(problems.values()), {k: v[:5] for k, v in problems.items() if v}
    assert unexplained_cheap_highs(docs) == []


def unexplained_cheap_highs(docs: list[dict]) -> list[str]:
    """High findings costing under 1 s or under 5 % of the run that do not say why they are still
    high: a certain cause (counted evidence, or an effect well above the timing noise) at high
    confidence (issue 13's alarm criterion; bench/accuracy.py prints the corpus-wide figures)."""
    out = []
    for d in docs:
        runtime = (d.get("job") or {}).get("runtime_s") or 0.0
        for f in d.get("findings", []):
            cheap = f["cost_s"] < 1.0 or (runtime > 0 and f["cost_s"] / runtime < 0.05)
            confidence = f.get("confidence") or {}
            if f["severity"] == "high" and cheap and not (confidence.get("level") == "high"
                                                          and confidence.get("reason")):
                out.append(f"{d['source']['path']}: {f['code']} {f['cost_s']:.3f} s, confidence {confidence}")
    return out
