"""`ioadvisor show`: text and JSON views, several inputs, bad inputs, hostile names, colour."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from advisor.cli import cli, main
from advisor.ingest.darshan_log import load
from advisor.profile import ModuleInfo, ModuleRecords
from advisor.report.show import SCHEMA, Sections, render, show_entry

REPO = Path(__file__).resolve().parents[1]
SMALL = str(REPO / "traces" / "ior-small-shared-4k.darshan")
BADOST = str(REPO / "traces" / "sample-badost.darshan")
DXT_V2 = str(REPO / "tests" / "data" / "dxt-v2-devel.darshan")
OLD = str(REPO / "tests" / "data" / "darshan-2.2.0-mpi-io-test.darshan.gz")


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, ["show", *args], env={"IOADVISOR_DEBUG": "", **(env or {})})


def test_show_one_log_as_plain_text():
    r = run(SMALL)
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert out.startswith(f"== {SMALL}")
    assert "job 12999, 4 processes" in out
    assert "ior -a POSIX -t 4k -b 16m" in out
    assert "/scratch/b_small_io_shared_4k/testfile" in out and "shared (4)" in out
    assert "DXT_POSIX    32,768" in out
    assert "\x1b[" not in out  # not a terminal: no colour, no box drawing
    assert "│" not in out and "┃" not in out


def test_lustre_layouts_and_file_limit():
    r = run(BADOST, "--files", "2")
    assert r.exit_code == 0
    assert "files: top 2 of 2051 by bytes" in r.stdout
    assert "Lustre layout: 2 of 2048 files" in r.stdout
    assert "pre-3.4.6 LUSTRE form" in r.stdout


def test_unreadable_dxt_is_said_plainly():
    r = run(DXT_V2)
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("DXT_POSIX") and "UNREADABLE" in ln)
    note = " ".join(ln.strip() for ln in lines[at:at + 4])  # the note wraps under its column
    assert "version" in note
    assert "256 MiB" in r.stdout  # the POSIX counters are still shown


def test_bad_inputs_each_get_one_line_and_the_others_still_show(tmp_path):
    missing = str(tmp_path / "missing.darshan")
    junk = tmp_path / "junk.darshan"
    junk.write_bytes(b"\x00" * 64)
    r = run(missing, SMALL, OLD, str(junk))
    assert r.exit_code == 2
    assert "job 12999" in r.stdout
    errors = r.stderr.strip().splitlines()
    assert errors == [
        f"ioadvisor: error: {missing}: no such file",
        f"ioadvisor: error: {OLD}: " + errors[1].split(": ", 3)[3],
        f"ioadvisor: error: {junk}: " + errors[2].split(": ", 3)[3],
    ]
    assert "Darshan 2.01 log" in errors[1] and "not a recognised input" in errors[2]
    assert "Traceback" not in r.output and "internal error" not in r.output


def test_json_to_stdout_is_only_json_with_stable_keys():
    r = run("--json", "-", SMALL, OLD)
    assert r.exit_code == 2
    doc = json.loads(r.stdout)
    assert doc["schema"] == SCHEMA
    ok, bad = doc["results"]
    assert bad == {"path": OLD, "ok": False, "error": bad["error"]} and "2.01" in bad["error"]
    assert {"path", "ok", "source", "job", "modules", "summary", "files_total", "files",
            "lustre", "dxt", "mounts"} <= set(ok)
    assert ok["job"]["jobid"] == "12999" and ok["job"]["nprocs"] == 4
    posix = ok["summary"]["modules"]["POSIX"]
    assert posix["bytes_written"] == 67108864 and posix["size_hist_write"]["1K_10K"] == 16384
    assert posix["common_sizes"] == [[4096, 32768]]
    f = ok["files"][0]
    assert f["path"] == "/scratch/b_small_io_shared_4k/testfile" and f["shared"] and f["ranks"] == 4
    assert f["modules"]["POSIX"]["writes"] == 16384
    assert isinstance(f["record_id"], str) and int(f["record_id"]) > 2**53  # kept exact
    assert ok["dxt"] == [{**ok["dxt"][0], "module": "DXT_POSIX", "readable": True, "segments": 32768,
                          "records": 4, "ranks": 4, "reads": 16384, "writes": 16384}]


def test_json_file_is_written_whole_next_to_the_text(tmp_path):
    target = tmp_path / "show.json"
    r = run("--json", str(target), DXT_V2)
    assert r.exit_code == 0 and "== " in r.stdout
    doc = json.loads(target.read_text())
    dxt = doc["results"][0]["dxt"][0]
    assert dxt["readable"] is False and dxt["segments"] is None and "version" in dxt["note"]
    assert not list(tmp_path.glob(".*tmp"))


def test_json_into_a_missing_directory_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("IOADVISOR_DEBUG", raising=False)
    target = tmp_path / "no" / "such" / "dir.json"
    with pytest.raises(SystemExit) as exc:
        main(["show", "--json", str(target), SMALL])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err == f"ioadvisor: error: {target}: cannot write: No such file or directory\n"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


COLOUR = re.compile(r"\x1b\[[0-9;]*(3[0-9]|9[0-7])[;m]")  # SGR foreground colours


def test_terminal_gets_rich_tables_and_no_color_is_honoured(monkeypatch):
    entry = show_entry(load(Path(DXT_V2)))
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = _Tty()
    render(entry, coloured)
    assert COLOUR.search(coloured.getvalue()) and "┃" in coloured.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _Tty()
    render(entry, plain)
    assert not COLOUR.search(plain.getvalue()) and "UNREADABLE" in plain.getvalue()


def test_hostile_names_are_shown_escaped():
    p = load(Path(SMALL))
    rid = int(p.records["POSIX"].ids[0])
    p.names[rid] = "/scratch/\x1b[2J\x1b[31mevil\nname [bold]x[/bold]"
    entry = show_entry(p)
    text = Sections.of(entry).plain()
    assert "\x1b" not in text and "\\x1b[2J" in text and "\\x0aname" in text
    tty = _Tty()
    render(entry, tty)
    assert "\x1b[2J" not in tty.getvalue() and "[bold]x[/bold]" in tty.getvalue()


def test_show_works_for_profiles_without_darshan_modules():
    p = load(Path(SMALL))
    p.records = {"BG/Q": ModuleRecords("BG/Q", np.zeros(1, np.uint64), np.zeros(1, np.int64))}
    p.modules = {"BG/Q": ModuleInfo("BG/Q", records=1)}
    p.dxt, p.lustre = {}, {}
    entry = show_entry(p)
    assert entry["files"] == [] and entry["summary"]["base_modules"] == []
    assert "BG/Q" in Sections.of(entry).plain()


@pytest.mark.parametrize("args", [["--help"], []])
def test_help_and_missing_argument(args):
    r = run(*args)
    if args:
        assert r.exit_code == 0 and "--json" in r.stdout and "--files" in r.stdout
    else:
        assert r.exit_code == 2 and "PATH" in r.output


LONG_PATHS = ["darshan-logs/darshan_logs/dlio_logs", "darshan-logs/darshan_logs/e3sm_io_heatmaps_and_dxt"]


@pytest.mark.parametrize("columns", [100, 80])
def test_long_paths_fit_the_width_in_pipes_and_terminals(corpus, monkeypatch, columns):
    """Paths of 60-250 characters (DLIO, E3SM): no line wider than $COLUMNS, piped or on a
    terminal; a cut path keeps its start and its file name; the JSON keeps every path whole."""
    monkeypatch.setenv("COLUMNS", str(columns))
    logs = [p for folder in LONG_PATHS for p in sorted((corpus / folder).glob("*.darshan"))]
    checked = 0
    for log in logs:
        entry = show_entry(load(log), top_files=0)
        longest = max((f["path"] for f in entry["files"]), key=len)
        if len(longest) <= columns - 20:
            continue  # only short paths: nothing to cut
        checked += 1
        piped, tty = io.StringIO(), _Tty()
        render(entry, piped)
        render(entry, tty)
        for name, text in (("pipe", piped.getvalue()), ("terminal", re.sub(r"\x1b\[[0-9;]*m", "", tty.getvalue()))):
            wide = [line for line in text.splitlines() if len(line.rstrip()) > columns]
            assert not wide, (log.name, name, wide[:2])
        name = longest.rsplit("/", 1)[-1]
        assert any(line.strip().startswith(longest[:6]) and line.rstrip().endswith(name)
                   for line in piped.getvalue().splitlines()), (log.name, longest)
    assert checked >= 2
