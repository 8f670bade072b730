"""HTML report cost: `ioadvisor diagnose --html` vs PyDarshan's `python -m darshan summary`.

    python bench/report.py [--corpus DIR] [--timeout S] [--skip-dxt-heatmap] [--strict]

Same logs, same run, each a fresh process (what a user or an epilog does), the tools
alternated per log so machine load hits all alike. For each run: wall time, peak memory
(resident set of the whole process tree, sampled every 50 ms: ioadvisor parses in a
child process) and CPU time of the tree (steadier than wall time on a loaded machine) and
the size of the page written. Prints the ratios and the targets:
>= 5x faster than PyDarshan's summary on typical logs; the 1 M-segment DXT log under
10 s and 1 GiB; every page under 3 MB. A last section measures the plot backend:
our hand-built SVG against matplotlib drawing the same data to SVG.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
BIG = "generated/s_big_dxt_1k/case.darshan"
LOGS = [
    "generated/b_small_io_shared_4k/case.darshan",  # 4 ranks, 32 k DXT segments
    "generated/e_mpiio_collective_256k/case.darshan",  # MPI-IO collective, DXT
    "darshan-logs/darshan_logs/imbalanced_io/imbalanced-io.darshan",  # 496 ranks, 1030 files (ALCF)
    "darshan-logs/darshan_logs/e3sm_io_heatmaps_and_dxt/e3sm_io_heatmap_only.darshan",  # E3SM, heatmaps
    "darshan-logs/darshan_logs/partial_data_dxt/partial_data_dxt.darshan",  # partial DXT
    "darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input/sample-badost.darshan",  # 2048 ranks, Lustre
    BIG,  # 1,048,576 DXT segments
]
MiB = 1024 * 1024


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_bytes: int
    page_bytes: int
    ok: bool
    note: str = ""


def _become_subreaper() -> None:
    """Adopt orphaned descendants (ioadvisor's forkserver outlives its parent for a moment), so that
    waiting for them gives their CPU time and memory too (Linux prctl PR_SET_CHILD_SUBREAPER)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def _tree_rss() -> int:
    """Resident memory of everything running under this bench (one measured command at a time)."""
    total = 0
    for p in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += p.memory_info().rss
    return total


def measure(cmd: list[str], page: Path, cwd: Path, timeout: float) -> Run:
    """Run `cmd`: wall time until it exits; CPU time and peak memory of it and all its descendants.

    Every process of the tree is reaped here (directly, or through the parent that waited for
    it), so wait4's user+system times add up without double counting; memory is sampled every
    50 ms as the sum over the live tree (ioadvisor parses in a child process).
    """
    page.unlink(missing_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err,
                                 env={**os.environ, "COLUMNS": "120", "MPLBACKEND": "Agg"})
        wall, code, cpu, peak = None, None, 0.0, 0
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break  # the whole tree is gone
            if pid == 0:
                peak = max(peak, _tree_rss())
                if time.perf_counter() - start > timeout:
                    for p in psutil.Process().children(recursive=True):
                        p.kill()
                    while True:
                        try:
                            os.wait4(-1, 0)
                        except ChildProcessError:
                            break
                    return Run(timeout, cpu, peak, 0, False, f"timeout after {timeout:.0f} s")
                time.sleep(0.05)
                continue
            cpu += usage.ru_utime + usage.ru_stime
            peak = max(peak, usage.ru_maxrss * 1024)
            if pid == child.pid:
                wall, code = time.perf_counter() - start, os.waitstatus_to_exitcode(status)
                child.returncode = code
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    ok = code in (0, 1) and page.is_file()
    return Run(wall or 0.0, cpu, peak, page.stat().st_size if page.is_file() else 0, ok,
               "" if ok else f"exit {code}: {lines[-1] if lines else ''}"[:100])


def tools(log: Path, work: Path, skip_heatmap: bool) -> dict[str, tuple[list[str], Path]]:
    py = sys.executable
    out = {"ioadvisor": ([py, "-m", "advisor", "diagnose", str(log), "--html", str(work / "ours.html")],
                         work / "ours.html"),
           "pydarshan": ([py, "-m", "darshan", "summary", str(log), "--output", str(work / "pd.html")],
                         work / "pd.html")}
    if not skip_heatmap:
        out["pydarshan+dxt"] = ([py, "-m", "darshan", "summary", str(log), "--enable_dxt_heatmap",
                                 "--output", str(work / "pdx.html")], work / "pdx.html")
    return out


def _cell(run: Run | None) -> str:
    if run is None:
        return f"{'-':>38}"
    if not run.ok:
        return f"{'FAILED':>10} {run.note[:27]:>27}"
    return (f"{run.wall_s:6.1f} s ({run.cpu_s:5.1f} cpu) {run.peak_bytes / MiB:5.0f} MiB "
            f"{run.page_bytes / 1024:5.0f} KB")


def bench_tools(corpus: Path, timeout: float, skip_heatmap: bool) -> dict[str, dict[str, Run]]:
    results: dict[str, dict[str, Run]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        work = Path(tmp)
        for rel in LOGS:
            log = corpus / rel
            if not log.is_file():
                print(f"missing {log}: skipped", file=sys.stderr)
                continue
            runs = {}
            for name, (cmd, page) in tools(log, work, skip_heatmap).items():
                runs[name] = measure(cmd, page, work, timeout)
            results[rel] = runs
            print(f"{Path(rel).parent.name[:28]:<28} " + " | ".join(f"{k}: {_cell(v)}" for k, v in runs.items()),
                  flush=True)
    return results


def summarize(results: dict[str, dict[str, Run]]) -> list[str]:
    """Ratio lines and target verdicts; returns the missed targets."""
    missed = []
    for peer in ("pydarshan", "pydarshan+dxt"):
        for what in ("wall_s", "cpu_s"):
            ratios = [getattr(r[peer], what) / max(getattr(r["ioadvisor"], what), 1e-9)
                      for rel, r in results.items() if rel != BIG and peer in r and r[peer].ok and r["ioadvisor"].ok]
            if not ratios:
                continue
            med = statistics.median(ratios)
            print(f"speed-up vs {peer:<14} typical logs, {what[:-2]:>4} time: median {med:5.1f}x, "
                  f"min {min(ratios):5.1f}x, max {max(ratios):5.1f}x over {len(ratios)} logs (target >= 5x)")
            if peer == "pydarshan" and what == "wall_s" and med < 5:
                missed.append(f"median wall-time speed-up {med:.1f}x < 5x")
    big = results.get(BIG, {})
    ours = big.get("ioadvisor")
    if ours:
        print(f"1 M-segment log: ioadvisor {ours.wall_s:.2f} s ({ours.cpu_s:.1f} s cpu), "
              f"{ours.peak_bytes / MiB:.0f} MiB peak, "
              f"{ours.page_bytes / 1024:.0f} KB page (targets < 10 s, < 1024 MiB)")
        for peer in ("pydarshan", "pydarshan+dxt"):
            if peer in big:
                other = big[peer]
                state = (f"{other.wall_s:.1f} s ({other.cpu_s:.1f} s cpu), {other.peak_bytes / MiB:.0f} MiB, "
                         f"{other.page_bytes / 1024:.0f} KB"
                         if other.ok else other.note)
                ratio = (f" -> {other.wall_s / ours.wall_s:.1f}x faster, "
                         f"{other.peak_bytes / max(ours.peak_bytes, 1):.1f}x less memory") if other.ok else ""
                print(f"                 {peer}: {state}{ratio}")
        if not ours.ok or ours.wall_s >= 10 or ours.peak_bytes >= 1024 * MiB:
            missed.append("1 M-segment log over 10 s or 1 GiB")
    pages = [r["ioadvisor"].page_bytes for r in results.values() if r["ioadvisor"].ok]
    if pages:
        print(f"largest ioadvisor page: {max(pages) / 1024:.0f} KB (target < 3072 KB)")
        if max(pages) >= 3 * MiB:
            missed.append("a page over 3 MB")
    return missed


def bench_plot_backends(corpus: Path) -> None:
    """Our SVG vs matplotlib's, drawing the same figure data (the 1 M-segment log and the 2048-rank log)."""
    from advisor.ingest import load_profile
    from advisor.report.figures import figure_data

    for rel in (BIG, LOGS[5]):
        data = figure_data(load_profile(corpus / rel))
        t0 = time.perf_counter()
        ours = _ours_svg(data)
        t1 = time.perf_counter()
        theirs = _matplotlib_svg(data)
        t2 = time.perf_counter()
        print(f"plots of {Path(rel).parent.name}: hand-built SVG {1e3 * (t1 - t0):6.0f} ms, {ours / 1024:5.0f} KB | "
              f"matplotlib SVG (same plots) {1e3 * (t2 - t1):6.0f} ms, {theirs / 1024:5.0f} KB "
              f"-> {(t2 - t1) / max(t1 - t0, 1e-9):.0f}x time, {theirs / max(ours, 1):.1f}x bytes")


def _ours_svg(data: dict) -> int:
    from advisor.report.views import figure_views

    plots, _, _ = figure_views(data)
    return sum(len(str(p.svg)) for p in plots)


def _matplotlib_svg(data: dict) -> int:
    """The same plots with matplotlib (import included: a report process pays it once)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    size = 0

    def save(fig) -> int:
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
        plt.close(fig)
        return len(buf.getvalue())

    if "io_time" in data:
        d = data["io_time"]
        fig, ax = plt.subplots(figsize=(9, 2))
        left = np.zeros(len(d["modules"]))
        for key in ("read", "write", "meta"):
            ax.barh(d["modules"], d[key], left=left, label=key)
            left += np.array(d[key])
        ax.set_xlabel("time (s)")
        size += save(fig)
    for _module, counts in data.get("access_sizes", {}).get("modules", {}).items():
        fig, ax = plt.subplots(figsize=(9, 3))
        x = np.arange(len(data["access_sizes"]["bins"]))
        ax.bar(x - 0.2, counts["read"], 0.4)
        ax.bar(x + 0.2, counts["write"], 0.4)
        ax.set_xticks(x, data["access_sizes"]["bins"])
        size += save(fig)
    if "ranks" in data:
        d = data["ranks"]
        fig, (a, b) = plt.subplots(2, 1, figsize=(9, 4))
        x = np.arange(len(d["labels"]))
        a.bar(x, d.get("bytes") or np.add(d["bytes_read"], d["bytes_written"]))
        b.bar(x, d["time_s"])
        size += save(fig)
    if "timeline" in data:
        rows = data["timeline"]["rows"]
        grid = np.array([r["write_busy"] for r in rows] + [r["read_busy"] for r in rows])
        fig, ax = plt.subplots(figsize=(9, 3))
        ax.pcolormesh(grid > 0, cmap="Oranges")
        size += save(fig)
    if "osts" in data:
        fig, ax = plt.subplots(figsize=(9, 3))
        ax.bar(data["osts"]["ost"], data["osts"]["bandwidth"])
        size += save(fig)
    if "top_files" in data:
        files = data["top_files"]["files"]
        fig, ax = plt.subplots(figsize=(9, 3))
        ax.barh([f["path"][-30:] for f in files], [f["read_s"] + f["write_s"] + f["meta_s"] for f in files])
        size += save(fig)
    return size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--timeout", type=float, default=900.0, help="per run (PyDarshan's DXT heatmap is slow)")
    ap.add_argument("--skip-dxt-heatmap", action="store_true", help="leave out `summary --enable_dxt_heatmap`")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        print(f"bench/report.py: corpus not found at {args.corpus}", file=sys.stderr)
        return 2
    _become_subreaper()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; each cell: wall time (CPU time), "
          "peak RSS of the process tree, page size")
    results = bench_tools(args.corpus, args.timeout, args.skip_dxt_heatmap)
    missed = summarize(results)
    bench_plot_backends(args.corpus)
    if args.json:
        args.json.write_text(json.dumps({k: {t: vars(r) for t, r in v.items()} for k, v in results.items()}, indent=1))
    print("targets: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
