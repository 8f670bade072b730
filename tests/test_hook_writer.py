"""Report files: atomic, never through a planted symlink, only in a directory the user owns."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from advisor.hooks.child import run_as_user
from advisor.hooks.job import JobContext
from advisor.hooks.settings import HookConfig
from advisor.hooks.writer import (UnsafeDestination, destination, prepare_site_dir, replace_file,
                                  report_mode, write_reports)
from tests.helpers import require_root

ME = os.geteuid()


def writer_mode(directory) -> int:
    return report_mode(os.stat(directory).st_mode)


@pytest.mark.parametrize("dir_mode, site, expected", [
    (0o755, None, 0o644), (0o750, None, 0o640), (0o700, None, 0o600), (0o711, None, 0o600),
    (0o1777, None, 0o644), (0o700, 0o644, 0o644)])
def test_a_report_is_never_more_readable_than_its_directory(tmp_path, dir_mode, site, expected):
    os.chmod(tmp_path, dir_mode)
    write_reports(str(tmp_path), "7", {"html": b"x"}, ME, site_mode=site)
    assert stat.S_IMODE(os.stat(tmp_path / "ioadvisor-7.html").st_mode) == expected


def test_reports_are_written_atomically_with_no_temporary_left(tmp_path):
    paths = write_reports(str(tmp_path), "12", {"html": b"<html>", "json": b"{}"}, ME)
    assert sorted(os.listdir(tmp_path)) == ["ioadvisor-12.html", "ioadvisor-12.json"]
    assert paths == [str(tmp_path / "ioadvisor-12.html"), str(tmp_path / "ioadvisor-12.json")]
    expected = writer_mode(tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path / "ioadvisor-12.html").st_mode) == expected
    write_reports(str(tmp_path), "12", {"html": b"<html>v2"}, ME)  # replaces the old report
    assert (tmp_path / "ioadvisor-12.html").read_bytes() == b"<html>v2"


def test_planted_symlink_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    dest = tmp_path / "work"
    dest.mkdir()
    (dest / "ioadvisor-5.html").symlink_to(victim)
    write_reports(str(dest), "5", {"html": b"report"}, ME)
    assert victim.read_text() == "keep"
    assert not (dest / "ioadvisor-5.html").is_symlink()
    assert (dest / "ioadvisor-5.html").read_bytes() == b"report"


def test_destination_that_is_a_symlink_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(UnsafeDestination):
        write_reports(str(tmp_path / "link"), "5", {"html": b"x"}, ME)
    assert os.listdir(real) == []


def test_failed_write_leaves_no_temporary(tmp_path):
    (tmp_path / "ioadvisor-9.html").mkdir()  # rename onto a directory fails
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError):
            replace_file(fd, "ioadvisor-9.html", b"x")
    finally:
        os.close(fd)
    assert os.listdir(tmp_path) == ["ioadvisor-9.html"]


def test_writer_refuses_to_run_as_another_uid(tmp_path):
    with pytest.raises(PermissionError):
        write_reports(str(tmp_path), "1", {"html": b"x"}, ME + 1)


def test_destinations_from_the_config(tmp_path):
    job = JobContext(jobid="3", user="alice", uid=1000, gid=1000, workdir="/home/alice/run")
    assert destination(HookConfig(log_dir="/l"), job) == "/home/alice/run"
    assert destination(HookConfig(log_dir="/l", destination="user-dir", user_dir="/scratch/{user}/io"),
                       job) == "/scratch/alice/io"
    assert destination(HookConfig(log_dir="/l", destination="site-dir", site_dir="/var/io"), job) == "/var/io/alice"


# -- as root, with a real unprivileged user ------------------------------------------------
def nobody():
    return pwd.getpwnam("nobody")


@pytest.fixture
def open_tmp():
    """A temporary directory other users can enter (pytest's tmp_path is under a 0700 directory)."""
    path = Path(tempfile.mkdtemp(prefix="ioadvisor-writer-", dir="/var/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_child_writes_as_the_job_user_and_not_in_a_root_directory(open_tmp):
    tmp_path = open_tmp
    require_root("dropping privileges to the job's user")
    user = nobody()
    mine = tmp_path / "mine"
    mine.mkdir()
    os.chown(mine, user.pw_uid, user.pw_gid)
    result = run_as_user(lambda: write_reports(str(mine), "8", {"json": b"{}"}, user.pw_uid),
                         uid=user.pw_uid, gid=user.pw_gid, timeout_s=30)
    assert result.error is None, result.error
    assert os.stat(mine / "ioadvisor-8.json").st_uid == user.pw_uid
    rootdir = tmp_path / "rootdir"
    rootdir.mkdir(mode=0o777)
    os.chmod(rootdir, 0o777)  # writable, but not the user's: still refused
    result = run_as_user(lambda: write_reports(str(rootdir), "8", {"json": b"{}"}, user.pw_uid),
                         uid=user.pw_uid, gid=user.pw_gid, timeout_s=30)
    assert "not the job's user" in result.error and os.listdir(rootdir) == []


def test_site_dir_gets_a_private_directory_per_user(open_tmp):
    tmp_path = open_tmp
    require_root("creating per-user directories in the site dir")
    user = nobody()
    site = tmp_path / "site"
    site.mkdir(mode=0o755)
    job = JobContext(jobid="1", user=user.pw_name, uid=user.pw_uid, gid=user.pw_gid, workdir="/")
    prepare_site_dir(str(site), job)
    st = os.lstat(site / user.pw_name)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == user.pw_uid and stat.S_IMODE(st.st_mode) == 0o700
    os.chmod(site, 0o777)
    with pytest.raises(UnsafeDestination):
        prepare_site_dir(str(site), job)  # others could have planted the user's directory
