"""A real single-node Slurm (Debian's slurmctld/slurmd/munge) started without systemd, for hook tests.

What the fixture builds (root only):

- a venv made from the system ``/usr/bin/python3`` with this tree pip-installed into it
  (``/var/tmp/ioadvisor-hook-venv/proj-<tree hash>``, dependencies in ``deps-<hash>``; see
  :func:`hook_venv`), so root and the job user can both run it;
- munged as the munge user (reused when one already answers);
- slurmctld and slurmd in the foreground on free ports, state, spool and logs under a
  temporary directory, ``Epilog=`` the wrapper made by ``ioadvisor hook install-wrapper``;
- a non-root test user who submits jobs with sbatch.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = "/usr/bin/python3"
VENV_ROOT = Path("/var/tmp/ioadvisor-hook-venv")
TEST_USER = "ioadv-hook"
SBIN = {name: f"/usr/sbin/{name}" for name in ("slurmctld", "slurmd", "munged")}
BIN = {name: f"/usr/bin/{name}" for name in ("sbatch", "scontrol", "squeue", "sinfo", "munge", "unmunge")}
MISSING_HINT = "install Slurm and munge: sudo bash tests/system/install-components.sh"
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


def missing_components() -> list[str]:
    """Executables the fixture needs that are not installed."""
    paths = [*SBIN.values(), *BIN.values(), SYSTEM_PYTHON]
    return [p for p in paths if not os.access(p, os.X_OK)]


def dev_null_problem() -> str:
    """Why /dev/null is not the null device, or "" (an atomic writer that renames a temporary
    file over an output path of /dev/null replaces it: munged and jobs then fail)."""
    st = os.stat("/dev/null")
    if stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3:
        return ""
    return f"/dev/null is not the null device (mode {stat.filemode(st.st_mode)}): something replaced it"


def hook_venv() -> Path:
    """A world-usable venv (system Python) running exactly this tree; never changed once made.

    Slurm epilogs of a running cluster execute this venv's Python at any moment, and other
    test sessions on the host start clusters of their own: reinstalling the project into a
    shared venv left a window in which ``python -m advisor`` failed and jobs silently got no
    report and no site-log line. So the dependencies live in a venv keyed by their hash
    and the project in a hard-linked copy of it keyed by the hash of the tree
    (``proj-<hash>``). Both are built once, under a lock, and only then marked complete.
    """
    VENV_ROOT.mkdir(mode=0o755, exist_ok=True)
    os.chmod(VENV_ROOT, 0o755)
    with tempfile.TemporaryDirectory(prefix="ioadvisor-src-") as src, \
            open(VENV_ROOT / ".lock", "w") as lock:
        _copy_tree(Path(src))
        deps_key = _hash_files(Path(src), ["setup.cfg", "pyproject.toml"])
        tree_key = _hash_files(Path(src), sorted(str(f.relative_to(src)) for f in Path(src).rglob("*")
                                                 if f.is_file()))
        fcntl.flock(lock, fcntl.LOCK_EX)
        deps = _deps_venv(VENV_ROOT / f"deps-{deps_key[:16]}", src)
        proj = _project_venv(VENV_ROOT / f"proj-{tree_key[:16]}", deps, src)
        _prune_old(keep={deps, proj})
    return proj


VENV_COMPLETE = ".complete"
VENV_MAX_AGE_S = 2 * 86400  # unused this long: no session can still be running it


def _copy_tree(dest: Path) -> None:
    # Build from a copy: the tree's build/ and egg-info belong to the developer's editable install.
    shutil.copytree(REPO, dest, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__",
                                                  ".pytest_cache", "out"))


def _hash_files(root: Path, names: list[str]) -> str:
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return digest.hexdigest()


def _deps_venv(venv: Path, src: str) -> Path:
    """The dependencies (and pip) without the project; made once per setup.cfg/pyproject.toml."""
    if (venv / VENV_COMPLETE).exists():
        os.utime(venv)
        return venv
    shutil.rmtree(venv, ignore_errors=True)  # a build that died half-way
    _run([SYSTEM_PYTHON, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "setuptools>=68", "wheel", src])
    _run([python, "-m", "pip", "uninstall", "-q", "-y", "ioadvisor"])  # the tree goes in proj-<hash>
    (venv / VENV_COMPLETE).touch()
    return venv


def _project_venv(venv: Path, deps: Path, src: str) -> Path:
    """A copy of `deps` (hard links: seconds, no space) with this tree installed; made once per tree.

    A whole venv, not a small one reading `deps` through a ``.pth`` file: the mpich wheel's
    libmpi and mpiexec are found under ``sys.prefix``.
    """
    if not (venv / VENV_COMPLETE).exists():
        shutil.rmtree(venv, ignore_errors=True)
        shutil.copytree(deps, venv, symlinks=True, copy_function=os.link,
                        ignore=shutil.ignore_patterns(VENV_COMPLETE))
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
              "--no-deps", "--no-index", "--no-build-isolation", src])
        (venv / VENV_COMPLETE).touch()
    os.utime(venv)  # in use: not pruned
    return venv


def _prune_old(keep: set[Path]) -> None:
    """Remove venvs of earlier trees nobody has used for VENV_MAX_AGE_S (caller holds the lock)."""
    for venv in [*VENV_ROOT.glob("proj-*"), *VENV_ROOT.glob("deps-*")]:
        if venv not in keep and time.time() - venv.stat().st_mtime > VENV_MAX_AGE_S:
            shutil.rmtree(venv, ignore_errors=True)


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    run = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({run.returncode}): {run.stderr.strip()[-3000:]}")
    return run


def ensure_user(name: str = TEST_USER) -> pwd.struct_passwd:
    """The non-root job user (created once, with a home for the per-user opt-out marker)."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        _run(["/usr/sbin/useradd", "--create-home", "--shell", "/bin/sh", name])
        return pwd.getpwnam(name)


def _munge_works() -> bool:
    try:
        cred = subprocess.run([BIN["munge"], "-n"], capture_output=True, timeout=10)
        if cred.returncode != 0:
            return False
        return subprocess.run([BIN["unmunge"]], input=cred.stdout, capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


MUNGE_LOCK = Path("/var/tmp/ioadvisor-munge.lock")


def start_munge() -> int | None:
    """munged as the munge user (left running); its pid when we started it, None when one already runs.

    Under a lock: two sessions (or workers) that both find no munged and both start one leave
    the loser failing on munged's socket lock.
    """
    with open(MUNGE_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _start_munge_unlocked()


def _start_munge_unlocked() -> int | None:
    if _munge_works():
        return None
    if dev_null_problem():
        raise RuntimeError(f"cannot start munged: {dev_null_problem()}")
    munge = pwd.getpwnam("munge")
    for d in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
        os.makedirs(d, mode=0o755, exist_ok=True)
        os.chown(d, munge.pw_uid, munge.pw_gid)
    if not os.path.exists("/etc/munge/munge.key"):
        _run(["/usr/sbin/runuser", "-u", "munge", "--", "/usr/sbin/mungekey", "--verbose"])
    _run(["/usr/sbin/runuser", "-u", "munge", "--", SBIN["munged"]])
    deadline = time.monotonic() + 10
    while not _munge_works():
        if time.monotonic() > deadline:
            raise RuntimeError("munged started but does not answer")
        time.sleep(0.1)
    return int(Path("/run/munge/munged.pid").read_text().split()[0])


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@dataclass
class Job:
    jobid: str
    workdir: Path


@dataclass
class SlurmCluster:
    """One slurmctld + one slurmd on this host, a job user, a Darshan log dir and a site log."""

    root: Path
    venv: Path
    user: pwd.struct_passwd
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    procs: list[subprocess.Popen] = field(default_factory=list)
    munge_pid: int | None = None

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def wrapper(self) -> Path:
        return self.root / "ioadvisor-epilog"

    @property
    def hook_config(self) -> Path:
        return self.root / "site.toml"

    @property
    def logdir(self) -> Path:
        return self.root / "darshan-logs"

    @property
    def site_log(self) -> Path:
        return self.root / "site.jsonl"

    @property
    def ioadvisor(self) -> str:
        return str(self.venv / "bin" / "ioadvisor")

    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

    # -- setup ------------------------------------------------------------------------------
    def start(self) -> None:
        for d in ("state", "spool", "log", "work"):
            (self.root / d).mkdir(mode=0o755)
        self.logdir.mkdir(mode=0o755)
        for days in (-1, 0, 1):  # what darshan-mk-log-dirs makes: world-writable, sticky
            day = time.localtime(time.time() + days * 86400)
            d = self.logdir / str(day.tm_year) / str(day.tm_mon) / str(day.tm_mday)
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o1777)
        self.write_hook_config()
        _run([self.ioadvisor, "hook", "install-wrapper", "--config", str(self.hook_config),
              "--out", str(self.wrapper)], env={})
        self._write_slurm_conf()
        self.munge_pid = start_munge()
        for daemon in ("slurmctld", "slurmd"):
            with open(self.root / "log" / f"{daemon}.stdout", "w") as log:  # the daemon keeps its own copy
                self.procs.append(subprocess.Popen([SBIN[daemon], "-D", "-f", str(self.conf)],
                                                   stdout=log, stderr=subprocess.STDOUT, env=self.env()))
        self._wait_node_idle(60)

    def write_hook_config(self, **hook) -> None:
        """(Re)write the site config's [hook] section; every epilog reads it afresh."""
        settings = {"log_dir": str(self.logdir), "site_log": str(self.site_log), "wait_s": 5,
                    "time_limit_s": 60, "min_severity": "none", "syslog": False, **hook}
        lines = ["[hook]"] + [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
        self.hook_config.write_text("\n".join(lines) + "\n")

    def _write_slurm_conf(self) -> None:
        ctld_port, slurmd_port = _free_ports(2)
        r = self.root
        self.conf.write_text(f"""\
ClusterName=ioadvtest
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
ReturnToService=2
MinJobAge=600
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
SlurmdDebug=info
Epilog={self.wrapper}
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
""")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        # munged stays up: another test session on this host may be using it by now.

    # -- jobs -------------------------------------------------------------------------------
    def workdir(self, name: str) -> Path:
        """A fresh work dir owned by the job user."""
        path = self.root / "work" / name
        path.mkdir(mode=0o755)
        os.chown(path, self.user.pw_uid, self.user.pw_gid)
        return path

    def sbatch(self, script: str, workdir: Path) -> Job:
        """Submit `script` (a bash body) as the test user; the job id."""
        body = "#!/bin/bash\nset -e\n" + script + "\n"
        run = subprocess.run(
            [BIN["sbatch"], "--parsable", f"--chdir={workdir}", f"--output={workdir}/slurm-%j.out",
             "--ntasks=1", "--job-name=hooktest"], input=body, capture_output=True, text=True,
            user=self.user.pw_uid, group=self.user.pw_gid, extra_groups=[], env=self.env(),
            cwd=workdir, timeout=60)
        if run.returncode != 0:
            raise RuntimeError(f"sbatch failed: {run.stderr.strip()}")
        return Job(run.stdout.strip().split(";")[0], workdir)

    def stage_log_script(self, source: Path | None, *, exe: str = "ior", truncate: int | None = None) -> str:
        """Job body that writes `source` where the site's Darshan would put this job's log.

        Darshan names the log ``<user>_<exe>_id<jobid>-<pid>_<month>-<day>-<seconds>-<hash>_1.darshan``
        in ``<logdir>/<year>/<month>/<day>/`` and renames ``.darshan_partial`` when complete.
        """
        if source is None:
            return "true"
        copy = f"head -c {truncate} '{source}'" if truncate is not None else f"cat '{source}'"
        return (f"d={self.logdir}/$(date +%Y/%-m/%-d)\n"
                f"name=$d/{self.user.pw_name}_{exe}_id${{SLURM_JOB_ID}}-$$_$(date +%-m-%-d)"
                f"-$(( $(date +%s) % 86400 ))-1234567890_1\n"
                f"{copy} > $name.darshan_partial\n"
                f"chmod 0400 $name.darshan_partial\n"
                f"mv $name.darshan_partial $name.darshan")

    def job_state(self, jobid: str) -> str:
        """The job's state; "GONE" once slurmctld has forgotten it, "UNKNOWN" when it did not answer
        (a busy slurmctld times out: that must mean "ask again", never "finished")."""
        try:
            run = subprocess.run([BIN["scontrol"], "show", "job", "-o", jobid], capture_output=True,
                                 text=True, env=self.env(), timeout=60)
        except subprocess.TimeoutExpired:
            return "UNKNOWN"
        if run.returncode != 0:
            return "GONE" if "Invalid job id" in run.stderr else "UNKNOWN"
        fields = dict(f.split("=", 1) for f in run.stdout.split() if "=" in f)
        return fields.get("JobState", "UNKNOWN")

    def wait_jobs(self, jobids: list[str], timeout_s: float = 120) -> dict[str, str]:
        """Wait until every job has finished and its epilog has run; their final states."""
        deadline = time.monotonic() + timeout_s
        pending = set(jobids)
        states: dict[str, str] = {}
        while pending:
            try:
                out = subprocess.run([BIN["squeue"], "-h", "-o", "%i %T", "-t", "all"], capture_output=True,
                                     text=True, env=self.env(), timeout=60).stdout
            except subprocess.TimeoutExpired:
                out = ""  # slurmctld busy: job_state asks about each job below
            active = {line.split()[0] for line in out.splitlines()
                      if line.split()[1] not in TERMINAL}
            for jobid in sorted(pending - active):
                state = self.job_state(jobid)
                if state in TERMINAL or state == "GONE":
                    states[jobid] = state
                    pending.discard(jobid)
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"jobs {sorted(pending)} not finished after {timeout_s} s "
                                   f"(slurmd log: {self.root}/log/slurmd.log)")
            if pending:
                time.sleep(0.2)
        return states

    def node_state(self) -> str:
        """The node's state as sinfo prints it ('idle', 'drained', 'completing', ...)."""
        return subprocess.run([BIN["sinfo"], "-h", "-n", self.node, "-o", "%T"], capture_output=True,
                              text=True, env=self.env(), timeout=30).stdout.strip()

    def wait_node_settled(self, timeout_s: float = 60) -> str:
        """The node's state once no epilog is running on it any more."""
        deadline = time.monotonic() + timeout_s
        while (state := self.node_state()) in ("completing", "mixed", "allocated") and time.monotonic() < deadline:
            time.sleep(0.2)
        return state

    def _wait_node_idle(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.node_state() != "idle":
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                logs = "".join((self.root / "log" / n).read_text()[-2000:]
                               for n in ("slurmctld.log", "slurmd.log") if (self.root / "log" / n).exists())
                raise RuntimeError(f"Slurm node not idle: {self.node_state()!r}\n{logs}")
            time.sleep(0.2)

    def resume_node(self) -> None:
        subprocess.run([BIN["scontrol"], "update", f"nodename={self.node}", "state=resume"],
                       capture_output=True, env=self.env(), timeout=30)

    def site_records(self) -> list[dict]:
        """Every line of the site log, parsed (a malformed line fails the caller's json.loads)."""
        if not self.site_log.exists():
            return []
        return [json.loads(line) for line in self.site_log.read_text().splitlines()]

    def record(self, jobid: str) -> dict:
        """The one site-log record of `jobid` (asserting there is exactly one)."""
        records = [r for r in self.site_records() if r["jobid"] == jobid]
        assert len(records) == 1, f"job {jobid}: {len(records)} site log lines: {records}"
        return records[0]


def start_cluster() -> SlurmCluster:
    """Build the venv, the user and the daemons; the caller stops it."""
    root = Path(tempfile.mkdtemp(prefix="ioadvisor-slurm-", dir="/var/tmp"))
    os.chmod(root, 0o755)
    cluster = SlurmCluster(root=root, venv=hook_venv(), user=ensure_user())
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster
