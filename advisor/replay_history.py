"""A target's verification history: one line per fix per measurement (its mean log-ratio, the
standard error of that mean, the load it ran beside), so that the next verification on the
same target knows how far its measurements disagree (:func:`replay.drift.between_runs`).

One JSON-lines file per target directory in ``$XDG_STATE_HOME/ioadvisor/replay-history``
(default ``~/.local/state/...``), named from the target's resolved path; ``[replay]
history_dir`` puts it elsewhere (a directory a site's users share), ``history = false`` keeps
none. A history that cannot be read or written costs the verification nothing: it falls back
to ``[replay] reproducibility``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

KEEP = 20  # runs kept per fix (the oldest go): the spread of the target as it is now
TRIM_AT = 2000  # lines before the file is rewritten with the kept runs only


def default_dir() -> Path | None:
    """``$XDG_STATE_HOME/ioadvisor/replay-history`` (default ``~/.local/state/...``)."""
    xdg, home = os.environ.get("XDG_STATE_HOME", ""), os.environ.get("HOME", "")
    if os.path.isabs(xdg):  # a relative one is to be ignored (XDG base directory spec)
        return Path(xdg) / "ioadvisor" / "replay-history"
    return Path(home) / ".local" / "state" / "ioadvisor" / "replay-history" if os.path.isabs(home) else None


def workload_key(plan_summary: dict[str, Any], fix_key: str) -> str:
    """The identity of (workload as replayed, fix): what the history groups runs by."""
    text = json.dumps(plan_summary, sort_keys=True, default=str) + "\n" + fix_key
    return hashlib.sha256(text.encode()).hexdigest()[:20]


class History:
    """The runs recorded for one target (none when `path` is None)."""

    def __init__(self, path: Path | None, target: str = ""):
        self.path, self.target = path, target

    @classmethod
    def of(cls, target: Path, enabled: bool = True, where: str = "") -> History:
        folder = Path(where).expanduser() if where else default_dir()
        if not enabled or folder is None:
            return cls(None)
        name = hashlib.sha256(str(target.resolve()).encode()).hexdigest()[:20]
        return cls(folder / f"{name}.jsonl", str(target))

    def runs(self) -> dict[str, list[tuple[float, float]]]:
        """fix key -> its runs' (mean log-ratio, standard error), oldest first (the last KEEP)."""
        out: dict[str, list[tuple[float, float]]] = {}
        for doc in self._lines():
            out.setdefault(doc["fix"], []).append((float(doc["mean"]), float(doc["se"])))
        return {k: v[-KEEP:] for k, v in out.items()}

    def add(self, entries: list[dict[str, Any]]) -> None:
        """Append this measurement's runs (each with fix, mean, se; more keys are kept)."""
        good = [e for e in entries if math.isfinite(e.get("mean", math.nan)) and math.isfinite(e.get("se", math.nan))]
        if self.path is None or not good:
            return
        stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        lines = "".join(json.dumps({"at": stamp, "target": self.target, **e}) + "\n" for e in good)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as fh:  # one write: concurrent verifications interleave whole lines
                fh.write(lines)
            self._trim()
        except OSError:
            pass  # a read-only home: this verification used the site's constant, the next will too

    def _lines(self) -> list[dict[str, Any]]:
        if self.path is None:
            return []
        try:
            text = self.path.read_text()
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue  # a line cut by a crash
            if isinstance(doc, dict) and isinstance(doc.get("fix"), str) and _number(doc.get("mean")) \
                    and _number(doc.get("se")):
                out.append(doc)
        return out

    def _trim(self) -> None:
        lines = self._lines()
        if len(lines) < TRIM_AT:
            return
        count: dict[str, int] = {}
        kept = []
        for doc in reversed(lines):
            count[doc["fix"]] = count.get(doc["fix"], 0) + 1
            if count[doc["fix"]] <= KEEP:
                kept.append(doc)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(d) + "\n" for d in reversed(kept)))
        tmp.replace(self.path)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
