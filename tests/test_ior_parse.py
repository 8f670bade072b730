"""IOR output parsing: versions, verbosity, JSON recovery, CSV, IO500 captures, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.ingest import load_profile
from advisor.ingest.ior import load_run, parse_ior
from advisor.ingest.ior.model import FPP, SHARED
from advisor.ingest.ior.options import params_from_command_line, parse_human, parse_size

DATA = Path(__file__).parent / "data" / "ior"


def test_ior_3_3_text_every_parameter():
    run = load_run(DATA / "ior_text_3.3.0.txt")
    assert (run.format, run.version) == ("ior-text", "3.3.0")
    assert run.command_line.startswith("ior -w -r -t 1m -b 16m -s 2")
    (test,) = run.tests
    p = test.params
    assert (p.api, p.access, p.collective, p.tasks, p.nodes, p.tasks_per_node) == ("POSIX", SHARED, False, 2, 1, 2)
    assert (p.transfer_size, p.block_size, p.segments, p.repetitions) == (1 << 20, 16 << 20, 2, 1)
    assert p.fsync is True and p.reorder_tasks is True and p.random_offsets is False
    assert p.aggregate_size == 64 << 20
    w = test.summaries["write"]
    assert (w.max_mib, w.min_mib, w.mean_mib, w.source) == (74.41, 74.41, 74.41, "summary")
    assert test.max_lines == {"write": 74.41, "read": 17310.05}
    assert [it.operation for it in test.iterations] == ["write", "read"]
    assert test.iterations[0].total_s == pytest.approx(0.860077)


def test_ior_4_verbose_commencing_lines_in_table():
    (test,) = load_run(DATA / "ior_text_4.0.0_v.txt").tests
    assert [(it.operation, it.bw_mib) for it in test.iterations] == [("write", 110.29), ("read", 7245.0)]
    assert test.summaries["read"].max_mib == 7245.42


def test_invalid_json_of_ior_4_verbose_is_recovered_and_said():
    run = load_run(DATA / "ior_json_stdout-v.txt")
    assert run.format == "ior-json" and any("invalid JSON" in n for n in run.notes)
    (test,) = run.tests
    assert [it.bw_mib for it in test.iterations if it.operation == "write"] == [4427.2901, 2749.2365]
    s = test.summaries["read"]
    assert (s.max_mib, s.min_mib, s.mean_mib, s.repetitions) == (29407.9159, 27391.3731, 28399.6445, 2)
    assert test.params.tasks == 2 and test.params.transfer_size == 1 << 20


def test_json_cut_short_is_refused_in_one_line():
    with pytest.raises(InputError) as err:
        load_run(DATA / "ior_json_cut.json")
    assert "cut short" in err.value.reason


def test_csv_results():
    (test,) = load_run(DATA / "ior_csv_4.0.0.txt").tests
    assert test.params.tasks == 2 and test.params.block_size == 16 << 20
    assert test.summaries["write"].max_mib == 1993.8311 and test.summaries["write"].source == "results"


def test_csv_row_cut_short_is_not_a_result(tmp_path):
    """A CSV output that ends inside its read row (review13): the row's last number may be cut
    (15554 of 15554.7128), so the row is dropped and said, and the complete write row stays."""
    text = (DATA / "ior_csv_4.0.0.txt").read_text()
    cut = tmp_path / "ior.csv"
    cut.write_text(text[:text.index("read,") + len("read,6300")])
    run = load_run(cut)
    (test,) = run.tests
    assert set(test.summaries) == {"write"} and test.summaries["write"].max_mib == 1993.8311
    assert any("the output ends inside it" in n for n in run.notes)
    cut.write_text(text[:text.index("write,") + len("write,1993")])
    with pytest.raises(InputError, match="without any result row"):
        load_run(cut)


def test_what_ior_reset_and_the_exact_sizes_win():
    """IO500 on CHFS (review13): -e was asked for, but IOR warned "fsync() not supported in selected
    backend. Using value of 0." and ran without it; the block is "9.46 TiB" in the parameters and
    10158080000 KiB, exactly, in the result row (IO500 prints no summary table)."""
    (test,) = load_run(DATA / "io500_chfs_easy_write.txt").tests
    p = test.params
    assert p.fsync is False and "-e" in test.command_line.split()
    assert p.block_size == 9920000 << 20 and p.aggregate_size == 4992899481600000  # IOR's "Expected" size
    (rnd,) = load_run(DATA / "io500_rnd4k_read.txt").tests
    assert (rnd.params.block_size, rnd.params.aggregate_size) == (4096, 4096 * 1000000 * 410)  # "1.53 TiB"
    (hard,) = load_run(DATA / "io500_no_summary.txt").tests
    assert hard.params.fsync is True  # -e honoured: no reset warning


def test_ior_2_10_script_with_two_tests_and_a_headerless_table():
    run = load_run(DATA / "ior_2.10_two_tests.txt")
    shared, fpp = run.tests
    assert (shared.params.access, fpp.params.access) == (SHARED, FPP)
    assert len(shared.iterations) == len(fpp.iterations) == 8
    assert fpp.summaries["write"].max_mib == 2356.01 == fpp.max_lines["write"]
    assert shared.params.tasks == 2048 and shared.params.tasks_per_node == 1
    # IOR 2.x never printed a "Summary of all tests" block: its absence is not a cut output (review12)
    assert any("IOR 2.10.0.1 prints no 'Summary of all tests' block" in n for n in run.notes)
    assert not any("cut short" in n for n in run.notes)


def test_launcher_prefix_is_stripped_and_said():
    run = load_run(DATA / "ior_2.10_stdout_prefix.txt")
    assert any("prefixes stripped" in n for n in run.notes)
    (test,) = run.tests
    assert test.summaries["read"].max_mib == 2939.11 and test.params.repetitions == 4


def test_io500_noise_before_the_header():
    run = load_run(DATA / "io500_psm_noise.txt")
    assert any("not IOR output" in n for n in run.notes)
    (test,) = run.tests
    assert test.params.api == "MPIIO" and test.params.access == FPP
    assert test.summaries["write"].max_mib == 23247.59


def test_io500_capture_without_summary():
    run = load_run(DATA / "io500_no_summary.txt")
    (test,) = run.tests
    s = test.summaries["write"]
    assert (s.max_mib, s.source) == (2396482.0, "results")
    assert test.iterations[0].stonewall.startswith("stonewalling pairs accessed min: 457")
    assert test.params.direct_io is True and test.params.stonewall_s == 300
    assert test.params.tasks == 16640 and test.params.nodes == 2080


def test_table_only_fragment_takes_tasks_from_mpirun():
    (test,) = load_run(DATA / "tutorial_fragment_2.txt").tests
    assert test.params.tasks == 64 and test.params.access == FPP and test.params.segments == 16
    assert test.summaries["read"].max_mib == 149473


def test_truncated_mid_table_keeps_what_was_printed(tmp_path):
    text = (DATA / "ior_2.10_two_tests.txt").read_text()
    cut = text[: text.index("write     2354.37") + 20]  # the last row is cut mid-line
    run = parse_ior(cut)
    assert len(run.tests) == 2 and len(run.tests[1].iterations) == 2
    assert any("cut short" in n for n in run.notes)


def test_truncated_before_results_is_refused(tmp_path):
    text = (DATA / "ior_text_3.3.0.txt").read_text()
    path = tmp_path / "cut.txt"
    path.write_text(text[: text.index("Results:")])
    with pytest.raises(InputError) as err:
        load_profile(path)
    assert "without any result" in err.value.reason


def test_foreign_text_is_not_an_ior_log(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Meeting notes\nIOR is a benchmark; we ran it yesterday.\n")
    with pytest.raises(InputError) as err:
        load_profile(path)
    assert "not a recognised input" in str(err.value) and "\n" not in str(err.value)


def test_profile_job_fields():
    profile = load_profile(DATA / "ior_text_3.3.0.txt")
    assert profile.source.format == "ior-text" and profile.job.nprocs == 2
    assert profile.job.exe.startswith("ior -w -r") and profile.job.runtime_s == 1.0
    assert profile.run.tests[0].params.api == "POSIX"


@pytest.mark.parametrize("text, size", [("1m", 1 << 20), ("2048k", 2 << 20), ("47008", 47008), ("4G", 4 << 30)])
def test_sizes(text, size):
    assert parse_size(text) == size


def test_printed_sizes():
    assert parse_human("47008 bytes") == 47008 and parse_human("1 MiB") == 1 << 20
    assert parse_human("9.46 TiB") == round(9.46 * (1 << 40))


def test_command_line_options():
    p = params_from_command_line(
        "mpirun -np 128 /opt/IOR -a MPIIO -c -F -C -e -Y -z -i2 -t 4m -b 1g -s 3 -w "
        "-O lustreStripeCount=8 --posix.odirect -D 300")
    assert (p.tasks, p.api, p.collective, p.access, p.reorder_tasks) == (128, "MPIIO", True, FPP, True)
    assert (p.fsync, p.fsync_per_write, p.random_offsets, p.repetitions) == (True, True, True, 2)
    assert (p.transfer_size, p.block_size, p.segments, p.stripe_count) == (4 << 20, 1 << 30, 3, 8)
    assert (p.write, p.read, p.direct_io, p.stonewall_s) == (True, False, True, 300.0)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir() if p.suffix != ".md"))
def test_cut_or_damaged_output_never_raises_anything_but_input_error(name):
    text = (DATA / name).read_text()
    for k in range(0, len(text), max(1, len(text) // 40)):
        for variant in (text[:k], text[k:], text[:k] + "\x00\r\ngarbage 12 x\n" + text[k:]):
            try:
                run = parse_ior(variant, name)
            except InputError as exc:
                assert "\n" not in str(exc)
                continue
            assert all(s.max_mib >= s.min_mib for t in run.tests for s in t.summaries.values())


def test_a_run_shorter_than_its_whole_second_stamps_lasts_its_phases():
    """review11: IOR -vvv -t 1m -b 4m wrote and read 16 MiB in 5.6 ms; Began and Finished name the same
    second, and the header said 'run time 0 s'. The run lasted at least its phases' total times."""
    from tests.conftest import CORPUS
    from tests.helpers import require

    path = CORPUS / "generated" / "l3_verbose_vvv" / "ior.txt"
    require(path.exists(), f"{path} not found")
    profile = load_profile(path)
    assert abs(profile.job.runtime_s - (0.004868 + 0.000705)) < 1e-6
