"""Run a function in a forked child as the job's user, with hard time and memory limits.

The hook itself runs as root; everything that reads the user's files or parses a log
happens in such a child. The child drops privileges (setgroups, setgid, setuid, in
that order) before anything else, so a path the user controls is only ever opened
with the user's own rights. The result comes back as JSON through a pipe.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_RESULT_BYTES = 1 << 20
PR_SET_PDEATHSIG = 1

try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # not Linux/glibc: the time limit still applies
    _libc = None


@dataclass
class ChildResult:
    """What a child returned, or why it returned nothing."""

    value: Any = None
    error: str | None = None
    elapsed_s: float = 0.0


def drop_privileges(uid: int, gid: int) -> None:
    """Become uid/gid with no supplementary groups; a no-op when we already are that user."""
    if os.geteuid() != 0:
        if os.geteuid() != uid:
            raise PermissionError(f"cannot become uid {uid}: not running as root")
        return
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if uid != 0 and (os.getuid() == 0 or os.geteuid() == 0 or os.getegid() != gid):
        raise PermissionError(f"privileges not dropped to {uid}:{gid}")


def run_as_user(fn: Callable[[], Any], *, uid: int, gid: int, timeout_s: float,
                memory_mb: int | None = None) -> ChildResult:
    """`fn()` in a forked child running as uid/gid; killed (with its own children) after timeout_s."""
    start = time.monotonic()
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # child: never returns
        os.close(read_fd)
        _child_main(fn, write_fd, uid, gid, timeout_s, memory_mb, parent)
    os.close(write_fd)
    try:
        raw, timed_out = _read_until(read_fd, start + timeout_s)
    finally:
        os.close(read_fd)
    if timed_out:
        _kill_group(pid)
    status = _reap(pid)
    elapsed = time.monotonic() - start
    if timed_out:
        return ChildResult(error=f"timed out after {timeout_s:g} s", elapsed_s=elapsed)
    return _decode(raw, status, elapsed)


def _child_main(fn, write_fd: int, uid: int, gid: int, timeout_s: float, memory_mb: int | None,
                parent: int):
    code = 1
    try:
        os.setsid()  # own process group: a timeout kills the parser's children too
        _quiet_stdout()
        if memory_mb:
            limit = memory_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        cpu = int(timeout_s) + 2  # backstop should the parent die
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        drop_privileges(uid, gid)
        _die_with(parent)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = "1"  # threads pools would eat the address-space limit
        try:
            doc = {"value": fn()}
        except MemoryError:
            doc = {"error": f"out of memory (limit {memory_mb} MiB)"}
        except Exception as exc:  # reported to the parent, never raised past the fork
            doc = {"error": f"{type(exc).__name__}: {exc}"}
        _write_all(write_fd, json.dumps(doc, default=str).encode()[:MAX_RESULT_BYTES + 1])
        code = 0
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _die_with(parent: int) -> None:
    # If the hook is killed (slurmd's PrologEpilogTimeout), this child, which left the hook's
    # process group, must not live on. Set after setuid: changing credentials clears it.
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def _quiet_stdout() -> None:
    # Libraries that print would write into slurmd's epilog output.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)


def _read_until(fd: int, deadline: float) -> tuple[bytes, bool]:
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks), False
        size += len(chunk)
        if size <= MAX_RESULT_BYTES + 1:
            chunks.append(chunk)


def _kill_group(pid: int) -> None:
    for target in (-pid, pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGKILL)


def _reap(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0


def _decode(raw: bytes, status: int, elapsed: float) -> ChildResult:
    if len(raw) > MAX_RESULT_BYTES:
        return ChildResult(error="child result too large", elapsed_s=elapsed)
    if not raw:
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            why = "CPU time limit" if name == "SIGXCPU" else f"killed by {name}"
            return ChildResult(error=f"child died ({why})", elapsed_s=elapsed)
        return ChildResult(error=f"child exited with status {os.waitstatus_to_exitcode(status)} "
                                 "without a result", elapsed_s=elapsed)
    try:
        doc = json.loads(raw)
    except ValueError:
        return ChildResult(error="child returned malformed result", elapsed_s=elapsed)
    return ChildResult(value=doc.get("value"), error=doc.get("error"), elapsed_s=elapsed)
