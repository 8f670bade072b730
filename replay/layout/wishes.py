"""A plan's layout wishes on a real target: made concrete, applied, read back and checked.

- :func:`prepare` (where ioadvisor runs, before the plans are saved): every wish made
  concrete and valid on the target (CephFS stripe units and object sizes that fit, stripe
  count -1 as the OSD count), the targets to avoid turned into a placement (a CephFS pool
  without them, a Lustre OST list); :class:`Unsupported` says why a fix cannot be replayed.
- :func:`apply` (the executor's rank 0, before each run): directory defaults first, then the
  files that carry their own layout, created empty with it.
- :func:`read_back` (rank 0, after the first run of a variant): the layout every file of the
  run actually got, grouped, and how many of the wished ones got what was asked.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from replay.layout import Backend, Layout, LayoutError, Unsupported, backend_for
from replay.plan import LAYOUT_DIR, Plan
from replay.rank import file_path
from replay.safety import fstype_of

READ_BACK_LIMIT = 2000  # files read back per variant (each a getxattr or an lfs call)
SHOWN_MISMATCHES = 5


def wished(plan: Plan) -> np.ndarray:
    """Ids of the files with a layout wish."""
    f = plan.files
    return np.flatnonzero((np.asarray(f["stripe_count"]) != 0) | (np.asarray(f["stripe_size"]) > 0)
                          | (np.asarray(f["object_size"]) > 0) | (np.asarray(f["avoid"]) > 0))


def wish_of(plan: Plan, fid: int) -> Layout:
    f = plan.files
    return Layout(stripe_count=int(f["stripe_count"][fid]), stripe_size=int(f["stripe_size"][fid]),
                  object_size=int(f["object_size"][fid]))


def prepare(plan: Plan, target: str | Path) -> Plan:
    """`plan` with its wishes made concrete for the file system of `target` (a directory on it)."""
    fids = wished(plan)
    if not len(fids):
        return plan
    backend = backend_for(target)
    if backend is None:
        raise Unsupported(f"no stripe layout control on {fstype_of(target) or 'this file system'}")
    meta = dict(plan.meta)
    bad = {int(t) for t in plan.meta.get("avoid_targets", [])}
    if bad:
        meta["placement"] = backend.avoiding(bad)
    base = backend.read(Path(target))
    files = {k: np.array(v) for k, v in plan.files.items()}
    for fid in fids.tolist():
        concrete = backend.resolve(wish_of(plan, fid), base)
        files["stripe_count"][fid] = concrete.stripe_count
        files["stripe_size"][fid] = concrete.stripe_size
        files["object_size"][fid] = concrete.object_size
    return plan.replace(files=files, meta=meta)


def apply(plan: Plan, rundir: Path, dirs: np.ndarray) -> None:
    """Set the plan's layouts in a fresh run directory (rank 0, before the ranks open files)."""
    fids = wished(plan)
    if not len(fids):
        return
    backend = _backend(rundir)
    scope, avoid = np.asarray(plan.files["layout_scope"]), np.asarray(plan.files["avoid"])
    placement = plan.meta.get("placement")
    done_dirs: set[int] = set()
    for fid in fids.tolist():
        layout = wish_of(plan, fid)
        if avoid[fid] and placement:
            layout = backend.placed(layout, placement, fid)
        path, d = Path(file_path(rundir, dirs, fid)), int(dirs[fid])
        if scope[fid] == LAYOUT_DIR:
            if d not in done_dirs:  # the directory's default: every file created there inherits it
                backend.set_dir(path.parent, layout)
                done_dirs.add(d)
        else:
            backend.create(path, layout)


def _backend(path: Path) -> Backend:
    backend = backend_for(path)
    if backend is None:
        raise LayoutError(f"the plan asks for layouts but {fstype_of(path) or 'this file system'} has no "
                          "layout control")
    return backend


def read_back(plan: Plan, rundir: Path, dirs: np.ndarray) -> dict | None:
    """The layouts the run's files got (None on a file system without layouts).

    ``layouts``: each distinct layout and how many files have it; ``wished``/``matched``:
    files with a wish and those whose layout has every asked field (and, kept off targets,
    lies inside the placement); ``absent``: files the workload removed before the read-back.
    """
    backend = backend_for(rundir)
    if backend is None:
        return None
    wish = set(wished(plan).tolist())
    placement = plan.meta.get("placement")
    avoid = np.asarray(plan.files["avoid"])
    groups: Counter = Counter()
    matched, absent, mismatched = 0, 0, []
    for fid in range(min(plan.nfiles, READ_BACK_LIMIT)):
        path = Path(file_path(rundir, dirs, fid))
        if not path.exists():
            absent += fid in wish
            continue
        got = backend.read(path)
        groups[got] += 1
        if fid not in wish:
            continue
        asked = wish_of(plan, fid)
        ok = _has(got, asked) and (not avoid[fid] or not placement or backend.respects(got, placement))
        matched += ok
        if not ok and len(mismatched) < SHOWN_MISMATCHES:
            mismatched.append({"file": fid, "asked": asked.as_dict(), "got": got.as_dict()})
    return {"fstype": backend.fstype, "files": sum(groups.values()),
            "layouts": [{"layout": layout.as_dict(), "files": n} for layout, n in groups.most_common()],
            "wished": len(wish), "matched": matched, "absent": absent, "mismatched": mismatched,
            "placement": placement}


def annotate(readbacks: list[dict | None], target: str | Path) -> None:
    """Add to every read-back layout naming a pool the storage targets of that pool (CephFS: its
    OSDs, asked of the cluster once, here rather than on the executor's node, which may have no
    ``ceph`` command). Where the cluster cannot be asked the layouts stay as read."""
    backend = backend_for(target)
    if backend is None:
        return
    for readback in readbacks:
        for group in (readback or {}).get("layouts", []):
            layout = group["layout"]
            if layout.get("pool") and not layout.get("targets"):
                try:
                    if osds := backend.pool_targets(layout["pool"]):
                        layout["targets"] = list(osds)
                except LayoutError:
                    return


def _has(got: Layout, asked: Layout) -> bool:
    """Every field the wish sets is what the file got (-1 stripes: as many as it could)."""
    if asked.stripe_count > 0 and got.stripe_count != asked.stripe_count:
        return False
    if asked.stripe_count == -1 and got.stripe_count < 1:
        return False
    return all(not want or want == have for want, have in ((asked.stripe_size, got.stripe_size),
                                                           (asked.object_size, got.object_size)))


def shortfall(readback: dict | None) -> str:
    """Why the files did not get their wished layouts, or "" when they did (or none was wished)."""
    if not readback or not readback["wished"]:
        return ""
    checked = readback["wished"] - readback["absent"]
    if checked <= 0:
        return "the workload removed every file with a layout wish before it could be read back"
    if readback["matched"] == checked:
        return ""
    first = readback["mismatched"][0] if readback["mismatched"] else {}
    return (f"{checked - readback['matched']} of {checked} files did not get the layout asked "
            f"(file {first.get('file')}: asked {first.get('asked')}, got {first.get('got')})")
