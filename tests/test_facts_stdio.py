"""STDIO-only jobs diagnosed in full: request sizes from the STDIO counters, flushes that empty
the buffer early, and the POSIX-only checks listed as not checked instead of firing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.config import SiteConfig
from advisor.engine import diagnose
from advisor.ingest.darshan_log import load
from advisor.profile import JobInfo, JobProfile, ModuleRecords, Provenance

TRAPS = Path(__file__).parent / "data" / "traps"


def test_a_job_without_posix_records_gets_its_small_stdio_calls_found():
    d = diagnose(load(TRAPS / "T03.darshan"), SiteConfig())
    found = {f.code: f for f in d.findings}
    small = found["STD001"]
    # STDIO_WRITES=400000 STDIO_BYTES_WRITTEN=40000000, the same for reads
    assert small.evidence["stdio_write_calls"] == 400000 and small.evidence["stdio_write_mean_size"] == 100
    assert small.evidence["stdio_read_calls"] == 400000 and small.evidence["stdio_read_mean_size"] == 100
    # STDIO_F_WRITE_TIME 0.0639 + STDIO_F_READ_TIME 0.0314, spent in 4 KiB buffer requests: all
    # but a 4 KiB request's transfer (at 2 GiB/s beside 100 us of latency) is what 1 MiB requests save
    assert small.evidence["stdio_write_request_size"] == 4096
    saving = (1 - 4096 / 2**20) * 100e-6 / (100e-6 + 4096 / 2**31)
    assert small.cost_s == pytest.approx((0.063902 + 0.031358) * saving, rel=1e-3)
    assert found["MPI001"].cost_s == pytest.approx(small.cost_s)  # the same requests, the same model
    assert "[thresholds] stdio_buffer_bytes" in {a["key"] for a in small.assumptions}  # listed once by the reporters
    assert small.files == ["/scratch/T03/data.bin"] and "setvbuf" in small.recommendation.commands[0]
    assert "MPI001" in found  # the data went through STDIO at all
    posix_only = {"IO001", "IO002", "IO010", "IO011", "IO020"}
    assert not posix_only & set(found)
    skipped = {n.check.split()[0]: n.reason for n in d.not_checked}
    assert all(skipped[code] == "no POSIX records in the log" for code in posix_only & set(skipped))
    assert {"IO020", "IO010"} <= set(skipped)


def _stdio_job(writes: int, nbytes: int, flushes: int, meta_s: float = 1.0) -> JobProfile:
    counters = {"STDIO_WRITES": [writes], "STDIO_BYTES_WRITTEN": [nbytes], "STDIO_FLUSHES": [flushes],
                "STDIO_OPENS": [1], "STDIO_READS": [0], "STDIO_BYTES_READ": [0]}
    rec = ModuleRecords("STDIO", np.array([5], np.uint64), np.array([0]),
                        {k: np.array(v, np.int64) for k, v in counters.items()},
                        {"STDIO_F_WRITE_TIME": np.array([2.0]), "STDIO_F_META_TIME": np.array([meta_s])})
    return JobProfile(Provenance("hand", "darshan", "test"), JobInfo(nprocs=1, runtime_s=20.0),
                      records={"STDIO": rec}, names={5: "/out/particles.txt"})


def test_a_flush_per_record_is_a_flush_storm_and_a_flush_per_buffer_is_not():
    found = {f.code: f for f in diagnose(_stdio_job(100_000, 8_000_000, 100_000), SiteConfig()).findings}
    storm = found["STD002"]
    assert storm.evidence["stdio_bytes_per_flush"] == 80 and storm.files == ["/out/particles.txt"]
    # all the metadata time but the one open's share: 100,000 of 100,001 calls
    assert storm.cost_s == pytest.approx(100_000 / 100_001)
    quiet = diagnose(_stdio_job(100_000, 8_000_000, 1_000), SiteConfig())  # 8 KB per flush: a full buffer
    assert "STD002" not in {f.code for f in quiet.findings}


def test_large_stdio_calls_are_not_small_io():
    """4 MiB fwrite calls pass the buffer: neither small calls nor bulk STDIO data cost anything
    (MPI001 was half the STDIO time whatever the calls)."""
    d = diagnose(_stdio_job(2_000, 2_000 * (4 << 20), 0), SiteConfig())
    assert not {"STD001", "MPI001"} & {f.code for f in d.findings}


def test_stdio_facts_of_a_hand_built_job():
    from advisor.facts import FactContext

    ctx = FactContext(_stdio_job(100_000, 8_000_000, 100_000), SiteConfig())
    assert ctx.get("stdio_write_calls") == 100_000 and ctx.get("stdio_write_mean_size") == 80
    assert ctx.get("stdio_read_calls") == 0
    assert ctx.get("stdio_flushes") == 100_000 and ctx.get("stdio_bytes_per_flush") == 80
    assert ctx.get("stdio_buffer_bytes") == 4096  # glibc's default, assumed
    assert ctx.get("stdio_small_files") == ctx.get("stdio_flush_files") == ["/out/particles.txt"]
    # 2 s of writes in 4 KiB buffer requests (the calls are 80 B): nearly all latency
    assert ctx.get("stdio_write_request_size") == 4096
    assert ctx.get("stdio_small_write_cost_s") == pytest.approx(
        2.0 * (1 - 4096 / 2**20) * 100e-6 / (100e-6 + 4096 / 2**31))


def test_bulk_data_in_large_fwrite_calls_is_not_reported(corpus):
    """pydarshan's partial_data_stdio: 16.0 GiB in 1,021 fwrite calls of 16 MiB, 99.8 % of the
    bytes through STDIO. glibc passes calls larger than the buffer straight to write(): nothing is
    lost to STDIO, and MPI001 (once half the STDIO time, 2.7 s, high) is not reported."""
    log = corpus / "darshan-logs/darshan_logs/partial_data_stdio/partial_data_stdio.darshan"
    d = diagnose(load(log), SiteConfig())
    assert not {"MPI001", "STD001"} & {f.code for f in d.findings}
