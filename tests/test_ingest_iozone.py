"""IOzone outputs of the corpus (../shared/corpus/iozone): every form and quirk its README lists."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.ingest import detect, iozone
from tests.conftest import CORPUS

IOZONE = CORPUS / "iozone"


def _run(name: str) -> iozone.IozoneRun:
    return iozone.load(IOZONE / name).iozone


@pytest.mark.parametrize("name", sorted(p.name for p in IOZONE.glob("*") if p.suffix in (".txt", ".xls")
                                        and "interrupted" not in p.name) if IOZONE.is_dir() else [])
def test_every_output_is_sniffed_and_measured(corpus, name):
    assert detect(IOZONE / name).name == "iozone"
    run = _run(name)
    assert run.measurements and all(m.value > 0 for m in run.measurements)
    assert {m.unit for m in run.measurements} == {iozone.KBS}


def test_throughput_blocks_keep_every_statistic(corpus):
    run = _run("tput_3.493_t64_write_duscc-bm.txt")
    first = run.measurements[0]
    assert (run.version, run.mode, first.test, first.threads) == ("3.493", "throughput", "initial writers", 64)
    assert (first.value, first.parent_value, first.min_per_process) == (367382.55, 82000.95, 5369.03)
    assert (first.file_kib, first.record_kib) == (159744, 1024)
    # a value that fills its field leaves no space after '='
    assert _run("tput_3.493_t64_read_duscc-bm.txt").measurements[0].value == 108879387.38


def test_cpu_lines_attach_to_their_test_in_both_spellings(corpus):
    run = _run("tput_3.457_l1u1_cpu_R_freebsd-zfs.txt")
    assert [m.cpu_percent for m in run.measurements[:2]] == [72.65, 73.80]
    assert len({m.test for m in run.measurements}) == 13


def test_blank_columns_are_not_shifted_onto_their_neighbours(corpus):
    """The 2008 fragment ran -i 0 -i 1 -i 2: six columns of thirteen, parsed by position."""
    run = _run("fragment_auto_2008_noheader_perfdb.txt")
    tests = Counter(m.test for m in run.measurements)
    assert tests == {t: 13 for t in ("write", "rewrite", "read", "re-read", "random read", "random write")}
    assert run.notes and "fragment" in run.notes[0]
    row = {m.test: m.value for m in run.measurements if m.record_kib == 4}
    assert row == {"write": 738046, "rewrite": 307367, "read": 913818, "re-read": 908487,
                   "random read": 1155, "random write": 37148}


def test_the_workbook_holds_what_the_text_report_of_the_same_run_holds(corpus):
    text = _run("auto_3.471_R_arm32_ericmountain.txt")
    book = _run("auto_3.471_b-binary_ericmountain.xls")
    cells = [{(m.test, m.file_kib, m.record_kib): m.value for m in r.measurements} for r in (text, book)]
    assert cells[0] == cells[1] and len(cells[0]) == 1638


def test_a_report_alone_is_read_and_its_zero_cells_are_not_measurements(corpus):
    run = _run("fragment_excel-report-only_toby1984.txt")
    assert {m.source for m in run.measurements} == {"report"}
    assert len({m.test for m in run.measurements}) == 13
    assert min(m.value for m in run.measurements) > 0


def test_ops_mode_values_are_ops_per_second(corpus, tmp_path):
    """-O: the banner says so and no 'Output is in kBytes/sec' line follows (README, quirks)."""
    text = (IOZONE / "auto_3.434_n-g-y-q_psteinb.txt").read_text()
    ops = tmp_path / "ops.txt"
    ops.write_text(text.replace("Output is in kBytes/sec", "OPS Mode. Output is in operations per second."))
    assert {m.unit for m in iozone.load(ops).iozone.measurements} == {iozone.OPS}


def test_an_interrupted_run_with_no_complete_row_is_one_line(corpus):
    with pytest.raises(InputError, match="no measurement.*interrupted"):
        iozone.load(IOZONE / "auto_3.489_interrupted_beegfs.txt")
    out = subprocess.run([sys.executable, "-m", "advisor", "show", str(IOZONE / "auto_3.489_interrupted_beegfs.txt")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_show_json_prints_every_measurement(corpus):
    path = IOZONE / "tput_3.493_t1_write_duscc-bm.txt"
    out = subprocess.run([sys.executable, "-m", "advisor", "show", "--json", "-", str(path)],
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)["results"][0]
    assert result["iozone"]["version"] == "3.493"
    assert [(m["test"], m["threads"], m["file_kib"], m["record_kib"], m["value"], m["unit"])
            for m in result["measurements"]] == [("initial writers", 1, 10485760, 1024, 376423.19, "kB/s"),
                                                 ("rewriters", 1, 10485760, 1024, 380296.97, "kB/s")]


def test_a_damaged_workbook_is_one_line(tmp_path):
    data = (IOZONE / "auto_3.471_b-binary_ericmountain.xls").read_bytes() if IOZONE.is_dir() else b""
    bad = tmp_path / "bad.xls"
    bad.write_bytes(data[:600] if data else b"\x09\x00\x04\x00iozone")
    with pytest.raises(InputError):
        iozone.load(Path(bad))
