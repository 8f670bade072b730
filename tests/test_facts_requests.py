"""Small requests: what merging them into RPC-sized requests saves (a latency per request, the
bytes at the streaming rate), on hand-built POSIX records."""

from __future__ import annotations

import pytest

from advisor.config import from_dict
from tests.profiles import facts, job, module

KiB, MiB = 1 << 10, 1 << 20
SITE = {"rpc_size": MiB, "request_latency_s": 1e-4, "stream_mib_s": 2048.0}


def _writes(size: int, count: int = 1000, seconds: float = 1.0, **system):
    bin_ = "1K_10K" if size <= 10 * KiB else "10K_100K" if size <= 100 * KiB else "100K_1M"
    rec = module("POSIX", [(1, 0, {"POSIX_WRITES": count, "POSIX_BYTES_WRITTEN": size * count,
                                   f"POSIX_SIZE_WRITE_{bin_}": count, "POSIX_ACCESS1_ACCESS": size,
                                   "POSIX_ACCESS1_COUNT": count, "POSIX_F_WRITE_TIME": seconds})])
    return facts(job(rec, nprocs=1), from_dict({"system": {**SITE, **system}}))


@pytest.mark.parametrize("size,saving", [
    (4 * KiB, (1 - 4 / 1024) * 100 / (100 + 4 * KiB / (2048 * MiB) * 1e6)),  # mostly latency: ~98 %
    (256 * KiB, (1 - 256 / 1024) * 100 / (100 + 256 * KiB / (2048 * MiB) * 1e6)),  # mostly transfer: ~34 %
])
def test_merging_saves_the_latencies_not_the_transfer(size, saving):
    ctx = _writes(size)
    assert ctx.get("small_write_saving") == pytest.approx(saving)
    assert ctx.get("small_write_cost_s") == pytest.approx(1.0 * saving)
    assert ctx.assumptions("small_write_cost_s") == ()  # the site gave all three values


def test_a_slower_network_makes_the_same_requests_cost_more():
    assert _writes(256 * KiB, request_latency_s=1e-3).get("small_write_saving") > \
        _writes(256 * KiB).get("small_write_saving")
    assert _writes(256 * KiB, stream_mib_s=256.0).get("small_write_saving") < \
        _writes(256 * KiB).get("small_write_saving")


def test_rpc_sized_requests_are_not_small_and_save_nothing():
    ctx = _writes(MiB)
    assert ctx.get("small_write_count") == 0 and ctx.get("small_write_cost_s") == 0.0
