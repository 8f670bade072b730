"""A fix that cannot be replayed gets its own not-verifiable verdict and reason; the other fixes
and the diagnosis go on (issue 14, item 3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import verify
from advisor.api import diagnose_profile, load
from advisor.config import ReplayConfig
from replay.launch import LaunchError
from tests.helpers import require_root

SMALL = "generated/b_small_io_shared_4k/case.darshan"  # coalesce and collective fixes
COALESCE = {"transform": "coalesce", "transfer_size": 4 << 20}
COLLECTIVE = {"transform": "collective", "cb_nodes": 1}


def _fake_result(labels: list[str]) -> dict:
    """What the executor returns, with equal times: enough for the verdict logic."""
    run = {"time_s": 0.1, "sample_s": 1.0, "passes": 10, "bytes_read": 0, "bytes_written": 1 << 20,
           "data_ops": 256, "phases": []}
    variants = [{"label": label, "runs": [dict(run, round=i) for i in range(5)], "passes": 10,
                 "record": {"totals": {}}, "layouts": None} for label in labels]
    return {"variants": variants, "cache_policy": "evict", "rounds": 5, "stop_reason": "max-pairs",
            "min_sample_s": 1.0, "launcher": "mpiexec -n 2"}


def test_a_fix_whose_replay_fails_is_not_verifiable_alone(corpus, tmp_path, monkeypatch):
    """The job of all fixes fails; each fix then runs in a job of its own with the baseline."""
    jobs = []

    def run_plans(scratch, dirs, labels, opts):
        jobs.append(labels)
        if any("collective" in label for label in labels):
            raise LaunchError("rank 1: MPI_File_write_all: Other I/O error")
        return _fake_result(labels)

    monkeypatch.setattr(verify, "run_plans", run_plans)
    profile = load(corpus / SMALL)
    out = verify.measure(profile, [COALESCE, COLLECTIVE], tmp_path, np=2, scale=0.05)
    coalesce, collective = out.verifications
    assert jobs == [["baseline", "fix0-coalesce", "fix1-collective"], ["baseline", "fix0-coalesce"],
                    ["baseline", "fix1-collective"]]
    # equal times: no effect, which the run-to-run reproducibility (+-10 %) cannot tell from +-5 %
    assert coalesce.verdict == "inconclusive" and coalesce.pairs == 5
    assert "more pairs would not decide" in coalesce.reason
    assert collective.verdict == "not-verifiable"
    assert collective.reason.startswith("not verifiable: its replay failed: replay on ")
    assert collective.reason.endswith("MPI_File_write_all: Other I/O error")


def test_a_refused_target_makes_every_fix_not_verifiable_and_the_diagnosis_goes_on(corpus, tmp_path):
    profile = load(corpus / SMALL)
    diagnosis = diagnose_profile(profile)
    verify.verify_findings(profile, diagnosis, Path("/etc"), np=2, scale=0.05, settings=ReplayConfig())
    with_fix = [f for f in diagnosis.findings if f.fix]
    assert with_fix and all(f.verification.verdict == "not-verifiable" for f in with_fix)
    assert all("refusing to replay into the system tree /etc" in f.verification.reason for f in with_fix)


def test_diagnose_verify_without_room_says_so_per_fix(corpus, tmp_path):
    require_root("mounting a small tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "t").mkdir()
        out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", str(corpus / SMALL), "--verify",
                              "--target", str(mnt / "t"), "--np", "2", "--json", "-"],
                             capture_output=True, text=True, timeout=600)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    assert out.returncode in (0, 1), out.stderr  # the diagnosis itself succeeded
    doc = json.loads(out.stdout)
    verdicts = [f["verification"] for f in doc["findings"] if f["fix"]]
    assert verdicts and all(v["verdict"] == "not-verifiable" for v in verdicts)
    assert all("no room on the target: one pass needs" in v["reason"] for v in verdicts)
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("bad", [{"margin": 0}, {"margin": 1.5}, {"min_pairs": 1}, {"min_pairs": 9, "max_pairs": 5},
                                 {"budget_s": -1}])
def test_replay_settings_are_checked(bad):
    from advisor.config import from_dict
    from advisor.errors import ConfigError

    with pytest.raises(ConfigError, match=r"\[replay\]"):
        from_dict({"replay": bad}, "site.toml")
