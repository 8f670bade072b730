"""A file's mount point, found by dict lookups (JobProfile.fstype_of) and once per folder (the
fleet's mount labels), against the definition, on the mount tables of real logs: NERSC's (file
mounts such as /usr/sbin/ibstat, "/" twice) and a laptop's 53 (nested /snap and /run mounts)."""

from __future__ import annotations

from advisor.fleet.analyse import mount_label
from advisor.ingest import load_profile

LOGS = ("darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/sample-badost.darshan",
        "darshan-logs/darshan_logs/release_logs/mpi-io-test-x86_64-3.4.4.darshan")


def _fstype(mounts, path: str) -> str:
    """The definition: the longest mount point that is the path or a folder of it (table order among equals)."""
    for m in sorted(mounts, key=lambda m: -len(m.path)):
        if path == m.path or path.startswith(m.path.rstrip("/") + "/"):
            return m.fstype
    return ""


def _label(mounts, path: str) -> str:
    """The fleet's label: the longest mount point the path starts with, as text."""
    return next((f"{m.path} ({m.fstype})" for m in sorted(mounts, key=lambda m: -len(m.path))
                 if path.startswith(m.path)), "")


def test_a_file_gets_the_longest_mount_point_that_holds_it(corpus):
    for log in LOGS:
        profile = load_profile(corpus / log)
        assert len(profile.mounts) >= 20 and len({m.fstype for m in profile.mounts}) >= 3
        points = [m.path for m in profile.mounts]
        paths = [*profile.names.values(), *points, *(p + suffix for p in points for suffix in ("/", "/f", "f", "/a/b")),
                 "", "relative/name", "<STDOUT>", "//"]
        for path in paths:
            assert profile.fstype_of(path) == _fstype(profile.mounts, path), (log, path)
            assert mount_label(profile, path) == _label(profile.mounts, path), (log, path)
