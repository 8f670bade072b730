"""Facts about an IOzone or fio output: is the benchmark measuring the file system?

Both run on one client node (IOzone without ``-+m``, fio without client/server), so the questions
of IOR's validity rules apply with one node: does the data fit in the client's memory (the page
cache is measured), and what share of the sustainable peak the site states did the best
sequential result reach (far below: the DiFX lesson, look at the servers; above: a cache).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.campaign import IOZONE, Campaign, CampaignProfile
from advisor.facts import FactContext, Missing, NotApplicable, fact
from advisor.facts.ior import PEAK, peak_record, sustainable_limits
from advisor.formatting import fmt_bytes
from advisor.ingest.fio import FioProfile
from advisor.ingest.iozone import KBS, IozoneProfile

# IOzone's sequential tests by direction (re-reads and re-writes measure the cache by design)
IOZONE_SEQUENTIAL = {"write": ("initial writers", "write"), "read": ("readers", "read")}
BENCH_CACHE = {"test": "text", "data_bytes": "bytes", "memory": "bytes", "suggest_size": "bytes"}


@dataclass(frozen=True)
class Result:
    """One sequential bandwidth result of a one-node benchmark."""

    label: str
    operation: str  # write or read
    mib_s: float
    data_bytes: int  # what the test moved on the node (all threads or jobs)
    direct: bool  # O_DIRECT: the page cache is out of the way


def results(ctx: FactContext) -> list[Result]:
    """The sequential write and read results of an IOzone or fio output, or of a campaign of IOzone
    runs (bandwidth units only)."""
    profile = ctx.profile
    if isinstance(profile, IozoneProfile):
        return _iozone(profile)
    if isinstance(profile, FioProfile):
        return _fio(profile)
    if isinstance(profile, CampaignProfile) and profile.campaign.benchmark == IOZONE:
        return _sweep(profile.campaign)
    raise NotApplicable("not an IOzone or fio output, nor a campaign of IOzone runs")


def _sweep(campaign: Campaign) -> list[Result]:
    """Every point of the write and read curves of an IOzone campaign: the best of the sweep is its peak."""
    return [Result(f"{p.test} ({p.source.rsplit('/', 1)[-1]})", c.key.operation, p.bw_mib,
                   (p.block_size or 0) * p.tasks, False)
            for c in campaign.curves if c.key.operation in ("write", "read") for p in c.points]


def _iozone(profile: IozoneProfile) -> list[Result]:
    run = profile.iozone
    direct = " -I" in f" {run.command_line}"
    out = []
    for op, tests in IOZONE_SEQUENTIAL.items():
        for m in run.measurements:
            if m.test in tests and m.unit == KBS and m.file_kib:
                threads = m.threads or 1
                where = (f"{threads} thread{'s' if threads > 1 else ''}" if m.threads
                         else f"{fmt_bytes((m.record_kib or 0) * 1024)} records")
                label = f"IOzone {m.test} ({where}, {fmt_bytes(m.file_kib * 1024)} files)"
                out.append(Result(label, op, m.value / 1024, m.file_kib * 1024 * threads, direct))
    return out


def _fio(profile: FioProfile) -> list[Result]:
    out = []
    for m in profile.fio.measurements:
        if m.direction in ("write", "read") and "rand" not in m.rw:
            out.append(Result(f"fio job {m.job} ({m.rw or m.direction}, bs {m.block_size or '?'})", m.direction,
                              m.bw_kib_s / 1024, m.io_bytes, m.direct))
    return out


@fact("bench_cache_tests", "record", "IOzone or fio results whose data fits in the client's memory without "
      "O_DIRECT (their rates can be page-cache rates).", label="results that fit in the page cache",
      fields=BENCH_CACHE)
def bench_cache_tests(ctx: FactContext) -> list[dict]:
    memory = ctx.get("client_memory_bytes")
    return [{"test": r.label, "data_bytes": r.data_bytes, "memory": memory, "suggest_size": 2 * memory}
            for r in results(ctx) if not r.direct and r.data_bytes < memory]


@fact("bench_peak_results", "record", "For write and read: the best sequential IOzone or fio result, the "
      "tightest sustainable limit the site config states for one client node, and the share reached.",
      label="best results against the sustainable peak", fields=PEAK)
def bench_peak_results(ctx: FactContext) -> list[dict]:
    out, found = [], results(ctx)
    if not found:
        raise Missing("no sequential bandwidth result (random tests and ops/s do not measure streaming)")
    for op in ("write", "read"):
        best = max((r for r in found if r.operation == op), key=lambda r: r.mib_s, default=None)
        if best and (limits := sustainable_limits(ctx, op, nodes=1, osts_used=None)):
            out.append(peak_record(op, best.label, best.mib_s, limits))
    if not out:
        raise Missing("no sustainable peak in the site config ([system] peak_write_mib_s, peak_read_mib_s, "
                      "oss_peak_mib_s or client_peak_mib_s)")
    return out


@fact("bench_min_peak_share", "fraction", "The lower of the write and read shares of the sustainable peak.",
      label="lower share of the sustainable peak")
def bench_min_peak_share(ctx: FactContext) -> float:
    return min(r["share"] for r in ctx.get("bench_peak_results"))


@fact("bench_beyond_peak", "record", "Results above what the hardware sustains (caches, not the file system).",
      label="results above the sustainable peak", fields=PEAK)
def bench_beyond_peak(ctx: FactContext) -> list[dict]:
    return [r for r in ctx.get("bench_peak_results") if r["share"] > 1.05]
