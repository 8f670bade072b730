"""Facts only IOzone's and fio's own tests give: IOzone's re-read, backward and stride reads against its
read, and fio's completion-latency percentiles.

IOzone's tests are judged at the largest file size of each thread count (the size chosen to defeat
caches; small files are read from memory by design) and, over its record sizes, by the median, so
one odd cell does not decide.
"""

from __future__ import annotations

from statistics import median

from advisor.facts import FactContext, NotApplicable, fact, param
from advisor.ingest.fio import FioProfile
from advisor.ingest.iozone import KBS, IozoneProfile

READ_OVER_WRITE = param("iozone_cached_read_ratio", 3.0, "reads this many times faster than the writes of the "
                        "same files, with re-reads no faster, came from the page cache", kind="ratio")
PATTERN_SHARE = param("iozone_pattern_read_share", 0.5, "backward or stride reads below this share of the "
                      "sequential read rate are reported", kind="fraction")
TAIL_RATIO = param("fio_tail_ratio", 10.0, "a 99.9th-percentile completion latency this many times the median "
                   "is a tail", kind="ratio")
TAIL_MIN_IOS = param("fio_tail_min_ios", 2000, "operations a job needs for its 99.9th percentile to rest on two "
                     "or more", kind="ops")

# IOzone's throughput-mode test names, as the automatic table names the same tests
_AS_TABLE = {"initial writers": "write", "rewriters": "rewrite", "readers": "read", "re-readers": "re-read",
             "reverse readers": "backward read", "stride readers": "stride read", "random readers": "random read",
             "random writers": "random write"}
SIZE = {"threads": "count", "file_kib": "bytes KiB", "records": "count"}
CACHED = {**SIZE, "read_mib_s": "rate MiB/s", "write_mib_s": "rate MiB/s", "read_over_write": "ratio",
          "reread_over_read": "ratio"}
PATTERN = {**SIZE, "read_mib_s": "rate MiB/s", "backward_share": "fraction", "stride_share": "fraction",
           "lowest_share": "fraction"}
TAIL = {"job": "text", "direction": "enum", "rw": "text", "block_size": "text", "ios": "ops", "p50_s": "seconds",
        "p99_s": "seconds", "p999_s": "seconds", "tail_ratio": "ratio", "direct": "flag"}


def largest_files(ctx: FactContext) -> list[tuple[dict, list[dict[str, float]]]]:
    """(where: threads, file size, record count; the cells) at the largest file size of each thread count of an
    IOzone output in kB/s: each cell maps the table's test names to its rates at one record size."""
    profile = ctx.profile
    if not isinstance(profile, IozoneProfile):
        raise NotApplicable("not an IOzone output")
    cells: dict[tuple, dict[str, float]] = {}
    for m in profile.iozone.measurements:
        if m.unit == KBS and m.file_kib:
            cells.setdefault((m.threads, m.file_kib, m.record_kib), {})[_AS_TABLE.get(m.test, m.test)] = m.value
    out = []
    for threads in sorted({k[0] for k in cells}, key=lambda t: t or 0):
        top = max(k[1] for k in cells if k[0] == threads)
        found = [c for k, c in cells.items() if k[0] == threads and k[1] == top]
        out.append(({"threads": threads, "file_kib": top, "records": len(found)}, found))
    return out


def _median_ratio(cells: list[dict[str, float]], top: str, bottom: str) -> float | None:
    ratios = [c[top] / c[bottom] for c in cells if c.get(top) and c.get(bottom)]
    return median(ratios) if ratios else None


@fact("iozone_cached_reads", "record", "IOzone outputs whose reads of the largest files run iozone_cached_read_ratio "
      "times their writes or more (median over record sizes) while re-reads gain nothing: the first read came "
      "from the page cache.", label="reads served by the page cache", fields=CACHED)
def iozone_cached_reads(ctx: FactContext) -> list[dict]:
    if " -I" in f" {ctx.profile.iozone.command_line}":
        return []  # O_DIRECT: no read comes from the page cache
    out = []
    for where, cells in largest_files(ctx):
        over_write, reread = _median_ratio(cells, "read", "write"), _median_ratio(cells, "re-read", "read")
        if over_write and reread and over_write >= ctx.param(READ_OVER_WRITE) and 1 / 1.5 <= reread <= 1.5:
            out.append({**where, "read_mib_s": round(median(c["read"] for c in cells if "read" in c) / 1024, 1),
                        "write_mib_s": round(median(c["write"] for c in cells if "write" in c) / 1024, 1),
                        "read_over_write": round(over_write, 2), "reread_over_read": round(reread, 2)})
    return out


@fact("iozone_pattern_reads", "record", "IOzone outputs whose backward or stride reads of the largest files run "
      "below iozone_pattern_read_share of the sequential read (median over record sizes).",
      label="backward and stride reads against sequential reads", fields=PATTERN)
def iozone_pattern_reads(ctx: FactContext) -> list[dict]:
    out = []
    for where, cells in largest_files(ctx):
        backward, stride = _median_ratio(cells, "backward read", "read"), _median_ratio(cells, "stride read", "read")
        shares = [s for s in (backward, stride) if s is not None]
        if shares and min(shares) < ctx.param(PATTERN_SHARE):
            out.append({**where, "read_mib_s": round(median(c["read"] for c in cells if "read" in c) / 1024, 1),
                        "backward_share": None if backward is None else round(backward, 3),
                        "stride_share": None if stride is None else round(stride, 3),
                        "lowest_share": round(min(shares), 3)})
    return out


@fact("fio_latency_tails", "record", "fio jobs of fio_tail_min_ios operations or more whose 99.9th-percentile "
      "completion latency is fio_tail_ratio times their median or more.", label="latency tails", fields=TAIL)
def fio_latency_tails(ctx: FactContext) -> list[dict]:
    profile = ctx.profile
    if not isinstance(profile, FioProfile):
        raise NotApplicable("not a fio output")
    out = []
    for m in profile.fio.measurements:
        p = m.clat_percentiles_us
        ios = round(m.iops * m.runtime_ms / 1000)
        if not p.get("50.000000") or "99.900000" not in p or ios < ctx.param(TAIL_MIN_IOS):
            continue
        ratio = p["99.900000"] / p["50.000000"]
        if ratio >= ctx.param(TAIL_RATIO):
            out.append({"job": m.job, "direction": m.direction, "rw": m.rw, "block_size": m.block_size, "ios": ios,
                        "p50_s": p["50.000000"] / 1e6, "p99_s": p.get("99.000000", 0) / 1e6,
                        "p999_s": p["99.900000"] / 1e6, "tail_ratio": round(ratio, 1), "direct": bool(m.direct)})
    return out
