"""Timed tools run from compiled bytecode, as installed software does.

A caller's PYTHONDONTWRITEBYTECODE (set in some shells and CI images) makes every run of an
editable checkout compile its sources again: about 0.5 s of a 1 s `ioadvisor diagnose`, while
pip compiled the peers' venvs (Drishti, pydarshan) at install time. The benches clear it and
give every tool one bytecode cache of the bench's own (PYTHONPYCACHEPREFIX), filled by their
untimed warm-up runs, so that no tool compiles in a timed run and no tree is written to.
"""

from __future__ import annotations

import os
from pathlib import Path


def compiled_runs(cache: Path) -> None:
    """From now on, the tools this process starts write and reuse bytecode under `cache`."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
