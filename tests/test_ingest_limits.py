"""Every input is parsed in the isolated child, and text dumps are read within limits.

A gzipped dump of blank lines that unpacks to gigabytes ran for 25 minutes in the
main process; dumps, IOR outputs and snapshots had no time or memory limit at all.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from advisor.errors import InputError
from advisor.ingest import load_profile, start_profile
from tests.conftest import CORPUS, DATA
from tests.helpers import require

PARSER = DATA / "dumps" / "a_good_fpp_posix_1m.parser.txt"


@pytest.mark.parametrize("path", [
    PARSER, DATA / "dumps" / "a_good_fpp_posix_1m.dxt.txt", DATA / "ior" / "ior_text_3.3.0.txt",
    DATA / "ior" / "ior_4.0.0_summary.json", DATA / "ior" / "ior_csv_4.0.0.txt",
    DATA / "dumps" / "a_good_fpp_posix_1m.darshan"])
def test_every_format_is_parsed_in_the_isolated_child(path):
    profile = start_profile(path)()
    assert profile.ingest["isolated"] is True
    assert profile.ingest["parser_peak_rss_kb"] > 0


def test_a_dump_that_unpacks_to_gigabytes_of_blank_lines_is_refused(tmp_path):
    text = PARSER.read_bytes()
    bomb = tmp_path / "bomb.parser.txt.gz"
    blanks = gzip.compress(b"\n" * (16 << 20), compresslevel=9)  # gzip members concatenate
    bomb.write_bytes(gzip.compress(text[:2000]) + blanks * 64 + gzip.compress(text[2000:]))  # 1 GiB
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", str(bomb)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "a decompression bomb, not a dump" in out.stderr and len(out.stderr.splitlines()) == 1


def test_blank_lines_inside_a_dump_are_read_as_before(tmp_path):
    # blank lines are skipped as a run now: the profile must not change
    path = tmp_path / PARSER.name
    path.write_bytes(PARSER.read_bytes().replace(b"\n\n", b"\n" + b"\n" * 10_000 + b"\n", 3))
    a, b = load_profile(PARSER), load_profile(path)
    assert a.job == b.job and a.names == b.names
    assert {m: len(r) for m, r in a.records.items()} == {m: len(r) for m, r in b.records.items()}


def _with_posix_lines(tmp_path, lines):
    src = PARSER.read_text().splitlines(keepends=True)
    posix = [i for i, line in enumerate(src) if line.startswith("POSIX\t")]
    path = tmp_path / "edited.parser.txt"
    path.write_text("".join(src[:posix[0]] + lines + src[posix[-1] + 1:]))
    return path


def test_a_new_counter_name_in_every_record_is_refused(tmp_path):
    # names x records columns: 60,000 one-line records took 4 GiB before the memory limit stopped it
    lines = [f"POSIX\t0\t{1000 + r}\tPOSIX_X{r}\t1\t/f{r}\t/\text4\n" for r in range(3000)]
    with pytest.raises(InputError, match="name 3000 different counters over 3000 records"):
        load_profile(_with_posix_lines(tmp_path, lines))


def test_a_counter_value_of_megabytes_is_refused(tmp_path):
    lines = ["POSIX\t0\t1000\tPOSIX_OPENS\t" + "7" * (1 << 20) + "\t/f\t/\text4\n"]
    with pytest.raises(InputError, match="malformed counter line: a value of 1048576 characters"):
        load_profile(_with_posix_lines(tmp_path, lines))


def test_the_time_limit_applies_to_text_dumps():
    big = CORPUS / "generated" / "s_big_dxt_1k" / "darshan-dxt-parser.txt.gz"
    require(big.exists(), f"{big} (the shared corpus) is missing")
    with pytest.raises(InputError, match="parsing took longer than 0.05 s and was stopped"):
        load_profile(big, timeout_s=0.05)


def test_an_isolated_ior_parse_returns_the_same_run():
    path = DATA / "ior" / "ior_4.0.0_summary.json"
    from advisor.ingest.ior import load

    assert start_profile(path)().run == load(path).run
    assert json.loads(path.read_text())["tests"]  # the file is the whole summary


def test_names_longer_than_path_max_are_cut_when_read(tmp_path):
    from advisor.ingest.bounded import KEPT, MAX_NAME

    text = PARSER.read_text()
    lines = text.splitlines(keepends=True)
    first = next(line for line in lines if line.startswith("POSIX\t"))
    old = first.split("\t")[5]
    at_limit, beyond = "/" + "a" * (MAX_NAME - 1), "/" + "b" * MAX_NAME
    edited = tmp_path / "names.parser.txt"
    second = next(line.split("\t")[5] for line in lines if line.startswith("POSIX\t") and old not in line)
    edited.write_text(text.replace(f"\t{old}\t", f"\t{at_limit}\t").replace(f"\t{second}\t", f"\t{beyond}\t"))
    names = set(load_profile(edited).names.values())
    assert at_limit in names
    assert f"{beyond[:KEPT]}... [cut: {MAX_NAME + 1:,} characters]" in names
