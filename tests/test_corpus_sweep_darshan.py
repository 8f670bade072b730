"""`ioadvisor show --json` over every Darshan file of the shared corpus.

Readable logs (the 3.x ones) must succeed; the Darshan 2.x logs and the one log
with job metadata only must each give one clear error line; nothing may end in a
traceback or an internal error. The files
are split into a few chunks (one CLI call each, several paths per call, which is
also how users run it) so pytest-xdist can spread them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli import cli
from tests.conftest import CORPUS
from tests.helpers import require

CHUNKS = 6
TWO_X = "darshan-repo-logs/darshan-test/2.x"
EMPTY = "darshan_logs/empty_log/empty_log.darshan"  # "no instrumentation data, just job metadata"


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    logs = sorted(CORPUS.rglob("*.darshan")) + sorted((CORPUS / TWO_X).rglob("*.darshan.gz"))
    return [p for p in logs if p.is_file()]


def _chunk(i: int) -> list[Path]:
    return corpus_files()[i::CHUNKS]


def test_corpus_has_every_darshan_file(corpus):
    files = corpus_files()
    darshan_logs = [p for p in files if p.suffix == ".darshan"]
    two_x = [p for p in files if p.suffix == ".gz"]
    by_folder: dict[str, int] = {}
    for p in darshan_logs:
        top = p.relative_to(CORPUS).parts[0]
        by_folder[top] = by_folder.get(top, 0) + 1
    assert by_folder == {"darshan-logs": 94, "darshan-production": 1, "darshan-repo-logs": 19, "generated": 46,
                         "traps": 7}
    assert len(two_x) == 47


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_show_json_over_the_corpus(corpus, chunk, monkeypatch):
    monkeypatch.delenv("IOADVISOR_DEBUG", raising=False)
    files = _chunk(chunk)
    require(bool(files), "no Darshan files in the corpus")
    result = CliRunner().invoke(cli, ["show", "--json", "-", "--files", "5", *map(str, files)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output and "internal error" not in result.stderr
    doc = json.loads(result.stdout)
    by_path = {r["path"]: r for r in doc["results"]}
    errors = [ln for ln in result.stderr.splitlines() if ln]
    failed = [p for p in files if not by_path[str(p)]["ok"]]
    assert [str(p) for p in failed] == [str(p) for p in files if TWO_X in str(p) or EMPTY in str(p)]
    assert len(errors) == len(failed)  # one line per unreadable file, nothing else
    for path, line in zip(failed, errors):
        expect = "empty log: job metadata only" if EMPTY in str(path) else "pre-3.0 format"
        assert line.startswith(f"ioadvisor: error: {path}: ") and expect in line
    assert result.exit_code == (2 if failed else 0)
    for p in files:
        r = by_path[str(p)]
        if r["ok"]:
            assert r["job"]["nprocs"] > 0 and r["modules"], p
            assert all(m["supported"] or m["note"] for m in r["modules"]), p
