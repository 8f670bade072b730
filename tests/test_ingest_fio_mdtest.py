"""fio JSON and mdtest text outputs as inputs: the corpus's runs and fio runs made here."""

from __future__ import annotations

import calendar

import json
import subprocess
import sys

import pytest

from advisor.errors import InputError
from advisor.ingest import detect, fio, mdtest
from tests.conftest import CORPUS
from tests.helpers import require_command

GENERATED = CORPUS / "generated"


def _show_json(path) -> dict:
    out = subprocess.run([sys.executable, "-m", "advisor", "show", "--json", "-", str(path)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["results"][0]


def test_the_corpus_fio_run_gives_its_bandwidth_iops_and_latency(corpus):
    path = GENERATED / "k_fio_randwrite_4k" / "fio.json"
    assert detect(path).name == "fio"
    (m,) = fio.load(path).fio.measurements
    assert (m.job, m.direction, m.rw, m.block_size, m.io_bytes) == ("randwrite4k", "write", "randwrite", "4k",
                                                                    64 << 20)
    assert (m.bw_kib_s, round(m.iops, 2), m.runtime_ms) == (923042, 230760.56, 71)
    assert m.clat_percentiles_us["99.000000"] > m.clat_percentiles_us["50.000000"] > 0


def test_several_jobs_and_groups_of_a_json_plus_run(tmp_path):
    """A real fio run here: two jobs in two groups, json+ (latency bins), a text line before the JSON."""
    exe = require_command("fio", "apt-get install fio (make system-deps)")
    data = tmp_path / "f"
    out = subprocess.run([exe, "--name=w", "--rw=write", "--bs=64k", "--size=4m", f"--filename={data}",
                          "--name=r", "--rw=randread", "--bs=4k", "--size=2m", f"--filename={data}", "--new_group",
                          "--output-format=json+"], capture_output=True, text=True, check=True, cwd=tmp_path)
    path = tmp_path / "fio.json"
    path.write_text(out.stdout)
    result = _show_json(path)
    rows = [(m["job"], m["group"], m["direction"], m["io_bytes"]) for m in result["measurements"]]
    assert rows == [("w", 0, "write", 4 << 20), ("r", 1, "read", 2 << 20)]
    assert all(m["bw_kib_s"] > 0 and m["iops"] > 0 for m in result["measurements"])


def test_fio_json_cut_short_is_one_line(tmp_path):
    path = tmp_path / "fio.json"
    path.write_text('{"fio version" : "fio-3.33", "jobs" : [ {"jobname": "x", ')
    with pytest.raises(InputError, match="truncated"):
        fio.load(path)


@pytest.mark.parametrize("case", ["g_mdtest_files_n2000", "g2_mdtest_n2000_default_mem_partial"])
def test_mdtest_summary_rows(corpus, case):
    path = GENERATED / case / "mdtest.txt"
    assert detect(path).name == "mdtest"
    run = mdtest.load(path).mdtest
    assert (run.version, run.tasks, run.nodes) == ("mdtest-4.1.0+dev", 4, 1)
    ops = {m.operation: m for m in run.measurements}
    assert {"File creation", "File stat", "File removal", "Tree creation"} <= set(ops)
    assert all(m.unit == "ops/s" and m.max >= m.mean >= m.min > 0 for m in run.measurements)


def test_mdtest_start_and_run_time_from_its_own_lines(corpus):
    """mdtest prints "-- started at 11/21/2026 18:52:48 --" and "-- finished at ... --" (review13:
    the run time was shown as 0 s and the start as unknown)."""
    job = mdtest.load(GENERATED / "g_mdtest_files_n2000" / "mdtest.txt").job
    assert job.start_time == calendar.timegm((2026, 11, 21, 18, 52, 48, 0, 0, 0))
    assert job.end_time >= job.start_time and job.runtime_s == job.end_time - job.start_time


def test_mdtest_show_json(corpus):
    result = _show_json(GENERATED / "g_mdtest_files_n2000" / "mdtest.txt")
    assert result["mdtest"]["items"] == 8000
    creation = next(m for m in result["measurements"] if m["operation"] == "File creation")
    assert (creation["mean"], creation["unit"]) == (29176.321, "ops/s")


def test_an_mdtest_output_without_summary_is_one_line(corpus, tmp_path):
    text = (GENERATED / "g_mdtest_files_n2000" / "mdtest.txt").read_text()
    cut = tmp_path / "mdtest.txt"
    cut.write_text(text[:text.index("SUMMARY")])
    with pytest.raises(InputError, match="no SUMMARY table"):
        mdtest.load(cut)


def test_an_mdtest_output_cut_inside_its_summary_keeps_the_rows_and_says_so(corpus, tmp_path):
    text = (GENERATED / "g_mdtest_files_n2000" / "mdtest.txt").read_text()
    cut = tmp_path / "mdtest.txt"
    cut.write_text(text[:text.index("File removal", text.index("SUMMARY rate"))])
    run = mdtest.load(cut).mdtest
    assert [m.operation for m in run.measurements if m.unit == "ops/s"][-1] == "File read"
    assert any(n.startswith("truncated") for n in run.notes)
    assert not any(n.startswith("truncated") for n in mdtest.load(GENERATED / "g_mdtest_files_n2000" /
                                                                  "mdtest.txt").mdtest.notes)
