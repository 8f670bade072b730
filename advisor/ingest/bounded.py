"""Names cut to what a real job can have, right after an input is read.

A file name, mount point, executable line or host name is untrusted text: a trace may hold a
name of megabytes (a forged record, a corrupt log), and every reporter escapes, measures and
wraps the names it shows. Cut once here, in the parsing child, no later step spends time or
memory in proportion to a name (a 15 MB name of control characters took 87 s and 730 MB to
`show`). The cut keeps the start and says the whole length, so that the user still sees
which name it was and that it was cut.
"""

from __future__ import annotations

from advisor.profile import JobProfile

MAX_NAME = 4096
"""Characters: Linux's PATH_MAX; no path a job opens is longer, nor a host name or mount point,
nor Darshan's command line (its job record holds 4 KiB in all)."""
KEPT = 256
"""Characters of a cut name that are kept, before the note of its length."""


def cut_text(text: str) -> str:
    """`text` itself when at most MAX_NAME characters, else its first KEPT and its length."""
    if len(text) <= MAX_NAME:
        return text
    return f"{text[:KEPT]}... [cut: {len(text):,} characters]"


def cut_long_names(profile: JobProfile) -> JobProfile:
    """`profile` with every name, mount point, host name and the command line within bounds."""
    if any(len(name) > MAX_NAME for name in profile.names.values()):
        profile.names = {rid: cut_text(name) for rid, name in profile.names.items()}
    for mount in profile.mounts:
        mount.path, mount.fstype = cut_text(mount.path), cut_text(mount.fstype)
    for trace in profile.dxt.values():
        if any(len(host) > MAX_NAME for host in trace.hostnames.values()):
            trace.hostnames = {rank: cut_text(host) for rank, host in trace.hostnames.items()}
    profile.job.exe = cut_text(profile.job.exe or "")
    return profile
