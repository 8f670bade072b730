"""Facts about one IOR run: is the benchmark measuring what it claims to?

From the campaigns in docs/ior.md: data per client smaller than its memory measures
the page cache; reads without ``-C`` on data the same node wrote are served from cache;
transfers below the RPC size or across stripe boundaries measure overhead; one
repetition's maximum is noise; stripe count vs tasks vs OSTs decides how many OSTs the
test can use; and the result means most as a share of the sustainable peak.
"""

from __future__ import annotations

import re

from advisor.facts import FactContext, Missing, NotApplicable, fact, param
from advisor.formatting import size_arg
from advisor.ingest.ior.model import FPP, SHARED, IorProfile, IorRun, IorTest, label

MIN_SUSPICIOUS_READ = param("ior_cache_read_ratio", 3.0,
                            "a read this many times faster than the write of the same data suggests a cache",
                            kind="ratio")
MB_PER_MIB = 1.048576


# Record fields of the facts below (IOR's rates are MiB/s as it prints them, MB/s for IO500's unit).
CACHE_TEST = {"test": "text", "data_per_node": "bytes", "memory": "bytes", "operations": "enum",
              "suggest_block": "text"}
UNSHUFFLED = {"test": "text", "read_mib_s": "rate MiB/s", "write_mib_s": "rate MiB/s", "nodes": "count", "why": "text",
              "reorder_unknown": "flag"}
TRANSFER = {"test": "text", "transfer_size": "bytes", "rpc_size": "bytes", "stripe_size": "bytes", "below_rpc": "flag",
            "misaligned": "flag"}
STRIPES = {"test": "text", "kind": "text", "osts": "count", "tasks": "count", "stripe_count": "count",
           "osts_used": "count", "suggest_count": "count"}
PEAK = {"test": "text", "operation": "enum", "best_mib_s": "rate MiB/s", "best_mb_s": None, "limit_name": "text",
        "limit_mib_s": "rate MiB/s", "limit_mb_s": None, "share": "fraction"}


def _run(ctx: FactContext) -> IorRun:
    if not isinstance(ctx.profile, IorProfile):
        raise NotApplicable("not an IOR run")
    return ctx.profile.run


def _nodes(test: IorTest) -> int | None:
    p = test.params
    if p.nodes:
        return p.nodes
    if p.tasks and p.tasks_per_node:
        return max(1, p.tasks // p.tasks_per_node)
    return None


def _tasks_per_node(test: IorTest) -> int | None:
    p = test.params
    if p.tasks_per_node:
        return p.tasks_per_node
    nodes = _nodes(test)
    return p.tasks // nodes if p.tasks and nodes else None


def data_per_node(test: IorTest) -> int | None:
    """Bytes each client node writes (and reads back): block x segments x tasks per node."""
    per_task, tpn = test.params.bytes_per_task, _tasks_per_node(test)
    return per_task * tpn if per_task is not None and tpn else None




@fact("client_memory_bytes", "bytes", "RAM of one client node ([system] client_memory_bytes).",
      label="memory of a client node")
def client_memory_bytes(ctx: FactContext) -> int:
    if ctx.config.system.client_memory_bytes is None:
        raise Missing("client memory unknown: set [system] client_memory_bytes in the site config")
    return int(ctx.config.system.client_memory_bytes)


# ---- page cache ----------------------------------------------------------------------

@fact("ior_cache_tests", "record", "Tests whose data per client node fits in that node's memory "
      "(their rates can be page-cache rates).", label="tests that fit in the page cache", fields=CACHE_TEST)
def ior_cache_tests(ctx: FactContext) -> list[dict]:
    run, memory = _run(ctx), ctx.get("client_memory_bytes")
    out = []
    for test in run.tests:
        per_node = data_per_node(test)
        if per_node is not None and per_node < memory and not test.params.direct_io:
            out.append({"test": label(test), "data_per_node": per_node, "memory": memory,
                        "operations": test.operations(), "suggest_block": size_arg(_block_beyond(test, memory))})
    return out


def _block_beyond(test: IorTest, memory: int) -> int:
    """Block size per task that moves twice the node's memory, in whole transfers (or MiB)."""
    unit = test.params.transfer_size or (1 << 20)
    tpn = _tasks_per_node(test) or 1
    per_task = 2 * memory // (tpn * (test.params.segments or 1))
    return max(unit, -(-per_task // unit) * unit)


def _reorder(test: IorTest) -> bool:
    return bool(test.params.reorder_tasks or test.params.reorder_random)


def _reorder_unknown(test: IorTest, run: IorRun) -> bool:
    """Neither the test's parameters nor a command line say whether -C/-Z was set (IOR's CSV output)."""
    p = test.params
    return p.reorder_tasks is None and p.reorder_random is None and not (test.command_line or run.command_line)


@fact("ior_unshuffled_reads", "record", "Read tests without -C/-Z whose reads can be served from the "
      "reading node's cache (data fits its memory, or reads beat the writes by ior_cache_read_ratio).",
      label="read tests the cache can serve", fields=UNSHUFFLED)
def ior_unshuffled_reads(ctx: FactContext) -> list[dict]:
    run = _run(ctx)
    memory = ctx.config.system.client_memory_bytes
    ratio = ctx.param(MIN_SUSPICIOUS_READ)
    out = []
    for test in run.tests:
        read, write = test.bandwidth("read"), test.bandwidth("write")
        if read is None or _reorder(test) or test.params.direct_io:
            continue
        per_node = data_per_node(test)
        fits = memory is not None and per_node is not None and per_node < memory
        fast = write is not None and write > 0 and read / write >= ratio
        if fits or fast:
            out.append({"test": label(test), "read_mib_s": read, "write_mib_s": write,
                        "nodes": _nodes(test), "why": "fits in memory" if fits else "reads much faster than writes",
                        "reorder_unknown": _reorder_unknown(test, run)})
    return out


@fact("ior_single_node", "flag", "Every test ran on one node (-C cannot move reads to another node).",
      label="every test on one node")
def ior_single_node(ctx: FactContext) -> bool:
    nodes = [_nodes(t) for t in _run(ctx).tests]
    return all(n == 1 for n in nodes) and bool(nodes)


# ---- transfer size -----------------------------------------------------------------------

def _stripe_size(ctx: FactContext, test: IorTest) -> int | None:
    return test.params.stripe_size or ctx.config.system.default_stripe_size


IO500_PATH = re.compile(r"(?:^|/)ior[-_](hard|easy)(?:/|$)|ior_file_(hard|easy)")
IO500_HARD_TRANSFER = 47008  # ior-hard's fixed record: the benchmark's definition
# IO500 phases whose transfer size IO500 fixes, not the submitter: what BEN003 would otherwise blame
IO500_FIXED_TRANSFER = {"ior-hard": "its 47,008-byte transfers are",
                        "ior-rnd": "the size of its random reads (ior-rnd4K: 4 KiB) is"}


def _io500_phase(test: IorTest) -> str:
    """'ior-hard', 'ior-easy' or 'ior-rnd' (the random reads of ior-easy's files, -z) when the test
    is an IO500 phase (its file path says so), else ''."""
    p = test.params
    for text in (p.test_file, test.command_line):
        m = IO500_PATH.search(text or "")
        if m:
            return "ior-rnd" if p.random_offsets else f"ior-{m.group(1) or m.group(2)}"
    return "ior-hard" if p.transfer_size == IO500_HARD_TRANSFER == p.block_size else ""


@fact("io500_phases", "enum", "IO500 phases (ior-easy, ior-hard, ior-rnd) among the run's tests: from their "
      "file paths (-z on ior-easy's files: the random-read phase), or -t and -b of 47,008 bytes (ior-hard's record).",
      label="IO500 phases")
def io500_phases(ctx: FactContext) -> list[str]:
    return sorted({phase for t in _run(ctx).tests if (phase := _io500_phase(t))})


@fact("ior_transfer_issues", "record", "Tests whose transfer size is below the RPC size ([system] rpc_size) "
      "or neither a multiple nor a divisor of the stripe size (IO500's ior-hard and random-read phases excepted: "
      "their sizes are fixed).",
      label="tests with an unfit transfer size", fields=TRANSFER)
def ior_transfer_issues(ctx: FactContext) -> list[dict]:
    tests = [t for t in _run(ctx).tests if _io500_phase(t) not in IO500_FIXED_TRANSFER]
    if not tests:
        phase = next(_io500_phase(t) for t in _run(ctx).tests)
        raise Missing(f"an IO500 {phase} run: {IO500_FIXED_TRANSFER[phase]} the benchmark's definition")
    rpc = ctx.get("rpc_size")
    out = []
    for test in tests:
        xfer = test.params.transfer_size
        if not xfer:
            continue
        stripe = _stripe_size(ctx, test)
        below = xfer < rpc
        misfit = bool(stripe) and xfer % stripe != 0 and stripe % xfer != 0
        if below or misfit:
            out.append({"test": label(test), "transfer_size": xfer, "rpc_size": rpc,
                        "stripe_size": stripe, "below_rpc": below, "misaligned": misfit})
    return out


@fact("ior_transfer_fix", "bytes", "Transfer size to use: the stripe size (or RPC size), at least 1 MiB.",
      label="transfer size to use")
def ior_transfer_fix(ctx: FactContext) -> int:
    tests = _run(ctx).tests
    stripe = max((_stripe_size(ctx, t) or 0 for t in tests), default=0)
    return max(stripe, ctx.get("rpc_size"))


@fact("ior_transfer_fix_arg", "text", "The transfer size to use as an IOR -t argument (e.g. 1m).",
      label="IOR -t argument")
def ior_transfer_fix_arg(ctx: FactContext) -> str:
    return size_arg(ctx.get("ior_transfer_fix"))


# ---- repetitions -------------------------------------------------------------------------

@fact("ior_min_repetitions", "count", "Fewest repetitions of any test (IOR -i).", label="fewest repetitions of a test")
def ior_min_repetitions(ctx: FactContext) -> int:
    if ctx.get("io500_phases"):
        raise Missing("an IO500 run: its rules run each phase once")
    reps = [max((s.repetitions for s in t.summaries.values()), default=0) or t.params.repetitions or 0
            for t in _run(ctx).tests]
    reps = [r for r in reps if r]
    if not reps:
        raise Missing("the output states no repetition count")
    return min(reps)


@fact("ior_max_spread", "fraction", "Largest (max - min) / mean of any test's operation over its repetitions.",
      label="largest spread over repetitions ((max - min) / mean)")
def ior_max_spread(ctx: FactContext) -> float:
    spreads = [(s.max_mib - s.min_mib) / s.mean_mib for t in _run(ctx).tests
               for s in t.summaries.values() if s.mean_mib > 0 and s.repetitions > 1]
    return max(spreads, default=0.0)


# ---- stripes, tasks, OSTs ------------------------------------------------------------------

@fact("ior_osts", "count", "OSTs of the file system ([system] osts; IOR runs and campaigns do not record it).",
      label="OSTs of the file system")
def ior_osts(ctx: FactContext) -> int:
    if not ctx.config.system.osts:
        raise Missing("OST count unknown: set [system] osts in the site config")
    return int(ctx.config.system.osts)


def _stripe_count(ctx: FactContext, test: IorTest) -> int | None:
    count = test.params.stripe_count or ctx.config.system.default_stripe_count
    return ctx.get("ior_osts") if count == -1 else count


def _osts_used(ctx: FactContext, test: IorTest) -> int | None:
    """OSTs a test can keep busy: a shared file's stripe count, or files x stripes for -F."""
    osts, tasks, count = ctx.get("ior_osts"), test.params.tasks, _stripe_count(ctx, test)
    if count is None or not tasks:
        return None
    if test.params.access == FPP:
        return min(osts, tasks * count)
    return min(osts, count)


@fact("ior_stripe_issues", "record", "Tests whose layout does not fit tasks and OSTs: a shared file on fewer "
      "OSTs than min(OSTs, tasks), or file-per-process files striped wider than 1 while tasks >= OSTs.",
      label="tests whose layout does not fit", fields=STRIPES)
def ior_stripe_issues(ctx: FactContext) -> list[dict]:
    tests = [t for t in _run(ctx).tests if _through_files(t)]
    if not tests:
        apis = sorted({t.params.api for t in _run(ctx).tests})
        raise NotApplicable(f"{', '.join(apis)}: the API stores objects, not striped files (no OSTs)")
    osts = ctx.get("ior_osts")
    out = []
    for test in tests:
        count, tasks = _stripe_count(ctx, test), test.params.tasks
        if count is None or not tasks:
            continue
        entry = {"test": label(test), "osts": osts, "tasks": tasks, "stripe_count": count,
                 "osts_used": _osts_used(ctx, test)}
        if test.params.access == SHARED and count < min(osts, tasks):
            out.append({**entry, "kind": "shared file on too few OSTs", "suggest_count": min(osts, tasks)})
        elif test.params.access == FPP and count > 1 and tasks >= osts:
            out.append({**entry, "kind": "striped files per process contend for OSTs", "suggest_count": 1})
    return out


# IOR backends that store objects of an object store (DAOS's DFS, S3, RADOS, ...), not files of a
# file system: a stripe count, an OST or `lfs` means nothing to them (IO500 on Aurora's DAOS, 62,400 tasks);
# nor to IME's client, which writes to the burst buffer's flash servers (Oakforest-PACS, review13), or DUMMY's
OBJECT_APIS = frozenset({"DFS", "DAOS", "S3", "S3-4C", "S3-LIBS3", "RADOS", "CHFS", "FINCHFS", "HDFS", "GFARM",
                         "IME", "DUMMY"})


def _through_files(test: IorTest) -> bool:
    return test.params.api.upper() not in OBJECT_APIS


# ---- share of the sustainable peak ------------------------------------------------------------

def sustainable_limits(ctx: FactContext, op: str, nodes: int | None, osts_used: int | None) -> list[tuple[str, float]]:
    """(name, MiB/s) of every limit the site config states for a test of `op` on `nodes` client
    nodes keeping `osts_used` OSTs busy (None: that limit does not apply or is unknown)."""
    system = ctx.config.system
    limits: list[tuple[str, float]] = []
    aggregate = system.peak_write_mib_s if op == "write" else system.peak_read_mib_s
    if aggregate:
        limits.append(("aggregate", float(aggregate)))
    if system.ost_peak_mib_s and system.osts and osts_used:
        limits.append((f"{osts_used} OSTs x {system.ost_peak_mib_s:g} MiB/s", osts_used * system.ost_peak_mib_s))
    if system.oss_peak_mib_s and system.osses:
        limits.append((f"{system.osses} OSSs", system.osses * system.oss_peak_mib_s))
    if system.client_peak_mib_s and nodes:
        limits.append((f"{nodes} client link{'s' if nodes > 1 else ''}", nodes * system.client_peak_mib_s))
    return limits


def peak_record(op: str, test: str, best_mib_s: float, limits: list[tuple[str, float]]) -> dict:
    """A PEAK record: the best result of `op` against the tightest of `limits`."""
    name, limit = min(limits, key=lambda pair: pair[1])
    return {"operation": op, "test": test, "best_mib_s": best_mib_s, "best_mb_s": best_mib_s * MB_PER_MIB,
            "limit_name": name, "limit_mib_s": limit, "limit_mb_s": limit * MB_PER_MIB,
            "share": best_mib_s / limit}


def _limits(ctx: FactContext, op: str, test: IorTest) -> list[tuple[str, float]]:
    osts_used = _osts_used(ctx, test) if ctx.config.system.ost_peak_mib_s and ctx.config.system.osts else None
    return sustainable_limits(ctx, op, _nodes(test), osts_used)


@fact("ior_peak_results", "record", "For write and read: the best result, the tightest sustainable limit the "
      "site config states for its test (aggregate, OSTs used, OSSs, client links) and the share reached.",
      label="best results against the sustainable peak",
      fields=PEAK)
def ior_peak_results(ctx: FactContext) -> list[dict]:
    out = []
    for op in ("write", "read"):
        tests = [(t.bandwidth(op), t) for t in _run(ctx).tests if t.bandwidth(op) is not None]
        if not tests:
            continue
        best, test = max(tests, key=lambda pair: pair[0])
        if limits := _limits(ctx, op, test):
            out.append(peak_record(op, label(test), best, limits))
    if not out:
        raise Missing("no sustainable peak in the site config ([system] peak_write_mib_s, "
                      "peak_read_mib_s, ost_peak_mib_s, oss_peak_mib_s or client_peak_mib_s)")
    return out


@fact("ior_min_peak_share", "fraction", "The lower of the write and read shares of the sustainable peak.",
      label="lower share of the sustainable peak")
def ior_min_peak_share(ctx: FactContext) -> float:
    return min(r["share"] for r in ctx.get("ior_peak_results"))


@fact("ior_max_peak_share", "fraction", "The higher of the write and read shares of the sustainable peak.",
      label="higher share of the sustainable peak")
def ior_max_peak_share(ctx: FactContext) -> float:
    return max(r["share"] for r in ctx.get("ior_peak_results"))


@fact("ior_beyond_peak", "record", "Results above what the hardware sustains (caches, not the file system).",
      label="results above the sustainable peak",
      fields=PEAK)
def ior_beyond_peak(ctx: FactContext) -> list[dict]:
    return [r for r in ctx.get("ior_peak_results") if r["share"] > 1.05]
