"""Safety rails for writing to shared production file systems.

- every replay file lives in a fresh scratch directory under the target, named by
  the executor from neutral ids (trace paths are never used as paths);
- the target is refused when it is not a directory, not writable, is ``/``, or,
  for root, owned by another user;
- free space is checked against the planned bytes before anything is written;
- the scratch directory is removed on success, failure, Ctrl-C and SIGTERM unless
  the user asks to keep it.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

MARKER = ".ioadvisor-replay"
SPACE_MARGIN = 64 << 20  # for the plans themselves, directories and file system overhead


class SafetyError(Exception):
    """A replay that must not run here, and why (one line)."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived during a replay."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by signal {signal.Signals(signum).name}")
        self.signum = signum


def check_target(target: str | Path) -> Path:
    """The resolved target directory, or SafetyError saying why it is refused."""
    raw = Path(target)
    path = raw.resolve()
    if not path.exists():
        raise SafetyError(f"{raw}: target does not exist")
    if not path.is_dir():
        raise SafetyError(f"{raw}: target is not a directory")
    if path == Path("/"):
        raise SafetyError(f"{raw}: refusing to replay into / (give a scratch directory)")
    st = path.stat()
    if os.geteuid() == 0 and st.st_uid != 0:
        raise SafetyError(f"{raw}: refusing to replay as root into a directory owned by uid "
                          f"{st.st_uid} (run as that user, or use a directory root owns)")
    if not os.access(path, os.W_OK | os.X_OK):
        raise SafetyError(f"{raw}: target is not writable")
    return path


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
    path = str(Path(path).resolve())
    best, fstype = "", ""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return ""
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        mnt = fields[4].replace("\\040", " ")
        inside = path == mnt or path.startswith(mnt.rstrip("/") + "/")
        if inside and len(mnt) >= len(best):
            best, fstype = mnt, right.split()[0]
    return fstype


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

    def __init__(self, target: str | Path, *, keep: bool = False):
        self.target = check_target(target)
        self.keep = keep
        self.path: Path | None = None
        self._children: list[subprocess.Popen] = []
        self._old_handlers: dict[int, object] = {}

    def __enter__(self) -> "Scratch":
        try:
            self.path = Path(tempfile.mkdtemp(prefix="ioadvisor-replay-", dir=self.target))
        except OSError as exc:
            raise SafetyError(f"{self.target}: target is not writable ({exc.strerror})") from None
        (self.path / MARKER).write_text("scratch directory of an ioadvisor replay; safe to delete\n")
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
        if self.path is None or not self.path.exists():
            return
        shutil.rmtree(self.path, ignore_errors=True)
        if self.path.exists():  # something made a directory read-only: open it up and retry
            for root, dirs, _ in os.walk(self.path):
                for d in dirs:
                    os.chmod(os.path.join(root, d), stat.S_IRWXU)
            shutil.rmtree(self.path, ignore_errors=True)

    def subdir(self, name: str) -> Path:
        assert self.path is not None
        d = self.path / name
        d.mkdir(mode=0o700)
        return d

