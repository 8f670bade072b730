"""Honest advice (issue 13 item 5): a value a finding rests on that neither the input nor the site
config gave (the file system's OST count, the job's node count, the RPC size, glibc's stream
buffer) is said to be assumed, with the site-config key (or the run option) that makes it exact;
with that key set, the mark is gone and the value is the site's."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor import api
from advisor.config import SiteConfig, from_dict
from advisor.facts import Assumption, FactContext
from advisor.findings import Diagnosis
from advisor.profile import LustreComponent, LustreLayout
from advisor.report.assumed import assumed
from tests.conftest import CORPUS
from tests.profiles import facts, job, module

IMBALANCED = CORPUS / "darshan-logs" / "darshan_logs" / "imbalanced_io" / "imbalanced-io.darshan"  # no DXT
DXT_MPIIO = CORPUS / "generated" / "d_mpiio_independent_256k" / "case.darshan"
DEMO = Path(__file__).resolve().parents[1] / "traces" / "ior-small-shared-4k.darshan"
MARK = "Assumed"  # the message never carries the assumed values: the reporters list them once (report/assumed.py)
MiB = 1 << 20
SITE = {"rpc_size": MiB, "request_latency_s": 1e-4, "stream_mib_s": 2048.0,  # all the request rules read
        "default_stripe_size": MiB}


def _findings(path, config: SiteConfig | None = None) -> dict:
    diagnosis = api.diagnose_profile(api.load(path), config or SiteConfig())
    return {f.code: f for f in diagnosis.findings}


def _keys(finding) -> set[str]:
    return {a["key"] or a["how"] for a in finding.assumptions}


@pytest.fixture(scope="module")
def imbalanced() -> dict:
    return _findings(IMBALANCED)


def test_a_log_without_the_ost_count_says_its_ost_count_is_assumed(imbalanced):
    """Darshan 3.4.6+ logs keep each file's OST ids, not the file system's OST count."""
    lus = imbalanced["LUS007"]
    assert "7 of 55 OSTs" in lus.message and "[system] osts" in _keys(lus)
    assert "55 OSTs in the file system, the highest OST index the job used + 1 (a lower bound): " \
        "set [system] osts in the site config" in assumed([lus]).lines and MARK not in lus.message
    assert "[system] osts" in _keys(imbalanced["LUS002"])


def test_with_the_site_ost_count_the_mark_is_gone_and_the_count_is_the_sites(imbalanced):
    site = _findings(IMBALANCED, from_dict({"system": {"osts": 96, "rpc_size": 4 * MiB}}))
    lus = site["LUS007"]
    assert "7 of 96 OSTs" in lus.message and "[system] osts" not in _keys(lus)
    assert MARK not in site["LUS002"].message and site["LUS002"].assumptions == []
    assert set(site) == set(imbalanced)  # the same findings, only honest about where numbers came from


def test_a_log_without_dxt_says_its_aggregator_count_is_a_guess_of_the_node_count(imbalanced):
    mpi = imbalanced["MPI004"]
    assert mpi.fix["cb_nodes"] == 8
    (nodes,) = [a for a in mpi.assumptions if "aggregators" in a["value"]]
    assert nodes["value"] == "8 aggregators for the job's nodes, whose number the log does not hold"
    assert "DXT_ENABLE_IO_TRACE=1" in nodes["how"] and "cb_nodes" in nodes["how"]


def test_a_log_with_dxt_host_names_has_its_node_count_read_not_assumed():
    found = _findings(DXT_MPIIO, from_dict({"system": SITE}))
    with_fix = [f for f in found.values() if f.fix and "cb_nodes" in f.fix]
    assert with_fix and all(f.assumptions == [] and MARK not in f.message for f in with_fix)


def test_the_rpc_size_is_assumed_until_the_site_sets_it():
    trace = DEMO
    small = _findings(trace)["IO001"]
    assert _keys(small) == {"[system] rpc_size", "[system] request_latency_s", "[system] stream_mib_s"}
    assert "an RPC size of 1 MiB (Lustre's default)" in {a["value"] for a in small.assumptions}
    site = _findings(trace, from_dict({"system": {**SITE, "rpc_size": 4 * MiB}}))["IO001"]
    assert site.assumptions == [] and site.cost_s > small.cost_s  # 4 KiB requests lose more against 4 MiB RPCs
    slow_rpcs = _findings(trace, from_dict({"system": {**SITE, "request_latency_s": 1e-3}}))["IO001"]
    assert slow_rpcs.cost_s > small.cost_s  # more of each request's time is latency that merging saves


def test_a_stdio_buffer_left_at_glibcs_default_is_assumed():
    trap = Path(__file__).parent / "data" / "traps" / "T03.darshan"  # STDIO only
    std = _findings(trap)["STD001"]
    assert "[thresholds] stdio_buffer_bytes" in _keys(std)
    site = _findings(trap, from_dict({"thresholds": {"stdio_buffer_bytes": 65536}, "system": SITE}))
    assert site["STD001"].assumptions == [] and "64 KiB" in site["STD001"].message


def test_the_fs_ost_count_is_read_where_the_log_holds_it():
    layouts = {1: LustreLayout(1, [LustreComponent(stripe_size=MiB, stripe_count=1, ost_ids=[3])], osts=48)}
    profile = job(module("POSIX", [(1, 0, {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": MiB})]), nprocs=1)
    profile.lustre = layouts
    ctx = facts(profile)
    assert ctx.get("fs_osts") == 48 and ctx.assumptions("fs_osts") == ()  # LUSTRE_OSTS of the old record form
    profile.lustre[1].osts = None
    ctx = facts(profile)
    assert ctx.get("fs_osts") == 4
    assert ctx.assumptions("fs_osts") == (Assumption(
        "4 OSTs in the file system, the highest OST index the job used + 1 (a lower bound)", "[system] osts"),)


def test_an_assumption_reaches_every_fact_that_reads_it_cached_or_not():
    profile = job(module("POSIX", [(1, 0, {"POSIX_WRITES": 10, "POSIX_BYTES_WRITTEN": 40960,
                                           "POSIX_SIZE_WRITE_1K_10K": 10, "POSIX_F_WRITE_TIME": 1.0})]), nprocs=1)
    ctx = FactContext(profile, SiteConfig())
    ctx.get("rpc_size")  # computed first, on its own
    ctx.get("small_write_cost_s")  # reads the cached rpc_size
    ctx.get("coalesce_size")
    expected = (Assumption("an RPC size of 1 MiB (Lustre's default)", "[system] rpc_size"),)
    assert ctx.assumptions("coalesce_size") == expected
    assert set(expected) < set(ctx.assumptions("small_write_cost_s"))  # and the latency model's two values
    assert ctx.assumptions("small_write_count") == ()  # counted, assumes nothing
    with ctx.tracing() as seen:
        ctx.get("coalesce_size")
    assert list(seen) == list(expected)


def test_assumptions_survive_the_json_round_trip():
    diagnosis = api.diagnose_profile(api.load(DEMO))
    again = Diagnosis.from_dict(diagnosis.to_dict())
    assert [f.assumptions for f in again.sorted_findings()] == [f.assumptions for f in diagnosis.sorted_findings()]
    assert any(f.assumptions for f in again.findings)
