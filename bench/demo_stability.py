"""`make demo` five times in a row on a fresh clone: does every fix get the same verdict each time?

    python bench/demo_stability.py [--runs 5] [--keep]

Clones this repository's committed HEAD into a temporary directory (as CI and a newcomer get
it), runs `make demo` there --runs times and prints, per fix of the demo trace, the verdict and
speedup of every run, whether the verdicts agree, and the time each demo took. The peer is the
demo itself: the target is the same verdict in every run for every fix.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = ap.parse_args()
    clone = Path(tempfile.mkdtemp(prefix="ioadv-demo-clone-"))
    try:
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone / "ioadvisor")], check=True)
        work = clone / "ioadvisor"
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=work, capture_output=True,
                                text=True, check=True).stdout.strip()
        t0 = time.monotonic()
        subprocess.run(["make", "venv"], cwd=work, check=True, capture_output=True)
        print(f"fresh clone of {commit} in {work}; venv in {time.monotonic() - t0:.0f} s", flush=True)
        table: dict[str, list[str]] = {}
        walls = []
        for i in range(args.runs):
            t0 = time.monotonic()
            done = subprocess.run(["make", "demo"], cwd=work, capture_output=True, text=True)
            walls.append(time.monotonic() - t0)
            if done.returncode != 0:
                print(f"run {i + 1}: make demo failed ({done.returncode}): {done.stderr.strip()[-400:]}")
                return 1
            summary = json.loads((work / "out" / "demo.json").read_text())["summary"]
            fixes = summary["fixes"] + summary.get("fixes_not_to_apply", [])  # ranked, then measured slower
            for f in fixes:
                table.setdefault(f["action"], []).append(f"{f['verdict']} {f['speedup'] or 0:.2f}x")
            print(f"run {i + 1}: {walls[-1]:.0f} s: " + "; ".join(f"{f['action']}: {f['reason']}" for f in fixes),
                  flush=True)
        return report(table, walls)
    finally:
        if args.keep:
            print(f"clone kept: {clone}")
        else:
            shutil.rmtree(clone, ignore_errors=True)


def report(table: dict[str, list[str]], walls: list[float]) -> int:
    print(f"\n{len(walls)} runs of make demo, median {statistics.median(walls):.0f} s each")
    stable = 0
    for action, runs in table.items():
        verdicts = {r.split()[0] for r in runs}
        stable += len(verdicts) == 1
        print(f"  {action:48} {'same verdict' if len(verdicts) == 1 else 'VERDICT CHANGED':16} " + ", ".join(runs))
    print(f"fixes with the same verdict in every run: {stable} of {len(table)} (target: all)")
    return 0 if stable == len(table) else 1


if __name__ == "__main__":
    sys.exit(main())
