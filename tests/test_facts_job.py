"""Job, interface and partial-log facts: the numbers each computes, on a hand-built job and on
real logs (traces/), checked against the counters they come from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.facts import Missing, NotApplicable
from advisor.ingest.darshan_log import load
from advisor.profile import ModuleInfo
from tests.profiles import SHARED, facts, job, module

TRACES = Path(__file__).resolve().parents[1] / "traces"
MiB = 1 << 20
RANKS = 4


def _posix_and_stdio():
    """A shared file read and written by all ranks, rank 0's own file, and a STDIO log."""
    posix = module("POSIX", [
        (1, SHARED, {"POSIX_BYTES_READ": 4 * MiB, "POSIX_BYTES_WRITTEN": 8 * MiB, "POSIX_READS": 4,
                     "POSIX_WRITES": 8, "POSIX_OPENS": 4, "POSIX_F_READ_TIME": 2.0, "POSIX_F_WRITE_TIME": 4.0,
                     "POSIX_F_META_TIME": 1.0}),
        (2, 0, {"POSIX_BYTES_WRITTEN": MiB, "POSIX_WRITES": 1, "POSIX_OPENS": 1, "POSIX_F_WRITE_TIME": 0.5}),
    ])
    stdio = module("STDIO", [(3, 0, {"STDIO_BYTES_WRITTEN": 1000, "STDIO_WRITES": 10, "STDIO_OPENS": 1,
                                     "STDIO_F_WRITE_TIME": 0.1})])
    return posix, stdio


def test_job_totals_and_times_per_process():
    ctx = facts(job(*_posix_and_stdio(), nprocs=RANKS, runtime_s=100.0))
    assert ctx.get("bytes_read") == 4 * MiB
    assert ctx.get("bytes_written") == 9 * MiB + 1000
    # Darshan's times are summed over ranks: per process, they are divided by the ranks
    assert ctx.get("read_time_s") == pytest.approx(2.0 / RANKS)
    assert ctx.get("write_time_s") == pytest.approx((4.0 + 0.5 + 0.1) / RANKS)
    assert ctx.get("meta_time_s") == pytest.approx(1.0 / RANKS)
    assert ctx.get("io_time_s") == pytest.approx((2.0 + 4.0 + 0.5 + 0.1 + 1.0) / RANKS)
    assert ctx.get("io_share") == pytest.approx(ctx.get("io_time_s") / 100.0)
    assert ctx.get("io_layer") == "POSIX + STDIO" and ctx.get("counter_notes") == []
    assert ctx.get("files_accessed") == 3 and ctx.get("nprocs") == RANKS
    assert ctx.get("modules") == ["POSIX", "STDIO"] and ctx.get("interfaces") == ["POSIX", "STDIO"]


def test_run_time_from_the_clock_or_missing():
    profile = job(*_posix_and_stdio())
    profile.job.runtime_s, profile.job.start_time, profile.job.end_time = 0.0, 1000.0, 1042.5
    assert facts(profile).get("runtime_s") == 42.5
    profile.job.end_time = None
    with pytest.raises(Missing, match="no run time"):
        facts(profile).get("runtime_s")


def test_stdio_share_and_posix_sharing_without_mpiio():
    ctx = facts(job(*_posix_and_stdio(), nprocs=RANKS))
    assert ctx.get("stdio_bytes") == 1000
    assert ctx.get("stdio_share") == pytest.approx(1000 / (13 * MiB + 1000))
    assert ctx.get("stdio_time_s") == pytest.approx(0.1 / RANKS)
    assert ctx.get("stdio_files") == ["/scratch/f3"]
    # only the file all ranks share counts; rank 0's own file is not shared
    assert ctx.get("posix_shared_bytes_without_mpiio") == 12 * MiB
    assert ctx.get("posix_shared_files_without_mpiio") == ["/scratch/f1"]


def test_partial_modules_are_named_and_other_inputs_are_not_judged():
    profile = job(*_posix_and_stdio())
    profile.modules["POSIX"] = ModuleInfo("POSIX", records=2, partial=True)
    assert facts(profile).get("partial_modules") == ["POSIX"]
    profile.records, profile.modules = {}, {}
    with pytest.raises(NotApplicable):
        facts(profile).get("modules")


@pytest.mark.parametrize("log", ["ior-small-shared-4k.darshan", "ior-good-fpp-1m.darshan"])
def test_job_facts_of_real_logs_match_their_counters(log):
    profile = load(TRACES / log)
    ctx = facts(profile)
    posix = profile.records["POSIX"]
    stdio_written = int(profile.records["STDIO"].get("STDIO_BYTES_WRITTEN").sum()) if "STDIO" in profile.records else 0
    assert ctx.get("bytes_written") == int(posix.get("POSIX_BYTES_WRITTEN").sum()) + stdio_written
    assert ctx.get("bytes_read") >= int(posix.get("POSIX_BYTES_READ").sum())
    assert ctx.get("nprocs") == profile.job.nprocs == 4
    assert 0 < ctx.get("io_share") <= 1 and ctx.get("io_share") == pytest.approx(
        min(ctx.get("io_time_s") / ctx.get("runtime_s"), 1.0))
    names = {profile.name_of(i) for i in np.unique(posix.ids)}
    assert ctx.get("files_accessed") >= len({n for n in names if not n.startswith("<")})
    assert ctx.get("modules") == sorted(profile.modules)
    assert ctx.get("interfaces") == [m for m in ("POSIX", "STDIO", "MPI-IO") if m in profile.records]


def test_the_darshan_helpers_every_fact_module_reads_records_through():
    from advisor.facts._darshan import col, data_mask, dxt, maybe, records, top_files, total
    from advisor.profile import JobInfo, JobProfile, Provenance

    posix = module("POSIX", [(1, 0, {"POSIX_BYTES_WRITTEN": 10}), (2, 0, {"POSIX_BYTES_WRITTEN": 30}),
                             (3, 0, {"POSIX_BYTES_WRITTEN": 99})])
    ctx = facts(job(posix, names={3: "<STDERR>"}))
    rec = records(ctx, "POSIX")
    assert data_mask(ctx, rec).tolist() == [True, True, False]  # the standard streams are no data files
    assert total(rec, "BYTES_WRITTEN") == 139 and col(rec, "NO_SUCH_COUNTER").tolist() == [0.0, 0.0, 0.0]
    assert top_files(ctx, rec, np.array([10.0, 30.0, 0.0])) == ["/scratch/f2", "/scratch/f1"]
    assert maybe(ctx, "MPI-IO") is None
    with pytest.raises(Missing, match="no MPI-IO records in the log"):
        records(ctx, "MPI-IO")
    with pytest.raises(Missing, match=r"no DXT_POSIX trace \(run with DXT_ENABLE_IO_TRACE=1\)"):
        dxt(ctx)
    ior_like = facts(JobProfile(Provenance("x", "ior", "test"), JobInfo(nprocs=2)))
    with pytest.raises(NotApplicable, match="not a Darshan-like input"):
        maybe(ior_like, "POSIX")
