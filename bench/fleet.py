"""Fleet throughput: `ioadvisor fleet` (1 and 2 local Dask workers) vs Drishti 0.8, one log at a time.

    .venv/bin/python bench/fleet.py [--files 2000] [--drishti-sample 24] [--corpus DIR]

The corpus' Darshan logs (every `*.darshan`, readable or not: Drishti's input
format) are replicated by symlinks into a <Y>/<M>/<D> tree of --files logs. ioadvisor
analyses the whole tree, once with 1 worker and once with 2, into fresh datasets;
wall time includes starting and stopping the Dask cluster. Drishti 0.8 (`pip install
drishti-io==0.8` into a venv under /tmp, never the project venv) runs once per log,
sequentially, on an evenly spaced sample of the distinct logs; its logs per second
are extrapolated from that sample (the replicas are the same logs, evenly mixed).
Prints logs per second and the throughput ratio; the target is >= 10x Drishti.
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

DRISHTI_VENV = Path(tempfile.gettempdir()) / "ioadvisor-bench-drishti"
TARGET = 10.0


def distinct_logs(corpus: Path) -> list[Path]:
    from advisor.fleet.walk import iter_logs

    return [Path(log.path) for log in iter_logs([str(corpus)], patterns=("*.darshan",))]


def replicate(logs: list[Path], n: int, root: Path) -> None:
    """`n` symlinks to `logs` in turn, one day folder per pass, as Darshan lays out an archive."""
    for i in range(n):
        rep, log = divmod(i, len(logs))
        day = root / "2024" / str(1 + rep // 28 % 12) / str(1 + rep % 28)
        day.mkdir(parents=True, exist_ok=True)
        (day / f"{i:06d}_{logs[log].name}").symlink_to(logs[log])


def time_fleet(root: Path, n: int, workers: int, scratch: Path) -> float:
    """Logs per second of one fresh fleet run over `root` (cluster start and stop included)."""
    from advisor.config import load_config
    from advisor.fleet.run import FleetOptions, run_fleet

    out = scratch / f"ds-{workers}w"
    started = time.perf_counter()
    stats = run_fleet([str(root)], str(out), FleetOptions(workers=workers, batch=200, config=load_config(None)))
    wall = time.perf_counter() - started
    assert stats.analysed == n, f"fleet analysed {stats.analysed} of {n} logs"
    print(f"  ioadvisor fleet, {workers} worker{'s' if workers > 1 else ' '}: {n / wall:8.2f} logs/s "
          f"({n} logs in {wall:.1f} s, {stats.errors} unreadable, {stats.findings} findings)", flush=True)
    return n / wall


def drishti_command() -> Path:
    """Drishti 0.8 in its own venv under /tmp (installed with pip on first use)."""
    given = os.environ.get("DRISHTI")
    if given:
        return Path(given)
    exe = DRISHTI_VENV / "bin" / "drishti"
    if not exe.exists():
        print(f"  installing drishti-io 0.8 into {DRISHTI_VENV} ...", flush=True)
        subprocess.run(["/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable,
                        "-m", "venv", str(DRISHTI_VENV)], check=True)
        subprocess.run([str(DRISHTI_VENV / "bin" / "pip"), "install", "-q", "drishti-io==0.8"], check=True)
    return exe


def time_drishti(logs: list[Path], sample: int, scratch: Path) -> float:
    """Logs per second of Drishti run once per log, sequentially, on an even sample of `logs`."""
    exe = drishti_command()
    step = max(1, len(logs) // sample)
    picked = logs[::step][:sample]
    failed, started = 0, time.perf_counter()
    for log in picked:
        run = subprocess.run([str(exe), str(log)], cwd=scratch, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, timeout=1800)
        failed += run.returncode != 0
    wall = time.perf_counter() - started
    print(f"  Drishti 0.8, one process per log: {len(picked) / wall:8.2f} logs/s "
          f"({len(picked)} distinct logs in {wall:.1f} s, {failed} exited with an error; "
          "sample, extrapolated per log)", flush=True)
    return len(picked) / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=2000, help="logs in the replicated archive")
    parser.add_argument("--drishti-sample", type=int, default=24, help="distinct logs Drishti runs on")
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--skip-one-worker", action="store_true", help="only the 2-worker run")
    args = parser.parse_args()

    logs = distinct_logs(args.corpus)
    print(f"fleet bench: {args.files} logs = {len(logs)} distinct Darshan logs of {args.corpus} replicated "
          f"by symlinks; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="ioadvisor-bench-fleet-"))
    try:
        replicate(logs, args.files, scratch / "archive")
        rates = {}
        for workers in ((2,) if args.skip_one_worker else (1, 2)):
            rates[workers] = time_fleet(scratch / "archive", args.files, workers, scratch)
        drishti = time_drishti(logs, args.drishti_sample, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for workers, rate in rates.items():
        verdict = "meets" if rate / drishti >= TARGET else "BELOW"
        print(f"ratio ioadvisor fleet ({workers} worker{'s' if workers > 1 else ''}) / Drishti: "
              f"{rate / drishti:.1f}x ({verdict} the {TARGET:g}x target)")


if __name__ == "__main__":  # Dask's local workers re-import this module: keep the run behind the guard
    main()
