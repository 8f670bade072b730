"""Finding a job's Darshan logs: Darshan's date layout, globs, fixed names, logs still being written."""

from __future__ import annotations

import os
import shutil
import threading
import time
from datetime import datetime, timedelta

import pytest

from advisor.hooks.job import JobContext
from advisor.hooks.locate import darshan_day_dirs, find_logs, is_darshan_name, layout_warnings
from advisor.hooks.settings import HookConfig
from tests.helpers import require_root

LOG = "a_good_fpp_posix_1m/case.darshan"


@pytest.fixture
def job(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    return JobContext(jobid="4242", user="alice", uid=os.getuid(), gid=os.getgid(), workdir=str(work))


def day_dir(root, when: datetime):
    d = root / str(when.year) / str(when.month) / str(when.day)
    d.mkdir(parents=True, exist_ok=True)
    return d


def old(path, seconds=60):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_darshan_names_of_the_job_and_not_of_others(job):
    assert is_darshan_name("alice_ior_id4242-977_11-21-67335-10188331254316265880_1.darshan", job)
    assert is_darshan_name("alice_a_b_c_id4242_7-31-5657-2037904274838284930_55623.darshan", job)
    assert is_darshan_name(f"{job.uid}_ior_id4242-1_1-1-1-1_1.darshan", job)  # no name lookup
    assert is_darshan_name("alice_ior_id4242-9_1-1-1-1_1.darshan_partial", job)
    assert not is_darshan_name("alice_ior_id42421-9_1-1-1-1_1.darshan", job)  # another job
    assert not is_darshan_name("bob_ior_id4242-9_1-1-1-1_1.darshan", job)
    assert not is_darshan_name("alice_ior_id4242-9_1-1-1-1_1.darshan.bak", job)


def test_day_dirs_cover_the_start_day_and_neighbours_not_zero_padded(tmp_path):
    now = datetime(2026, 3, 2, 0, 30).timestamp()
    start = datetime(2026, 2, 28, 23, 0).timestamp()
    dirs = [str(p.relative_to(tmp_path)) for p in darshan_day_dirs(str(tmp_path), start, now, 1)]
    assert dirs == ["2026/3/2", "2026/3/1", "2026/2/28", "2026/2/27"]
    assert len(darshan_day_dirs(str(tmp_path), None, now, 0)) == 1
    assert len(darshan_day_dirs(str(tmp_path), 0.0 + 1, now, 31)) == 367  # bounded to a year


def test_darshan_layout_finds_yesterdays_log(tmp_path, job, corpus):
    yesterday = day_dir(tmp_path / "logs", datetime.now() - timedelta(days=1))
    log = yesterday / "alice_ior_id4242-77_1-1-1-1_1.darshan"
    shutil.copy(corpus / "generated" / LOG, log)
    old(log)
    cfg = HookConfig(log_dir=str(tmp_path / "logs"), search_days=1, wait_s=0)
    assert find_logs(cfg, job).logs == [str(log)]
    assert find_logs(HookConfig(log_dir=str(tmp_path / "logs"), search_days=0, wait_s=0), job).logs == []


def test_symlinks_and_foreign_files_are_refused(tmp_path, job):
    today = day_dir(tmp_path / "logs", datetime.now())
    target = tmp_path / "secret"
    target.write_text("x")
    (today / "alice_ior_id4242-1_1-1-1-1_1.darshan").symlink_to(target)
    found = find_logs(HookConfig(log_dir=str(tmp_path / "logs"), wait_s=0), job)
    assert found.logs == [] and "a symlink" in found.note()


def test_glob_and_fixed_layouts_escape_the_work_dir(tmp_path):
    work = tmp_path / "w[1]"  # glob metacharacters in a user-chosen directory name
    work.mkdir()
    job = JobContext(jobid="7", user="alice", uid=os.getuid(), gid=os.getgid(), workdir=str(work))
    log = work / "darshan-7.darshan"
    log.write_bytes(b"x")
    old(log)
    assert find_logs(HookConfig(log_layout="glob", log_glob="{workdir}/darshan-{jobid}*.darshan",
                                wait_s=0), job).logs == [str(log)]
    assert find_logs(HookConfig(log_layout="fixed", log_file="{workdir}/darshan-{jobid}.darshan",
                                wait_s=0), job).logs == [str(log)]
    assert find_logs(HookConfig(log_layout="fixed", log_file="{workdir}/other.darshan",
                                wait_s=0), job).logs == []


def test_waits_for_a_partial_log_to_be_renamed(tmp_path, job):
    today = day_dir(tmp_path / "logs", datetime.now())
    partial = today / "alice_ior_id4242-5_1-1-1-1_1.darshan_partial"
    partial.write_bytes(b"partial")

    def finish():
        time.sleep(0.5)
        partial.rename(today / "alice_ior_id4242-5_1-1-1-1_1.darshan")

    threading.Thread(target=finish).start()
    found = find_logs(HookConfig(log_dir=str(tmp_path / "logs"), wait_s=5), job)
    assert [os.path.basename(p) for p in found.logs] == ["alice_ior_id4242-5_1-1-1-1_1.darshan"]
    assert 0.4 < found.waited_s < 4


def test_wait_is_bounded_for_a_log_that_keeps_growing(tmp_path, job):
    today = day_dir(tmp_path / "logs", datetime.now())
    partial = today / "alice_ior_id4242-5_1-1-1-1_1.darshan_partial"
    partial.write_bytes(b"never renamed")
    start = time.monotonic()
    found = find_logs(HookConfig(log_dir=str(tmp_path / "logs"), wait_s=0.6), job)
    assert found.logs == [] and found.unsettled == [str(partial)]
    assert time.monotonic() - start < 2
    assert "still being written" in found.note()


def test_a_log_written_just_now_is_taken_once_its_size_is_stable(tmp_path, job):
    log = tmp_path / "work" / "darshan.log"
    log.write_bytes(b"complete")
    cfg = HookConfig(log_layout="fixed", log_file="{workdir}/darshan.log", wait_s=5)
    found = find_logs(cfg, job)
    assert found.logs == [str(log)] and 0.1 < found.waited_s < 1.5


def test_a_fresh_log_under_its_final_darshan_name_is_complete(tmp_path, job):
    today = day_dir(tmp_path / "logs", datetime.now())
    log = today / "alice_ior_id4242-5_1-1-1-1_1.darshan"
    log.write_bytes(b"complete")
    found = find_logs(HookConfig(log_dir=str(tmp_path / "logs"), wait_s=5), job)
    assert found.logs == [str(log)] and found.waited_s < 0.1


def test_max_logs_bounds_the_work(tmp_path, job):
    today = day_dir(tmp_path / "logs", datetime.now())
    for step in range(5):
        log = today / f"alice_ior_id4242-{step}_1-1-1-1_1.darshan"
        log.write_bytes(b"x")
        old(log)
    found = find_logs(HookConfig(log_dir=str(tmp_path / "logs"), wait_s=0, max_logs=3), job)
    assert len(found.logs) == 3 and found.truncated == 2


def test_a_partial_log_planted_by_another_user_costs_no_wait(tmp_path, job):
    require_root("giving a file another owner")
    today = day_dir(tmp_path / "logs", datetime.now())
    planted = today / "alice_x_id4242-1_1-1-1-1_1.darshan_partial"
    planted.write_bytes(b"")
    os.chown(planted, 65534, 65534)
    link = today / "alice_y_id4242-2_1-1-1-1_1.darshan_partial"
    link.symlink_to(planted)
    start = time.monotonic()
    found = find_logs(HookConfig(log_dir=str(tmp_path / "logs"), wait_s=5), job)
    assert time.monotonic() - start < 1 and found.unsettled == [] and found.logs == []
    assert sorted(found.skipped) == sorted([f"{link}: a symlink", f"{planted}: owned by uid 65534, not the job's user"])


def test_layout_warnings_name_a_flat_log_directory(tmp_path, job):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "alice_ior_id4242-5_1-1-1-1_1.darshan").write_bytes(b"x")
    warnings = layout_warnings(HookConfig(log_dir=str(logs)))
    assert len(warnings) == 2 and "DARSHAN_LOG_DIR_PATH writes flat" in warnings[0]
    assert "no <year> directory" in warnings[1]
    day_dir(logs, datetime.now())
    (logs / "alice_ior_id4242-5_1-1-1-1_1.darshan").unlink()
    assert layout_warnings(HookConfig(log_dir=str(logs))) == []
    assert "cannot list" in layout_warnings(HookConfig(log_dir=str(tmp_path / "missing")))[0]
