"""The finished job as the hook sees it, and Slurm's hostlist syntax."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Job ids reach file names and globs: digits for Slurm, "1234.server" for PBS, Flux's f58 ids.
_JOBID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# POSIX portable user names, and "user@domain" as sssd gives them.
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$")


@dataclass
class JobContext:
    """A finished job: who ran it, where, and on which nodes."""

    jobid: str
    user: str
    uid: int
    gid: int
    workdir: str
    nodes: list[str] = field(default_factory=list)  # expanded node list; empty: unknown
    node: str = ""  # the node this hook runs on
    exit_code: str = ""  # Slurm's "exit:signal"
    start_time: float | None = None  # POSIX seconds, when the scheduler tells

    def __post_init__(self) -> None:
        if not _JOBID.match(self.jobid):
            raise ValueError(f"job id {self.jobid!r} is not a plain job id")
        if not _USER.match(self.user):
            raise ValueError(f"user name {self.user!r} is not a plain user name")
        if self.uid < 0 or self.gid < 0:
            raise ValueError(f"uid {self.uid} / gid {self.gid} must be non-negative")
        if not self.workdir.startswith("/"):
            raise ValueError(f"work dir {self.workdir!r} is not an absolute path")

    def is_first_node(self) -> bool:
        """True where the work is done: the first host of the job's node list (or unknown)."""
        return not self.nodes or not self.node or self.nodes[0] == self.node

    def template_values(self) -> dict[str, str]:
        return {"jobid": self.jobid, "user": self.user, "uid": str(self.uid),
                "workdir": self.workdir.rstrip("/") or "/"}


def expand_hostlist(hostlist: str) -> list[str]:
    """Expand Slurm's hostlist syntax: ``n[01-03,7],gpu[1-2]-ib`` -> n01 n02 n03 n7 gpu1-ib gpu2-ib."""
    hosts: list[str] = []
    for entry in _split_top_level(hostlist.strip()):
        hosts.extend(_expand_entry(entry))
    return hosts


def _split_top_level(text: str) -> list[str]:
    entries, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in hostlist {text!r}")
        elif ch == "," and depth == 0:
            entries.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"unbalanced '[' in hostlist {text!r}")
    entries.append(text[start:])
    return [e for e in (x.strip() for x in entries) if e]


def _expand_entry(entry: str) -> list[str]:
    match = re.search(r"\[([^\]]*)\]", entry)
    if not match:
        return [entry]
    head, tail = entry[:match.start()], entry[match.end():]
    return [head + part + rest for part in _expand_ranges(match.group(1), entry)
            for rest in _expand_entry(tail)]


def _expand_ranges(spec: str, entry: str) -> list[str]:
    parts: list[str] = []
    for item in spec.split(","):
        lo, sep, hi = item.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"bad range {item!r} in hostlist entry {entry!r}")
        if not sep:
            parts.append(lo)
            continue
        width = len(lo) if lo.startswith("0") else 0
        if int(hi) < int(lo) or int(hi) - int(lo) > 1_000_000:
            raise ValueError(f"bad range {item!r} in hostlist entry {entry!r}")
        parts.extend(str(n).zfill(width) for n in range(int(lo), int(hi) + 1))
    return parts
