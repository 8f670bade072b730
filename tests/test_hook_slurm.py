"""The Slurm epilog hook on a real Slurm: reports for the job user, and never a drained node."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from datetime import datetime

import jsonschema
import pytest

from tests.conftest import CORPUS, REPO
from tests.helpers import require, require_root
from tests.slurm import MISSING_HINT, dev_null_problem, missing_components, start_cluster

pytestmark = pytest.mark.xdist_group("slurm")

SMALL_LOG = CORPUS / "generated" / "b_small_io_shared_4k" / "case.darshan"  # 4 KiB writes: findings
TINY_LOG = CORPUS / "generated" / "n_fsync_per_write_Y_4k" / "case.darshan"  # 17 kB, fsync per write
BIG_LOG = CORPUS / "generated" / "s_big_dxt_1k" / "case.darshan"  # a million DXT segments


@pytest.fixture(scope="module")
def slurm():
    require_root("a real Slurm (slurmctld, slurmd, munge) and a job user")
    missing = missing_components()
    require(not missing, f"{', '.join(missing)} missing: {MISSING_HINT}")
    require(all(p.exists() for p in (SMALL_LOG, TINY_LOG, BIG_LOG)), f"corpus logs not found under {CORPUS}")
    cluster = start_cluster()
    yield cluster
    cluster.stop()
    shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture
def hook(slurm):
    """The cluster, with the [hook] config restored and the node resumed after each test."""
    yield slurm
    slurm.write_hook_config()
    if "drain" in slurm.node_state():
        slurm.resume_node()


def run_job(cluster, name: str, script: str):
    """Submit one job as the test user, wait for it and its epilog; (job, site-log record)."""
    job = cluster.sbatch(script, cluster.workdir(name))
    states = cluster.wait_jobs([job.jobid])
    assert states[job.jobid] == "COMPLETED", (states, (job.workdir / f"slurm-{job.jobid}.out").read_text(),
                                              dev_null_problem())
    return job, cluster.record(job.jobid)


def assert_node_idle(cluster) -> None:
    state = cluster.wait_node_settled()
    assert state == "idle", f"node is {state!r} after the epilog (a failing Epilog drains it)"


def test_normal_job_gets_a_report_owned_by_the_user(hook):
    job, record = run_job(hook, "normal", hook.stage_log_script(SMALL_LOG))
    assert record["status"] == "reported", record
    assert record["user"] == hook.user.pw_name and record["error"] is None
    assert "small-io" in record["categories"]
    for fmt in ("html", "json"):
        report = job.workdir / f"ioadvisor-{job.jobid}.{fmt}"
        st = os.lstat(report)
        assert stat.S_ISREG(st.st_mode) and (st.st_uid, st.st_gid) == (hook.user.pw_uid, hook.user.pw_gid)
        assert str(report) in record["reports"]
    assert b"<html" in (job.workdir / f"ioadvisor-{job.jobid}.html").read_bytes()[:2000].lower()
    doc = json.loads((job.workdir / f"ioadvisor-{job.jobid}.json").read_text())
    schema = json.loads((REPO / "advisor" / "schemas" / "diagnosis-v1.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert doc["job"]["exe"] == record["exe"]
    assert not [p for p in os.listdir(job.workdir) if p.endswith(".tmp")]
    assert_node_idle(hook)


def test_missing_log_is_recorded_and_node_stays_idle(hook):
    job, record = run_job(hook, "nolog", hook.stage_log_script(None))
    assert record["status"] == "no-log", record
    assert not list(job.workdir.glob("ioadvisor-*"))
    assert_node_idle(hook)


def test_a_partial_log_planted_for_the_next_job_costs_its_epilog_no_wait(hook):
    first, _ = run_job(hook, "before-plant", hook.stage_log_script(None))
    today = datetime.now()
    day = hook.logdir / str(today.year) / str(today.month) / str(today.day)
    day.mkdir(parents=True, exist_ok=True)
    planted = []
    for jobid in range(int(first.jobid) + 1, int(first.jobid) + 4):  # the victim's next job ids
        p = day / f"{hook.user.pw_name}_x_id{jobid}-1_1-1-1-1_1.darshan_partial"
        p.write_bytes(b"")
        os.chown(p, 65534, 65534)  # another user's file: nobody
        planted.append(p)
    try:
        job, record = run_job(hook, "victim", hook.stage_log_script(None))
    finally:
        for p in planted:
            p.unlink()
    assert int(job.jobid) <= int(first.jobid) + 3, "premise: the victim got one of the planted ids"
    assert record["status"] == "no-log", record
    assert record["elapsed_s"] < 2.0, record  # wait_s is 5: the foreign partial was not waited for
    assert_node_idle(hook)


def test_a_private_work_dir_gets_private_reports(hook):
    """Reports were 0644 whatever the job's umask: a umask-077 user's were readable by all. The
    umask is gone when the epilog runs; the private work dir it made says the same."""
    workdir = hook.workdir("private")
    workdir.chmod(0o700)
    job = hook.sbatch("umask 077\n" + hook.stage_log_script(SMALL_LOG), workdir)
    assert hook.wait_jobs([job.jobid])[job.jobid] == "COMPLETED"
    record = hook.record(job.jobid)
    assert record["status"] == "reported", record
    for fmt in ("html", "json"):
        assert stat.S_IMODE(os.lstat(workdir / f"ioadvisor-{job.jobid}.{fmt}").st_mode) == 0o600
    assert_node_idle(hook)


def test_corrupt_log_is_an_error_line_not_a_drain(hook):
    # header intact, job data cut
    job, record = run_job(hook, "corrupt", hook.stage_log_script(SMALL_LOG, truncate=1500))
    assert record["status"] == "error" and record["error"], record
    assert not list(job.workdir.glob("ioadvisor-*"))
    assert_node_idle(hook)


def test_log_over_the_time_limit_is_stopped(hook):
    hook.write_hook_config(time_limit_s=0.5)
    job, record = run_job(hook, "slow", hook.stage_log_script(BIG_LOG))
    assert record["status"] == "error" and "timed out" in record["error"], record
    assert record["elapsed_s"] < 0.5 + 5.0  # the limit + locating the log
    assert not list(job.workdir.glob("ioadvisor-*"))
    assert_node_idle(hook)


def test_planted_symlink_never_reaches_a_root_file(hook):
    precious = hook.root / "precious"
    precious.write_text("root's data\n")
    os.chmod(precious, 0o644)
    before = os.stat(precious)
    plant = (f"ln -s {precious} ioadvisor-$SLURM_JOB_ID.html\nln -s {precious} ioadvisor-$SLURM_JOB_ID.json\n"
             )
    job, record = run_job(hook, "symlink", plant + hook.stage_log_script(SMALL_LOG))
    after = os.stat(precious)
    assert precious.read_text() == "root's data\n"
    assert (after.st_uid, after.st_mode, after.st_mtime_ns) == (before.st_uid, before.st_mode, before.st_mtime_ns)
    html = job.workdir / f"ioadvisor-{job.jobid}.html"
    assert not html.is_symlink() and os.lstat(html).st_uid == hook.user.pw_uid  # the link was replaced
    assert record["status"] == "reported", record
    assert_node_idle(hook)


def test_work_dir_not_owned_by_the_user_gets_nothing(hook):
    shared = hook.root / "work" / "shared-sticky"
    shared.mkdir(mode=0o1777)
    os.chmod(shared, 0o1777)
    job = hook.sbatch(hook.stage_log_script(SMALL_LOG), shared)
    hook.wait_jobs([job.jobid])
    record = hook.record(job.jobid)
    assert record["status"] == "error" and "not the job's user" in record["error"], record
    assert not list(shared.glob("ioadvisor-*"))
    assert_node_idle(hook)


def test_opt_out_marker_in_the_work_dir_or_the_home_dir(hook):
    job, record = run_job(hook, "optout", "touch .ioadvisor-off\n" + hook.stage_log_script(SMALL_LOG))
    assert record["status"] == "opted-out" and "work dir" in record["note"], record
    assert not list(job.workdir.glob("ioadvisor-*"))
    marker = os.path.join(hook.user.pw_dir, ".ioadvisor-off")
    job, record = run_job(hook, "optout-home", f"touch {marker}\n" + hook.stage_log_script(SMALL_LOG))
    os.unlink(marker)
    assert record["status"] == "opted-out" and "home dir" in record["note"], record
    assert not list(job.workdir.glob("ioadvisor-*"))
    assert_node_idle(hook)


def test_min_severity_above_every_finding_writes_nothing(hook):
    hook.write_hook_config(min_severity="high")
    good = CORPUS / "generated" / "a_good_fpp_posix_1m" / "case.darshan"
    job, record = run_job(hook, "quiet", hook.stage_log_script(good))
    assert record["findings"]["high"] == 0, record  # the premise: a healthy job
    assert record["status"] == "below-threshold", record
    assert not list(job.workdir.glob("ioadvisor-*"))


def test_hook_check_runs_the_wrapper_as_slurmd_would(hook):
    job, _ = run_job(hook, "check", hook.stage_log_script(SMALL_LOG))
    run = subprocess.run([hook.ioadvisor, "hook", "check", "--config", str(hook.hook_config),
                          "--wrapper", str(hook.wrapper), "--jobid", job.jobid],
                         capture_output=True, text=True, env={"SLURM_CONF": str(hook.conf)}, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PROBLEM" not in run.stdout
    assert f"_id{job.jobid}-" in run.stdout  # the plan found the job's log
    assert '"first_node": true' in run.stdout
    # without it Darshan names logs by the pid: the hook then finds none, and said nothing
    assert "DARSHAN_JOBID=SLURM_JOB_ID" in run.stdout


def test_fifty_jobs_in_a_row_all_get_their_report(hook):
    jobs = [hook.sbatch(hook.stage_log_script(TINY_LOG), hook.workdir(f"many-{i}")) for i in range(50)]
    states = hook.wait_jobs([j.jobid for j in jobs], timeout_s=900)
    failed = {j.jobid: (j.workdir / f"slurm-{j.jobid}.out").read_text()[-500:]
              for j in jobs if states[j.jobid] != "COMPLETED"}
    assert not failed, f"jobs did not complete: {failed} ({dev_null_problem() or '/dev/null ok'})"
    for job in jobs:
        report = job.workdir / f"ioadvisor-{job.jobid}.html"
        assert report.exists(), f"no report for job {job.jobid}; its site-log line: {hook.record(job.jobid)}"
        assert os.lstat(report).st_uid == hook.user.pw_uid
        assert hook.record(job.jobid)["status"] == "reported"
    records = hook.site_records()  # every line valid JSON, exactly one per job ever run
    assert len(records) == len({r["jobid"] for r in records})
    assert_node_idle(hook)
