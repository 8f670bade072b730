"""Fleet throughput: `ioadvisor fleet` (2 local workers) vs Drishti 0.8 and PyDarshan's `job_stats`.

    .venv/bin/python bench/fleet.py [--rounds 2] [--workers 2] [--drishti-sample 0] [--files N]
                                    [--corpus DIR] [--folders darshan-logs,darshan-repo-logs]

The logs are the real Darshan logs (`*.darshan`) of the named corpus folders: 113 in
darshan-logs and darshan-repo-logs. Each round times, in turn (the order alternates from
one round to the next, so that machine load hits all alike):
- ioadvisor's fleet over them into a fresh dataset, start-up and shut-down included;
- PyDarshan's own multi-log summary, `python -m darshan job_stats` on the same logs (one
  process that only reads and sums counters: what a full diagnosis is measured against);
- Drishti 0.8 once per log, sequentially (all logs, or an even --drishti-sample of them).
One untimed run of each comes first (page cache, ioadvisor's rule cache, every tool's
bytecode: bench/bytecode.py). Prints logs per
second of each, and the ratios of each round (ours over the peer measured
beside it); targets: >= 20x Drishti, >= 1x job_stats. --files N replicates the logs by
symlinks into a <Y>/<M>/<D> tree of N logs (an archive larger than the corpus).

Drishti 0.8 lives in its own venv (never the project's): $DRISHTI, else
/tmp/drishti-venv/bin/drishti, else it is installed into a venv under /tmp on first use.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from bytecode import compiled_runs  # noqa: E402  (bench/ is not a package: its sibling module)

DRISHTI_VENV = Path(tempfile.gettempdir()) / "ioadvisor-bench-drishti"
DRISHTI_PATHS = ("/tmp/drishti-venv/bin/drishti", str(DRISHTI_VENV / "bin" / "drishti"))
FOLDERS = "darshan-logs,darshan-repo-logs"
TARGETS = {"Drishti": 20.0, "job_stats": 1.0}


def corpus_logs(corpus: Path, folders: str) -> list[Path]:
    return sorted(log for folder in folders.split(",") for log in (corpus / folder).rglob("*.darshan"))


def replicate(logs: list[Path], n: int, root: Path) -> None:
    """`n` symlinks to `logs` in turn, one day folder per pass, as Darshan lays out an archive."""
    for i in range(n):
        rep, log = divmod(i, len(logs))
        day = root / "2024" / str(1 + rep // 28 % 12) / str(1 + rep % 28)
        day.mkdir(parents=True, exist_ok=True)
        (day / f"{i:06d}_{logs[log].name}").symlink_to(logs[log])


def time_fleet(inputs: list[str], n: int, workers: int, out: Path) -> float:
    """Logs per second of one fresh fleet run (start-up and shut-down included), as a user runs it."""
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    # the bench's own rule cache (filled by the first round): the per-user one keeps one catalogue,
    # which other checkouts run by the same user would evict between rounds
    env = {**os.environ, "XDG_CACHE_HOME": str(out.parent / "cache")}
    run = subprocess.run([*_ours(), "fleet", *inputs, "--out", str(out), "--workers", str(workers), "--quiet"],
                         capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if run.returncode != 0:
        sys.exit(f"ioadvisor fleet failed: {run.stderr.strip()[-300:]}")
    print(f"  ioadvisor fleet, {workers} workers: {n / wall:7.2f} logs/s ({n} logs in {wall:.1f} s; "
          f"{run.stderr.strip().splitlines()[-1][:90]})", flush=True)
    return n / wall


def _ours() -> list[str]:
    script = REPO / ".venv" / "bin" / "ioadvisor"
    return [str(script)] if script.exists() else [sys.executable, "-m", "advisor"]


def time_job_stats(list_file: Path, n: int) -> float:
    """Logs per second of PyDarshan's `job_stats` over the same logs (one process)."""
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "darshan", "job_stats", "--log_paths_file", str(list_file)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    note = "" if run.returncode == 0 else f"; exit {run.returncode}: {run.stderr.strip()[-100:]}"
    print(f"  PyDarshan job_stats:       {n / wall:7.2f} logs/s ({n} logs in {wall:.1f} s{note})", flush=True)
    return n / wall


def drishti_command() -> Path:
    """Drishti 0.8 in its own venv under /tmp (installed with pip on first use)."""
    for given in (os.environ.get("DRISHTI"), *DRISHTI_PATHS):
        if given and Path(given).exists():
            return Path(given)
    print(f"  installing drishti-io 0.8 into {DRISHTI_VENV} ...", flush=True)
    subprocess.run(["/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable,
                    "-m", "venv", str(DRISHTI_VENV)], check=True)
    subprocess.run([str(DRISHTI_VENV / "bin" / "pip"), "install", "-q", "drishti-io==0.8"], check=True)
    return DRISHTI_VENV / "bin" / "drishti"


def time_drishti(logs: list[Path], sample: int, scratch: Path) -> float:
    """Logs per second of Drishti run once per log, sequentially (an even sample if `sample`)."""
    exe = drishti_command()
    picked = logs[::max(1, len(logs) // sample)][:sample] if sample else logs
    failed, started = 0, time.perf_counter()
    for log in picked:
        run = subprocess.run([str(exe), str(log)], cwd=scratch, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, timeout=1800)
        failed += run.returncode != 0
    wall = time.perf_counter() - started
    print(f"  Drishti 0.8, one per log:  {len(picked) / wall:7.2f} logs/s ({len(picked)} logs in {wall:.1f} s, "
          f"{failed} exited with an error)", flush=True)
    return len(picked) / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--folders", default=FOLDERS, help="comma-separated corpus folders")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the three, order alternating")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--drishti-sample", type=int, default=0, help="logs Drishti runs on (0: all)")
    parser.add_argument("--files", type=int, default=0, help="replicate into an archive of N logs (0: no)")
    args = parser.parse_args()

    logs = corpus_logs(args.corpus, args.folders)
    scratch = Path(tempfile.mkdtemp(prefix="ioadvisor-bench-fleet-"))
    compiled_runs(scratch / "pyc")
    n = args.files or len(logs)
    print(f"fleet bench: {n} logs ({len(logs)} real Darshan logs of {args.folders} under {args.corpus}"
          f"{', replicated by symlinks' if args.files else ''}); {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
    try:
        if args.files:
            replicate(logs, args.files, scratch / "archive")
            listed = sorted(str(p) for p in (scratch / "archive").rglob("*.darshan"))
        else:
            listed = [str(p) for p in logs]
        list_file = scratch / "logs.txt"
        list_file.write_text("".join(f"{p}\n" for p in listed))
        runs = {
            "ours": lambda: time_fleet([f"@{list_file}"], n, args.workers, scratch / "dataset"),
            "job_stats": lambda: time_job_stats(list_file, n),
            "Drishti": lambda: time_drishti(logs, args.drishti_sample, scratch),
        }
        # untimed, as bench/diagnose.py: the page cache, and ioadvisor's rule cache (a first run
        # ever reads the YAML rules in the driver and in every worker)
        print("warm-up (untimed):", flush=True)
        runs["ours"](), runs["job_stats"](), time_drishti(logs[:1], 0, scratch)
        ratios: dict[str, list[float]] = {"Drishti": [], "job_stats": []}
        for k in range(args.rounds):
            order = list(runs) if k % 2 == 0 else list(reversed(runs))
            print(f"round {k + 1} ({', '.join(order)}), load {os.getloadavg()[0]:.1f}:", flush=True)
            rates = {name: runs[name]() for name in order}
            for peer in ratios:
                ratios[peer].append(rates["ours"] / rates[peer])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for peer, values in ratios.items():
        each = ", ".join(f"{v:.2f}x" for v in values)
        verdict = "meets" if min(values) >= TARGETS[peer] else "BELOW"
        print(f"ratio ioadvisor fleet ({args.workers} workers) / {peer}: {each} by round "
              f"({verdict} the {TARGETS[peer]:g}x target)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
