"""The replay executor: runs plans with MPI ranks (``mpiexec``/``srun ... python -m replay.executor``).

Several plans (variants: the recorded workload and its fixes) run interleaved in
one MPI job, A B A B ..., each run in a fresh run directory inside a scratch
directory made by :class:`replay.safety.Scratch`. Before every timed run the
files the plan reads without writing first are prefilled and the page cache is
dropped when permitted. Rank 0 writes one JSON result: per variant the time of
every run, per-phase times (max/min/mean over ranks) and the record of what was
done (per file, per rank; the touched (file, rank) rows go to a side ``.npz``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
from pathlib import Path

import numpy as np

from replay.layout import LayoutError
from replay.layout import wishes as layout_wishes
from replay.plan import Plan, plan_info
from replay.rank import BUFFER_CAP, Buffer, RankRunner, file_path
from replay.record import reduce_record
from replay.reshape import neighbour_reads
from replay.safety import SafetyError, check_scratch, die_with_parent, drop_caches

RESULT_SCHEMA = "ioadvisor/replay-result/v1"
PREFILL_CHUNK = 4 << 20
CACHE_POLICIES = ("drop", "neighbour", "none")


class ReplayFailed(Exception):
    pass


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m replay.executor",
                                 description="Run replay plans with MPI ranks (see docs/replay.md).")
    ap.add_argument("--plan", action="append", required=True, help="saved plan directory (repeatable)")
    ap.add_argument("--label", action="append", help="label of each plan, in order")
    ap.add_argument("--scratch", required=True, help="scratch directory made by ioadvisor")
    ap.add_argument("--out", required=True, help="result JSON written by rank 0")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--expect-size", type=int, default=0, help="abort unless COMM_WORLD has this size")
    ap.add_argument("--cache", choices=CACHE_POLICIES, default="none")
    ap.add_argument("--odirect", action="store_true")
    ap.add_argument("--think-time", action="store_true")
    return ap.parse_args(argv)


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
        scratch = check_scratch(args.scratch)
        session = Session(comm, args, scratch)
        result = session.run()
    except (SafetyError, ReplayFailed, OSError, ValueError) as exc:
        sys.stderr.write(f"replay: rank {comm.rank}: {exc}\n")
        sys.stderr.flush()
        comm.Abort(4)
        return 4
    except Exception as exc:  # a bug of ours: abort, or the other ranks wait in a collective forever
        sys.stderr.write(f"replay: rank {comm.rank}: internal error: {type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        comm.Abort(5)
        return 5
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
        self.buffer = self._buffer(comm)
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
        runs = {label: [] for label in self.labels}
        records: dict[str, dict] = {}
        layouts: dict[str, dict | None] = {}
        policy = self._cache_policy()
        for i in range(max(self.args.repeat, 1)):
            for v, (label, plan, info) in enumerate(zip(self.labels, self.plans, self.infos)):
                rundir = self.scratch / f"run{i:04d}-{v}"
                try:
                    self._prepare(plan, rundir)
                    if policy == "drop-caches" and self.node_leader:
                        drop_caches()
                    runner = RankRunner(self.comm, plan, rundir, odirect=self.args.odirect,
                                        think_time=self.args.think_time, buffer=self.buffer,
                                        hints=plan.hints)
                    elapsed, phases = runner.run(info["nphases"])
                    if i == 0:
                        layouts[label] = self._read_layouts(plan, rundir)
                finally:
                    self._cleanup(rundir)
                runs[label].append(self._run_entry(elapsed, phases, runner))
                if i == 0:
                    rec = reduce_record(self.comm, runner.record, np.asarray(plan.files["source"]))
                    if self.comm.rank == 0:
                        self._save_pairs(label, rec.pop("pairs"))
                        records[label] = rec
        if self.comm.rank != 0:
            return {}
        return {
            "schema": RESULT_SCHEMA,
            "nranks": self.comm.size, "nnodes": self.nnodes, "repeat": self.args.repeat,
            "cache_policy": policy, "odirect": self.args.odirect, "think_time": self.args.think_time,
            "variants": [{"label": label, "plan": self.plans[v].summary(), "runs": runs[label],
                          "record": records[label], "layouts": layouts.get(label)}
                         for v, label in enumerate(self.labels)],
        }

    def _cache_policy(self) -> str:
        """What keeps the page cache out of the measurement, as it will be reported."""
        wanted = self.args.cache
        if wanted == "drop":
            ok = self.comm.allreduce(drop_caches() if self.node_leader else True, op=_land())
            if ok:
                return "drop-caches"
            wanted = "neighbour"
        if self.args.odirect:
            return "o-direct (aligned requests bypass the page cache)"
        if wanted == "neighbour" and self.nnodes > 1 and self.uniform_nodes:
            # each rank reads what the same rank of the next node wrote: not in its node's cache
            self.plans = [neighbour_reads(p, self.ranks_per_node) for p in self.plans]
            return f"read-your-neighbour (POSIX/STDIO reads shifted by {self.ranks_per_node} ranks, one node)"
        return "none (page cache not excluded: run as root to drop caches, or use --odirect)"

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
    def _run_entry(self, elapsed: float, phases: np.ndarray, runner: RankRunner) -> dict | None:
        from mpi4py import MPI

        comm = self.comm
        t = comm.reduce(elapsed, op=MPI.MAX, root=0)
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
        return {"time_s": t, "bytes_read": int(moved[3]), "bytes_written": int(moved[4]),
                "data_ops": int(moved[1] + moved[2]),
                "phases": [{"max_s": float(a), "min_s": float(b), "mean_s": float(c / comm.size)}
                           for a, b, c in zip(pmax, pmin, psum)]}

    def _save_pairs(self, label: str, pairs: np.ndarray) -> None:
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in label)
        np.save(Path(self.args.out).with_name(f"{Path(self.args.out).stem}.{safe}.pairs.npy"),
                pairs, allow_pickle=False)


def _land():
    from mpi4py import MPI

    return MPI.LAND


if __name__ == "__main__":
    code = main()
    sys.exit(code)
