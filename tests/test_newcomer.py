"""The newcomer's list (issue 24 item 3): what a new user met on a fresh clone, `make demo` and the
README's commands, each checked on the real demo trace, corpus logs and a real node snapshot."""

from __future__ import annotations

import json
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


def test_diagnose_json_shape_follows_the_command_line_and_help_says_so(tmp_path):
    """One input file: one object; a directory (even holding one log) or several inputs: a list.
    A script passing a directory used to get an object or a list depending on what it held."""
    help_text = " ".join(_cli("diagnose", "--help").stdout.split())
    assert "One input file gives one object; several inputs or a directory give a list" in help_text
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / DEMO.name).symlink_to(DEMO)
    one = _cli("diagnose", str(DEMO), "--json", "-")
    in_dir = _cli("diagnose", str(folder), "--json", "-")
    assert one.returncode == 0 and in_dir.returncode == 0, in_dir.stderr
    assert isinstance(json.loads(one.stdout), dict)
    listed = json.loads(in_dir.stdout)
    assert isinstance(listed, list) and len(listed) == 1 and listed[0]["schema"] == json.loads(one.stdout)["schema"]


def test_one_amount_is_written_one_way_in_the_header():
    """The demo read 64 MiB and wrote 64 MiB + 2.2 KiB of stdout: 'read 64 MiB  written 64.0 MiB'."""
    out = _cli("diagnose", str(DEMO), env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert "read 64 MiB" in out.stdout and "written 64 MiB" in out.stdout and "64.0 MiB" not in out.stdout
