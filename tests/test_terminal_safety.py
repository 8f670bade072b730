"""Nothing from a trace or a file name reaches a terminal raw (issue 18, item 5).

Before: the `diagnose` terminal report passed ESC sequences from a log's exe and file names
to the terminal (a clear-screen, an OSC window title), a newline in a name split output
lines, and error lines printed the input path raw, so a file name could forge a second
"ioadvisor: error:" line. Every reporter now passes such text through one function,
:func:`advisor.formatting.printable`; these tests drive the real command line, on a real
pseudo-terminal where colour is on.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.findings import Diagnosis, Finding, NotChecked, Recommendation
from advisor.formatting import printable, shell_word
from advisor.report.html import render_html
from advisor.report.terminal import console, print_report

CLEAR = "\x1b[2J\x1b[H"          # clear the screen, cursor home
TITLE = "\x1b]0;owned\x07"       # OSC 0: set the window title
BIDI = "\u202e"                  # right-to-left override: 'txt.exe' shows as 'exe.txt'
HOSTILE_EXE = f"{CLEAR}{TITLE}./sim"
HOSTILE_FILE = f"/scratch/{CLEAR}{TITLE}out\nFAKE LINE{BIDI}txt.h5\x9b31m\r"
DUMP_FILE = f"/scratch/{CLEAR}{TITLE}out{BIDI}txt.h5\x9b31m"
RAW = (CLEAR, TITLE, "\x1b]", BIDI, "\x9b", "\r")  # none may reach the output as is
SHOWN = ("\\x1b[2J", "\\x1b]0;owned\\x07", "\\x0aFAKE LINE", "\\u202etxt.h5", "\\u009b31m", "\\x0d")

SMALL_DUMP = "generated/b_small_io_shared_4k/darshan-parser.txt"


def test_printable_escapes_what_a_terminal_would_interpret():
    assert printable("plain /scratch/file-1.h5 é ✓") == "plain /scratch/file-1.h5 é ✓"
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable("x\ny\rz\tw\x00") == "x\\x0ay\\x0dz\\x09w\\x00"
    assert printable("c1\x9b31m del\x7f nbsp\xa0") == "c1\\u009b31m del\\x7f nbsp\\u00a0"
    assert printable(f"a{BIDI}b\u2066c\u200bd") == "a\\u202eb\\u2066c\\u200bd"
    assert printable(os.fsdecode(b"bad-\xff.darshan")) == "bad-\\xff.darshan"  # not UTF-8: the byte
    assert printable("line1\nline2\x1b", multiline=True) == "line1\nline2\\x1b"
    assert printable(42) == "42"


def test_a_name_in_a_suggested_command_is_one_exact_word_on_one_line():
    name = f"/lus/{CLEAR}{TITLE}a b\n'q'\\{BIDI}\x85" + os.fsdecode(b"\xff")
    word = shell_word(name)
    assert word.isprintable() and word.startswith("$'")
    seen = subprocess.run(["bash", "-c", f"printf '%s' {word}"], capture_output=True, check=True).stdout
    assert seen == os.fsencode(name)  # what bash gets from the pasted command is the very name
    assert shell_word("/lus/run 1; rm") == "'/lus/run 1; rm'"  # printable names: POSIX quoting


@pytest.fixture()
def hostile_dump(corpus, tmp_path) -> Path:
    """A real darshan-parser dump whose exe and file name carry terminal controls."""
    text = (corpus / SMALL_DUMP).read_text()
    text = text.replace("# exe: ior", f"# exe: {HOSTILE_EXE} ior")
    # a dump is line-based: no newline or CR can sit in its name column (a binary log's can:
    # the report tests below plant them)
    text = text.replace("/scratch/b_small_io_shared_4k/testfile", DUMP_FILE)
    out = tmp_path / "hostile.parser.txt"
    out.write_text(text)
    return out


def _on_a_terminal(*args: str, timeout: float = 300) -> tuple[int, str]:
    """Run ioadvisor with stdout on a pseudo-terminal (colour on, as a user sees it)."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")} | {"TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "advisor", *args], stdout=slave, stderr=subprocess.PIPE,
                            env=env)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output for {timeout} s")
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.wait(timeout=60)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def _ours_only(text: str) -> str:
    """The output without rich's own SGR colour sequences (ESC [ ... m)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_diagnose_on_a_terminal_shows_hostile_exe_and_names_escaped(hostile_dump):
    status, out = _on_a_terminal("diagnose", str(hostile_dump))
    assert status == 0
    assert "IO001" in out  # the findings naming the file are there
    plain = _ours_only(out)
    assert "\x1b" not in plain and BIDI not in plain and "\x9b" not in plain and "\x07" not in plain
    assert "\\x1b[2J\\x1b[H\\x1b]0;owned\\x07./sim" in plain  # the exe, visibly
    assert "\\x1b]0;owned\\x07out\\u202etxt.h5\\u009b31m" in plain  # a file name, visibly


def test_show_escapes_hostile_exe_and_names(hostile_dump):
    status, out = _on_a_terminal("show", str(hostile_dump))
    assert status == 0
    plain = _ours_only(out)
    assert "\x1b]" not in plain and "\x1b[2J" not in plain and BIDI not in plain
    assert "exe: \\x1b[2J\\x1b[H\\x1b]0;owned\\x07./sim ior" in plain


def test_a_file_name_cannot_forge_an_error_line(tmp_path):
    forged = tmp_path / "x\nioadvisor: error: passwd: forged\r\x1b[2K.darshan"
    forged.write_bytes(b"not a log")
    bad = tmp_path / "also-bad.darshan"
    bad.write_bytes(b"")
    for command in ("diagnose", "show"):
        out = subprocess.run([sys.executable, "-m", "advisor", command, str(forged), str(bad)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.splitlines()
        assert len(lines) == 2, lines  # one line per bad input, nothing forged
        assert lines[0].startswith(f"ioadvisor: error: {tmp_path}/x\\x0aioadvisor: error: passwd: forged"
                                   "\\x0d\\x1b[2K.darshan: ")
        assert "\r" not in out.stderr and "\x1b" not in out.stderr


def test_a_name_that_is_not_utf8_is_shown_by_its_bytes(corpus, tmp_path):
    good = tmp_path / os.fsdecode(b"run-\xff.parser.txt")
    good.write_text((corpus / SMALL_DUMP).read_text())
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", str(good)],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "400"})
    assert out.returncode == 0, out.stderr  # before: the surrogate could not even be encoded
    assert "run-\\xff.parser.txt" in out.stdout
    for command in ("show", "diagnose"):  # show --json was an internal error with no JSON at all
        out = subprocess.run([sys.executable, "-m", "advisor", command, str(good), "--json", "-"],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        path = doc["results"][0]["path"] if command == "show" else doc["source"]["path"]
        assert os.fsencode(path) == os.fsencode(str(good))


def _hostile_diagnosis() -> Diagnosis:
    """Control characters in every field a reporter shows (a newline in a name, as the parser
    of a binary log can return one)."""
    h = HOSTILE_FILE
    finding = Finding(code="IO001", category="small-io", severity="high", title="Small writes",
                      message=f"16 small writes to {h}", evidence={"file": h, "bytes_written": 1 << 20},
                      files=[h], ranks=[0, 1], cost_s=2.0,
                      recommendation=Recommendation(f"Buffer the writes to {h}.",
                                                    [f"lfs setstripe -c 4 {shell_word(h)}"]),
                      confidence={"level": "high", "reason": f"counted on {h}"})
    return Diagnosis(source={"path": f"/logs/{h}.darshan", "format": "darshan", "notes": [h]},
                     job={"jobid": h, "nprocs": 4, "runtime_s": 10.0, "exe": HOSTILE_EXE},
                     findings=[finding], not_checked=[NotChecked("MD001 metadata", f"no record of {h}")],
                     summary={"bytes_read": 1, "bytes_written": 1 << 20, "io_time_s": 1.0, "io_layer": "POSIX",
                              "counter_notes": [f"overlap in {h}"]})


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_report_escapes_every_field(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside the names
    tty = _Tty()
    print_report(_hostile_diagnosis(), console(tty), verbose=True)
    plain = _ours_only(tty.getvalue())
    for raw in RAW:
        assert raw not in plain, repr(raw)
    for shown in SHOWN:
        assert shown in plain, shown
    # every line the report prints is its own: none starts with what followed a newline in a name
    assert not any(line.lstrip("│ ").startswith("FAKE LINE") for line in plain.splitlines())


def test_html_report_has_no_raw_control_characters():
    page = render_html([_hostile_diagnosis()])
    raw = re.findall(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", page)
    assert raw == []
    assert "\\x1b]0;owned\\x07" in page and "\\u202etxt.h5" in page
    assert f"<dd>overlap in /scratch/{printable(CLEAR + TITLE)}out\\x0aFAKE LINE" in page


def test_json_keeps_the_names_as_they_are(hostile_dump):
    """Escaping is for people: the JSON result holds the exact name (JSON escapes it itself)."""
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", str(hostile_dump), "--json", "-"],
                         capture_output=True, text=True, timeout=300)
    doc = json.loads(out.stdout)
    assert doc["job"]["exe"].startswith(HOSTILE_EXE)
