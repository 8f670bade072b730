"""What makes a path a Recorder trace, without importing the Recorder reader (numpy and all).

Format detection and the folder walks of `diagnose` and `fleet` ask this of every path they
see; the reader (:mod:`advisor.ingest.recorder`) is imported only for a trace.
"""

from __future__ import annotations

from pathlib import Path


def is_trace(path: Path) -> bool:
    """A Recorder trace folder, or its recorder.mt."""
    try:
        folder = path if path.is_dir() else path.parent
        return (folder / "recorder.mt").is_file() and (folder / "VERSION").is_file() and (
            path.is_dir() or path.name == "recorder.mt")
    except OSError:  # an unreadable directory: the callers say why when they list or open it
        return False
