"""Write the report files into the job's destination, safely against a hostile user.

Called in a child that already runs as the job's user (:func:`advisor.hooks.child.run_as_user`),
so nothing is ever created with root's rights in a directory the user controls. Each file
is written under a fresh temporary name (``O_CREAT|O_EXCL|O_NOFOLLOW``) in the destination
itself and renamed over the final name: a symlink the user planted there is replaced, never
followed. The destination must be a directory owned by the user. A report is never more
readable than its directory: the job's umask is gone when the epilog runs, but the directory
the user keeps private says the same (a site may set one mode for all: ``[hook] report_mode``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from advisor.hooks.job import JobContext
from advisor.hooks.settings import HookConfig

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeDestination(Exception):
    """The destination is not a directory owned by the job's user."""


def report_name(jobid: str, fmt: str) -> str:
    return f"ioadvisor-{jobid}.{fmt}"


def destination(cfg: HookConfig, job: JobContext) -> str:
    """The directory the reports of `job` go to."""
    if cfg.destination == "workdir":
        return job.workdir
    if cfg.destination == "user-dir":
        return cfg.user_dir.format_map(job.template_values())
    return str(Path(cfg.site_dir) / job.user)


def prepare_site_dir(site_dir: str, job: JobContext) -> None:
    """As root: make ``<site_dir>/<user>`` (0700, owned by the user) in a root-only site dir."""
    st = os.lstat(site_dir)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise UnsafeDestination(f"{site_dir}: site dir must be a directory owned by root "
                                "and writable by root only")
    parent = os.open(site_dir, _DIR_FLAGS)
    try:
        try:
            os.mkdir(job.user, 0o700, dir_fd=parent)
            os.chown(job.user, job.uid, job.gid, dir_fd=parent, follow_symlinks=False)
        except FileExistsError:
            pass  # checked by the writer, as the user
    finally:
        os.close(parent)


def open_destination(path: str, uid: int, *, create: bool = False) -> int:
    """A directory fd for `path`, which must be a real directory owned by `uid`."""
    if create:
        os.makedirs(path, 0o755, exist_ok=True)
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as exc:
        raise UnsafeDestination(f"{path}: cannot open the destination: {exc.strerror}") from None
    st = os.fstat(fd)
    if st.st_uid != uid:
        os.close(fd)
        raise UnsafeDestination(f"{path}: owned by uid {st.st_uid}, not the job's user (uid {uid})")
    return fd


def report_mode(dir_mode: int, site_mode: int | None = None) -> int:
    """The mode of a report in a directory of `dir_mode`: the site's, else readable by the group
    or by others only where they may list and enter the directory (0755 -> 0644, 0750 -> 0640,
    0700 or 0711 -> 0600)."""
    if site_mode is not None:
        return site_mode
    mode = 0o600
    if dir_mode & 0o050 == 0o050:
        mode |= 0o040
    if dir_mode & 0o005 == 0o005:
        mode |= 0o004
    return mode


def replace_file(dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> None:
    """Write `data` to `name` in `dir_fd` atomically (temporary name, then rename)."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, _TMP_FLAGS, mode, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)  # decided by report_mode, not by the hook's own umask
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def write_reports(dest: str, jobid: str, contents: dict[str, bytes], uid: int,
                  *, create: bool = False, site_mode: int | None = None) -> list[str]:
    """Write ``ioadvisor-<jobid>.<fmt>`` for each format; the caller must already be `uid`."""
    if os.geteuid() != uid:
        raise PermissionError(f"report writer runs as uid {os.geteuid()}, not the job's uid {uid}")
    dir_fd = open_destination(dest, uid, create=create)
    written = []
    try:
        mode = report_mode(os.fstat(dir_fd).st_mode, site_mode)
        for fmt, data in contents.items():
            name = report_name(jobid, fmt)
            replace_file(dir_fd, name, data, mode)
            written.append(os.path.join(dest, name))
    finally:
        os.close(dir_fd)
    return written
