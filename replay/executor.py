"""The replay executor: runs plans with MPI ranks (``mpiexec``/``srun ... python -m replay.executor``).

Several plans (variants: the recorded workload and its fixes) run in one MPI job, in
rounds of one sample per variant (shuffled, mirrored orders; :mod:`replay.sampling`). A warm-up pass
of each variant records what it did and sets its passes per sample, so that a sample
lasts at least ``--min-sample-s``; each pass runs in a fresh run directory inside a
scratch directory made by :class:`replay.safety.Scratch`. Before every pass the files
the plan reads without writing first are prefilled and the page cache is kept out
(dropped when permitted, else the prefilled files evicted); the pass's files are
removed after it, untimed, so no pass inherits another's dirty or cached pages. With
``--adaptive`` rank 0 runs the sequential test of :mod:`replay.stats` after every round
and stops each fix once it is decided. Each sample records rank 0's node's 1-minute load
average when it ends. Rank 0 writes one JSON result: per variant the time per pass of every
sample, per-phase times (max/min/mean over ranks) and the record of what the warm-up did (per
file, per rank; the touched (file, rank) rows go to a side ``.npy``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import numpy as np

from replay import stats
from replay.layout import LayoutError
from replay.layout import wishes as layout_wishes
from replay.plan import Plan, plan_info
from replay.rank import BUFFER_CAP, Buffer, RankRunner, file_path
from replay.record import reduce_record
from replay.reshape import neighbour_reads
from replay.safety import SafetyError, check_scratch, die_with_parent, drop_caches
from replay.sampling import PROGRESS, Budget, RaceRule, Schedule, passes_for

RESULT_SCHEMA = "ioadvisor/replay-result/v2"
PREFILL_CHUNK = 4 << 20
CACHE_POLICIES = ("drop", "evict", "neighbour", "none")
EVICT = "evict (fdatasync + posix_fadvise DONTNEED of the files a pass reads before it; sync before every sample)"
ABORT_GRACE_S = 0.5  # a failed replay is rare; half a second lets the reason reach the user


class ReplayFailed(Exception):
    pass


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m replay.executor",
                                 description="Run replay plans with MPI ranks (see docs/replay.md).")
    ap.add_argument("--plan", action="append", required=True, help="saved plan directory (repeatable)")
    ap.add_argument("--label", action="append", help="label of each plan, in order")
    ap.add_argument("--scratch", required=True, help="scratch directory made by ioadvisor")
    ap.add_argument("--out", required=True, help="result JSON written by rank 0")
    ap.add_argument("--repeat", type=int, default=1, help="rounds (without --adaptive)")
    ap.add_argument("--expect-size", type=int, default=0, help="abort unless COMM_WORLD has this size")
    ap.add_argument("--cache", choices=CACHE_POLICIES, default="none")
    ap.add_argument("--odirect", action="store_true")
    ap.add_argument("--think-time", action="store_true")
    ap.add_argument("--min-sample-s", type=float, default=0.0,
                    help="shortest sample: shorter passes run back to back within one sample")
    ap.add_argument("--adaptive", action="store_true",
                    help="the first plan is the baseline; rounds go on until the test decides every fix")
    ap.add_argument("--margin", type=float, default=stats.Policy.margin)
    ap.add_argument("--reproducibility", type=float, default=stats.Policy.reproducibility)
    ap.add_argument("--precision", type=float, default=stats.Policy.precision)
    ap.add_argument("--min-pairs", type=int, default=stats.Policy.min_pairs)
    ap.add_argument("--max-pairs", type=int, default=stats.Policy.max_pairs)
    ap.add_argument("--budget-s", type=float, default=math.inf, help="wall-time budget of the measurement")
    ap.add_argument("--budget-bytes", type=float, default=math.inf, help="bytes the measurement may write")
    ap.add_argument("--passes", action="append", type=int,
                    help="passes per sample of each plan, in order, known from an earlier measurement (0: not "
                         "known): a plan whose count is known gets no warm-up pass")
    race = ap.add_argument_group("race", "a tune's rung: decisions between rounds (replay.sampling.RaceRule)")
    race.add_argument("--race-keep", type=int, default=0, help="candidates the rung's halving keeps (0: no race)")
    race.add_argument("--race-alpha", type=float, default=RaceRule.alpha)
    race.add_argument("--race-min-shared", type=int, default=RaceRule.min_shared)
    race.add_argument("--race-alike", type=float, default=RaceRule.alike)
    race.add_argument("--race-ref-competes", action="store_true")
    race.add_argument("--extend-to", type=int, default=0)
    race.add_argument("--extend-alike", type=float, default=RaceRule.extend_alike)
    return ap.parse_args(argv)


def race_rule(args: argparse.Namespace) -> RaceRule | None:
    if args.adaptive or args.race_keep < 1:
        return None
    return RaceRule(keep=args.race_keep, alpha=args.race_alpha, min_shared=args.race_min_shared,
                    alike=args.race_alike, ref_competes=args.race_ref_competes, extend_to=args.extend_to,
                    extend_alike=args.extend_alike)


def _abort(comm, code: int, reason: str) -> int:
    """Say why on stderr and end every rank (the others may wait in a collective forever); the pause
    lets the launcher's proxy forward the reason before MPI_Abort kills it."""
    sys.stderr.write(f"replay: rank {comm.rank}: {reason}\n")
    sys.stderr.flush()
    time.sleep(ABORT_GRACE_S)
    comm.Abort(code)
    return code


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    die_with_parent(signal.SIGKILL)  # a rank whose launcher proxy is gone must not write on
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if args.expect_size and comm.size != args.expect_size:
        sys.stderr.write(f"replay: MPI started a job of {comm.size} ranks, expected "
                         f"{args.expect_size} (launcher and MPI library do not match)\n")
        return 3
    signal.signal(signal.SIGTERM, _terminate)
    try:
        scratch, refused = check_scratch(args.scratch), ""
    except SafetyError as exc:
        scratch, refused = None, str(exc)
    # every rank learns of a refusal and exits normally: MPI_Abort can kill the launcher's proxies before
    # they forward the reason to its stderr (seen at load 8: exit 4, nothing said)
    if comm.allreduce(bool(refused), op=MPI.LOR):
        if refused:
            sys.stderr.write(f"replay: rank {comm.rank}: {refused}\n")
        return 4
    try:
        session = Session(comm, args, scratch)
        result = session.run()
    except (SafetyError, ReplayFailed, OSError, ValueError) as exc:
        return _abort(comm, 4, str(exc))
    except Exception as exc:  # a bug of ours: abort, or the other ranks wait in a collective forever
        return _abort(comm, 5, f"internal error: {type(exc).__name__}: {exc}")
    if comm.rank == 0:
        out = Path(args.out)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=1))
        tmp.replace(out)
    return 0


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


class Session:
    """All runs of all variants in one MPI job."""

    def __init__(self, comm, args: argparse.Namespace, scratch: Path):
        self.comm, self.args, self.scratch = comm, args, scratch
        self.labels = args.label or [f"variant{i}" for i in range(len(args.plan))]
        if len(self.labels) != len(args.plan):
            raise ReplayFailed("one --label per --plan is needed")
        self.infos = [plan_info(p) for p in args.plan]
        for path, info in zip(args.plan, self.infos):
            if info["nranks"] != comm.size:
                raise ReplayFailed(f"plan {Path(path).name} is for {info['nranks']} ranks, "
                                   f"the job has {comm.size}")
        self.plans = [Plan.load(p) for p in args.plan]
        self.prefill_bytes = [int(np.asarray(p.files["prefill"]).sum()) for p in self.plans]
        self.buffer = self._buffer(comm)
        self.started = time.monotonic()
        self.cache = "none"
        self.last_record, self.last_hints = None, None
        self.layouts: dict[str, dict | None] = {}
        from mpi4py import MPI

        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.node_leader = node.rank == 0
        self.ranks_per_node = node.size
        self.nnodes = comm.allreduce(1 if self.node_leader else 0)
        self.uniform_nodes = comm.allreduce(node.size, op=MPI.MIN) == comm.allreduce(node.size, op=MPI.MAX)
        node.Free()

    def _buffer(self, comm) -> Buffer:
        mpi = max(i.get("max_mpi_request", 0) for i in self.infos)
        try:
            limit = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (4 * max(comm.size, 1))
        except (ValueError, OSError):
            limit = 1 << 40
        if mpi > max(limit, BUFFER_CAP):
            raise ReplayFailed(f"one MPI-IO call of the plan moves {mpi >> 20} MiB per rank, more memory "
                               f"than a rank may take here ({limit >> 20} MiB): use a smaller --scale")
        return Buffer(max(i["max_request"] for i in self.infos), mpi)

    def run(self) -> dict:
        args = self.args
        load_start = _load()
        policy = stats.Policy(margin=args.margin, reproducibility=args.reproducibility, precision=args.precision,
                              min_pairs=args.min_pairs, max_pairs=args.max_pairs)
        schedule = Schedule(len(self.plans), policy, adaptive=args.adaptive, repeat=max(args.repeat, 1),
                            budget=Budget(args.budget_s, args.budget_bytes), race=race_rule(args))
        cache = self._cache_policy()
        warmups, records = self._warm_up()
        passes = self._passes(warmups)
        samples: list[list[dict]] = [[] for _ in self.plans]
        for rnd in itertools.count():
            mine = (schedule.next_round(), passes) if self.comm.rank == 0 else None
            order, passes = self.comm.bcast(mine, root=0)
            if not order:
                break
            t0, written = time.monotonic(), 0
            for v in order:
                entry = self._sample(v, passes[v], f"r{rnd:04d}")
                if self.comm.rank == 0:
                    entry.update(round=rnd, load=_load())  # per sample: the verdict checks it moved
                    samples[v].append(entry)
                    schedule.add(v, entry["time_s"])
                    written += entry["bytes_written"] * passes[v] + self.prefill_bytes[v] * passes[v]
            if self.comm.rank == 0:
                schedule.end_round(time.monotonic() - t0, written)
                print(PROGRESS + schedule.progress(), file=sys.stderr, flush=True)  # launch.py streams it
                # a warm-up pass is often slower than the passes after it: a sample shorter
                # than wanted gets more passes from the next round on (the mean per pass holds)
                passes = [max(k, passes_for(min(t), self.args.min_sample_s)) if t else k
                          for k, t in zip(passes, schedule.times)]
        if self.comm.rank != 0:
            return {}
        return {
            "schema": RESULT_SCHEMA,
            "nranks": self.comm.size, "nnodes": self.nnodes, "repeat": schedule.rounds,
            "cache_policy": cache, "odirect": args.odirect, "think_time": args.think_time,
            "min_sample_s": args.min_sample_s, "adaptive": args.adaptive,
            "policy": {"margin": policy.margin, "reproducibility": policy.reproducibility,
                       "precision": policy.precision, "alpha": policy.alpha,
                       "min_pairs": policy.min_pairs,
                       "max_pairs": policy.max_pairs, "looks": list(policy.looks())},
            "rounds": schedule.rounds, "stop_reason": schedule.stop_reason,
            "elapsed_s": time.monotonic() - self.started, "bytes_spent": schedule.spent_bytes,
            "load": _load_span(load_start, samples),
            "budget": {"seconds": _finite(args.budget_s), "bytes": _finite(args.budget_bytes)},
            "variants": [{"label": label, "plan": self.plans[v].summary(), "passes": passes[v],
                          "warmup_s": warmups[v], "runs": samples[v], "stopped_at": schedule.stopped_at[v],
                          "stopped_why": schedule.stopped_why[v],
                          "record": records[label], "layouts": self.layouts.get(label)}
                         for v, label in enumerate(self.labels)],
        }

    def _warm_up(self) -> tuple[list[float | None], dict[str, dict]]:
        """One pass of every variant: its time sets the passes per sample; its record (what
        the ranks did) is the one the fidelity check reads. A variant whose pass count is known
        (``--passes``, from an earlier measurement of the same plan) gets none: its plan is read
        into memory instead, untimed, which is the warm-up's part a variant's first sample would
        otherwise pay (the plan is mapped from the scratch directory). When every count is known
        one variant is warmed up still, the one of the shortest pass (the most passes per
        sample; a fix before the job): the process's first MPI-IO opens and file creations are
        no sample's, and the job may be many times slower than its fixes."""
        known = self._known_passes()
        if all(known):
            known[max(range(len(known)), key=lambda v: (known[v], v > 0))] = 0
        times, records = [], {}
        for v, (label, plan) in enumerate(zip(self.labels, self.plans)):
            if known[v]:
                _touch(plan)
                times.append(None)
                records[label] = {}
                continue
            entry = self._sample(v, 1, "warmup", keep_record=True)
            rec = reduce_record(self.comm, self.last_record, np.asarray(plan.files["source"]))
            if self.comm.rank == 0:
                self._save_pairs(label, rec.pop("pairs"))
                records[label] = {**rec, "hints": self.last_hints or {}}  # rank 0's first MPI-IO open
                times.append(entry["time_s"])
        return times, records

    def _passes(self, warmups: list[float | None]) -> list[int]:
        """Passes per sample of every variant (rank 0 decides, every rank follows): known, or
        from its warm-up pass."""
        known = self._known_passes()
        out = [k if t is None else passes_for(t, self.args.min_sample_s)
               for k, t in zip(known, warmups)] if self.comm.rank == 0 else None
        return self.comm.bcast(out, root=0)

    def _known_passes(self) -> list[int]:
        given = self.args.passes or []
        if given and len(given) != len(self.plans):
            raise ReplayFailed("one --passes per --plan is needed")
        return [max(0, int(k)) for k in given] or [0] * len(self.plans)

    def _sample(self, v: int, passes: int, name: str, keep_record: bool = False) -> dict | None:
        """`passes` passes of variant `v`, each in fresh files with the page cache kept out
        before it and its files removed after it (untimed: a pass never inherits the dirty
        pages or the cached data of the one before); the time per pass (max over ranks, mean
        over passes) and what one pass moved."""
        plan, info = self.plans[v], self.infos[v]
        elapsed, phases, waited = 0.0, np.zeros(max(info["nphases"], 1)), 0.0
        for p in range(passes):
            rundir = self.scratch / f"{name}-{v}-p{p:04d}"
            try:
                self._prepare(plan, rundir)
                self._keep_cache_out(plan, rundir, whole=p == 0)
                runner = RankRunner(self.comm, plan, rundir, odirect=self.args.odirect,
                                    think_time=self.args.think_time, buffer=self.buffer, hints=plan.hints)
                took, per_phase = runner.run(info["nphases"])
                if keep_record:  # the warm-up: the layouts its files got, read before they go
                    self.layouts[self.labels[v]] = self._read_layouts(plan, rundir)
            finally:
                self._cleanup(rundir)
            elapsed, phases = elapsed + took, phases + per_phase
            waited = waited + runner.cpu_wait if waited is not None and runner.cpu_wait is not None else None
            if keep_record:
                self.last_record, self.last_hints, keep_record = runner.record, runner.applied_hints, False
        entry = self._run_entry(elapsed / passes, phases / passes, runner,
                                None if waited is None else waited / passes)
        if entry is not None:
            entry.update(passes=passes, sample_s=entry["time_s"] * passes)
        return entry

    def _keep_cache_out(self, plan: Plan, rundir: Path, whole: bool) -> None:
        """Before a pass: its prefilled files (what it reads without writing first) evicted, so
        that its reads come from the storage; before a sample's first pass (`whole`) also the
        node's page cache dropped (root), or its dirty data written back. The passes of a
        sample need no more: each one's own files are removed, dirty pages and all, after it."""
        if whole and self.cache == "drop-caches":
            if self.node_leader:
                drop_caches()
        elif self.cache != "none":
            prefill = np.asarray(plan.files["prefill"])
            dirs = np.asarray(plan.files["dir"])
            for fid in np.flatnonzero(prefill > 0).tolist():
                if fid % self.comm.size == self.comm.rank:
                    _evict(file_path(rundir, dirs, fid))
            if whole and self.node_leader:
                os.sync()  # other dirty data would be written back during the timed passes
        self.comm.Barrier()

    def _cache_policy(self) -> str:
        """What keeps the page cache out of the measurement, as it will be reported."""
        wanted = self.args.cache
        direct = ["o-direct (aligned requests bypass the page cache)"] if self.args.odirect else []
        if wanted == "drop" and self.comm.allreduce(drop_caches() if self.node_leader else True, op=_land()):
            self.cache = "drop-caches"
            return "; ".join(["drop-caches (sync and echo 3 > /proc/sys/vm/drop_caches before every sample; "
                              "the files a pass reads evicted before it)", *direct])
        if wanted == "none":
            self.cache = "none"
            return "; ".join([*direct, "the page cache is part of the measurement (asked for)"])
        self.cache = "evict"
        if self.nnodes > 1 and self.uniform_nodes:
            # each rank reads what the same rank of the next node wrote: not in its node's cache
            self.plans = [neighbour_reads(p, self.ranks_per_node) for p in self.plans]
            direct.append(f"read-your-neighbour (POSIX/STDIO reads shifted by {self.ranks_per_node} ranks, "
                          "one node)")
        return "; ".join([*direct, EVICT])

    # -- run directory life cycle -------------------------------------------------------------
    def _prepare(self, plan: Plan, rundir: Path) -> None:
        """Make the run's directories and prefill the data read before it is written."""
        comm = self.comm
        dirs = np.asarray(plan.files["dir"])
        if comm.rank == 0:
            rundir.mkdir(mode=0o700)
            for d in np.unique(dirs).tolist():
                (rundir / f"d{d:05d}").mkdir(mode=0o700)
            self._layouts(plan, rundir, dirs)
        comm.Barrier()
        prefill = np.asarray(plan.files["prefill"])
        for fid in np.flatnonzero(prefill > 0).tolist():
            if fid % comm.size == comm.rank:
                self._prefill(file_path(rundir, dirs, fid), int(prefill[fid]))
        comm.Barrier()

    @staticmethod
    def _layouts(plan: Plan, rundir: Path, dirs: np.ndarray) -> None:
        """Set the plan's layout wishes (directory defaults, files created with theirs)."""
        try:
            layout_wishes.apply(plan, rundir, dirs)
        except LayoutError as exc:
            raise ReplayFailed(str(exc)) from None

    def _read_layouts(self, plan: Plan, rundir: Path) -> dict | None:
        """Rank 0: the layouts the run's files got (after the run, before the cleanup)."""
        self.comm.Barrier()  # every rank has closed its files
        if self.comm.rank != 0:
            return None
        try:
            return layout_wishes.read_back(plan, rundir, np.asarray(plan.files["dir"]))
        except LayoutError as exc:
            return {"error": str(exc)}

    def _prefill(self, path: str, size: int) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            view, done = self.buffer.view(min(PREFILL_CHUNK, self.buffer.size)), 0
            while done < size:
                done += os.pwrite(fd, view[:min(len(view), size - done)], done)
        finally:
            os.close(fd)

    def _cleanup(self, rundir: Path) -> None:
        self.comm.Barrier()
        if self.comm.rank == 0:
            shutil.rmtree(rundir, ignore_errors=True)
        self.comm.Barrier()

    # -- results ---------------------------------------------------------------------------------
    def _run_entry(self, elapsed: float, phases: np.ndarray, runner: RankRunner,
                   cpu_wait: float | None) -> dict | None:
        from mpi4py import MPI

        comm = self.comm
        t = comm.reduce(elapsed, op=MPI.MAX, root=0)
        # the longest any rank waited for a CPU (-1: a rank without schedstat, none is reported)
        wait = comm.reduce(-1.0 if cpu_wait is None else cpu_wait, op=MPI.MAX, root=0)
        unknown = comm.reduce(cpu_wait is None, op=MPI.LOR, root=0)
        pmax = np.zeros_like(phases) if comm.rank == 0 else None
        pmin = np.zeros_like(phases) if comm.rank == 0 else None
        psum = np.zeros_like(phases) if comm.rank == 0 else None
        comm.Reduce(phases, pmax, op=MPI.MAX, root=0)
        comm.Reduce(phases, pmin, op=MPI.MIN, root=0)
        comm.Reduce(phases, psum, op=MPI.SUM, root=0)
        tot = runner.record.totals()
        moved = np.zeros_like(tot[:5]) if comm.rank == 0 else None
        comm.Reduce(tot[:5], moved, op=MPI.SUM, root=0)  # opens, reads, writes, bytes r/w
        if comm.rank != 0:
            return None
        return {"time_s": t, "cpu_wait_s": None if unknown else float(wait),
                "bytes_read": int(moved[3]), "bytes_written": int(moved[4]),
                "data_ops": int(moved[1] + moved[2]),
                "phases": [{"max_s": float(a), "min_s": float(b), "mean_s": float(c / comm.size)}
                           for a, b, c in zip(pmax, pmin, psum)]}

    def _save_pairs(self, label: str, pairs: np.ndarray) -> None:
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in label)
        np.save(Path(self.args.out).with_name(f"{Path(self.args.out).stem}.{safe}.pairs.npy"),
                pairs, allow_pickle=False)


def _touch(plan: Plan) -> None:
    """Read every column of a mapped plan once, so that no pass pays for reading it."""
    for column in [*plan.ops.values(), *plan.files.values()]:
        np.asarray(column).copy()


def _evict(path: str) -> None:
    """Write a file's data back and drop its pages from the cache (any user may)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _load() -> float | None:
    """The 1-minute load average of this node (rank 0's): what ran beside the measurement."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _load_span(start: float | None, samples: list[list[dict]]) -> dict:
    """The load at the start and the end of the measurement and the range its samples saw."""
    end = _load()
    seen = [x for x in (start, end, *(r.get("load") for runs in samples for r in runs)) if x is not None]
    return {"start": start, "end": end, "min": min(seen, default=None), "max": max(seen, default=None),
            "cores": os.cpu_count()}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _land():
    from mpi4py import MPI

    return MPI.LAND


if __name__ == "__main__":
    code = main()
    sys.exit(code)
