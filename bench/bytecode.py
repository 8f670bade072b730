"""Timed tools run from compiled bytecode, as installed software does.

A caller's PYTHONDONTWRITEBYTECODE (set in some shells and CI images) makes every run of an
editable checkout compile its sources again: about 0.5 s of a 1 s `ioadvisor diagnose`, while
pip compiled the peers' venvs (Drishti, pydarshan) at install time. The benches clear it and
give every tool one bytecode cache of the bench's own (PYTHONPYCACHEPREFIX), filled by their
untimed warm-up runs, so that no tool compiles in a timed run and no tree is written to.
ioadvisor imports some modules only for the inputs that need them (the fact modules a log's
rules ask for): a warm-up on one log leaves those uncompiled, so its trees are compiled
beforehand, as pip compiles a package it installs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def compiled_runs(cache: Path, *trees: Path) -> None:
    """From now on, the tools this process starts write and reuse bytecode under `cache`; this
    checkout's `advisor` and `replay` packages and `trees` (other checkouts timed) are compiled there now."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "advisor"), str(REPO / "replay"),
                    *map(str, trees)], stdout=subprocess.DEVNULL, check=False)
