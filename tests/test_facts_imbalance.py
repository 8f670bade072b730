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
    assert (ctx.get("busiest_rank_bytes"), ctx.get("median_rank_bytes")) == (5 * MiB, MiB)  # said in the message
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


def test_a_few_bytes_to_a_helper_file_do_not_stretch_a_ranks_phase():
    """OMPIO's rank 0 writes 40 bytes to its shared-file-pointer file at the close, and again among
    the reads (d_mpiio_independent_256k, e_mpiio_collective_256k): its write span ran to them, a false
    straggler, though its data writes ended with the other ranks'."""
    rows = []  # (rank, file, op, length, start, end): 16 x 1 MiB writes in 0-0.1 s, reads in 0.2-0.5 s
    for r in range(4):
        rows += [(r, 10, DXT_WRITE, MiB, 0.1 * i / 16, 0.1 * (i + 1) / 16) for i in range(16)]
        rows += [(r, 10, DXT_READ, MiB, 0.2 + 0.3 * i / 16, 0.2 + 0.3 * (i + 1) / 16) for i in range(16)]
    rows += [(0, 11, DXT_WRITE, 40, 0.15, 0.1501), (0, 11, DXT_WRITE, 40, 0.45, 0.4501)]  # the helper file
    ctx = facts(_traced(rows))
    assert ctx.get("rank_source") == "dxt" and ctx.get("straggler_ranks") == []
    assert ctx.get("straggler_cost_s") == 0.0


def test_a_rank_that_waits_between_its_writes_is_still_a_straggler():
    """T05 and j2: the wait is between the rank's data requests, inside its span."""
    rows = [(r, 10, DXT_WRITE, MiB, (0.1 if r == 3 else 0.01) * i, (0.1 if r == 3 else 0.01) * i + 0.005)
            for r in range(4) for i in range(16)]
    ctx = facts(_traced(rows))
    assert ctx.get("straggler_ranks") == [3]
    assert ctx.get("straggler_cost_s") == pytest.approx(1.505 - 0.155)


def _traced(rows):
    """A shared file 10 (and a rank-0 file 11) with the DXT trace `rows` (rank, file, op, length, start, end)."""
    profile = job(module("POSIX", [(10, SHARED, {"POSIX_WRITES": 64, "POSIX_READS": 64,
                                                  "POSIX_BYTES_WRITTEN": 64 * MiB, "POSIX_BYTES_READ": 64 * MiB}),
                                   (11, 0, {"POSIX_WRITES": 2, "POSIX_BYTES_WRITTEN": 80})]), nprocs=4)
    rank, rid, op, length, start, end = (np.array(c) for c in zip(*rows))
    profile.dxt["DXT_POSIX"] = DxtTrace("DXT_POSIX", rank.astype(np.int32), rid.astype(np.uint64),
                                        op.astype(np.int8), np.zeros(len(rows), np.int64),
                                        length.astype(np.int64), start.astype(float), end.astype(float))
    return profile


def test_ranks_reading_through_stdio_are_compared(corpus: Path):
    """The Polaris production job's 8 ranks each reread their own file with fread (66 TiB per rank,
    STDIO_BYTES_READ) and made 92 POSIX reads in all: the ranks are compared on what they moved
    through both, not declared "fewer than two ranks moved data" from POSIX alone. They are balanced."""
    from advisor.config import SiteConfig
    from advisor.engine import diagnose

    log = load(corpus / "darshan-production/polaris-cug25/case-study-2/1977553-17460120447186390966.darshan")
    ctx = facts(log)
    assert ctx.get("rank_source") == "counters"
    stdio = log.records["STDIO"]
    read = stdio.counters["STDIO_BYTES_READ"][stdio.ranks == 0].sum()
    assert ctx.get("busiest_rank_bytes") >= read > 60 * 2**40
    assert ctx.get("rank_bytes_imbalance") == pytest.approx(1.0, abs=0.01) and ctx.get("straggler_ranks") == []
    d = diagnose(log, SiteConfig())
    unchecked = {code for n in d.not_checked for code in n.check.replace(",", " ").split()}
    assert not {"IMB001", "IMB002"} & unchecked and not {"IMB001", "IMB002"} & {f.code for f in d.findings}
