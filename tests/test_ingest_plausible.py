"""Values no real job can have are refused at ingest, one line naming the field and value.

Each case edits one field of a real input (tests/data) the way a broken or hostile
file would; before, these ended in numpy allocating terabytes, OverflowError,
RecursionError or TypeError (exit 3).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from advisor.errors import InputError
from advisor.ingest import load_profile
from advisor.ingest.plausible import MAX_RANKS
from tests.conftest import DATA

PARSER = DATA / "dumps" / "a_good_fpp_posix_1m.parser.txt"
DXT = DATA / "dumps" / "a_good_fpp_posix_1m.dxt.txt"
IOR_JSON = DATA / "ior" / "ior_4.0.0_summary.json"
IOR_CSV = DATA / "ior" / "ior_csv_4.0.0.txt"


def _edited(tmp_path, source, pattern, replacement, name=None):
    text = source.read_text()
    edited, n = re.subn(pattern, replacement, text, count=1, flags=re.MULTILINE)
    assert n == 1, f"{pattern!r} not in {source.name}"
    path = tmp_path / (name or source.name)
    path.write_text(edited)
    return path


@pytest.mark.parametrize("pattern, replacement, words", [
    (r"^# nprocs: 4$", "# nprocs: 1099511627776", "implausible nprocs 1099511627776"),
    (r"^# nprocs: 4$", "# nprocs: 1000000000000", "implausible nprocs 1000000000000"),
    (r"^# start_time: \d+$", "# start_time: 1e30", "implausible start_time 1e+30"),
    (r"(POSIX_BYTES_WRITTEN\t)\d+", r"\g<1>inf",
     "malformed POSIX_BYTES_WRITTEN value in the POSIX records (e.g. 'inf')"),
    (r"(POSIX_F_WRITE_TIME\t)[\d.]+", r"\g<1>1e309", "implausible POSIX_F_WRITE_TIME inf"),
    (r"^POSIX\t0\t", "POSIX\t99999999999\t", "implausible POSIX rank 99999999999"),
])
def test_absurd_values_in_a_parser_dump_are_refused(tmp_path, pattern, replacement, words):
    path = _edited(tmp_path, PARSER, pattern, replacement)
    with pytest.raises(InputError, match=re.escape(words)) as err:
        load_profile(path)
    assert "\n" not in str(err.value)


def test_the_bounds_leave_the_real_input_alone():
    profile = load_profile(PARSER)
    assert 0 < profile.job.nprocs < MAX_RANKS


def test_a_negative_dxt_rank_is_refused(tmp_path):
    text = DXT.read_text().replace("# DXT, rank: 0,", "# DXT, rank: -5,", 1)
    text = re.sub(r"^( X_POSIX +)0( +write)", r"\g<1>-5\g<2>", text, count=1, flags=re.MULTILINE)
    path = tmp_path / DXT.name
    path.write_text(text)
    with pytest.raises(InputError, match="implausible DXT rank -5"):
        load_profile(path)


def _ior_json(tmp_path, edit):
    doc = json.loads(IOR_JSON.read_text())
    edit(doc)
    path = tmp_path / "ior.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("edit, words", [
    (lambda d: d.update(tests=None), "at tests: None is not of type 'array'"),
    (lambda d: d["tests"][0].update(Parameters=[1, 2]), "at tests/0/Parameters: [1, 2] is not of type"),
    (lambda d: d["tests"][0]["Parameters"].update(blockSize=int("9" * 400)),
     "at tests/0/Parameters/blockSize"),
    (lambda d: d["summary"][0].update(numTasks=10 ** 15), "at summary/0/numTasks"),
])
def test_ior_json_of_the_wrong_types_is_refused(tmp_path, edit, words):
    with pytest.raises(InputError, match=re.escape(words)) as err:
        load_profile(_ior_json(tmp_path, edit))
    assert len(str(err.value)) < 400


def test_deeply_nested_ior_json_is_refused(tmp_path):
    text = IOR_JSON.read_text().rstrip()
    path = tmp_path / "ior.json"
    path.write_text(text[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError, match="nested too deeply"):
        load_profile(path)


def test_nan_bandwidth_in_ior_csv_is_a_row_without_a_bandwidth(tmp_path):
    """NaN and infinities measure nothing (IOR prints inf for a zero time): such a cell is an
    empty one, never a number for the integer conversions after it."""
    path = _edited(tmp_path, IOR_CSV, r"^write,[\d.]+,", "write,NaN,")
    profile = load_profile(path)
    assert [it.operation for it in profile.run.tests[0].iterations] == ["read"]
    assert "a CSV row without a bandwidth was skipped" in profile.run.notes


@pytest.mark.parametrize("column, value", [(11, "NaN"), (11, "inf"), (5, "inf"), (4, "-inf"), (10, "nan")])
def test_non_finite_counts_and_sizes_in_ior_csv_are_empty_cells(tmp_path, column, value):
    """iter, numTasks, block and transfer sizes become integers: NaN and inf were a ValueError
    and an OverflowError there (exit 3)."""
    lines = IOR_CSV.read_text().splitlines()
    cells = lines[1].split(",")
    cells[column] = value
    path = tmp_path / "ior.csv"
    path.write_text("\n".join([lines[0], ",".join(cells), lines[2]]) + "\n")
    write = load_profile(path).run.tests[0].iterations[0]
    assert write.operation == "write" and write.bw_mib == pytest.approx(1993.8311)


def test_huge_integers_in_a_snapshot_are_refused(tmp_path):
    doc = json.loads(subprocess.run([sys.executable, "-m", "advisor", "collect"], capture_output=True,
                                    text=True, check=True).stdout)
    text = json.dumps(doc)
    for digits, words in ((5000, "implausible number"), (400, "at collected_at")):
        path = tmp_path / f"snap{digits}.json"
        path.write_text(re.sub(r'"collected_at": [\d.e+]+', '"collected_at": ' + "9" * digits, text))
        with pytest.raises(InputError, match=words) as err:
            load_profile(path)
        assert len(str(err.value)) < 400


def test_diagnose_reports_an_implausible_input_as_an_input_error(tmp_path):
    path = _edited(tmp_path, PARSER, r"^# nprocs: 4$", "# nprocs: 1099511627776")
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", str(path), "--json", "-"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == f"ioadvisor: error: {path}: implausible nprocs 1099511627776 (expected -1 to 16777216)"


LUSTRE_DUMP = DATA / "dumps" / "release_3.5.0_lustre.all.parser.txt"


def test_counters_whose_sum_leaves_int64_are_refused(tmp_path):
    """Two counters of one record at int64's maximum: their sum, cast back to int64 for the
    file table, was numpy's 'invalid value encountered in cast' RuntimeWarning on stderr."""
    path = _edited(tmp_path, LUSTRE_DUMP, r"(MPIIO_VIEWS\t)0", r"\g<1>9223372036854775807")
    with pytest.raises(InputError, match=r"implausible MPI-IO meta ops over all records 9\.22337e\+18"):
        load_profile(path)


def test_nan_in_an_integer_counter_is_a_malformed_dump(tmp_path):
    """darshan-parser prints integer counters as integers: 'nan' there reached numpy's maximum
    in the redundant-I/O fact (a RuntimeWarning on stderr) as a NaN byte offset."""
    path = _edited(tmp_path, PARSER, r"(POSIX_MAX_BYTE_READ\t)\d+", r"\g<1>nan")
    with pytest.raises(InputError, match=r"malformed POSIX_MAX_BYTE_READ value in the POSIX records \(e\.g\. 'nan'\)"):
        load_profile(path)


def test_no_runtime_warning_reaches_stderr(tmp_path):
    """With RuntimeWarning an error, each of these inputs is still one clean error line."""
    inputs = [_edited(tmp_path, LUSTRE_DUMP, r"(MPIIO_VIEWS\t)0", r"\g<1>9223372036854775807", "views.txt"),
              _edited(tmp_path, PARSER, r"(POSIX_MAX_BYTE_READ\t)\d+", r"\g<1>nan", "nan.txt"),
              _edited(tmp_path, IOR_CSV, r"^write,[\d.]+,", "write,inf,", "inf.csv")]
    for command in ("diagnose", "show"):
        out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "advisor", command,
                              *map(str, inputs)], capture_output=True, text=True, timeout=300)
        assert "Warning" not in out.stderr and "internal error" not in out.stderr, out.stderr
        assert out.returncode == 2 and len(out.stderr.splitlines()) == 2, out.stderr  # the CSV is usable


def test_a_400_digit_size_in_ior_text_is_refused_naming_it(tmp_path):
    """float() made it infinity, and int() of that an OverflowError in the parsing child (exit 3)."""
    path = _edited(tmp_path, DATA / "ior" / "ior_2.10_two_tests.txt", r"(xfersize += )\d+", r"\g<1>" + "9" * 400)
    with pytest.raises(InputError, match="implausible test 0 transfer size an integer of 4"):
        load_profile(path)


@pytest.mark.parametrize("depth", [65, 900])
def test_json_nested_deeper_than_any_real_document_is_refused(tmp_path, depth):
    """Shallower than the decoder's recursion limit, 900 levels decoded, then failed where the
    parsed snapshot was pickled back from the parsing child (a multiprocessing traceback)."""
    text = IOR_JSON.read_text().rstrip()
    path = tmp_path / "ior.json"
    path.write_text(text[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(InputError, match="nested more than 64 levels deep"):
        load_profile(path)
