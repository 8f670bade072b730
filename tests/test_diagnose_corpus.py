"""The done-when list, case by case, on the real corpus (profiles diagnosed once per session)."""

from __future__ import annotations

import io
import json
from functools import cache
from pathlib import Path

import jsonschema
import pytest

from advisor import api
from advisor.config import SiteConfig
from advisor.findings import Diagnosis
from advisor.report.terminal import console, print_report
from tests.conftest import CORPUS
from tests.helpers import require

SCHEMA = json.loads((Path(api.__file__).parent / "schemas" / "diagnosis-v1.json").read_text())
GEN = "generated"
PYDARSHAN = "darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input"
LOGS = "darshan-logs/darshan_logs"


@cache
def diagnosis(rel: str) -> Diagnosis:
    path = CORPUS / rel
    require(path.exists(), f"corpus log {path} not found")
    return api.diagnose_path(path, SiteConfig())


def codes(rel: str, severities=("high", "warn", "info")) -> set[str]:
    d = diagnosis(rel)
    assert d.error is None, d.error
    return {f.code for f in d.findings if f.severity in severities}


def case(name: str) -> str:
    return f"{GEN}/{name}/case.darshan"


# What each generated case's access pattern implies (README of generated/).
EXPECTED = {
    "b_small_io_shared_4k": {"IO001", "IO003"},
    "c_random_shared_64k": {"IO010"},
    "d_mpiio_independent_256k": {"MPI003"},
    "f_hdf5_independent_256k": {"HDF001"},  # the independent MPI-IO below, said in HDF5 terms
    "g_mdtest_files_n2000": {"MD001", "MD003"},
    "g2_mdtest_n2000_default_mem_partial": {"DAR001", "MD001"},
    "i_misaligned_1000000": {"IO020"},
    "j_imbalance_rank0_10x": {"IMB002"},
    "j2_straggler_rank0_slow": {"IMB001"},
    "k_fio_randwrite_4k": {"IO001", "IO011"},
    "k3_dd_4k_writes": {"IO001"},
    "n_fsync_per_write_Y_4k": {"MD010"},
    "o_small_io_odirect_4k": {"IO001", "IO003"},
    "r_stonewall_D1_wearout": {"IO001", "DAR001"},
    "s_big_dxt_1k": {"IO001", "IO002", "IO020"},
}
# Collective I/O must not be blamed for missing collectives; good runs get no high finding.
NOT_EXPECTED = {
    "e_mpiio_collective_256k": {"MPI003", "MPI004"},
    "f2_hdf5_collective_256k": {"MPI003", "MPI004", "HDF001"},
    "h2_fsync_e": {"MD010"},
    "j_imbalance_rank0_10x": {"MD010", "IMB001"},
    "a_good_fpp_posix_1m": {"IO001", "IO002", "IO003", "IO004"},
    "h1_reorder_read_neighbor_C": {"IO001", "IO002", "IO010"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_generated_case_gets_the_findings_its_pattern_implies(name):
    found = codes(case(name))
    assert EXPECTED[name] <= found, f"{name}: expected {sorted(EXPECTED[name])}, found {sorted(found)}"


@pytest.mark.parametrize("name", sorted(NOT_EXPECTED))
def test_generated_case_does_not_get_wrong_findings(name):
    found = codes(case(name))
    assert not NOT_EXPECTED[name] & found, f"{name}: {sorted(NOT_EXPECTED[name] & found)}"


@pytest.mark.parametrize("name", ["a_good_fpp_posix_1m", "o2_good_fpp_odirect_1m"])
def test_good_cases_have_no_high_finding(name):
    assert not codes(case(name), ("high",))


def test_bad_ost_found_and_good_twin_clean():
    bad = diagnosis(f"{PYDARSHAN}/sample-badost.darshan")
    (finding,) = [f for f in bad.findings if f.code == "LUS010"]
    assert finding.severity == "high" and finding.evidence["slow_osts"] == [14]
    assert finding.ranks and finding.files
    assert "lfs df -h | grep OST000e" in finding.recommendation.commands  # OST names are hex
    assert any(c.startswith("lctl set_param osp.*-OST000e-osc-MDT*.max_create_count=0")
               for c in finding.recommendation.commands)
    assert "LUS010" not in codes(f"{PYDARSHAN}/sample-goodost.darshan")


@pytest.mark.parametrize("rel", [f"{LOGS}/imbalanced_io/imbalanced-io.darshan",
                                 f"{LOGS}/skew_io/skew-app.darshan",
                                 f"{LOGS}/skew_io/skew-autobench-ior.darshan"])
def test_exact_1mib_requests_are_not_small(rel):
    assert not {"IO001", "IO002", "IO003", "IO004"} & codes(rel)


def test_imbalanced_io_root_cause_is_the_single_stripe():
    d = diagnosis(f"{LOGS}/imbalanced_io/imbalanced-io.darshan")
    (finding,) = [f for f in d.findings if f.code == "LUS002"]
    assert finding.severity == "high" and finding.category == "striping"
    assert finding.evidence["single_writer_shared"]["share"] > 0.99
    assert finding.fix["transform"] == "stripe" and finding.fix["count"] > 1
    assert any(c.startswith("lfs setstripe -c ") for c in finding.recommendation.commands)
    assert "DAR001" in codes(f"{LOGS}/imbalanced_io/imbalanced-io.darshan")  # also a partial log


def test_tiny_stdio_is_not_a_finding():
    # every MPI log has a few hundred bytes on <STDOUT>: never an STDIO finding
    assert "MPI001" not in codes(case("a_good_fpp_posix_1m"))


def test_severity_follows_cost():
    for rel in (case("b_small_io_shared_4k"), f"{LOGS}/imbalanced_io/imbalanced-io.darshan"):
        d = diagnosis(rel)
        for f in d.findings:
            if f.severity == "high" and f.cost_s:
                assert f.cost_s / d.job["runtime_s"] >= 0.10, f.code


def test_json_is_valid_against_the_schema():
    for rel in (case("b_small_io_shared_4k"), f"{PYDARSHAN}/sample-badost.darshan"):
        doc = json.loads(json.dumps(diagnosis(rel).to_dict()))
        jsonschema.validate(doc, SCHEMA)
        assert doc["schema"] == "ioadvisor/diagnosis/v1" and doc["not_checked"] is not None


def test_unreadable_dxt_goes_to_not_checked_and_counters_still_work():
    d = diagnosis(case("x_dxt_v2_devel_darshan"))
    assert d.error is None and d.summary["bytes_written"] >= 268435456
    (note,) = d.source["notes"]  # the trace is said to be unread, in every reporter
    assert note.startswith("DXT_POSIX: trace data unreadable") and "counters of the other modules" in note
    buffer = io.StringIO()
    print_report(d, console(buffer))
    assert "note: DXT_POSIX: trace data unreadable" in " ".join(buffer.getvalue().split())
    assert {f.code for f in d.findings if f.severity == "high"} == set()
