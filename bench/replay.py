"""Replay bandwidth vs fio's for the same pattern, same bytes, same mount, same run.

    python bench/replay.py [--target DIR | --cephfs] [--seq-mib N] [--rand-mib N] [--repeat K]

Two patterns, one process each (the replayer's ranks = 1, fio numjobs = 1, psync):
1 MiB sequential writes and 4 KiB random writes (every block once, in a random
order). For each pattern the replayer and fio alternate --repeat times on a fresh
file in the same directory, the page cache dropped before each run when permitted;
bandwidth = bytes / the tool's own timed phase (fio: its job runtime; replayer: the
executor's timed run, open to close). Prints the medians and replay / fio
(targets: >= 0.9 for 1 MiB sequential, >= 0.7 for 4 KiB random). --cephfs starts the
tests' four-OSD CephFS cluster (tests/system/cephfs.sh, root) for the run and stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from replay import launch, safety  # noqa: E402
from replay.plan import CLOSE, CREATE, WRITE, Plan, file_columns  # noqa: E402

MiB = 1 << 20
TARGETS = {"seq-1m": 0.9, "rand-4k": 0.7}


def write_plan(total: int, bs: int, random: bool) -> Plan:
    n = total // bs
    offsets = np.arange(n, dtype=np.int64) * bs
    if random:
        offsets = np.random.default_rng(1).permutation(offsets)
    ops = {"rank": np.zeros(n + 2, np.int32),
           "op": np.concatenate([[CREATE], np.full(n, WRITE), [CLOSE]]).astype(np.int8),
           "file": np.zeros(n + 2, np.int32),
           "offset": np.concatenate([[0], offsets, [0]]),
           "length": np.concatenate([[0], np.full(n, bs), [0]])}
    return Plan.build(1, ops, file_columns(1), meta={"source": "bench"})


def replay_bw(target: Path, plan: Plan, runs: int) -> float:
    """Median bandwidth of runs 2..`runs` of one executor job (each run on a fresh file)."""
    with safety.Scratch(target) as scratch:
        cache = "drop" if safety.can_drop_caches() else "none"
        result = launch.run_plans(scratch, [plan.save(scratch.path / "plan")], ["bench"],
                                  launch.LaunchOptions(np=1, repeat=runs, cache=cache))
    return statistics.median(r["bytes_written"] / r["time_s"] for r in result["variants"][0]["runs"][1:])


def fio_bw(target: Path, total: int, bs: int, random: bool, runs: int) -> float:
    """Median bandwidth of jobs 2..`runs` of one fio process (each job on a fresh file, run
    one after the other, the page cache dropped before each when permitted)."""
    work = Path(tempfile.mkdtemp(prefix="fio-", dir=target))
    common = [f"--rw={'randwrite' if random else 'write'}", f"--bs={bs}", f"--size={total}",
              "--ioengine=psync", "--numjobs=1", "--fallocate=none", "--end_fsync=0", "--unlink=1",
              "--randrepeat=1", "--output-format=json"]
    if safety.can_drop_caches():
        common.append("--exec_prerun=sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches'")
    jobs = []
    for i in range(runs):
        jobs += [f"--name=run{i}", f"--filename={work / f'f{i}'}"] + (["--stonewall"] if i else [])
    try:
        out = subprocess.run(["fio", *common, *jobs], capture_output=True, text=True, check=True, timeout=900,
                             cwd=work)  # fio leaves <job>.prerun.txt files in its working directory
        doc = json.loads(out.stdout[out.stdout.index("{"):])
        return statistics.median(float(j["write"]["bw_bytes"]) for j in doc["jobs"][1:])
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def cephfs_cluster():
    """A directory on a fresh CephFS, the tests' cluster (tests/cephfs.py), stopped after the run."""
    from tests.cephfs import ceph_cluster

    with tempfile.TemporaryDirectory(prefix="bench-cephfs-") as base, ceph_cluster(Path(base) / "c") as cluster:
        os.environ["CEPH_CONF"] = str(cluster.conf)  # the replayer's layout read-back asks the cluster
        target = cluster.mnt / "bench"
        target.mkdir()
        yield target


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=Path, default=None, help="directory on the mount (default: a temp dir)")
    ap.add_argument("--seq-mib", type=int, default=512, help="bytes of the 1 MiB sequential pattern")
    ap.add_argument("--rand-mib", type=int, default=128, help="bytes of the 4 KiB random pattern")
    ap.add_argument("--repeat", type=int, default=3, help="alternating rounds per tool")
    ap.add_argument("--runs", type=int, default=4, help="runs per round (the first is a warm-up)")
    ap.add_argument("--cephfs", action="store_true", help="run on a CephFS cluster started for the bench (root)")
    args = ap.parse_args()
    if not shutil.which("fio"):
        print("fio not found (apt-get install fio)", file=sys.stderr)
        return 2
    if args.cephfs:
        with cephfs_cluster() as target:
            return run(target, args)
    own_tmp = args.target is None
    target = Path(tempfile.mkdtemp(prefix="bench-replay-")) if own_tmp else args.target
    try:
        return run(target, args)
    finally:
        if own_tmp:
            shutil.rmtree(target, ignore_errors=True)


def run(target: Path, args: argparse.Namespace) -> int:
    """Both patterns, both tools, alternating; one line per pattern."""
    print(f"target {target} ({safety.fstype_of(target)}): {args.repeat} alternating rounds per tool, "
          f"{args.runs} runs per round (first one a warm-up)")
    for name, total, bs, random in (("seq-1m", args.seq_mib * MiB, MiB, False),
                                     ("rand-4k", args.rand_mib * MiB, 4096, True)):
        plan = write_plan(total, bs, random)
        ours, theirs = [], []
        for rep in range(args.repeat):
            for tool in ("replay", "fio") if rep % 2 == 0 else ("fio", "replay"):  # alternate who goes first
                if tool == "replay":
                    ours.append(replay_bw(target, plan, args.runs))
                else:
                    theirs.append(fio_bw(target, total, bs, random, args.runs))
        mo, mt = statistics.median(ours), statistics.median(theirs)
        print(f"{name:8s} {total // MiB:5d} MiB  replay {mo / MiB:8.0f} MiB/s  fio {mt / MiB:8.0f} MiB/s  "
              f"ratio {mo / mt:.2f} (target >= {TARGETS[name]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
