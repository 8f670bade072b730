"""Two fact modules on their own, on real inputs: what a fix itself costs (advisor.facts.fix_cost,
the demo trace) and what IOzone's and fio's own tests say (advisor.facts.bench_tests)."""

from __future__ import annotations

import pytest

from advisor.api import load
from advisor.facts import FactContext, NotApplicable
from advisor.facts.bench_tests import fio_latency_tails, iozone_pattern_reads
from advisor.facts.fix_cost import changes_nothing, funnel_s, recovered_s
from tests.conftest import CORPUS, REPO

DEMO = REPO / "traces" / "ior-small-shared-4k.darshan"  # 4 ranks, 64 MiB written and read


def test_funnelling_the_bytes_through_one_aggregator_costs_time_all_ranks_cost_nothing():
    ctx = FactContext(load(DEMO))
    one = funnel_s(ctx, {"transform": "collective", "cb_nodes": 1})
    two = funnel_s(ctx, {"transform": "collective", "cb_nodes": 2})
    assert one > two > 0
    assert funnel_s(ctx, {"transform": "collective", "cb_nodes": 4}) == 0.0  # every rank moves its own
    assert funnel_s(ctx, {"transform": "coalesce", "transfer_size": 1 << 22}) == 0.0
    assert recovered_s(ctx, 1.0, {"transform": "collective", "cb_nodes": 1}) == pytest.approx(max(0.0, 1.0 - one))


def test_aggregating_through_every_rank_changes_nothing_and_wins_nothing_back():
    ctx = FactContext(load(DEMO))
    assert changes_nothing(ctx, {"transform": "aggregate", "aggregators": 4})
    assert not changes_nothing(ctx, {"transform": "aggregate", "aggregators": 1})
    assert recovered_s(ctx, 0.05, {"transform": "aggregate", "aggregators": 4}) == 0.0
    assert recovered_s(ctx, 0.05, None) == 0.05


def test_iozone_backward_and_stride_reads_of_the_zfs_run():
    ctx = FactContext(load(CORPUS / "iozone" / "tput_3.457_l1u1_cpu_R_freebsd-zfs.txt"))
    (row,) = iozone_pattern_reads(ctx)
    assert row["lowest_share"] == min(row["backward_share"], row["stride_share"]) < 0.5


def test_fio_latency_tails_apply_to_fio_outputs_only():
    with pytest.raises(NotApplicable):
        fio_latency_tails(FactContext(load(DEMO)))
