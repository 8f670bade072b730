"""How faithful a replay was: the source's numbers per file next to the replay's own record.

The reference comes from the source, not from the plan: DXT segments for traced
files (at the level that is replayed: MPI-IO for MPI-IO files, POSIX otherwise),
the counters for everything else, and for IOR the byte and request counts its
parameters imply.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from advisor.profile import CALL_OPS, DXT_WRITE, JobProfile
from advisor.replay_plan.counters import VIEWS, RecordCounters, mpiio_ids
from advisor.replay_plan.dxt import usable_traces
from advisor.replay_plan.ior import ior_test
from advisor.replay_plan.stream import is_pseudo_file

FIELDS = ("reads", "writes", "bytes_read", "bytes_written")
META_FIELDS = ("opens", "fsyncs")
# A call trace's metadata calls are replayed one by one: each kind is checked per file.
CALL_FIELDS = ("opens", "closes", "stats", "fsyncs", "unlinks", "mkdirs", "rmdirs", "renames", "links",
               "truncates")
_CALL_FIELD = {"open": "opens", "close": "closes", "stat": "stats", "fsync": "fsyncs", "unlink": "unlinks",
               "mkdir": "mkdirs", "rmdir": "rmdirs", "rename": "renames", "link": "links", "truncate": "truncates"}


@dataclass
class FileFidelity:
    source: int  # record id (IOR: the file's index)
    name: str
    expected: dict[str, int]
    replayed: dict[str, int]
    slack: dict[str, float] = field(default_factory=dict)  # allowed absolute rounding, per field
    checked: tuple[str, ...] = FIELDS  # the fields the replay must reproduce

    def error(self, name: str) -> float | None:
        """Relative deviation of the replay from the source beyond the rounding slack."""
        e, r = self.expected.get(name, 0), self.replayed.get(name, 0)
        off = max(abs(r - e) - self.slack.get(name, 0.0), 0.0)
        if e == 0:
            return None if off == 0 else float("inf")
        return off / e

    def worst_error(self, fields: tuple[str, ...] | None = None) -> float:
        errs = [self.error(f) for f in (fields or self.checked) if f in self.expected]
        return max((e for e in errs if e is not None), default=0.0)


def reference(profile: JobProfile, source: str) -> dict[int, dict[str, int]]:
    """Per source record: what the job did at the replayed level (scale 1)."""
    if source == "ior":
        return _ior_reference(profile)
    if source != "dxt":
        return _counter_reference(profile, VIEWS)
    ref = _counter_reference(profile, [v for v in VIEWS if v.module != "STDIO"])
    for rid, row in _dxt_reference(profile).items():  # traced data replaces counted data
        ref.setdefault(rid, dict.fromkeys(FIELDS + META_FIELDS, 0)).update(row)
    for rid, row in _counter_reference(profile, [v for v in VIEWS if v.module == "STDIO"]).items():
        ent = ref.setdefault(rid, dict.fromkeys(FIELDS + META_FIELDS, 0))
        for k, v in row.items():
            ent[k] = ent.get(k, 0) + v
    for rid, row in call_reference(profile).items():  # traced calls replace counted metadata
        ref.setdefault(rid, dict.fromkeys(FIELDS, 0)).update(row)
    return ref


def call_reference(profile: JobProfile) -> dict[int, dict[str, int]]:
    """Per file or directory replayed from a call trace: its metadata calls of each kind."""
    calls = profile.calls
    if calls is None or not len(calls):
        return {}
    keep = ~np.isin(calls.record_id, np.fromiter(mpiio_ids(profile), np.uint64))
    out: dict[int, dict[str, int]] = {}
    rid, op = calls.record_id[keep], calls.op[keep]
    for code, name in enumerate(CALL_OPS):
        ids, counts = np.unique(rid[op == code], return_counts=True)
        for r, n in zip(ids.tolist(), counts.tolist()):
            out.setdefault(int(r), dict.fromkeys(CALL_FIELDS, 0))[_CALL_FIELD[name]] = int(n)
    return out


def _counter_reference(profile: JobProfile, views) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    via_mpiio = mpiio_ids(profile)
    for view in views:
        recs = profile.records.get(view.module)
        if recs is None:
            continue
        rc = RecordCounters(recs, view)
        for row in range(len(recs)):
            rid = int(recs.ids[row])
            if is_pseudo_file(profile.name_of(rid)) or (view.module != "MPI-IO" and rid in via_mpiio):
                continue
            ent = out.setdefault(rid, dict.fromkeys(FIELDS + META_FIELDS, 0))
            if view.module == "MPI-IO":
                for kind, key in (("READ", "reads"), ("WRITE", "writes")):
                    ent[key] += sum(rc.get(row, f"{p}_{kind}S") for p in ("INDEP", "COLL", "SPLIT", "NB"))
                ent.pop("opens", None)  # collective opens are replayed once per phase and rank
            else:
                ent["reads"] += rc.get(row, "READS")
                ent["writes"] += rc.get(row, "WRITES")
                ent["opens"] += rc.total(row, view.opens)
            ent["bytes_read"] += rc.get(row, "BYTES_READ")
            ent["bytes_written"] += rc.get(row, "BYTES_WRITTEN")
            ent["fsyncs"] += rc.total(row, view.fsyncs)
    return out


def _dxt_reference(profile: JobProfile) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    via_mpiio = np.fromiter(mpiio_ids(profile), np.uint64)
    for module, trace in usable_traces(profile).items():
        keep = np.isin(trace.record_id, via_mpiio)
        keep = keep if module == "DXT_MPIIO" else ~keep
        for rid in np.unique(trace.record_id[keep]).tolist():
            if is_pseudo_file(profile.name_of(rid)):
                continue
            sel = keep & (trace.record_id == np.uint64(rid))
            w = sel & (trace.op == DXT_WRITE)
            r = sel & (trace.op != DXT_WRITE)
            out[int(rid)] = {"reads": int(r.sum()), "writes": int(w.sum()),
                             "bytes_read": int(trace.length[r].sum()),
                             "bytes_written": int(trace.length[w].sum())}
    return out


def _ior_reference(profile: JobProfile) -> dict[int, dict[str, int]]:
    test, _ = ior_test(profile)
    p = test.params
    tasks = p.tasks or max(profile.job.nprocs, 1)
    reps = p.repetitions or 1
    per_task = p.block_size * (p.segments or 1)
    n_files = tasks if p.access == "fpp" else 1
    per_file = per_task * tasks // n_files * reps
    ops = per_file // p.transfer_size
    w, r = p.write is not False, bool(p.read)
    row = {"writes": ops * w, "reads": ops * r, "bytes_written": per_file * w, "bytes_read": per_file * r}
    return {i: dict(row) for i in range(n_files)}


def compare(profile: JobProfile, source: str, record: dict, *, scale: float = 1.0) -> list[FileFidelity]:
    """Reference vs the replay's per-file record (keyed by source record id). Below scale 1 a
    plan keeps ceil(n x scale) requests of every rank, phase and kind: up to one request per
    rank and kind (and its bytes) of rounding is allowed."""
    ref = reference(profile, source)
    called = set(call_reference(profile)) if source == "dxt" else set()
    nranks = max(profile.job.nprocs, 1)
    done: dict[int, dict[str, int]] = {}
    counted = FIELDS + tuple(dict.fromkeys(META_FIELDS + CALL_FIELDS))
    for row in record.get("per_file", []):
        acc = done.setdefault(int(row["source"]), dict.fromkeys(counted, 0))
        for f in counted:
            acc[f] += int(row.get(f, 0))
    out = []
    for rid in sorted(set(ref) | set(done)):
        exp = {k: int(round(v * scale)) if k in FIELDS else v for k, v in ref.get(rid, {}).items()}
        if not any(exp.values()) and not any(done.get(rid, {}).values()):
            continue
        out.append(FileFidelity(rid, profile.name_of(rid) if source != "ior" else f"file {rid}",
                                exp, done.get(rid, dict.fromkeys(FIELDS, 0)),
                                _slack(ref.get(rid, {}), nranks) if scale < 1 else {},
                                FIELDS + CALL_FIELDS if rid in called and scale >= 1 else FIELDS))
    return out


def _slack(full: dict[str, int], nranks: int) -> dict[str, float]:
    out = {}
    for ops, nbytes in (("reads", "bytes_read"), ("writes", "bytes_written")):
        n = full.get(ops, 0)
        out[ops] = float(nranks)
        out[nbytes] = nranks * (full.get(nbytes, 0) / n if n else 0.0)
    out["fsyncs"] = float(nranks)
    return out
