"""Do verification verdicts hold when the measurement is run again?

    python bench/verify_stability.py [--runs 5] [--target DIR | --gluster | --cephfs] [--cases a,b,...]
                                     [--config site.toml] [--np 2] [--out results.jsonl]

Runs ``ioadvisor diagnose CASE --verify`` --runs times on every case of the corpus's
generated/ and traps/ folders whose diagnosis proposes a fix, one after the other, and prints
per fix the verdicts of the runs, the median speedup and the largest deviation of a run's
speedup from that median, and at the end the run-to-run reproducibility: the standard deviation
of ln(speedup) between runs beyond what each run's pairs explain (replay.stats.between_run_sd),
the value for the site's ``[replay] reproducibility``. The targets (issue 14): the same verdict
in every run for every fix whose effect is over 20 % (median speedup above 1.2x or below 1/1.2x), and speedups within
+-15 % of their median. The peer is the measurement itself: each run is checked against the
others of the same session. --gluster starts a GlusterFS volume the way the tests do (root),
--cephfs the tests' four-OSD CephFS cluster (tests/system/cephfs.sh).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# bench/replay.py would shadow the `replay` package: import from the repository, not from bench/
sys.path[:] = [str(REPO)] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
CORPUS = REPO.parent / "shared" / "corpus"
EFFECT = 1.2  # a fix whose median speedup is beyond 1.2x (or below 1/1.2x) must never change verdict
SPREAD = 0.15  # speedups within +-15 % of their median
SHORT = {"improved": "I", "regressed": "R", "equivalent": "E", "inconclusive": "?", "not-verifiable": "-"}


def cases_with_fixes(names: list[str] | None) -> list[tuple[str, Path]]:
    """(name, log) of the generated and trap cases whose diagnosis proposes a fix."""
    from advisor import pipeline
    from advisor.config import load_config

    logs = sorted([*CORPUS.glob("generated/*/case.darshan"), *CORPUS.glob("traps/*/case.darshan")])
    chosen = [(log.parent.name, log) for log in logs if not names or log.parent.name in names]
    config = load_config(None)
    done = pipeline.run([str(log) for _, log in chosen], pipeline.Stages(), config)
    return [(name, log) for (name, log), r in zip(chosen, done.results)
            if r.diagnosis.error is None and any(f.fix for f in r.diagnosis.findings)]


def verify_once(log: Path, target: Path, args: argparse.Namespace) -> tuple[list[dict], float]:
    """One `diagnose --verify` run: each distinct fix's summary, and the wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "d.json"
        cmd = [sys.executable, "-m", "advisor", "diagnose", str(log), "--verify", "--target", str(target),
               "--np", str(args.np), "--json", str(out)]
        if args.config:
            cmd += ["--config", args.config]
        t0 = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        wall = time.monotonic() - t0
        if done.returncode not in (0, 1) or not out.exists():
            raise RuntimeError(f"{log}: diagnose --verify failed ({done.returncode}): {done.stderr.strip()[-300:]}")
        doc = json.loads(out.read_text())
    fixes = doc["summary"]["fixes"] + doc["summary"].get("fixes_not_to_apply", [])  # ranked, then slower
    for fix in fixes:  # the pairs behind the summary: the finding's verification of the same fix
        v = next((f["verification"] for f in doc["findings"] if f.get("fix") == fix["fix"] and f.get("verification")),
                 None)
        fix["pairs_mean_se"] = _mean_se(v)
    return fixes, wall


def _mean_se(v: dict | None) -> tuple[float, float] | None:
    """A run's mean log-ratio and its standard error, from the pairs its verification kept."""
    from replay import drift, stats

    if not v or not v.get("baseline") or not v.get("fixed"):
        return None
    d = stats.log_ratios(v["baseline"]["runs_s"], v["fixed"]["runs_s"])
    return drift.mean_se(d) if d.size >= 2 else None


def judge(runs: list[dict]) -> dict:
    """Verdicts, median speedup and spread of one fix over the runs, and whether it meets the targets."""
    verdicts = [r["verdict"] or "not-verifiable" for r in runs]
    speedups = [r["speedup"] for r in runs if isinstance(r.get("speedup"), (int, float))]
    median = statistics.median(speedups) if speedups else None
    spread = max(abs(s / median - 1) for s in speedups) if speedups and median else None
    large = median is not None and (median > EFFECT or median < 1 / EFFECT)
    return {"verdicts": verdicts, "median": median, "spread": spread, "large": large,
            "same": len(set(verdicts)) == 1, "within": spread is not None and spread <= SPREAD,
            "pairs_mean_se": [r["pairs_mean_se"] for r in runs if r.get("pairs_mean_se")]}


@contextlib.contextmanager
def gluster_target() -> Iterator[Path]:
    from tests.gluster import gluster_volume

    with tempfile.TemporaryDirectory(prefix="ioadv-bench-gluster-") as base, gluster_volume(Path(base)) as mnt:
        target = mnt / "bench"
        target.mkdir()
        yield target


@contextlib.contextmanager
def cephfs_target() -> Iterator[Path]:
    from tests.cephfs import ceph_cluster

    with tempfile.TemporaryDirectory(prefix="ioadv-bench-cephfs-") as base, ceph_cluster(Path(base) / "c") as cluster:
        os.environ["CEPH_CONF"] = str(cluster.conf)  # for the diagnose processes (layouts, probes)
        target = cluster.mnt / "bench"
        target.mkdir()
        yield target


def main() -> int:
    # a bench stopped with SIGTERM still unmounts and deletes the volume it started
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--target", type=Path, default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--gluster", action="store_true", help="measure on a GlusterFS volume started here (root)")
    ap.add_argument("--cephfs", action="store_true", help="measure on a CephFS cluster started here (root)")
    ap.add_argument("--cases", default="", help="comma-separated case folder names (default: all with a fix)")
    ap.add_argument("--config", default=None, help="site config whose [replay] section is used")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="append one JSON line per fix here")
    args = ap.parse_args()
    cases = cases_with_fixes([c for c in args.cases.split(",") if c] or None)
    print(f"{len(cases)} cases propose a fix; {args.runs} runs each", flush=True)
    with contextlib.ExitStack() as stack:
        if args.gluster:
            target = stack.enter_context(gluster_target())
        elif args.cephfs:
            target = stack.enter_context(cephfs_target())
        else:
            target = args.target or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ioadv-bench-")))
        rows = [row for name, log in cases for row in measure_case(name, log, target, args)]
        return report(rows, target)  # while the target is mounted: it names the file system


def measure_case(name: str, log: Path, target: Path, args: argparse.Namespace) -> list[dict]:
    by_fix: dict[str, list[dict]] = {}
    walls = []
    for _ in range(args.runs):
        fixes, wall = verify_once(log, target, args)
        walls.append(wall)
        for f in fixes:
            by_fix.setdefault(f["action"], []).append(f)
    rows = []
    for action, runs in by_fix.items():
        row = {"case": name, "fix": action, **judge(runs), "wall_s": statistics.median(walls),
               "reasons": [r.get("reason", "") for r in runs]}
        rows.append(row)
        print(_line(row), flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    return rows


def _line(row: dict) -> str:
    verdicts = " ".join(SHORT.get(v, v) for v in row["verdicts"])
    median = f"{row['median']:.2f}x" if row["median"] else "-"
    spread = f"+-{row['spread']:.0%}" if row["spread"] is not None else "-"
    flag = "" if row["same"] and (row["within"] or not row["large"]) else "  <-- " + (
        "verdict changed" if not row["same"] else "speedup spread")
    return f"{row['case'][:28]:28} {row['fix'][:44]:44} {verdicts:12} {median:>8} {spread:>6} " \
           f"{row['wall_s']:6.0f} s{flag}"


def report(rows: list[dict], target: Path) -> int:
    from replay.safety import fstype_of

    large = [r for r in rows if r["large"]]
    measured = [r for r in rows if r["median"] is not None]
    print(f"\non {target} ({fstype_of(target) or '?'}): {len(rows)} fixes, {len(large)} with an effect over 20 %")
    print(f"  same verdict in every run: {sum(r['same'] for r in rows)} of {len(rows)} fixes; "
          f"of the large effects {sum(r['same'] for r in large)} of {len(large)} (target: all)")
    print(f"  speedups within +-15 % of their median: {sum(r['within'] for r in measured)} of {len(measured)} "
          f"measured fixes; of the large effects {sum(r['within'] for r in large)} of {len(large)}")
    from advisor.config import ReplayConfig
    from replay import stats

    groups = [r["pairs_mean_se"] for r in rows if len(r["pairs_mean_se"]) >= 2]
    print(f"  run-to-run reproducibility (sd of ln speedup beyond each run's pairs, {len(groups)} fixes): "
          f"{stats.between_run_sd(groups):.3f}; [replay] reproducibility in use: {ReplayConfig().reproducibility}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
