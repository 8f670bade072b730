"""Lustre layouts: stripe count vs file size, writers and OSTs; inheritance; stripe size vs
transfer size; PFL components vs where the data lies; OST use.

Layouts come from Darshan's LUSTRE module (both record forms); the file system's OST
count and default layout come from the site config ([system]) when the log cannot say.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict

import numpy as np

from advisor.facts import FactContext, Missing, fact, param
from advisor.facts._darshan import col, darshan_like, data_files, data_fstypes, data_records, nprocs
from advisor.units import GiB, MiB

BIG_SHARED = param("big_shared_file_bytes", 1 * GiB, "a shared file this large deserves more than one stripe",
                   kind="bytes")
BIG_FILE = param("inherit_file_bytes", 1 * GiB,
                 "files this large in one directory, all on one stripe, suggest a lost default layout",
                 kind="bytes")


def layouts(ctx: FactContext) -> list:
    """Per-file summaries that carry a Lustre layout; Missing saying why there are none."""
    darshan_like(ctx)
    with_layout = [f for f in data_files(ctx) if f.layout is not None and f.layout.components]
    if with_layout:
        return with_layout
    on_lustre = [f for f in data_files(ctx) if f.fstype == "lustre"]
    if on_lustre:
        raise Missing("files are on Lustre but the log has no LUSTRE records (Darshan built without the Lustre module)")
    if ctx.profile.mounts:
        kinds = data_fstypes(ctx) or ["unknown"]
        raise Missing(f"no file is on Lustre (file systems: {', '.join(kinds)})")
    raise Missing("no LUSTRE records in the log")


# file systems whose files have a layout a user sets (stripe count and size): Lustre, CephFS
# (kernel "ceph" or "fuse.ceph-fuse": setfattr ceph.file.layout), BeeGFS, OrangeFS/PVFS2
STRIPED = ("lustre", "ceph", "beegfs", "pvfs2", "orangefs")


@fact("fs_without_stripes", "text",
      "File systems of the job's data files when the input names them (the log's mount table) and none has "
      "per-file stripes (ext4, xfs, NFS, GPFS, overlay; not Lustre, CephFS, BeeGFS, OrangeFS): files there have no "
      "stripes or OSTs to set, so advice about them is moot; '' where some file has stripes and where the input "
      "does not say (a Recorder trace, an IOR output).",
      label="file systems without stripes")
def fs_without_stripes(ctx: FactContext) -> str:
    return without_stripes(data_fstypes(ctx))


@fact("main_direction_striped_share", "fraction",
      "Share of the bytes of the job's main direction (reads when it read at least as much as it wrote, at POSIX + "
      "STDIO on its data files) on files whose Lustre layout spreads them over more than one OST: striping for "
      "that direction is already applied there.", label="share of the main direction's bytes on striped files")
def main_direction_striped_share(ctx: FactContext) -> float:
    moved: dict[str, float] = {"READ": 0.0, "WRITTEN": 0.0}
    striped = dict(moved)
    for module in ("POSIX", "STDIO"):
        try:
            rec = data_records(ctx, module)
        except Missing:
            continue
        wide = np.array([(layout := ctx.profile.lustre.get(int(i))) is not None and layout.stripe_count > 1
                         for i in rec.ids], bool)
        for way in moved:
            column = col(rec, f"BYTES_{way}")
            moved[way] += float(column.sum())
            striped[way] += float(column[wide].sum())
    way = "READ" if moved["READ"] >= moved["WRITTEN"] else "WRITTEN"
    return striped[way] / moved[way] if moved[way] else 0.0


def without_stripes(kinds: list[str]) -> str:
    """'ext4, nfs' for those `kinds`, or '' when there are none or one has per-file stripes (:data:`STRIPED`)."""
    return "" if any(s in kind for kind in kinds for s in STRIPED) else ", ".join(kinds)


@fact("fs_osts", "count",
      "OSTs of the file system: [system] osts, else the log's LUSTRE_OSTS (Darshan before 3.4.6), else the "
      "highest OST index seen + 1 (a lower bound, assumed).", label="OSTs of the file system")
def fs_osts(ctx: FactContext) -> int:
    if ctx.config.system.osts:
        return int(ctx.config.system.osts)
    files = layouts(ctx)
    recorded = [f.layout.osts for f in files if f.layout.osts]
    if recorded:
        return int(max(recorded))
    seen = [o for f in files for o in f.layout.ost_ids]
    if not seen:
        raise Missing("the number of OSTs is unknown (set [system] osts in the site config)")
    ctx.assume(f"{max(seen) + 1} OSTs in the file system, the highest OST index the job used + 1 (a lower bound)",
               "[system] osts")
    return max(seen) + 1


@fact("used_osts", "count", "Distinct OSTs holding the job's files.", label="OSTs used")
def used_osts(ctx: FactContext) -> int:
    return len({o for f in layouts(ctx) if f.bytes > 0 for o in f.layout.ost_ids})


@fact("ost_use_share", "fraction", "Used OSTs / OSTs of the file system.", label="share of the OSTs used")
def ost_use_share(ctx: FactContext) -> float:
    return ctx.get("used_osts") / ctx.get("fs_osts")


@fact("lustre_bytes", "bytes", "Bytes moved on files with a Lustre layout.", label="bytes on Lustre files")
def lustre_bytes(ctx: FactContext) -> int:
    return int(sum(f.bytes for f in layouts(ctx)))


@fact("ost_bytes_imbalance", "ratio", "Bytes on the busiest OST / mean bytes per used OST (stripes share a "
      "file's bytes evenly).", label="busiest OST's bytes / mean OST's")
def ost_bytes_imbalance(ctx: FactContext) -> float:
    per_ost: dict[int, float] = defaultdict(float)
    for f in layouts(ctx):
        osts = f.layout.ost_ids
        for o in osts:
            per_ost[o] += f.bytes / len(osts)
    loads = np.array([v for v in per_ost.values() if v > 0])
    if len(loads) < 2:
        raise Missing("fewer than two OSTs hold data")
    return float(loads.max() / loads.mean())


ASSUMED_OSTS = 8  # a stripe count that spreads a shared file without knowing the file system's width


def _suggested_count(ctx: FactContext, ranks: int) -> int:
    try:
        osts = ctx.get("fs_osts")
    except Missing:
        osts = ASSUMED_OSTS
        ctx.assume(f"{ASSUMED_OSTS} OSTs in the file system, whose number the log does not hold", "[system] osts")
    return int(max(2, min(osts, ranks, 64)))


def _narrow_shared(ctx: FactContext) -> list[dict]:
    out = []
    for f in layouts(ctx):
        if not f.shared and f.ranks < 2:
            continue
        target = _suggested_count(ctx, max(f.ranks, 2))
        if f.bytes >= ctx.param(BIG_SHARED) and f.layout.stripe_count < min(target, 4):
            out.append({"path": f.path, "bytes": f.bytes, "ranks": f.ranks, "stripe_count": f.layout.stripe_count,
                        "target": target,
                        # the phase waits for the slowest rank on the file, not the mean one
                        "seconds": f.stats.slowest_rank_time or f.stats.io_time / nprocs(ctx)})
    return sorted(out, key=lambda d: -d["bytes"])


@fact("narrow_shared_files", "path", "Large shared files on fewer than min(4, OSTs, writers) stripes.",
      label="large shared files on too few stripes")
def narrow_shared_files(ctx: FactContext) -> list[str]:
    return [d["path"] for d in ctx.memo("narrow", lambda: _narrow_shared(ctx))]


@fact("narrow_shared_bytes", "bytes", "Bytes of the large shared files on too few stripes.",
      label="bytes of those files")
def narrow_shared_bytes(ctx: FactContext) -> int:
    return int(sum(d["bytes"] for d in ctx.memo("narrow", lambda: _narrow_shared(ctx))))


@fact("narrow_shared_stripes", "count", "Stripe count of the largest shared file on too few stripes.",
      label="their stripe count")
def narrow_shared_stripes(ctx: FactContext) -> int:
    narrow = ctx.memo("narrow", lambda: _narrow_shared(ctx))
    return narrow[0]["stripe_count"] if narrow else 0


@fact("narrow_shared_cost_s", "seconds", "Seconds the slowest rank of each narrow shared file loses against the "
      "suggested stripe count.", label="time lost to too few stripes")
def narrow_shared_cost_s(ctx: FactContext) -> float:
    cost = 0.0
    for d in ctx.memo("narrow", lambda: _narrow_shared(ctx)):
        cost += d["seconds"] * (1 - d["stripe_count"] / d["target"])
    return cost


@fact("suggested_stripe_count", "count", "Stripe count to use for the job's large shared files: min(OSTs, "
      "writers, 64).", label="stripe count to use")
def suggested_stripe_count(ctx: FactContext) -> int:
    narrow = ctx.memo("narrow", lambda: _narrow_shared(ctx))
    if narrow:
        return narrow[0]["target"]
    return _suggested_count(ctx, nprocs(ctx))


@fact("suggested_stripe_size", "bytes", "Stripe size to use: the common request size rounded up to MiB, at "
      "least 1 MiB, at most 64 MiB.", label="stripe size to use")
def suggested_stripe_size(ctx: FactContext) -> int:
    size = ctx.value("common_access_size") or 4 * MiB
    size = max(MiB, min(64 * MiB, int(np.ceil(size / MiB)) * MiB))
    return max(size, 4 * MiB) if size <= MiB else size


@fact("lustre_dir", "path", "Directory of the job's largest file on Lustre (where to set the layout); "
      "'DIR' when that is a file system's root, whose default layout every new file there would inherit.",
      label="directory to set the layout on")
def lustre_dir(ctx: FactContext) -> str:
    files = sorted(layouts(ctx), key=lambda f: -f.bytes)
    return _restripable(ctx, os.path.dirname(files[0].path) or ".")


def _restripable(ctx: FactContext, directory: str) -> str:
    """`directory`, or 'DIR' when it is a file system's root (an admin's decision, not a job's)."""
    roots = {os.path.normpath(m.path) for m in ctx.profile.mounts} | {"/"}
    return "DIR" if os.path.normpath(directory) in roots else directory


@fact("fpp_wide_files", "count", "Files of one rank each striped over several OSTs while writers >= OSTs.",
      label="per-process files striped wide")
def fpp_wide_files(ctx: FactContext) -> int:
    own = [f for f in layouts(ctx) if not f.shared and f.ranks <= 1 and f.bytes > 0]
    writers = len(own)
    if writers < ctx.get("fs_osts"):
        return 0
    return sum(1 for f in own if f.layout.stripe_count > 1)


@fact("fpp_writers", "count", "Files written or read by a single rank each (file per process).",
      label="files of one rank each")
def fpp_writers(ctx: FactContext) -> int:
    return sum(1 for f in data_files(ctx) if not f.shared and f.ranks <= 1 and f.bytes > 0)


@fact("fpp_stripe_count", "count", "Most common stripe count of the file-per-process files.",
      label="their stripe count")
def fpp_stripe_count(ctx: FactContext) -> int:
    counts = [f.layout.stripe_count for f in layouts(ctx) if not f.shared and f.ranks <= 1 and f.bytes > 0]
    if not counts:
        raise Missing("no file-per-process files with a layout")
    return int(np.bincount(counts).argmax())


def _inherit(ctx: FactContext) -> list[dict]:
    """Directories whose large files all sit on one stripe while the file system is wider."""
    system = ctx.config.system
    layouts(ctx)
    try:
        osts = ctx.get("fs_osts")
    except Missing:
        osts = None
    wider = (system.default_stripe_count or 0) > 1 or (system.default_stripe_count == -1) \
        or (osts is not None and osts > 1)
    if not wider:
        raise Missing("the file system's default layout and OST count are unknown "
                      "(set [system] osts and default_stripe_count)")
    dirs: dict[str, list] = defaultdict(list)
    for f in layouts(ctx):
        dirs[os.path.dirname(f.path)].append(f)
    out = []
    for d, fs in dirs.items():
        big = [f for f in fs if max(f.stats.bytes_written, f.stats.bytes_read) >= ctx.param(BIG_FILE)]
        if len(big) < 2 or any(f.layout.stripe_count != 1 for f in fs if f.bytes > 0):
            continue
        if osts is not None and len(big) >= osts / 2:
            continue  # enough single-stripe files to spread over the OSTs anyway (file per process)
        out.append({"dir": d, "files": len(big), "bytes": sum(f.bytes for f in big),
                    "seconds": sum(f.stats.io_time for f in big)})
    return sorted(out, key=lambda x: -x["bytes"])


@fact("single_stripe_dirs", "path", "Directories whose large files all have stripe count 1 while the file "
      "system is wider.", label="directories of large single-stripe files")
def single_stripe_dirs(ctx: FactContext) -> list[str]:
    return [d["dir"] for d in ctx.memo("inherit", lambda: _inherit(ctx))]


@fact("single_stripe_dir", "path", "The first of those directories, where to set the layout; 'DIR' when it "
      "is a file system's root.", label="directory to set the layout on")
def single_stripe_dir(ctx: FactContext) -> str:
    dirs = ctx.get("single_stripe_dirs")
    if not dirs:
        raise Missing("no directory holds only single-stripe large files")
    return _restripable(ctx, dirs[0])


@fact("single_stripe_dir_files", "count", "Large single-stripe files in those directories.",
      label="large single-stripe files")
def single_stripe_dir_files(ctx: FactContext) -> int:
    return sum(d["files"] for d in ctx.memo("inherit", lambda: _inherit(ctx)))


@fact("single_stripe_dir_stripe_count", "count", "Stripe count for those directories: enough for their large "
      "files together to cover the OSTs (OSTs / files, rounded up), at most the suggested stripe count.",
      label="stripe count for the directory")
def single_stripe_dir_stripe_count(ctx: FactContext) -> int:
    files = max(ctx.get("single_stripe_dir_files"), 1)
    # a per-process file has one writer: 48 such files on 200 OSTs want 5 stripes each, not 48
    return max(1, min(ctx.get("suggested_stripe_count"), -(-ctx.get("fs_osts") // files)))


@fact("single_stripe_dir_cost_s", "seconds", "Seconds per process on those files beyond what the directory's "
      "stripe count would take.", label="time lost to one stripe per process")
def single_stripe_dir_cost_s(ctx: FactContext) -> float:
    target = ctx.get("single_stripe_dir_stripe_count")
    return sum(d["seconds"] for d in ctx.memo("inherit", lambda: _inherit(ctx))) / nprocs(ctx) * (1 - 1 / target)


def _straddle(ctx: FactContext) -> dict:
    size = ctx.get("common_access_size")
    worst = {"files": 0, "stripe_size": 0, "transfer": size, "seconds": 0.0}
    for f in layouts(ctx):
        stripe = f.layout.stripe_size
        if stripe <= 0 or size < 64 * 1024 or f.bytes == 0:
            continue
        if size % stripe and stripe % size:
            worst["files"] += 1
            worst["stripe_size"] = stripe
            worst["seconds"] += f.stats.read_time + f.stats.write_time
    return worst


@fact("stripe_straddle_files", "count", "Files whose common request size is neither a multiple nor a divisor of "
      "the stripe size.", label="files whose requests straddle stripes")
def stripe_straddle_files(ctx: FactContext) -> int:
    return ctx.memo("straddle", lambda: _straddle(ctx))["files"]


@fact("straddle_stripe_size", "bytes", "Stripe size of those files.", label="their stripe size")
def straddle_stripe_size(ctx: FactContext) -> int:
    return ctx.memo("straddle", lambda: _straddle(ctx))["stripe_size"]


@fact("stripe_straddle_cost_s", "seconds", "Seconds per process on those files x the share of requests that "
      "cross a stripe boundary.", label="time straddling stripes per process")
def stripe_straddle_cost_s(ctx: FactContext) -> float:
    s = ctx.memo("straddle", lambda: _straddle(ctx))
    stripe = s["stripe_size"] or 1
    crossing = min(1.0, s["transfer"] / stripe) if s["transfer"] < stripe else 1.0
    return s["seconds"] / nprocs(ctx) * crossing * 0.3


@fact("domain_alignment", "bytes", "The boundary collective buffering's file domains should start on (ROMIO's "
      "striping_unit hint): the most common stripe size of the job's striped data files, else the file "
      "alignment Darshan recorded (a block size is no stripe size to ask a striped file system for).",
      label="file domain boundary")
def domain_alignment(ctx: FactContext) -> int:
    try:
        striped = layouts(ctx)
    except Missing:
        return ctx.get("file_alignment")
    sizes = Counter(f.layout.stripe_size for f in striped if f.layout.stripe_size > 0)
    return sizes.most_common(1)[0][0] if sizes else ctx.get("file_alignment")


FITTING_STRIPES = [n << 20 for n in (4, 2, 1)]  # smaller stripes would split Lustre's 1 MiB RPCs


@fact("fitting_stripe_size", "bytes", "Largest stripe size of 4, 2 or 1 MiB the common request size is a whole "
      "multiple of; 0 when there is none (a smaller stripe would split 1 MiB RPCs: the request has to change).",
      label="stripe size that fits the requests")
def fitting_stripe_size(ctx: FactContext) -> int:
    size = int(ctx.get("common_access_size"))
    return next((s for s in FITTING_STRIPES if size % s == 0), 0)


@fact("fitting_request_size", "bytes", "The common request size rounded to the nearest whole number of stripes "
      "(at least one) of the files it straddles.", label="request size that fits the stripes")
def fitting_request_size(ctx: FactContext) -> int:
    stripe = ctx.get("straddle_stripe_size")
    if stripe <= 0:
        raise Missing("no file's requests straddle its stripes")
    return max(1, round(ctx.get("common_access_size") / stripe)) * stripe


def _pfl(ctx: FactContext) -> list[dict]:
    out = []
    for f in layouts(ctx):
        comps = f.layout.components
        if len(comps) < 2 or f.bytes < ctx.param(BIG_FILE):
            continue
        widest = max(c.stripe_count for c in comps)
        extent = max(f.stats.bytes_written, f.stats.bytes_read)
        narrow = 0
        for c in comps:
            end = extent if c.extent_end < 0 else min(c.extent_end, extent)
            if c.stripe_count < widest and end > c.extent_start:
                narrow += end - c.extent_start
        if narrow > 0.5 * extent:
            out.append({"path": f.path, "narrow_share": narrow / extent, "widest": widest})
    return out


@fact("pfl_narrow_files", "path", "Large PFL files whose data lies mostly in their narrow (few-stripe) components.",
      label="PFL files mostly in narrow components")
def pfl_narrow_files(ctx: FactContext) -> list[str]:
    return [d["path"] for d in ctx.memo("pfl", lambda: _pfl(ctx))]
