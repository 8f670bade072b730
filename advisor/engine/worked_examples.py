"""The severity formula of docs/rules.md, with worked examples from the real corpus.

Each example holds what the engine weighed for one finding of one corpus log (cost, run
time, I/O time, the job's timing noise); the page shows what :func:`grade` makes of it, so
the documented outcome is always the code's. ``tests/test_significance.py`` diagnoses the
logs again and checks that the inputs recorded here are still what the engine sees.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.engine.significance import Impact, Limits, describe, grade
from advisor.facts import PARAMS, registry
from advisor.formatting import fmt_bytes, fmt_secs


@dataclass(frozen=True)
class Example:
    log: str  # path under the corpus (../shared/corpus)
    code: str
    kind: str
    ceiling: str
    impact: Impact
    noise: dict | None  # the fact timing_noise (timing evidence only)
    counted: str = ""  # the operation count quoted for counted evidence
    # the Lustre defaults a counted cost is priced with, and the file system the job ran on instead
    estimate: tuple[str, str] = ("", "")


ESTIMATE = "a latency of 100 us per request (a Lustre RPC round trip); an RPC size of 1 MiB (Lustre's default)"
"""What the small-request costs assume without a site config (advisor.facts.requests)."""

EXAMPLES = (
    Example("darshan-logs/darshan_logs/release_logs/mpi-io-test-x86_64-3.4.5.darshan", "IMB003", "timing", "high",
            Impact(0.008408, 0.034662, 0.022987), {"seconds": 0.05, "why": "the floor", "page_cache": True}),
    Example("darshan-logs/darshan_logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan", "MD001", "timing", "high",
            Impact(0.025212, 0.072112, 0.054102), {"seconds": 0.05, "why": "the floor", "page_cache": True}),
    Example("darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input/sample.darshan", "IMB003", "timing", "high",
            Impact(36.447166, 117.0, 49.027784),
            {"seconds": 46.274075,
             "why": "chance spread of 17 operations per rank over 2,048 ranks (mean 2.9 s, no DXT)",
             "page_cache": False}),
    Example("generated/j2_straggler_rank0_slow/case.darshan", "IMB001", "timing", "high",
            Impact(0.296744, 0.34535, 0.023453), {"seconds": 0.05, "why": "the floor", "page_cache": True}),
    Example("traps/T05/case.darshan", "IMB001", "timing", "high", Impact(1.525129, 1.730066, 0.056243),
            {"seconds": 0.05, "why": "the floor", "page_cache": False}),
    Example("traps/T06/case.darshan", "MD001", "timing", "high", Impact(2.137146, 3.625926, 2.138902),
            {"seconds": 0.05616, "why": "chance spread of 4,022 operations per rank over 4 ranks "
                                            "(mean 532 us, no DXT)",
             "page_cache": False}),
    Example("traps/T03/case.darshan", "MPI001", "counts", "high", Impact(0.093112, 0.153492, 0.095351), None),
    Example("generated/b_small_io_shared_4k/case.darshan", "IO001", "counts", "high",
            Impact(0.064933, 0.122244, 0.081861), None, "small_write_count 16,384"),
    Example("generated/h3_segments_s16/case.darshan", "IO001", "counts", "high",
            Impact(0.022878, 0.217926, 0.081268), None, "small_write_count 1,024", (ESTIMATE, "ext4")),
    Example("darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input/sample-badost.darshan", "LUS010",
            "timing", "high", Impact(766.788363, 780.0, 34.187007),
            {"seconds": 10.826551, "why": "chance spread of 152 operations per rank over 2,048 ranks "
                                            "(mean 224.8 ms, no DXT)",
             "page_cache": False}),
)


def outcome(example: Example, limits: Limits | None = None):
    """(severity, confidence) the engine gives the example (default limits)."""
    limits = limits or Limits.of()
    return grade(example.ceiling, example.kind, example.impact, example.noise, limits, example.counted,
                 example.estimate)


def severity_section(limits: Limits | None = None) -> str:
    """The formula and the worked examples, as Markdown (default limits)."""
    limits = limits or Limits.of()
    registry()  # the noise parameters are declared by advisor.facts.noise
    rows = ["| log | rule | evidence | cost | noise | severity | confidence: reason |", "|---|---|---|---|---|---|---|"]
    for ex in EXAMPLES:
        severity, sure = outcome(ex, limits)
        noise = fmt_secs(ex.noise["seconds"]) if ex.noise else "-"
        rows.append(f"| {ex.log.rsplit('/', 2)[-2] if ex.log.endswith('case.darshan') else ex.log.rsplit('/', 1)[-1]} "
                    f"| {ex.code} | {ex.kind} | {describe(ex.impact)} | {noise} | {severity} "
                    f"| {sure.level}: {sure.reason} |")
    pct = lambda x: f"{x * 100:g} %"  # noqa: E731
    floor, short, small = (PARAMS[name].default for name in
                           ("timing_floor_s", "cache_regime_runtime_s", "cache_regime_bytes"))
    return f"""## Severity: impact and significance

A rule's `severity` is a ceiling. A finding's severity is the lowest of three levels:

1. **the ceiling** declared in the rule file;
2. **impact**, from the cost `cost_s` (seconds of run time lost): `cost / run time` >= {pct(limits.high_share)}
   high (and, if the site sets `severity_high_min_s`, at least that many seconds), >= {pct(limits.warn_share)}
   warn, below that info, below {pct(limits.min_share)} no finding at all; a
   cost of at least {pct(limits.io_warn_share)} of the job's I/O time is at least warn (the main thing wrong with
   the I/O, even when I/O is a small part of the run);
3. **significance**, from what the cost rests on (`evidence_kind` in the rule file, required with a `cost`):
   - `counts` (operations, bytes, sizes, offsets): as certain as the counters, however short the run
     (400,000 fwrites of 100 bytes are a pattern, not an accident): confidence high; except where the seconds
     the counted pattern costs are priced with Lustre's defaults (a request's latency, the RPC size, the stripe
     size: no site config gave them), the job's files are on another file system (ext4, NFS, GPFS), and the
     assumed latency decides the severity (a local call's 10 us instead of an RPC's 100 us would give
     another): the count is certain, its cost an estimate, so confidence medium, at most warn (review11: IOR
     -t 256k on ext4 was high on 23 ms priced with a Lustre RPC's 100 us, 6 % of its time at 10 us; 4 KiB
     writes lose most of their time at either and stay high); `[system]` values in the site config make it
     exact;
   - `timing` (stragglers, time imbalance, metadata time, per-OST rates, a model's shortfall): the cost is
     compared with the job's timing noise (the fact `timing_noise`), the largest of
     - the floor `timing_floor_s` ({fmt_secs(floor)}): scheduler slices, MPI start-up skew and timer
       overhead make ranks differ by tens of milliseconds on any node;
     - the operations behind the time: a rank's time is a sum of n operation times of spread s (from the
       DXT trace, else the mean operation time: a coefficient of variation of 1); the slowest of P ranks
       exceeds the mean by about `s * sqrt(n) * sqrt(2 ln P)` by chance alone;
     - the page cache: a run shorter than `cache_regime_runtime_s` ({fmt_secs(short)}) moving less
       than `cache_regime_bytes` ({fmt_bytes(small)}) per process only copies into memory; those copies
       stall together, so their jitter is of the order of the data time per process.

   - `counts` with `timed_costs`: a counted cost whose value for this job is one of the named facts that are
     timings (the time independent MPI-IO calls spent above their POSIX calls, half their time lost to shared
     stripes) rests on that timing: it is weighed as `timing`, against the noise of a per-process mean (the
     operations' term becomes `s * sqrt(n) / sqrt(P)`: chance moves a mean over P ranks less than their slowest).

     At {limits.significant:g}x the noise or more (`significance_high`) the confidence is high, except in the page
     cache (medium: such timings do not show how the file system behaves); from 1x to {limits.significant:g}x medium,
     at most warn; below the noise low, at most info, and the finding says so in one line.

Every finding carries `confidence` (`level`, `reason`, `ratio` = cost / noise) in the JSON; the terminal and
the HTML report show it. All the numbers above are `[thresholds]` keys of the site config (docs/config.md).

Worked examples (real logs of the corpus; the outcome is computed by the engine when this page is built):

{chr(10).join(rows)}
"""
