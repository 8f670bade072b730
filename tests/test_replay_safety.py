"""Safety of replays on shared file systems: hostile paths, unusable targets, no space,
signals and failures that must leave nothing behind."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.api import load
from advisor.cli import cli
from advisor.errors import AdvisorError
from advisor.replay_plan import build_plan
from advisor.verify import measure
from replay import launch, safety
from tests.helpers import require_root

REPO = Path(__file__).resolve().parents[1]
SMALL = "generated/b_small_io_shared_4k/case.darshan"
IOADVISOR = str(REPO / ".venv" / "bin" / "ioadvisor")


@contextmanager
def tmpfs(path: Path, options: str):
    """A directory on a real tmpfs mounted at `path` (root only): a mount's root is never a target.
    With "ro" the file system is remounted read-only once the directory exists."""
    require_root("mounting a tmpfs target")
    path.mkdir(exist_ok=True)
    rw = ",".join(o for o in options.split(",") if o != "ro")
    subprocess.run(["mount", "-t", "tmpfs", "-o", rw, "tmpfs", str(path)], check=True)
    try:
        (path / "scratch").mkdir()
        if "ro" in options.split(","):
            subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
        yield path / "scratch"
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def digest(path: str) -> tuple:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_hostile_trace_paths_cannot_escape(corpus, tmp_path):
    profile = load(corpus / SMALL)
    canary = tmp_path / "canary-outside"
    hostile = ["../../etc/passwd", "/etc/passwd", str(canary), "../" * 30 + "tmp/x", "a\nb/../../c"]
    profile.names = {rid: hostile[i % len(hostile)] for i, rid in enumerate(profile.names)}
    before = digest("/etc/passwd")
    target = tmp_path / "target"
    target.mkdir()
    out = measure(profile, [], target, repeat=1, np=2, scale=0.05, keep=True)
    scratch = Path(out.scratch_kept)
    assert scratch.parent == target.resolve()
    files = [p.relative_to(scratch).as_posix() for p in scratch.rglob("*") if p.is_file()]
    data = [f for f in files if not f.startswith("plan-") and f not in (safety.MARKER, "result.json")
            and not f.startswith("result.")]
    assert not data  # run directories are removed after each run, even with --keep
    assert all(re.fullmatch(r"plan-[\w-]+/[\w.]+", f) for f in files if f.startswith("plan-"))
    assert digest("/etc/passwd") == before and not canary.exists()
    assert out.baseline["record"]["totals"]["bytes_written"] > 0


def test_refused_targets(tmp_path):
    afile = tmp_path / "file"
    afile.write_text("x")
    for bad, why in (("/", "refusing to replay into /"), (afile, "not a directory"),
                     (tmp_path / "missing", "does not exist")):
        with pytest.raises(safety.SafetyError, match=why):
            safety.check_target(bad)


@pytest.mark.parametrize("tree", ["/etc", "/usr/lib", "/proc/self", "/var/lib", "/boot", "/dev/shm"])
def test_system_trees_are_refused_for_everyone(tree):
    if not Path(tree).is_dir():
        pytest.fail(f"{tree} is not a directory on this machine: pick another system tree")
    with pytest.raises(safety.SafetyError, match="system tree"):
        safety.check_target(tree)


def test_the_root_of_a_mount_is_refused_unless_allowed(tmp_path):
    require_root("mounting a tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        with pytest.raises(safety.SafetyError, match="root of a mounted file system"):
            safety.check_target(mnt)
        assert safety.check_target(mnt, allow_mount_root=True) == mnt.resolve()
        (mnt / "below").mkdir()
        assert safety.check_target(mnt / "below") == (mnt / "below").resolve()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_killed_runs_scratch_is_removed_by_the_next_run_and_no_other(tmp_path):
    host = __import__("socket").gethostname()
    owners = {"dead": f"pid {2 ** 22 + 12345} on {host}", "live": f"pid {os.getpid()} on {host}",
              "elsewhere": f"pid {2 ** 22 + 12345} on another-host", "old-format": ""}
    for name, owner in owners.items():
        d = tmp_path / f"ioadvisor-replay-{name}"
        d.mkdir()
        (d / safety.MARKER).write_text(f"scratch directory of an ioadvisor replay; safe to delete\n{owner}\n")
        (d / "data").write_bytes(b"x" * 10)
    with safety.Scratch(tmp_path) as scratch:
        assert scratch.path.exists()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["ioadvisor-replay-elsewhere", "ioadvisor-replay-live", "ioadvisor-replay-old-format"]


def test_root_never_replays_into_another_users_directory(tmp_path):
    require_root("changing a directory's owner")
    other = tmp_path / "theirs"
    other.mkdir()
    os.chown(other, 65534, 65534)
    with pytest.raises(safety.SafetyError, match="owned by uid 65534"):
        safety.check_target(other)


def test_non_writable_target_is_refused(corpus, tmp_path):
    if os.geteuid() == 0:  # root writes through permission bits: use a read-only mount
        with tmpfs(tmp_path / "ro", "ro,size=1m") as target:
            res = CliRunner().invoke(cli, ["replay", str(corpus / SMALL), "--target", str(target),
                                           "--scale", "0.01", "--np", "1", "--repeat", "1"])
    else:
        target = tmp_path / "ro"
        target.mkdir(mode=0o555)
        res = CliRunner().invoke(cli, ["replay", str(corpus / SMALL), "--target", str(target),
                                       "--scale", "0.01", "--np", "1", "--repeat", "1"])
    assert res.exit_code != 0
    assert "not writable" in str(res.exception) + res.output


def test_insufficient_space_is_refused_before_writing(corpus, tmp_path):
    with tmpfs(tmp_path / "small", "size=16m") as target:
        profile = load(corpus / SMALL)
        with pytest.raises(AdvisorError, match=r"no room on the target: one pass needs .*MiB, .* free"):
            measure(profile, [], target, repeat=1, np=2, scale=1.0)
        assert not any(target.iterdir())


def test_a_failed_replay_leaves_nothing(corpus, tmp_path):
    plan = build_plan(load(corpus / SMALL), source="dxt", scale=0.01)  # 4 ranks
    with pytest.raises(launch.LaunchError, match="is for 4 ranks, the job has 1"), safety.Scratch(tmp_path) as scratch:
        launch.run_plans(scratch, [plan.save(scratch.path / "p")], ["x"], launch.LaunchOptions(np=1))
    assert not any(tmp_path.iterdir())


def test_the_executor_writes_only_into_a_marked_scratch_directory(tmp_path, corpus):
    plan = build_plan(load(corpus / SMALL), source="dxt", scale=0.01)
    plan.save(tmp_path / "p")
    (tmp_path / "victim").mkdir()
    cmd = launch.launcher(4) + [sys.executable, "-m", "replay.executor", "--plan", str(tmp_path / "p"),
                                "--scratch", str(tmp_path / "victim"), "--out", str(tmp_path / "r.json")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "not an ioadvisor replay scratch directory" in out.stderr
    assert not any((tmp_path / "victim").iterdir())


def _running(target: Path) -> bool:
    """A replay's passes are under way: a run directory (not a plan) exists in its scratch."""
    return any(p.is_dir() and not p.name.startswith("plan-") for p in target.glob("*/*"))


def processes_mentioning(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text.encode() in (proc / "cmdline").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                pass
    return pids


def _replay_under_way(corpus: Path, target: Path) -> subprocess.Popen:
    """A long replay into `target`, returned once its passes are running."""
    target.mkdir()
    proc = subprocess.Popen([IOADVISOR, "replay", str(corpus / SMALL), "--target", str(target),
                             "--repeat", "500", "--np", "2", "--scale", "0.5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _running(target):
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the replay never started: " + proc.communicate()[1])
        time.sleep(0.1)
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_replay_leaves_no_files_and_no_processes(corpus, tmp_path, sig):
    target = tmp_path / "t"
    proc = _replay_under_way(corpus, target)
    time.sleep(0.5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert not any(target.iterdir()), list(target.rglob("*"))[:5]
    assert not processes_mentioning(str(target)), "executor ranks survived"
    assert "Traceback" not in err


def test_sigkill_of_the_replay_takes_its_ranks_down_and_the_next_run_cleans_up(corpus, tmp_path):
    target = tmp_path / "t"
    proc = _replay_under_way(corpus, target)
    proc.kill()  # SIGKILL: no handler runs, nothing of ours cleans up
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 60
    while processes_mentioning(str(target)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_mentioning(str(target)), "executor ranks outlived a SIGKILLed replay"
    assert any(target.iterdir())  # left behind: nobody could remove it
    with safety.Scratch(target):
        pass
    assert not any(target.iterdir()), list(target.iterdir())
