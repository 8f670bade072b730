"""Interfaces: STDIO share, MPI-IO use, collective vs independent, blocking MPI-IO, aggregators."""

from __future__ import annotations

import numpy as np

from advisor import arrays
from advisor.facts import FactContext, Missing, fact
from advisor.facts._darshan import col, data_files, data_mask, dxt, maybe, not_lustre, nprocs, records, summary, total
from advisor.facts.layers import account
from advisor.facts.sanity import bounded
from advisor.profile import shared_mask


@fact("stdio_bytes", "bytes", "Bytes read and written through STDIO (fread/fwrite/fprintf ...).",
      label="bytes through STDIO")
def stdio_bytes(ctx: FactContext) -> int:
    s = summary(ctx).modules.get("STDIO")
    return int(s.bytes) if s else 0


@fact("stdio_share", "fraction", "Share of the POSIX + STDIO bytes that went through STDIO.",
      label="share of bytes through STDIO")
def stdio_share(ctx: FactContext) -> float:
    mods = summary(ctx).modules
    both = sum(mods[m].bytes for m in ("POSIX", "STDIO") if m in mods)
    return ctx.get("stdio_bytes") / both if both else 0.0


@fact("stdio_time_s", "seconds", "STDIO read + write + metadata seconds per process.", label="STDIO time per process")
def stdio_time_s(ctx: FactContext) -> float:
    s = summary(ctx).modules.get("STDIO")
    return bounded(ctx, "STDIO").total() if s else 0.0


@fact("stdio_files", "path", "Files with the most STDIO bytes.", label="files with the most STDIO bytes")
def stdio_files(ctx: FactContext) -> list[str]:
    ranked = [f for f in data_files(ctx) if "STDIO" in f.by_module and f.by_module["STDIO"].bytes > 0]
    ranked.sort(key=lambda f: -f.by_module["STDIO"].bytes)
    return [f.path for f in ranked]


@fact("uses_mpiio", "flag", "The job has MPI-IO records.", label="uses MPI-IO")
def uses_mpiio(ctx: FactContext) -> bool:
    return maybe(ctx, "MPI-IO") is not None


@fact("mpiio_hints_passed", "count", "Times the job handed MPI-IO an info object (MPIIO_HINTS: MPI_File_open with "
      "an info other than MPI_INFO_NULL, or MPI_File_set_info) on its data files; Darshan does not record which "
      "hints (IOR passes an empty one). -1: the input cannot tell (a Recorder trace prints the info as a pointer "
      "and holds no MPI_Info_set calls).", label="info objects passed to MPI-IO")
def mpiio_hints_passed(ctx: FactContext) -> int:
    if ctx.profile.source.format == "recorder":
        return -1 if maybe(ctx, "MPI-IO") is not None else 0
    rec = maybe(ctx, "MPI-IO")
    return 0 if rec is None else int(col(rec, "HINTS")[data_mask(ctx, rec)].sum())



@fact("mpiio_views_set", "count", "MPI_File_set_view calls on the job's data files (MPIIO_VIEWS; a Recorder trace "
      "counts the calls): the job, or the library it calls (PnetCDF sets one per collective call), already "
      "describes its access pattern to MPI-IO.", label="file views set")
def mpiio_views_set(ctx: FactContext) -> int:
    rec = maybe(ctx, "MPI-IO")
    return 0 if rec is None else int(col(rec, "VIEWS")[data_mask(ctx, rec)].sum())


@fact("posix_shared_bytes_without_mpiio", "bytes",
      "Bytes moved with plain POSIX on files several ranks share and MPI-IO never opened.",
      label="shared-file bytes through plain POSIX")
def posix_shared_bytes_without_mpiio(ctx: FactContext) -> int:
    return sum(f.by_module["POSIX"].bytes for f in _posix_only_shared(ctx))


@fact("posix_shared_files_without_mpiio", "path", "Shared files accessed with POSIX only.",
      label="shared files accessed with POSIX only")
def posix_shared_files_without_mpiio(ctx: FactContext) -> list[str]:
    return [f.path for f in _posix_only_shared(ctx)]


def _posix_only_shared(ctx: FactContext):
    return [f for f in data_files(ctx) if "POSIX" in f.by_module and "MPI-IO" not in f.by_module
            and f.by_module["POSIX"].ranks > 1 and f.by_module["POSIX"].bytes > 0]


def _mpiio(ctx: FactContext, name: str) -> int:
    return int(total(records(ctx, "MPI-IO"), name))


MPIIO_KINDS = {"INDEP": "independent", "COLL": "collective", "NB": "non-blocking"}

for _kind in MPIIO_KINDS:
    for _op in ("READS", "WRITES"):
        def _make(kind=_kind, op=_op):
            @fact(f"mpiio_{kind.lower()}_{op.lower()}", "ops", f"MPI-IO {MPIIO_KINDS[kind]} {op.lower()}.",
                  label=f"MPI-IO {MPIIO_KINDS[kind]} {op.lower()}")
            def counter(ctx: FactContext) -> int:
                return _mpiio(ctx, f"{kind}_{op}")
            counter.__name__ = f"mpiio_{kind.lower()}_{op.lower()}"
        _make()


@fact("mpiio_indep_write_share", "fraction", "Share of MPI-IO writes that are independent (not collective).",
      label="share of MPI-IO writes that are independent")
def mpiio_indep_write_share(ctx: FactContext) -> float:
    indep, coll = ctx.get("mpiio_indep_writes"), ctx.get("mpiio_coll_writes")
    return indep / (indep + coll) if indep + coll else 0.0


@fact("mpiio_indep_read_share", "fraction", "Share of MPI-IO reads that are independent (not collective).",
      label="share of MPI-IO reads that are independent")
def mpiio_indep_read_share(ctx: FactContext) -> float:
    indep, coll = ctx.get("mpiio_indep_reads"), ctx.get("mpiio_coll_reads")
    return indep / (indep + coll) if indep + coll else 0.0


@fact("mpiio_time_s", "seconds", "MPI-IO seconds per process (read, write and metadata calls; includes the "
      "POSIX time below): the layer account's MPI-IO time, the one figure every report gives for the layer.",
      label="MPI-IO time per process")
def mpiio_time_s(ctx: FactContext) -> float:
    row = account(ctx).row("MPI-IO")
    if row is None or row.time_s is None:
        raise Missing("no timed MPI-IO records in the log")
    return row.time_s


@fact("mpiio_indep_time_s", "seconds", "Seconds per process of independent MPI-IO on shared files (op-weighted).",
      label="independent MPI-IO time on shared files per process")
def mpiio_indep_time_s(ctx: FactContext) -> float:
    return _indep_seconds(ctx, ("READ", "WRITE"))


def _indep_seconds(ctx: FactContext, kinds: tuple[str, ...]) -> float:
    """Seconds per process of independent MPI-IO `kinds` (READ, WRITE) calls on shared files, op-weighted."""
    rec = records(ctx, "MPI-IO")
    ops = sum(col(rec, f"{mode}_{kind}S") for kind in kinds for mode in ("INDEP", "COLL", "NB"))
    indep = sum(col(rec, f"INDEP_{kind}S") for kind in kinds)
    seconds = sum(col(rec, f"F_{kind}_TIME") for kind in kinds)
    share = indep / ops.clip(min=1)
    # shared: opened by several ranks, whether Darshan reduced the records to one or kept a record per rank
    # (mpi-io-test's test.out on NFS: 32 rank records, 7.2 s per process of independent MPI-IO counted as 0)
    return float((seconds * share)[shared_mask(rec)].sum()) / nprocs(ctx)


@fact("mpiio_indep_stripe_sharing", "fraction", "Share of the POSIX requests under independent MPI-IO on shared "
      "files that touch a stripe another rank's requests touch too (DXT; the file's stripe size, else 1 MiB); "
      "1 without DXT, assumed.", label="independent requests on stripes shared between ranks")
def mpiio_indep_stripe_sharing(ctx: FactContext) -> float:
    rec = records(ctx, "MPI-IO")
    indep = rec.ids[shared_mask(rec) & ((col(rec, "INDEP_READS") + col(rec, "INDEP_WRITES")) > 0)]
    try:
        trace = dxt(ctx, "DXT_POSIX")
    except Missing:
        ctx.assume("requests of different ranks share stripes (no DXT trace to tell)", how="run with DXT")
        return 1.0
    sel = np.isin(trace.record_id, indep) & (trace.length > 0)
    if not sel.any():
        return 0.0
    ids, rank, op = trace.record_id[sel].astype(np.int64), trace.rank[sel].astype(np.int64), trace.op[sel]
    files, file_of = np.unique(ids, return_inverse=True)
    stripe = np.array([_stripe_size(ctx, int(i)) for i in files], np.int64)[file_of.ravel()]
    first, last = trace.offset[sel] // stripe, (trace.offset[sel] + trace.length[sel] - 1) // stripe
    # a stripe is shared when two ranks' writes (or reads) start or end in it; a request's inner
    # stripes are its own
    keys = np.concatenate([np.stack([ids, op, first]), np.stack([ids, op, last])], axis=1)
    stripes, which = np.unique(keys, axis=1, return_inverse=True)
    owners = arrays.unique(np.stack([which.ravel(), np.concatenate([rank, rank])]), axis=1)[0]
    shared = np.bincount(owners, minlength=stripes.shape[1]) > 1
    n = len(rank)
    return float((shared[which.ravel()[:n]] | shared[which.ravel()[n:]]).mean())


def _stripe_size(ctx: FactContext, record_id: int) -> int:
    """The file's stripe size (LUSTRE record), else the site's default, else 1 MiB, assumed."""
    layout = ctx.profile.lustre.get(record_id)
    if layout and layout.stripe_size:
        return layout.stripe_size
    if ctx.config.system.default_stripe_size:
        return ctx.config.system.default_stripe_size
    ctx.assume("stripes of 1 MiB (Lustre's default) where the log has no layout", "[system] default_stripe_size",
               ran_on=not_lustre(ctx))
    return 1 << 20


@fact("mpiio_indep_contention_s", "seconds", "Seconds per process independent MPI-IO on shared files loses to "
      "ranks contending for the same stripes (lock round trips): half its time, on the share of its requests "
      "whose stripes another rank touches.", label="independent MPI-IO time lost to shared stripes per process")
def mpiio_indep_contention_s(ctx: FactContext) -> float:
    return ctx.get("mpiio_indep_time_s") * 0.5 * ctx.get("mpiio_indep_stripe_sharing")


@fact("mpiio_indep_write_contention_s", "seconds", "Seconds per process independent MPI-IO writes to shared files "
      "lose to ranks contending for the same stripes: half their time, on the share of the requests whose stripes "
      "another rank touches. Reads share their locks (Lustre's PR locks are compatible): only writes contend.",
      label="independent MPI-IO write time lost to shared stripes per process")
def mpiio_indep_write_contention_s(ctx: FactContext) -> float:
    return _indep_seconds(ctx, ("WRITE",)) * 0.5 * ctx.get("mpiio_indep_stripe_sharing")


def _aggregators(ctx: FactContext) -> dict[int, str | None]:
    """Ranks (and their hosts) that did POSIX I/O on the files accessed with collective MPI-IO.

    With collective buffering only the aggregators touch the file system, so DXT shows the
    aggregators ROMIO really used. The log's "h" metadata cannot say: those are the hints
    Darshan used to write its own log (DARSHAN_LOGHINTS), not the application's.
    """
    rec = records(ctx, "MPI-IO")
    collective = rec.ids[(col(rec, "COLL_READS") + col(rec, "COLL_WRITES")) > 0]
    if len(collective) == 0:
        raise Missing("no file was accessed with collective MPI-IO")
    trace = dxt(ctx, "DXT_POSIX")
    ranks = arrays.unique(trace.rank[np.isin(trace.record_id, collective)])
    if len(ranks) == 0:
        raise Missing("the DXT trace has no POSIX I/O on the collectively accessed files")
    return {int(r): trace.hostnames.get(int(r)) for r in ranks}


@fact("cb_nodes", "count", "Collective-buffering aggregators the job used: ranks with POSIX I/O (DXT) "
      "on the files it accessed with collective MPI-IO.", label="collective-buffering aggregators")
def cb_nodes(ctx: FactContext) -> int:
    return len(ctx.memo("aggregators", lambda: _aggregators(ctx)))


@fact("aggregator_nodes", "count", "Distinct hosts of the collective-buffering aggregators (DXT host names).",
      label="hosts of the aggregators")
def aggregator_nodes(ctx: FactContext) -> int:
    hosts = set(ctx.memo("aggregators", lambda: _aggregators(ctx)).values())
    if None in hosts:
        raise Missing("the DXT trace does not name the host of every aggregator rank")
    return len(hosts)


@fact("compute_nodes", "count", "Distinct hosts of the job's ranks (from the DXT trace).", label="compute nodes")
def compute_nodes(ctx: FactContext) -> int:
    hosts = set()
    for trace in ctx.profile.dxt.values():
        hosts.update(trace.hostnames.values())
    if not hosts:
        raise Missing("the number of compute nodes is unknown (no DXT host names)")
    return len(hosts)


FALLBACK_CB_NODES = 8  # without host names: few enough aggregators to write large blocks


@fact("suggested_cb_nodes", "count", "Collective-buffering aggregators to ask for: one per compute node "
      "(ROMIO's default) when DXT names the hosts, else min(ranks, 8); never more than the ranks.",
      label="aggregators to ask for (cb_nodes)")
def suggested_cb_nodes(ctx: FactContext) -> int:
    ranks = nprocs(ctx)
    nodes = ctx.value("compute_nodes")
    count = max(1, min(ranks, nodes if nodes else FALLBACK_CB_NODES))
    if not nodes:
        ctx.assume(f"{count} aggregator{'s' if count > 1 else ''} for the job's nodes, whose number the log "
                   f"does not hold", how="give cb_nodes the job's node count (or run with DXT_ENABLE_IO_TRACE=1 "
                   "so that the log names the hosts)")
    return count


def _indep_above_posix(ctx: FactContext, kind: str) -> float:
    """Seconds per process MPI-IO `kind` calls spent above their POSIX calls on the files MPI-IO moved
    with independent calls (the layer account's time above, per file). Where the records split that
    time by mode (aggregation.indep_own_share), each file's time above is the independent calls' share
    of it: a file read with 32 collective calls of 1 MiB and 2,000 independent ones of 4 KB spent
    849 ms in the first and 3 ms in the second."""
    from advisor.facts.aggregation import indep_own_share, mpiio_modes
    from advisor.facts.layer_above import time_above

    above = time_above(ctx, "MPI-IO", (kind,))
    share = indep_own_share(ctx, (kind,))
    if share is not None:
        return float(sum(t * share.get(int(i), 0.0) for i, t in zip(above.keys.tolist(), above.per_file.tolist())))
    independent = [i for i, collective in mpiio_modes(ctx).items() if not collective]
    return float(above.per_file[np.isin(above.keys, np.array(independent, np.uint64))].sum())


for _kind in ("write", "read"):
    def _above(ctx: FactContext, kind: str = _kind) -> float:
        return _indep_above_posix(ctx, kind)

    _above.__name__ = f"mpiio_indep_{_kind}_above_posix_s"
    fact(f"mpiio_indep_{_kind}_above_posix_s", "seconds",
         f"Seconds per process independent MPI-IO {_kind}s spent above the POSIX {_kind}s they made, on the "
         f"files MPI-IO moved with independent calls: the MPI library's own work around each call (byte-range "
         f"locks where the file system needs them, as ROMIO's and OMPIO's NFS drivers take; packing "
         f"non-contiguous buffers), which no collective exchange explains.",
         label=f"independent MPI-IO {_kind} time above POSIX per process")(_above)


@fact("mpiio_indep_fstypes", "text", "File systems of the files MPI-IO moved with independent calls.",
      label="file systems of the independent MPI-IO files")
def mpiio_indep_fstypes(ctx: FactContext) -> str:
    from advisor.facts.aggregation import mpiio_modes

    modes = mpiio_modes(ctx)
    return ", ".join(sorted({f.fstype for f in data_files(ctx) if modes.get(f.record_id) is False and f.fstype}))
