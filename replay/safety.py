"""Safety rails for writing to shared production file systems.

- every replay file lives in a fresh scratch directory under the target, named by
  the executor from neutral ids (trace paths are never used as paths);
- the target is refused when it is not a directory, not writable, is ``/``, lies in a
  system tree (``/etc``, ``/usr``, ``/proc`` ...), is the root of a mounted file system
  (unless allowed), or, for root, owned by another user;
- free space is checked against the planned bytes before anything is written;
- the scratch directory is removed on success, failure, Ctrl-C and SIGTERM unless
  the user asks to keep it; one left by a run that was killed (its marker names a pid
  that is gone) is removed by the next run on the same target.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import socket
import signal
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

MARKER = ".ioadvisor-replay"
SPACE_MARGIN = 64 << 20  # for the plans themselves, directories and file system overhead
# Trees whose files the system runs on or that are not files at all: a replay's scratch
# files never belong there, whoever runs it (root could otherwise fill /usr or /boot).
SYSTEM_TREES = ("/etc", "/usr", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                "/proc", "/sys", "/dev", "/var/lib", "/run")
PR_SET_PDEATHSIG = 1
MARKER_OWNER = re.compile(r"^pid (\d+) on (\S+)$", re.M)


class SafetyError(Exception):
    """A replay that must not run here, and why (one line)."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived during a replay."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by signal {signal.Signals(signum).name}")
        self.signum = signum


def check_target(target: str | Path, *, allow_mount_root: bool = False) -> Path:
    """The resolved target directory, or SafetyError saying why it is refused."""
    raw = Path(target)
    path = raw.resolve()
    if not path.exists():
        raise SafetyError(f"{raw}: target does not exist")
    if not path.is_dir():
        raise SafetyError(f"{raw}: target is not a directory")
    if path == Path("/"):
        raise SafetyError(f"{raw}: refusing to replay into / (give a scratch directory)")
    tree = system_tree(path)
    if tree:
        raise SafetyError(f"{raw}: refusing to replay into the system tree {tree} (give a scratch directory)")
    if os.path.ismount(path) and not allow_mount_root:
        raise SafetyError(f"{raw}: refusing to replay into the root of a mounted file system (give a "
                          f"directory below it, or set [replay] allow_mount_root = true)")
    st = path.stat()
    if os.geteuid() == 0 and st.st_uid != 0:
        raise SafetyError(f"{raw}: refusing to replay as root into a directory owned by uid "
                          f"{st.st_uid} (run as that user, or use a directory root owns)")
    if not os.access(path, os.W_OK | os.X_OK):
        raise SafetyError(f"{raw}: target is not writable")
    return path


def die_with_parent(signum: int = signal.SIGTERM) -> None:
    """Ask the kernel to send `signum` to this process when its parent dies (Linux prctl).

    A replay killed with SIGKILL cannot clean up: its launcher and executor ranks would run
    on against the target to the end. No-op where prctl is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def system_tree(path: Path) -> str:
    """The system tree `path` lies in (itself or below), or ''."""
    text = str(path)
    return next((t for t in SYSTEM_TREES if text == t or text.startswith(t + "/")), "")


def human(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(nbytes) < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.1f} TiB"


def free_bytes(path: str | Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def check_space(path: str | Path, planned: int) -> None:
    """SafetyError when `planned` bytes plus a margin do not fit on the file system of `path`."""
    need, free = planned + SPACE_MARGIN, free_bytes(path)
    if need > free:
        raise SafetyError(f"{path}: not enough free space for the replay: needs {human(need)} "
                          f"({human(planned)} planned + {human(SPACE_MARGIN)} margin), "
                          f"{human(free)} free")


def check_scratch(path: str | Path) -> Path:
    """The executor's check that it writes only into a scratch directory made by `Scratch`."""
    path = Path(path)
    if not path.is_dir() or path.is_symlink() or not (path / MARKER).is_file():
        raise SafetyError(f"{path}: not an ioadvisor replay scratch directory")
    return path


def fstype_of(path: str | Path) -> str:
    """File system type of `path` from /proc/self/mountinfo (longest mount point), or ''."""
    return mount_of(path)[1]


def mount_of(path: str | Path) -> tuple[str, str]:
    """(mount point, file system type) of the mount holding `path`, or ('', '')."""
    path = str(Path(path).resolve())
    best, fstype = "", ""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return "", ""
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        mnt = fields[4].replace("\\040", " ")
        inside = path == mnt or path.startswith(mnt.rstrip("/") + "/")
        if inside and len(mnt) >= len(best):
            best, fstype = mnt, right.split()[0]
    return best, fstype


def can_drop_caches() -> bool:
    """Whether this process may write /proc/sys/vm/drop_caches (root, writable /proc/sys)."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/sys/vm/drop_caches", "w"):
            return True  # opened, nothing written
    except OSError:
        return False


def drop_caches() -> bool:
    """Write back dirty pages and drop the page cache; False when not permitted."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return True
    except OSError:
        return False


class Scratch:
    """A fresh scratch directory under a checked target, removed on every way out.

    Use as a context manager. SIGINT and SIGTERM raise :class:`Interrupted` in the
    main thread; child process groups registered with :meth:`adopt` are killed
    before the directory is removed.
    """

    def __init__(self, target: str | Path, *, keep: bool = False, allow_mount_root: bool = False):
        self.target = check_target(target, allow_mount_root=allow_mount_root)
        self.keep = keep
        self.path: Path | None = None
        self._children: list[subprocess.Popen] = []
        self._old_handlers: dict[int, object] = {}

    def __enter__(self) -> Scratch:
        remove_stale(self.target)
        try:
            self.path = Path(tempfile.mkdtemp(prefix="ioadvisor-replay-", dir=self.target))
        except OSError as exc:
            raise SafetyError(f"{self.target}: target is not writable ({exc.strerror})") from None
        (self.path / MARKER).write_text("scratch directory of an ioadvisor replay; safe to delete\n"
                                        f"pid {os.getpid()} on {socket.gethostname()}\n")
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        self.kill_children()
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        if not self.keep:
            self.remove()

    @staticmethod
    def _on_signal(signum, frame):
        raise Interrupted(signum)

    def adopt(self, proc: subprocess.Popen) -> subprocess.Popen:
        """Kill this child's process group if the replay is interrupted."""
        self._children.append(proc)
        return proc

    def kill_children(self, grace_s: float = 5.0) -> None:
        for proc in self._children:
            if proc.poll() is not None:
                continue
            for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self._children = [p for p in self._children if p.poll() is None]

    def remove(self) -> None:
        if self.path is not None and self.path.exists():
            _remove_tree(self.path)


def remove_stale(target: Path) -> list[Path]:
    """Remove the scratch directories under `target` that a killed run left: made on this host
    by a pid that no longer runs. Another host's, or a live run's, are never touched."""
    removed = []
    for marker in target.glob(f"ioadvisor-replay-*/{MARKER}"):
        owner = MARKER_OWNER.search(_read(marker))
        if owner is None or owner.group(2) != socket.gethostname() or _alive(int(owner.group(1))):
            continue
        scratch = marker.parent
        if scratch.is_symlink() or scratch.parent != target:
            continue
        _remove_tree(scratch)
        removed.append(scratch)
    return removed


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[:4096]
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():  # something made a directory read-only: open it up and retry
        for root, dirs, _ in os.walk(path):
            for d in dirs:
                os.chmod(os.path.join(root, d), stat.S_IRWXU)
        shutil.rmtree(path, ignore_errors=True)
