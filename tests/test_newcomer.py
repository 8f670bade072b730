"""The newcomer's list (issue 24 item 3): what a new user met on a fresh clone, `make demo` and the
README's commands, each checked on the real demo trace, corpus logs and a real node snapshot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "traces" / "ior-small-shared-4k.darshan"


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, **kw)


def test_rules_code_shows_no_raw_template_syntax():
    """`ioadvisor rules IO001` printed '{{ coalesce_size | bytes }}' and '{% if ... %}'."""
    out = _cli("rules", "IO001", env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "{{" not in out.stdout and "{%" not in out.stdout
    assert "<coalesce_size>" in out.stdout and "[when small_writes_below_collective]" in out.stdout
