"""Imbalance facts: per-rank rates from per-rank records (file per process), stragglers against the
median rank, and the skew of shared files from Darshan's slowest/fastest rank counters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.facts import Missing
from advisor.ingest.darshan_log import load
from advisor.profile import DXT_READ, DXT_WRITE, DxtTrace
from tests.profiles import SHARED, facts, job, module

TRACES = Path(__file__).resolve().parents[1] / "traces"
MiB = 1 << 20


def _fpp(seconds: list[float], nbytes: list[int]):
    """One file per rank: rank r wrote nbytes[r] in seconds[r]."""
    return module("POSIX", [(10 + r, r, {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": b, "POSIX_F_WRITE_TIME": s})
                            for r, (s, b) in enumerate(zip(seconds, nbytes))])


def test_a_rank_four_times_slower_is_a_straggler_and_the_wait_is_its_excess():
    ctx = facts(job(_fpp([1.0, 1.0, 1.2, 4.0], [MiB] * 4), nprocs=4))
    assert ctx.get("rank_source") == "counters"
    rates = np.array([MiB / 1.0, MiB / 1.0, MiB / 1.2, MiB / 4.0])
    assert ctx.get("straggler_ranks") == [3]
    assert ctx.get("median_rank_rate") == pytest.approx(np.median(rates))
    assert ctx.get("slowest_rank_rate") == pytest.approx(MiB / 4.0)
    assert ctx.get("realised_rate") == pytest.approx(4 * MiB / 4.0)
    assert ctx.get("ideal_rate") == pytest.approx(4 * np.median(rates))
    assert ctx.get("straggler_cost_s") == pytest.approx(4.0 - np.median([1.0, 1.0, 1.2, 4.0]))


def test_balanced_ranks_have_no_straggler_and_no_cost():
    ctx = facts(job(_fpp([1.0, 1.1, 0.9, 1.0], [MiB] * 4), nprocs=4))
    assert ctx.get("straggler_ranks") == [] and ctx.get("straggler_cost_s") == 0.0
    assert ctx.get("rank_bytes_imbalance") == pytest.approx(1.0) and ctx.get("heavy_ranks") == []


def test_a_rank_moving_most_of_the_data_is_heavy():
    ctx = facts(job(_fpp([1.0, 1.0, 1.0, 5.0], [MiB, MiB, MiB, 5 * MiB]), nprocs=4))
    assert ctx.get("rank_bytes_imbalance") == pytest.approx(5.0)
    assert ctx.get("heavy_ranks") == [3]
    assert ctx.get("data_imbalance_cost_s") == pytest.approx(5.0 - 1.0)
    assert ctx.get("straggler_ranks") == []  # same rate as the others: more data, not slower


def test_one_rank_is_no_comparison():
    with pytest.raises(Missing, match="fewer than two ranks"):
        facts(job(_fpp([1.0], [MiB]), nprocs=1)).get("median_rank_rate")


def test_shared_file_skew_from_the_slowest_and_fastest_rank_counters():
    posix = module("POSIX", [(1, SHARED, {
        "POSIX_WRITES": 40, "POSIX_BYTES_WRITTEN": 40 * MiB, "POSIX_F_WRITE_TIME": 16.0,
        "POSIX_F_SLOWEST_RANK_TIME": 10.0, "POSIX_F_FASTEST_RANK_TIME": 2.0,
        "POSIX_SLOWEST_RANK_BYTES": 10 * MiB, "POSIX_FASTEST_RANK_BYTES": 10 * MiB,
        "POSIX_SLOWEST_RANK": 3, "POSIX_FASTEST_RANK": 0})])
    ctx = facts(job(posix, nprocs=4))
    assert ctx.get("shared_time_imbalance") == pytest.approx((10.0 - 2.0) / 10.0)
    assert ctx.get("shared_imbalance_cost_s") == pytest.approx(10.0 - 16.0 / 4)  # beyond the mean rank
    assert ctx.get("shared_imbalance_files") == ["/scratch/f1"]
    assert ctx.get("shared_bytes_imbalance") == 0.0  # same bytes: the slowness is not the data


def test_real_fpp_log_per_rank_table_is_the_trace_or_the_records():
    profile = load(TRACES / "ior-good-fpp-1m.darshan")
    ctx = facts(profile)
    assert ctx.get("rank_source") == "dxt"  # a complete DXT trace is exact
    trace = profile.dxt["DXT_POSIX"]
    ranks = np.unique(trace.rank)
    assert len(ranks) == 4
    assert ctx.get("realised_rate") <= ctx.get("ideal_rate")
    assert set(ctx.get("straggler_ranks")) <= set(ranks.tolist())


def test_a_tiny_write_to_a_helper_file_during_the_reads_does_not_stretch_a_ranks_write_phase():
    """OMPIO's aggregator (rank 0 of e_mpiio_collective_256k) wrote 40 bytes to its shared-file-
    pointer file in the read phase: its write span ran to the end of the reads, a false straggler."""
    rows = []  # (rank, file, op, length, start, end): 256 x 256 KiB writes in 0-0.1 s, reads in 0.2-0.5 s
    for r in range(4):
        rows += [(r, 10, DXT_WRITE, MiB // 4, 0.1 * i / 256, 0.1 * (i + 1) / 256) for i in range(256)]
        rows += [(r, 10, DXT_READ, MiB // 4, 0.2 + 0.3 * i / 256, 0.2 + 0.3 * (i + 1) / 256) for i in range(256)]
    rows += [(0, 11, DXT_WRITE, 40, 0.45, 0.4501)]  # the helper file, among rank 0's reads
    profile = job(module("POSIX", [(10, SHARED, {"POSIX_WRITES": 1024, "POSIX_READS": 1024,
                                                  "POSIX_BYTES_WRITTEN": 64 * MiB, "POSIX_BYTES_READ": 64 * MiB}),
                                   (11, 0, {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 40})]), nprocs=4)
    rank, rid, op, length, start, end = (np.array(c) for c in zip(*rows))
    profile.dxt["DXT_POSIX"] = DxtTrace("DXT_POSIX", rank.astype(np.int32), rid.astype(np.uint64),
                                        op.astype(np.int8), np.zeros(len(rows), np.int64),
                                        length.astype(np.int64), start, end)
    ctx = facts(profile)
    assert ctx.get("rank_source") == "dxt" and ctx.get("straggler_ranks") == []
    assert ctx.get("straggler_cost_s") == 0.0
