"""`ioadvisor fleet` over the whole shared corpus on 2 local Dask workers.

One run (module fixture) of the real command over every Darshan log and dump of
the corpus, readable or not; then the dataset is checked against the corpus' own
inventory and against `diagnose` (api.diagnose_path) log by log.
"""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from advisor import api
from advisor.fleet.store import FleetStore
from advisor.fleet.walk import iter_logs

pytestmark = pytest.mark.xdist_group("fleet-corpus")

SAMPLE_MAX_BYTES = 300_000  # the in-process comparison with diagnose stays quick on 2 cores


def fleet(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", "fleet", *args, "--quiet"],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def dataset(corpus: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fleet") / "corpus-ds"
    run = fleet(str(corpus), "--out", str(out), "--workers", "2", "--batch", "50")
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    return out


@pytest.fixture(scope="module")
def jobs(dataset: Path) -> list[dict]:
    return FleetStore(dataset, create=False).jobs(["path", "content_hash", "error", "codes", "n_findings"]).to_pylist()


def test_one_row_per_file(corpus: Path, jobs: list[dict]):
    walked = [log.path for log in iter_logs([str(corpus)])]
    assert len(walked) > 250
    counts = Counter(j["path"] for j in jobs)
    assert counts.most_common(1)[0][1] == 1, "a log has two rows"
    assert set(counts) == set(walked)


def test_unreadable_logs_are_error_rows(corpus: Path, jobs: list[dict]):
    by_path = {j["path"]: j for j in jobs}
    inventory = corpus / "darshan-logs" / "INVENTORY.tsv"
    with open(inventory, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert len(rows) > 100
    for row in rows:  # what pydarshan can read, per the corpus' own inventory
        job = by_path[str(corpus / row["relpath"])]
        if row["parsed_ok"] != "True":
            assert job["error"], row["relpath"]
        elif row["modules"]:  # a log without any module may be refused as empty
            assert job["error"] is None, (row["relpath"], job["error"])
    old = [j for j in jobs if j["path"].endswith(".darshan.gz")]
    assert len(old) >= 40 and all(j["error"] for j in old)  # Darshan 1.x/2.x logs
    link = [j for j in jobs if j["path"].endswith(".darshan.link")]
    assert link and all(j["error"] for j in link)  # a placeholder text file, not a log
    assert all(j["error"] is None or j["n_findings"] in (None, 0) for j in jobs)


def _sample(jobs: list[dict]) -> list[dict]:
    small = [j for j in jobs if Path(j["path"]).stat().st_size <= SAMPLE_MAX_BYTES]
    return sorted(small, key=lambda j: j["path"])


def test_same_findings_as_diagnose(dataset: Path, jobs: list[dict]):
    findings = FleetStore(dataset, create=False).findings(["path", "code", "severity", "cost_s"]).to_pylist()
    per_path: dict[str, list] = {}
    for f in findings:
        per_path.setdefault(f["path"], []).append((f["code"], f["severity"], f["cost_s"]))
    sample = _sample(jobs)
    assert len(sample) >= 100
    compared = 0
    for job in sample:
        diagnosis = api.diagnose_path(job["path"])
        if diagnosis.error:
            assert job["error"] and job["error"] in diagnosis.error, job["path"]
            continue
        assert job["error"] is None, job["path"]
        expected = sorted((f.code, f.severity, f.cost_s) for f in diagnosis.findings)
        got = sorted(per_path.get(job["path"], []))
        assert [e[:2] for e in expected] == [g[:2] for g in got], job["path"]
        assert all(math.isclose(e[2], g[2], rel_tol=1e-9, abs_tol=1e-12) for e, g in zip(expected, got))
        assert sorted(c["code"] for c in job["codes"]) == sorted(e[0] for e in expected)
        compared += bool(expected)
    assert compared >= 20  # the sample holds logs with findings, not only clean ones


def test_second_run_adds_nothing(corpus: Path, dataset: Path):
    store = FleetStore(dataset, create=False)
    parts = sorted(p.name for p in store.jobs_dir.glob("part-*.parquet"))
    rows = store.jobs(["path"]).num_rows
    again = fleet(str(corpus), "--out", str(dataset), "--workers", "2")
    assert again.returncode == 0, again.stderr
    assert "analysed 0 logs" in again.stderr and f"skipped {rows} " in again.stderr
    assert sorted(p.name for p in store.jobs_dir.glob("part-*.parquet")) == parts
    assert store.jobs(["path"]).num_rows == rows
