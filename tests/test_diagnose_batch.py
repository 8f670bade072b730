"""`diagnose` over several inputs parses each one while the previous one is diagnosed: the results
must come out in order, each the same as when the input is diagnosed alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TRACES = Path(__file__).resolve().parents[1] / "traces"


def diagnose(*paths: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", "diagnose", "--json", "-", *paths],
                          capture_output=True, text=True, timeout=600)


def essentials(doc: dict) -> tuple:
    return doc["source"]["path"], doc["job"], [(f["code"], f["message"]) for f in doc["findings"]]


def test_a_batch_gives_each_input_its_own_diagnosis_in_order(tmp_path):
    small, good, badost = (str(TRACES / name) for name in
                           ("ior-small-shared-4k.darshan", "ior-good-fpp-1m.darshan", "sample-badost.darshan"))
    missing = str(tmp_path / "gone.darshan")
    batch = diagnose(small, missing, good, badost, small)
    assert batch.returncode == 2
    assert batch.stderr == f"ioadvisor: error: {missing}: no such file\n"
    alone = {path: essentials(json.loads(diagnose(path).stdout)) for path in (small, good, badost)}
    docs = json.loads(batch.stdout)
    assert docs[1]["source"]["path"] == missing and docs[1]["error"] == f"{missing}: no such file"
    assert [essentials(doc) for doc in docs[:1] + docs[2:]] == [
        alone[small], alone[good], alone[badost], alone[small]]
