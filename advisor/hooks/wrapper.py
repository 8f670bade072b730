"""The `Epilog=` wrapper script: made with absolute paths, and checked as slurmd runs it.

slurmd runs the epilog as root with no PATH and no HOME. The wrapper therefore names the
Python of the ioadvisor installation and the site config by absolute path, runs Python in
isolated mode (no PYTHON* variables, no user site) and exits 0 whatever Python did.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

TEMPLATE = """#!/bin/sh
# ioadvisor post-job hook for Slurm, made by `ioadvisor hook install-wrapper`.
# slurm.conf:   Epilog={wrapper}
# slurmd runs it as root on every node of a job, with no PATH and no HOME. It always
# exits 0: a failing Epilog would drain the node. Errors go to stderr, syslog and the site log.
{python} -I -m advisor hook slurm-epilog --config {config} "$@" </dev/null
status=$?
# The hook itself exits 0 whatever happens; any other status means Python or ioadvisor did
# not start (removed, or being upgraded in place): say so, or the job's report is lost unseen.
if [ "$status" -ne 0 ]; then
    msg="ioadvisor hook did not run for job ${{SLURM_JOB_ID:-?}}: its Python exited with status $status"
    echo "$msg" >&2
    for logger in /usr/bin/logger /bin/logger; do
        [ -x "$logger" ] && "$logger" -t ioadvisor-hook -p user.err "$msg" && break
    done
fi
exit 0
"""

_COMMAND = re.compile(r"^(.+?) -I -m advisor hook slurm-epilog --config (.+?) \"\$@\"", re.M)


def render_wrapper(python: str, config: str, wrapper: str) -> str:
    """The wrapper script text (every path absolute and shell-quoted)."""
    for what, path in (("python", python), ("config", config), ("wrapper", wrapper)):
        if not os.path.isabs(path):
            raise ValueError(f"{what} path {path!r} must be absolute (slurmd gives the epilog no PATH)")
    return TEMPLATE.format(python=shlex.quote(python), config=shlex.quote(config), wrapper=wrapper)


def install_wrapper(out: str, text: str) -> None:
    """Write the wrapper to `out` atomically, mode 0755."""
    tmp = f"{out}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def wrapper_paths(text: str) -> tuple[str, str] | None:
    """The Python and config paths a wrapper runs, or None when it is not ours."""
    match = _COMMAND.search(text)
    if not match:
        return None
    return shlex.split(match.group(1))[0], shlex.split(match.group(2))[0]


def root_owned_problems(path: str) -> list[str]:
    """Why root should not run `path`: it, or a directory above it, is writable by others."""
    problems = []
    current = Path(path)
    for p in [current, *current.parents]:
        try:
            st = os.stat(p)
        except OSError as exc:
            return [f"{p}: {exc.strerror}"]
        if st.st_uid != 0 or (st.st_mode & 0o022 and not (p.is_dir() and st.st_mode & stat.S_ISVTX)):
            problems.append(f"{p}: owned by uid {st.st_uid}, mode {stat.filemode(st.st_mode)}: "
                            "others could change what root runs")
    return problems


def runs_as_other_user(python: str, uid: int = 65534, gid: int = 65534) -> list[str]:
    """Why `python` cannot run the hook as a non-root user (the report writer runs as the job's user)."""
    if os.geteuid() != 0:
        return []  # cannot switch users: nothing to learn
    try:
        run = subprocess.run([python, "-I", "-c", "import advisor.hooks.runner, advisor.api"],
                             user=uid, group=gid, extra_groups=[], env={}, cwd="/",
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return [f"{python}: cannot run as uid {uid}: {exc}"]
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"{python}: as uid {uid} (a job user), importing ioadvisor fails: {last} "
                "(is the installation under a directory other users cannot enter, such as root's home?)"]
    return []


def check_wrapper(wrapper: str, env: dict[str, str], timeout_s: float = 120.0) -> tuple[list[str], str]:
    """Problems with the wrapper, and what it printed run as slurmd would (dry run, no PATH/HOME)."""
    if not os.path.isabs(wrapper):
        return [f"{wrapper}: Epilog= needs an absolute path"], ""
    try:
        text = Path(wrapper).read_text()
    except OSError as exc:
        return [f"{wrapper}: {exc.strerror}"], ""
    problems = root_owned_problems(wrapper)
    if problems:  # never run as root what another user could have replaced
        return problems + [f"{wrapper}: not run (fix the ownership and modes above first)"], ""
    if not os.access(wrapper, os.X_OK):
        problems.append(f"{wrapper}: not executable")
    paths = wrapper_paths(text)
    if paths is None:
        problems.append(f"{wrapper}: no `-m advisor hook slurm-epilog --config` line (not made by install-wrapper?)")
    else:
        python, config = paths
        if not os.access(python, os.X_OK):
            problems.append(f"{python}: not an executable Python")
        else:
            problems += runs_as_other_user(python)
        if not os.path.isfile(config):
            problems.append(f"{config}: site config not found")
    try:
        run = subprocess.run([wrapper, "--dry-run"], env=env, cwd="/", capture_output=True,
                             text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return problems + [f"{wrapper}: could not run: {exc}"], ""
    if run.returncode != 0:
        problems.append(f"{wrapper}: exited {run.returncode} (slurmd would drain the node)")
    if run.stderr.strip():
        problems.append(f"{wrapper}: stderr: {run.stderr.strip()[-2000:]}")
    return problems, run.stdout


def default_python() -> str:
    """This installation's Python, unresolved (a venv's bin/python, not the base interpreter)."""
    return os.path.abspath(sys.executable)
