"""Per-OST facts: a storage target whose files run slow, found against the median OST."""

from __future__ import annotations

import pytest

from advisor.facts import Missing
from advisor.facts.ost import MIN_RECORD_BYTES
from advisor.profile import LustreComponent, LustreLayout
from tests.profiles import facts, job, module

MiB = 1 << 20


def _striped(seconds_by_ost: dict[int, float], files_per_ost: int = 2, nbytes: int = 64 * MiB):
    """Single-stripe files, `files_per_ost` on each OST, each written by its own rank in the given seconds."""
    rows, layouts, rid = [], {}, 100
    for ost, seconds in seconds_by_ost.items():
        for _ in range(files_per_ost):
            rows.append((rid, len(rows), {"POSIX_WRITES": 64, "POSIX_BYTES_WRITTEN": nbytes,
                                          "POSIX_F_WRITE_TIME": seconds}))
            layouts[rid] = LustreLayout(rid, [LustreComponent(stripe_size=MiB, stripe_count=1, ost_ids=[ost])])
            rid += 1
    profile = job(module("POSIX", rows), nprocs=len(rows))
    profile.lustre = layouts
    return profile


def test_an_ost_ten_times_slower_is_found_with_its_files_ranks_and_cost():
    ctx = facts(_striped({0: 1.0, 1: 1.0, 2: 1.1, 3: 0.9, 4: 10.0}))
    typical = 64 * MiB / 1.0  # the median OST's median file rate
    assert ctx.get("timed_osts") == 5
    assert ctx.get("slow_osts") == [4]
    assert ctx.get("typical_ost_rate") == pytest.approx(typical)
    assert ctx.get("slow_ost_rate") == pytest.approx(64 * MiB / 10.0)
    assert ctx.get("slow_ost_ranks") == [8, 9] and len(ctx.get("slow_ost_files")) == 2
    # the slow file's rank waits its time beyond what the typical rate needs
    assert ctx.get("slow_ost_cost_s") == pytest.approx(10.0 - 64 * MiB / typical)


def test_even_osts_have_no_outlier():
    ctx = facts(_striped({0: 1.0, 1: 1.2, 2: 0.9, 3: 1.1}))
    assert ctx.get("slow_osts") == [] and ctx.get("slow_ost_cost_s") == 0.0


def test_too_few_osts_or_tiny_records_are_no_comparison():
    with pytest.raises(Missing, match="fewer than four OSTs"):
        facts(_striped({0: 1.0, 1: 1.0, 2: 10.0})).get("slow_osts")
    with pytest.raises(Missing):
        facts(_striped({o: 0.001 for o in range(5)}, nbytes=MIN_RECORD_BYTES - 1)).get("slow_osts")
