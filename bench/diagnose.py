"""Wall time per log of `ioadvisor diagnose --json` vs Drishti 0.8 on the same logs, same run.

    python bench/diagnose.py [--corpus DIR] [--drishti PATH] [--limit N] [--timeout S]

Drishti lives in its own venv (never the project's): by default `$DRISHTI` or
`/tmp/drishti-venv/bin/drishti`; create it with
`python3 -m venv /tmp/drishti-venv && /tmp/drishti-venv/bin/pip install drishti-io`.
Each log is run once per tool as a fresh process (what a user or a Slurm epilog does),
alternating the tools so machine load hits both alike. Prints median and p95 wall time
per tool over the logs both handled, and our median / Drishti's (target: <= 0.5).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"


def _run(cmd: list[str], timeout: float) -> tuple[float, bool]:
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout,
                              env={**os.environ, "COLUMNS": "120"})
        ok = done.returncode in (0, 1)
    except subprocess.TimeoutExpired:
        ok = False
    return time.perf_counter() - start, ok


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--drishti", default=os.environ.get("DRISHTI", "/tmp/drishti-venv/bin/drishti"))
    ap.add_argument("--limit", type=int, default=0, help="only the first N logs")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()

    logs = sorted(args.corpus.rglob("*.darshan"))
    if args.limit:
        logs = logs[: args.limit]
    if not logs:
        print(f"no .darshan logs under {args.corpus}", file=sys.stderr)
        return 2
    ours_cmd = [str(REPO / ".venv" / "bin" / "ioadvisor"), "diagnose", "--json", "-"]
    have_drishti = Path(args.drishti).exists()
    if not have_drishti:
        print(f"Drishti not found at {args.drishti}: timing ioadvisor only", file=sys.stderr)
    ours, theirs, both = {}, {}, []
    for n, log in enumerate(logs, 1):
        t_ours, ok_ours = _run([*ours_cmd, str(log)], args.timeout)
        ours[log] = (t_ours, ok_ours)
        if have_drishti:
            t_theirs, ok_theirs = _run([args.drishti, str(log)], args.timeout)
            theirs[log] = (t_theirs, ok_theirs)
            if ok_ours and ok_theirs:
                both.append(log)
        print(f"[{n}/{len(logs)}] {log.relative_to(args.corpus)}: ioadvisor {t_ours:.2f}s"
              f"{'' if ok_ours else ' (failed)'}"
              + (f", drishti {theirs[log][0]:.2f}s{'' if theirs[log][1] else ' (failed)'}" if have_drishti else ""),
              flush=True)

    def report(name: str, times: dict, subset: list[Path]) -> float:
        values = [times[log][0] for log in subset]
        failed = sum(1 for t, ok in times.values() if not ok)
        med = statistics.median(values)
        print(f"{name:10s} median {med:.3f}s  p95 {_p95(values):.3f}s  over {len(values)} logs "
              f"({failed} of {len(times)} failed)")
        return med

    print()
    if have_drishti and both:
        ours_med = report("ioadvisor", ours, both)
        theirs_med = report("drishti", theirs, both)
        print(f"ratio (ioadvisor median / drishti median): {ours_med / theirs_med:.2f}  (target <= 0.50)")
    else:
        report("ioadvisor", ours, [log for log, (_, ok) in ours.items() if ok])
    return 0


if __name__ == "__main__":
    sys.exit(main())
