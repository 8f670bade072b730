"""Every IOzone output of the corpus gives exactly the numbers it prints.

The parser reads tables by column position; these tests read the same files another way (the
numbers of each line in order, as printed) and compare, so a value moved to a neighbouring column,
dropped, invented or rounded fails. The workbook and the text report of the same run are compared
cell by cell with the table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.ingest import iozone
from tests.conftest import CORPUS

IOZONE = CORPUS / "iozone"
TEXTS = sorted(p.name for p in IOZONE.glob("*.txt") if p.name not in ("README.md", "SOURCES.md")) \
    if IOZONE.is_dir() else []
ROW = re.compile(r"^\s+(\d+)\s+(\d+)((?:\s+\d+)*)\s*$")
CHILDREN = re.compile(r"Children see throughput for\s+(\d+) (.+?)\s+=\s*([\d.]+) (kB|KB|ops)/sec")
REPORT_ROW = re.compile(r'^"(\d+)"((?:\s+[\d.]+)+)\s*$')


def _printed_rows(text: str) -> dict[tuple[int, int], list[float]]:
    """(file KiB, record KiB) -> the values of that table row, left to right, as printed."""
    rows, inside = {}, False
    for line in text.splitlines():
        if re.match(r"^\s+[kK]B\s+reclen", line):
            inside = True
        elif inside and (m := ROW.match(line)):
            rows[int(m[1]), int(m[2])] = [float(v) for v in m[3].split()]
        else:
            inside = False
    return rows


def _report_cells(text: str) -> dict[tuple[str, int, int], float]:
    """(test, file KiB, record KiB) -> value of every non-zero cell of the Excel-style report."""
    cells, test, records = {}, "", []
    for line in text.splitlines():
        if m := re.match(r'^"(.+) report"\s*$', line.strip()):
            test, records = m[1].lower(), []
        elif test and line.startswith(" ") and '"' in line:
            records = [int(r) for r in re.findall(r'"(\d+)"', line)]
        elif test and (m := REPORT_ROW.match(line.strip())):
            for record, value in zip(records, m[2].split()):
                if float(value):
                    cells[iozone._REPORT_TESTS[test], int(m[1]), record] = float(value)
    return cells


@pytest.mark.parametrize("name", TEXTS)
def test_every_printed_number_is_a_measurement_and_no_other(corpus, name):
    text = (IOZONE / name).read_text()
    if "interrupted" in name:
        pytest.raises(InputError, iozone.load, IOZONE / name)
        return
    run = iozone.load(IOZONE / name).iozone
    by_source = {s: [m for m in run.measurements if m.source == s] for s in ("throughput", "table", "report")}
    children = [(int(m[1]), m[2].strip(), float(m[3])) for m in CHILDREN.finditer(text)]
    assert [(m.threads, m.test, m.value) for m in by_source["throughput"]] == children
    rows = _printed_rows(text)
    parsed: dict[tuple[int, int], list[float]] = {}
    for m in by_source["table"]:
        parsed.setdefault((m.file_kib, m.record_kib), []).append(m.value)
    assert parsed == {k: v for k, v in rows.items() if v}
    if by_source["report"]:
        assert not rows, "a report is read only when no table holds the run"
        assert {(m.test, m.file_kib, m.record_kib): m.value for m in by_source["report"]} == _report_cells(text)
    assert len(run.measurements) == sum(len(v) for v in by_source.values())


@pytest.mark.parametrize("name, rows, values", [
    ("auto_3.327_U_rovanion-ext3.txt", 163, 2119), ("auto_3.434_n-g-y-q_psteinb.txt", 8, 104),
    ("auto_3.465_I-odirect_ilkermanap-srp.txt", 126, 1638), ("auto_3.489_b-excel-below_beegfs.txt", 13, 169),
    ("fragment_auto_2008_noheader_perfdb.txt", 13, 78)])
def test_table_sizes(corpus, name, rows, values):
    """Row and value counts read off the files by eye (13 columns per row; 6 in the 2008 fragment)."""
    run = iozone.load(IOZONE / name).iozone
    assert len({(m.file_kib, m.record_kib) for m in run.measurements}) == rows
    assert len(run.measurements) == values


def test_the_text_report_repeats_the_table_and_the_workbook_holds_both(corpus):
    """The 3.471 run printed its table, then (-R) the Excel-style report, and wrote (-b) the workbook:
    three copies of one run, cell for cell (the report's 0 cells are the record sizes -a skips)."""
    text = (IOZONE / "auto_3.471_R_arm32_ericmountain.txt").read_text()
    table = {(m.test, m.file_kib, m.record_kib): m.value
             for m in iozone.load(IOZONE / "auto_3.471_R_arm32_ericmountain.txt").iozone.measurements}
    book = {(m.test, m.file_kib, m.record_kib): m.value
            for m in iozone.load(IOZONE / "auto_3.471_b-binary_ericmountain.xls").iozone.measurements}
    assert table == _report_cells(text[text.index("Excel output is below:"):]) == book
    assert len(table) == 1638 and table["write", 64, 4] == 213925


def test_a_cut_output_says_it_is_truncated_and_keeps_the_rows_before(corpus, tmp_path):
    text = (IOZONE / "auto_3.465_I-odirect_ilkermanap-srp.txt").read_text()
    cut = tmp_path / "cut.txt"
    cut.write_text(text[:text.index("\n", text.index("     512     512 ")) + 1])  # up to the 512 KiB row
    run = iozone.load(cut).iozone
    assert any(n.startswith("truncated") for n in run.notes)
    assert max(m.file_kib for m in run.measurements) == 512
    whole = iozone.load(IOZONE / "auto_3.465_I-odirect_ilkermanap-srp.txt").iozone
    assert not whole.notes and max(m.file_kib for m in whole.measurements) == 524288


def test_the_interrupted_run_says_it_was_interrupted(corpus):
    with pytest.raises(InputError, match=r"interrupted \('iozone: interrupted'\) before its first value"):
        iozone.load(IOZONE / "auto_3.489_interrupted_beegfs.txt")


def test_an_interrupted_run_with_rows_keeps_them_and_says_so(corpus, tmp_path):
    """The interrupted run's own lines after the 4 KiB rows of the 3.489 -s 1g run: IOzone prints
    'iozone: interrupted' where it stopped and the report of what it had."""
    full = (IOZONE / "auto_3.489_b-excel-below_beegfs.txt").read_text()
    stop = (IOZONE / "auto_3.489_interrupted_beegfs.txt").read_text()
    head = full[:full.index("\n", full.index("         1048576      16 ")) + 1]
    path = tmp_path / "run.txt"
    path.write_text(head + stop[stop.index("iozone: interrupted"):])
    run = iozone.load(Path(path)).iozone
    assert run.notes[0].startswith("interrupted")
    assert sorted({m.record_kib for m in run.measurements}) == [4, 8, 16]


def test_tabs_turned_into_spaces_change_nothing(corpus, tmp_path):
    """Outputs pasted from terminals arrive with their tabs expanded (README, 'Around the output')."""
    for name in ("tput_3.457_l1u1_cpu_R_freebsd-zfs.txt", "auto_3.434_n-g-y-q_psteinb.txt"):
        path = tmp_path / name
        path.write_text((IOZONE / name).read_text().expandtabs())
        assert iozone.load(path).iozone.measurements == iozone.load(IOZONE / name).iozone.measurements


def test_lines_printed_into_a_table_are_skipped_and_said(corpus, tmp_path):
    """Kernel log lines interleaved into the table (seen in hobby-OS logs of 3.506): the rows around them stay."""
    text = (IOZONE / "auto_3.434_n-g-y-q_psteinb.txt").read_text()
    row = text.index("\n", text.index("         1048576    1024 ")) + 1
    path = tmp_path / "run.txt"
    kernel = "[  812.044171] ata1.00: exception Emask 0x0 SAct 0x0 SErr 0x0 action 0x6\n"
    path.write_text(text[:row] + kernel + text[row:])
    run = iozone.load(path).iozone
    assert run.measurements == iozone.load(IOZONE / "auto_3.434_n-g-y-q_psteinb.txt").iozone.measurements
    assert any("1 line(s) inside the table" in n and "ata1.00" in n for n in run.notes)


def test_the_old_unit_spellings_read_the_same(corpus, tmp_path):
    """3.1xx-3.3xx print 'Kbyte' and 'KB/sec' where 3.4xx prints 'kByte' and 'kB/sec' (README, quirks)."""
    name = "tput_3.493_t64_write_duscc-bm.txt"
    path = tmp_path / name
    path.write_text((IOZONE / name).read_text().replace("kByte", "Kbyte").replace("kB/sec", "KB/sec"))
    old, new = iozone.load(path).iozone.measurements, iozone.load(IOZONE / name).iozone.measurements
    assert old == new and (old[0].file_kib, old[0].record_kib) == (159744, 1024)


def test_a_document_quoting_iozone_output_is_not_a_run(corpus):
    """The corpus README quotes every form in code fences: a folder diagnosed whole must not count it as a run."""
    with pytest.raises(InputError, match="Markdown"):
        iozone.load(IOZONE / "README.md")
