"""The [hook] config, Slurm's epilog environment and hostlists, the limited child, the wrapper."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from advisor.errors import ConfigError
from advisor.hooks.child import run_as_user
from advisor.hooks.epilog import job_from_slurm_env, parse_scontrol, run_job, slurm_epilog
from advisor.hooks.job import JobContext, expand_hostlist
from advisor.hooks.settings import load_settings
from advisor.hooks.wrapper import check_wrapper, render_wrapper, wrapper_paths


def write(tmp_path, text: str):
    path = tmp_path / "site.toml"
    path.write_text(text)
    return path


def test_hook_section_is_validated_naming_the_key(tmp_path):
    cfg, site = load_settings(write(tmp_path, '[hook]\nlog_dir = "/d"\nwait_s = 3\ndestination = "site-dir"\n'
                                              'site_dir = "/var/io"\n[system]\nosts = 4\n'))
    assert (cfg.log_dir, cfg.wait_s, cfg.destination) == ("/d", 3, "site-dir")
    assert site.system.osts == 4
    for text, key in [('log_dir = "/d"\nwait = 3', "wait"),
                      ('log_dir = "/d"\nwait_s = "3"', "wait_s"),
                      ('log_dir = "/d"\ndestination = "home"', "hook.destination"),
                      ('log_layout = "glob"', "hook.log_glob"),
                      ('log_dir = "relative/logs"', "hook.log_dir"),
                      ('log_dir = "/d"\nsite_log = "/x/{user}.log"', "hook.site_log"),
                      ('log_dir = "/d"\nuser_dir = "/s/{nosuch}"', "hook.user_dir"),
                      ('log_dir = "/d"\ntime_limit_s = 0', "hook.time_limit_s"),
                      ('log_dir = "/d"\nopt_out_marker = "../x"', "hook.opt_out_marker"),
                      ('log_dir = "/d"\nformats = ["pdf"]', "hook.formats")]:
        with pytest.raises(ConfigError, match=key):
            load_settings(write(tmp_path, "[hook]\n" + text + "\n"))
    with pytest.raises(ConfigError, match="no site config"):
        load_settings(None)


def test_hostlists_expand_like_scontrol_show_hostnames():
    assert expand_hostlist("n[01-03,7],gpu[1-2]-ib,login") == ["n01", "n02", "n03", "n7", "gpu1-ib",
                                                              "gpu2-ib", "login"]
    assert expand_hostlist("r[1-2]n[8-10]") == ["r1n8", "r1n9", "r1n10", "r2n8", "r2n9", "r2n10"]
    assert expand_hostlist("c[0099-0101]")[0] == "c0099"
    for bad in ("n[1-", "n[a-b]", "n[3-1]"):
        with pytest.raises(ValueError):
            expand_hostlist(bad)


def slurm_env(**extra) -> dict:
    return {"SLURM_JOB_ID": "77", "SLURM_JOB_USER": "alice", "SLURM_JOB_UID": "1000",
            "SLURM_JOB_GID": "1000", "SLURM_JOB_WORK_DIR": "/home/alice/run",
            "SLURM_NODELIST": "n[01-04]", "SLURMD_NODENAME": "n01", "SLURM_JOB_EXIT_CODE2": "3:0", **extra}


def test_only_the_first_node_of_a_job_works():
    job = job_from_slurm_env(slurm_env())
    assert job.nodes == ["n01", "n02", "n03", "n04"] and job.exit_code == "3:0" and job.is_first_node()
    assert not job_from_slurm_env(slurm_env(SLURMD_NODENAME="n03")).is_first_node()
    # not our node: nothing is loaded, not even the (here missing) config
    assert run_job(job_from_slurm_env(slurm_env(SLURMD_NODENAME="n03")), "/nonexistent.toml") is None


def test_hostile_values_from_the_environment_are_rejected():
    for key, value in [("SLURM_JOB_ID", "1;rm -rf /"), ("SLURM_JOB_USER", "../root"),
                       ("SLURM_JOB_WORK_DIR", "relative"), ("SLURM_JOB_ID", "*")]:
        with pytest.raises(ValueError):
            job_from_slurm_env(slurm_env(**{key: value}))


def test_epilog_exits_zero_on_any_failure(capsys):
    assert slurm_epilog("/nonexistent.toml", slurm_env()) == 0  # missing config
    assert slurm_epilog(None, {}) == 0  # not even a job
    err = capsys.readouterr().err
    assert "job 77" in err and "job ?" in err


def test_scontrol_lines_keep_values_with_spaces():
    fields = parse_scontrol("JobId=5 JobName=a b UserId=alice(1000) GroupId=g(100) "
                            "WorkDir=/home/alice/my run StdErr=/x NodeList=n[1-2]")
    assert fields["WorkDir"] == "/home/alice/my run" and fields["UserId"] == "alice(1000)"


def test_child_is_killed_at_its_time_limit_with_its_children():
    start = time.monotonic()
    result = run_as_user(lambda: subprocess.run(["sleep", "30"]), uid=os.geteuid(), gid=os.getegid(),
                         timeout_s=0.5)
    assert "timed out" in result.error and time.monotonic() - start < 5
    assert subprocess.run(["pgrep", "-f", "^sleep 30$"], capture_output=True).stdout == b""


def test_child_dies_with_a_killed_hook(tmp_path):
    pidfile = tmp_path / "child.pid"
    code = ("import os, time\n"
            "from advisor.hooks.child import run_as_user\n"
            f"run_as_user(lambda: (open({str(pidfile)!r}, 'w').write(str(os.getpid())), time.sleep(60)),\n"
            "            uid=os.geteuid(), gid=os.getegid(), timeout_s=60)\n")
    hook = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline, "child never started"
        time.sleep(0.05)
    child = int(pidfile.read_text())
    hook.kill()  # as slurmd does when PrologEpilogTimeout passes
    hook.wait()
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{child}") and "Z" not in _proc_state(child):
        assert time.monotonic() < deadline, "the child outlived the killed hook"
        time.sleep(0.05)


def _proc_state(pid: int) -> str:
    """The state letter of /proc/<pid>/stat ('' once the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2]
    except FileNotFoundError:
        return ""


def test_child_memory_limit_turns_into_an_error():
    result = run_as_user(lambda: len(bytearray(2 << 30)), uid=os.geteuid(), gid=os.getegid(),
                         timeout_s=30, memory_mb=512)
    assert result.error and "memory" in result.error


def test_child_returns_values_and_errors():
    assert run_as_user(lambda: {"a": [1, 2]}, uid=os.geteuid(), gid=os.getegid(), timeout_s=10).value == {"a": [1, 2]}
    result = run_as_user(lambda: 1 / 0, uid=os.geteuid(), gid=os.getegid(), timeout_s=10)
    assert "ZeroDivisionError" in result.error
    died = run_as_user(lambda: os.kill(os.getpid(), 9), uid=os.geteuid(), gid=os.getegid(), timeout_s=10)
    assert "SIGKILL" in died.error


def test_wrapper_names_everything_by_absolute_path():
    text = render_wrapper("/opt/io advisor/bin/python", "/etc/ioadvisor/site.toml", "/etc/slurm/epilog")
    assert text.startswith("#!/bin/sh\n") and text.rstrip().endswith("exit 0")
    assert wrapper_paths(text) == ("/opt/io advisor/bin/python", "/etc/ioadvisor/site.toml")
    with pytest.raises(ValueError):
        render_wrapper("python3", "/etc/site.toml", "/etc/slurm/epilog")


def test_job_context_template_values():
    job = JobContext(jobid="9.pbs01", user="bob", uid=5, gid=6, workdir="/w/")
    assert job.template_values() == {"jobid": "9.pbs01", "user": "bob", "uid": "5", "workdir": "/w"}


def test_wrapper_says_when_the_hook_cannot_start_and_still_exits_0(tmp_path):
    """A Python that is gone (or mid-upgrade) must not drain the node, nor lose the job unseen."""
    wrapper = tmp_path / "epilog"
    wrapper.write_text(render_wrapper(str(tmp_path / "gone" / "python"), "/etc/site.toml", str(wrapper)))
    done = subprocess.run(["/bin/sh", str(wrapper)], env={"SLURM_JOB_ID": "4242"}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0
    assert "ioadvisor hook did not run for job 4242: its Python exited with status 127" in done.stderr


def test_messages_for_syslog_cannot_forge_lines():
    from advisor.formatting import printable

    forged = "job 1: /w/evil\nMar 1 fake: root login\x1b[2J"
    assert printable(forged) == "job 1: /w/evil\\x0aMar 1 fake: root login\\x1b[2J"


def test_hook_check_never_runs_a_wrapper_another_user_could_replace(tmp_path):
    unsafe = tmp_path / "open"
    unsafe.mkdir()
    os.chmod(unsafe, 0o777)
    canary = tmp_path / "ran"
    wrapper = unsafe / "epilog"
    wrapper.write_text(f"#!/bin/sh\ntouch {canary}\n")
    os.chmod(wrapper, 0o755)
    problems, output = check_wrapper(str(wrapper), {})
    assert any("not run" in p for p in problems) and output == ""
    assert not canary.exists()


@pytest.mark.parametrize("mode, ok", [("0640", True), ("0600", True), ("0666", True), ("0400", False),
                                      ("0777", False), ("rw-r--r--", False), ("1644", False)])
def test_report_mode_is_validated(tmp_path, mode, ok):
    path = tmp_path / "site.toml"
    path.write_text(f'[hook]\nlog_dir = "/d"\nreport_mode = "{mode}"\n')
    if ok:
        assert load_settings(path)[0].file_mode() == int(mode, 8)
    else:
        with pytest.raises(ConfigError, match="hook.report_mode"):
            load_settings(path)


def test_the_hook_plans_a_job_and_honours_the_opt_outs(tmp_path):
    from advisor.hooks.postjob import base_record, opt_out_reason, plan

    cfg, _ = load_settings(write(tmp_path, f'[hook]\nlog_dir = "{tmp_path}"\nwait_s = 0\n'
                                           'opt_out_users = ["bob"]\n'))
    work = tmp_path / "work"
    work.mkdir()
    job = JobContext(jobid="41", user="alice", uid=os.getuid(), gid=os.getgid(), workdir=str(work))
    doc = plan(job, cfg)
    assert doc["job"]["jobid"] == "41" and doc["logs"] == [] and "opted_out" not in doc
    (work / cfg.opt_out_marker).touch()
    assert opt_out_reason(cfg, job) == f"{cfg.opt_out_marker} in the work dir"
    assert plan(job, cfg)["opted_out"] == f"{cfg.opt_out_marker} in the work dir"
    bob = JobContext(jobid="42", user="bob", uid=os.getuid(), gid=os.getgid(), workdir=str(tmp_path))
    assert plan(bob, cfg)["opted_out"] == "user listed in hook.opt_out_users"
    record = base_record(job)
    assert (record["jobid"], record["status"], record["lost_s"], record["error"]) == ("41", "error", 0.0, None)
