"""Counters checked before they are believed: times no process could spend are bounded by the
union of the calls' intervals (timestamps, DXT) and the run time, and said so in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.config import SiteConfig
from advisor.engine import diagnose
from advisor.facts import FactContext
from advisor.facts.sanity import union_length
from advisor.ingest.darshan_log import load
from advisor.profile import JobInfo, JobProfile, ModuleRecords, Provenance
from tests.conftest import CORPUS
from tests.helpers import require

TRAPS = Path(__file__).parent / "data" / "traps"


def test_union_length_merges_overlaps_per_group_only():
    group = np.array([0, 0, 0, 1, 1])
    start = np.array([0.0, 0.5, 3.0, 0.0, 0.2])
    end = np.array([1.0, 2.0, 4.0, 0.1, 0.3])
    assert union_length(group, start, end, 3) == pytest.approx([3.0, 0.2, 0.0])
    assert union_length(np.array([0]), np.array([2.0]), np.array([1.0]), 1) == pytest.approx([0.0])


def test_eight_threads_summing_to_seven_times_the_run_are_bounded_and_noted():
    d = diagnose(load(TRAPS / "T04.darshan"), SiteConfig())
    s = d.summary
    # POSIX_F_WRITE_TIME summed over the 8 files is 6.563 s in a 0.9076 s run
    assert s["io_time_s"] <= d.job["runtime_s"] and s["io_share"] <= 1.0
    assert s["write_time_s"] == pytest.approx(0.85, abs=0.02)  # the threads wrote side by side for 0.85 s
    (note,) = s["counter_notes"]
    assert "6.9 s per process" in note and "overlapped" in note and "union of the calls' intervals" in note
    assert s["io_layer"] == "POSIX + STDIO"


def test_the_header_time_is_mpiio_time_when_the_job_used_mpiio():
    d = diagnose(load(TRAPS / "T02.darshan"), SiteConfig())
    # MPIIO_F_WRITE_TIME 39.25 s + READ 30.29 s + META over 4 ranks: the ranks waited in collective calls
    assert d.summary["io_layer"].startswith("MPI-IO")
    assert 17.5 < d.summary["io_time_s"] <= d.job["runtime_s"]
    # POSIX_F_READ_TIME 3.4157 s (+ IOR's hints file through STDIO), believed as recorded
    assert d.summary["read_time_s"] == pytest.approx(3.4157 / 4, rel=2e-3)
    assert not d.summary.get("counter_notes")


def _one_rank(counters: dict, runtime: float = 10.0) -> FactContext:
    ids = np.arange(1, 3, dtype=np.uint64)
    ints = {k: np.array(v, np.int64) for k, v in counters.items() if isinstance(v[0], int)}
    floats = {k: np.array(v, np.float64) for k, v in counters.items() if isinstance(v[0], float)}
    rec = ModuleRecords("POSIX", ids, np.zeros(2, np.int64), ints, floats)
    return FactContext(JobProfile(Provenance("hand", "darshan", "test"), JobInfo(nprocs=1, runtime_s=runtime),
                                  records={"POSIX": rec}, names={1: "/a", 2: "/b"}))


def _stamps(start: list, end: list) -> dict:
    out = {}
    for what in ("OPEN", "READ", "WRITE", "CLOSE"):
        out[f"POSIX_F_{what}_START_TIMESTAMP"] = [0.0, 0.0] if what == "READ" else list(start)
        out[f"POSIX_F_{what}_END_TIMESTAMP"] = [0.0, 0.0] if what == "READ" else list(end)
    return out


def test_two_files_written_at_the_same_time_count_once():
    ctx = _one_rank({"POSIX_WRITES": [10, 10], "POSIX_BYTES_WRITTEN": [100, 100],
                     "POSIX_F_WRITE_TIME": [6.0, 6.0], **_stamps([1.0, 2.0], [7.0, 8.0])})
    assert ctx.get("write_time_s") == pytest.approx(7.0)  # [1, 8]: not 12 s
    assert ctx.get("io_share") == pytest.approx(0.7)
    assert "12.0 s per process in a 10.0 s run" in ctx.get("counter_notes")[0]


def test_timestamps_outside_the_run_and_bytes_without_calls_are_noted():
    ctx = _one_rank({"POSIX_WRITES": [10, 0], "POSIX_BYTES_WRITTEN": [100, 4096],
                     "POSIX_F_WRITE_TIME": [1.0, 0.0], **_stamps([1.0, 0.0], [2.0, 30.0])})
    notes = ctx.get("counter_notes")
    assert any("1 POSIX record(s) have timestamps more than 1.0 s after the end of the run" in n for n in notes)
    assert any("1 POSIX record(s) have bytes written but no write operation" in n for n in notes)
    assert ctx.get("write_time_s") == pytest.approx(1.0)  # consistent counters are believed


def test_times_without_timestamps_are_bounded_by_the_run_time_only():
    ctx = _one_rank({"POSIX_WRITES": [10, 10], "POSIX_BYTES_WRITTEN": [100, 100],
                     "POSIX_F_WRITE_TIME": [6.0, 6.0]})
    assert ctx.get("write_time_s") == pytest.approx(10.0) and ctx.get("io_share") == 1.0


def test_pydarshan_example_metadata_time_is_never_a_share_over_the_run(corpus):
    log = CORPUS / "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/dxt.darshan"
    require(log.exists(), f"{log} not found")
    d = diagnose(load(log), SiteConfig())  # 214 FIFOs whose opens block side by side: 3.1 h summed in 24.5 min
    md = [f for f in d.findings if f.code in ("MD001", "MD002")]
    assert md and all(f.cost_s <= d.job["runtime_s"] for f in md)
    assert all(f.evidence.get("meta_share", 0) <= 1.0 for f in md)
    assert "3.1 h per process" in d.summary["counter_notes"][0]


def test_a_negative_time_counts_as_zero_and_is_said_in_diagnose_and_show():
    """mpi-io-test 3.1.5 on BG/Q (review12): POSIX_F_META_TIME -221.5 s in a 2 s run. It was counted as 0
    without a word; the one I/O time stays MPI-IO's 449 ms and both reports now say why POSIX's is lower."""
    from advisor.report.show import show_entry

    log = Path(__file__).parent / "data" / "mpi-io-test-ppc64-3.1.5.darshan"
    profile = load(log)
    notes = FactContext(profile).get("counter_notes")
    assert any("negative metadata time (POSIX_F_META_TIME -3.7 min" in n for n in notes)
    d = diagnose(profile, SiteConfig())
    assert d.summary["io_time_s"] == pytest.approx(0.4494, abs=1e-3) and d.summary["meta_time_s"] >= 0
    assert d.summary["counter_notes"] == notes
    assert show_entry(profile)["summary"]["counter_notes"] == notes
