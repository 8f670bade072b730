"""Wall time of the post-job hook per job, on real corpus logs (target: p99 < 2 s for logs < 10 MB).

Each log is staged into a Darshan-layout log directory under the name Darshan would give
a job, just before the hook runs (as on a real node, where the log was written moments
before the epilog); the hook entry ``ioadvisor hook run ...`` then runs as a fresh
subprocess, exactly as an epilogue would start it. The peer is what a site would run
otherwise: PyDarshan's job summary (``python -m darshan summary``) on the same logs, same run.

    .venv/bin/python bench/hook.py [--logs N] [--peer N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
MAX_BYTES = 10 << 20
TARGET_P99_S = 2.0


def corpus_logs(limit: int) -> list[Path]:
    """Darshan 3.x logs under 10 MB, spread evenly over the size range."""
    logs = sorted((p for p in CORPUS.rglob("*.darshan") if p.stat().st_size < MAX_BYTES),
                  key=lambda p: p.stat().st_size)
    if limit and len(logs) > limit:
        step = (len(logs) - 1) / (limit - 1)
        logs = [logs[round(i * step)] for i in range(limit)]
    return logs


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def stage(log: Path, logdir: Path, user: str, jobid: int) -> Path:
    now = time.localtime()
    day = logdir / str(now.tm_year) / str(now.tm_mon) / str(now.tm_mday)
    day.mkdir(parents=True, exist_ok=True)
    dest = day / f"{user}_bench_id{jobid}-{jobid}_{now.tm_mon}-{now.tm_mday}-{jobid}-1_1.darshan"
    shutil.copyfile(log, dest)
    return dest


def run_hook(root: Path, jobid: int, user: str) -> tuple[float, float]:
    """Wall and CPU (user + sys, the hook and all its children) seconds of one hook run."""
    work = root / "work"
    cmd = [sys.executable, "-I", "-m", "advisor", "hook", "run", "--config", str(root / "site.toml"),
           "--jobid", str(jobid), "--user", user, "--uid", str(os.getuid()), "--gid", str(os.getgid()),
           "--workdir", str(work)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True, cwd="/")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_peer(log: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "darshan", "summary", str(log), "--output", str(out)],
                   stdin=subprocess.DEVNULL, capture_output=True, cwd=out.parent)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=40, help="corpus logs to run (0: all under 10 MB)")
    parser.add_argument("--peer", type=int, default=6, help="logs to also run PyDarshan's job summary on")
    args = parser.parse_args()
    import pwd

    user = pwd.getpwuid(os.getuid()).pw_name
    logs = corpus_logs(args.logs)
    with tempfile.TemporaryDirectory(prefix="ioadvisor-bench-hook-") as tmp:
        root = Path(tmp)
        (root / "work").mkdir()
        (root / "site.toml").write_text(
            f'[hook]\nlog_dir = "{root}/logs"\nsite_log = "{root}/site.jsonl"\nmin_severity = "none"\n'
            "syslog = false\ntime_limit_s = 60\n")
        ours, cpu = [], []
        for jobid, log in enumerate(logs, start=1):
            stage(log, root / "logs", user, jobid)
            wall, used = run_hook(root, jobid, user)
            ours.append(wall)
            cpu.append(used)
        records = [json.loads(line) for line in (root / "site.jsonl").read_text().splitlines()]
        peer_logs = logs[:: max(1, len(logs) // args.peer)][: args.peer] if args.peer else []
        peer = [run_peer(log, root / f"peer-{i}.html") for i, log in enumerate(peer_logs)]
        ours_on_peer_logs = [ours[logs.index(log)] for log in peer_logs]
    report(logs, ours, cpu, records, peer, ours_on_peer_logs)


def report(logs, ours, cpu, records, peer, ours_on_peer_logs) -> None:
    statuses: dict[str, int] = {}
    for r in records:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    inside = [r["elapsed_s"] for r in records]
    sizes = [log.stat().st_size for log in logs]
    print(f"hook run per job: {len(logs)} corpus logs, {min(sizes) / 1e3:.1f} kB .. {max(sizes) / 1e6:.2f} MB")
    print(f"  wall (process start to exit): median {statistics.median(ours):.2f} s, "
          f"p99 {percentile(ours, 99):.2f} s, max {max(ours):.2f} s  (target p99 < {TARGET_P99_S:g} s: "
          f"{'met' if percentile(ours, 99) < TARGET_P99_S else 'NOT met'})")
    print(f"  CPU time (user + sys of the hook and its children; what the wall time is on an idle node): "
          f"median {statistics.median(cpu):.2f} s, p99 {percentile(cpu, 99):.2f} s "
          f"(target: {'met' if percentile(cpu, 99) < TARGET_P99_S else 'NOT met'})")
    print(f"  inside the hook (site log elapsed_s): median {statistics.median(inside):.2f} s, "
          f"p99 {percentile(inside, 99):.2f} s")
    print(f"  outcomes: {', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))}")
    slowest = sorted(zip(ours, logs), key=lambda t: t[0], reverse=True)[:3]
    for wall, log in slowest:
        print(f"  slow: {wall:.2f} s  {log.stat().st_size / 1e6:.2f} MB  {log.relative_to(CORPUS)}")
    if peer:
        ratio = statistics.median(peer) / statistics.median(ours_on_peer_logs)
        print(f"peer, PyDarshan job summary on {len(peer)} of the same logs: median {statistics.median(peer):.2f} s "
              f"vs ours {statistics.median(ours_on_peer_logs):.2f} s on those logs (ours {ratio:.1f}x faster)")
    load = os.getloadavg()[0]
    print(f"machine load average during the run: {load:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
