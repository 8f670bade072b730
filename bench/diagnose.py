"""Latency per log of `ioadvisor diagnose --json -` vs Drishti 0.8 and PyDarshan's `job_stats`: same logs, same run.

    python bench/diagnose.py [--sample N | --all] [--corpus DIR] [--drishti PATH] [--timeout S]
                             [--before DIR]

Each log is run once per tool as a fresh process (what a user or a Slurm epilog does),
the tools back to back on the same log, taking turns at going first, so that machine load
hits both alike. Each run gives its wall time and the CPU time (user + system) of its
whole process tree: on a shared machine CPU time is the steadier figure. ioadvisor parses
in a child process; the bench adopts orphaned descendants (Linux PR_SET_CHILD_SUBREAPER)
so that every process's CPU is counted.

By default a stratified sample of N logs (every part of the corpus, smallest to largest
within each) keeps the run near ten minutes on a loaded 2-core machine; --all runs all.
Prints median and p95 of wall and CPU time per tool over the logs every tool handled,
and our median over Drishti's (target: at most 0.35) and over that of PyDarshan's own
summary of the log (`python -m darshan job_stats LOG`, which only reads and sums
counters). One untimed run of each tool first warms the page cache and ioadvisor's
per-user rule cache (as after any first run); the cost of a run without the rule cache is printed once.
Every tool runs from compiled bytecode, as an installed one does (bench/bytecode.py).

`--before DIR` also times the ioadvisor of another checkout in the same run (its `advisor`
package first on PYTHONPATH, e.g. `git archive REV advisor | tar -x -C DIR`), to show what
a change gained. Archive its `rules` too (`git archive REV advisor rules | tar -x -C DIR`): an
installed ioadvisor reads its catalogue as `advisor._rules`, which the bench links to DIR/rules,
else the old engine would read this checkout's rules and refuse the facts it does not know.

Drishti lives in its own venv (never the project's): `--drishti`, `$DRISHTI`, or the first
of DRISHTI_PATHS that exists; create one with
`python3 -m venv /tmp/drishti-venv && /tmp/drishti-venv/bin/pip install drishti-io`.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bytecode import compiled_runs  # noqa: E402  (bench/ is not a package: its sibling module)

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
DRISHTI_PATHS = ("/tmp/eng/drishti-venv/bin/drishti", "/tmp/drishti-venv/bin/drishti")
PR_SET_CHILD_SUBREAPER = 36
PEERS = {"drishti": "target: wall <= 0.35",
         "job_stats": "PyDarshan's summary of the same log: reading and summing its counters"}


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    ok: bool
    note: str = ""


def measure(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> Run:
    """Run `cmd`: wall time until it exits; CPU time of it and every descendant, all reaped here."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                env={**os.environ, "COLUMNS": "120", **(env or {})})
        try:
            code = proc.wait(timeout)
            note = ""
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code, note = None, f"timeout after {timeout:g} s"
        wall = time.perf_counter() - start
        _reap_all()
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    ok = code == 0
    if not ok and not note:
        note = f"exit {code}: {lines[-1] if lines else ''}"[:100]
    return Run(wall, cpu, ok, note)


def _reap_all() -> None:
    """Wait for every remaining descendant (adopted orphans included) so its CPU time is counted."""
    while True:
        try:
            os.wait4(-1, 0)
        except ChildProcessError:
            return


def stratified(logs: list[Path], corpus: Path, n: int) -> list[Path]:
    """About `n` logs: from each top-level folder its share, evenly spaced from smallest to largest."""
    groups: dict[str, list[Path]] = {}
    for log in logs:
        groups.setdefault(log.relative_to(corpus).parts[0], []).append(log)
    picked = []
    for members in groups.values():
        members.sort(key=lambda p: (p.stat().st_size, str(p)))
        k = min(len(members), max(1, round(n * len(members) / len(logs))))
        step = (len(members) - 1) / (k - 1) if k > 1 else 0
        picked += [members[round(i * step)] for i in range(k)]
    return sorted(set(picked))


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def drishti_path(arg: str | None) -> str | None:
    for candidate in (arg, os.environ.get("DRISHTI"), *DRISHTI_PATHS):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def ours_command() -> list[str]:
    script = REPO / ".venv" / "bin" / "ioadvisor"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "advisor"]
    return [*base, "diagnose", "--json", "-"]


@dataclass
class Tool:
    command: list[str]
    env: dict[str, str] | None = None


def run_all(logs: list[Path], corpus: Path, tools: dict[str, Tool], timeout: float) -> dict:
    """{tool: {log: Run}}, the tools taking turns at going first from one log to the next."""
    results: dict[str, dict[Path, Run]] = {name: {} for name in tools}
    names = list(tools)
    for n, log in enumerate(logs):
        turn = n % len(names)
        for name in names[turn:] + names[:turn]:
            tool = tools[name]
            results[name][log] = measure([*tool.command, str(log)], timeout, tool.env)
        cells = ", ".join(f"{name} {_cell(results[name][log])}" for name in names)
        print(f"[{n + 1}/{len(logs)}] {log.relative_to(corpus)}: {cells}", flush=True)
    return results


def _cell(run: Run) -> str:
    text = f"{run.wall_s:.2f} s (CPU {run.cpu_s:.2f} s)"
    return text if run.ok else f"{text} failed: {run.note}"


def summarize(results: dict[str, dict[Path, Run]]) -> None:
    names = list(results)
    both = [log for log in results[names[0]] if all(results[name][log].ok for name in names)]
    print(f"\nover the {len(both)} logs every tool handled:")
    if not both:
        print("no log that every tool handled: see the failures above")
        return
    print(f"{'':10s} {'wall median':>12s} {'wall p95':>10s} {'CPU median':>11s} {'CPU p95':>9s}  failed")
    medians = {}
    for name in names:
        wall = [results[name][log].wall_s for log in both]
        cpu = [results[name][log].cpu_s for log in both]
        failed = sum(not run.ok for run in results[name].values())
        medians[name] = (statistics.median(wall), statistics.median(cpu))
        print(f"{name:10s} {medians[name][0]:11.2f}s {p95(wall):9.2f}s {medians[name][1]:10.2f}s "
              f"{p95(cpu):8.2f}s  {failed} of {len(results[name])}")
    for peer, target in PEERS.items():
        if peer not in medians:
            continue
        (tw, tc) = medians[peer]
        for name in (n for n in names if n not in PEERS):
            ow, oc = medians[name]
            print(f"ratio of medians ({name} / {peer}): wall {ow / tw:.2f}, CPU {oc / tc:.2f}  ({target})")


def _link_rules(before: Path) -> bool:
    """The other checkout's catalogue where its package looks for it (advisor._rules)."""
    link, rules = before / "advisor" / "_rules", before / "rules"
    if not link.exists() and rules.is_dir():
        link.symlink_to(Path("..") / "rules")
    return link.is_dir()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--drishti", default=None, help="Drishti's command (default: $DRISHTI or a known venv)")
    pick = ap.add_mutually_exclusive_group()
    pick.add_argument("--sample", type=int, default=40, help="stratified sample size (default 40)")
    pick.add_argument("--all", action="store_true", help="every .darshan log of the corpus")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--before", type=Path, default=None,
                    help="also time the ioadvisor of this checkout (holding an advisor/ package)")
    args = ap.parse_args()

    logs = sorted(args.corpus.rglob("*.darshan"))
    if not logs:
        print(f"no .darshan logs under {args.corpus}", file=sys.stderr)
        return 2
    chosen = logs if args.all else stratified(logs, args.corpus, args.sample)
    compiled_runs(Path(tempfile.mkdtemp(prefix="ioadvisor-bench-pyc-")), *([args.before] if args.before else []))
    # A rule cache of the bench's own: the per-user one keeps one catalogue, so other checkouts
    # run by the same user (other sessions on a shared machine) would evict ours between runs.
    cache = {"XDG_CACHE_HOME": tempfile.mkdtemp(prefix="ioadvisor-bench-cache-")}
    tools = {"ioadvisor": Tool(ours_command(), cache)}
    if args.before:
        if not _link_rules(args.before):
            print(f"{args.before}: no rules/ beside advisor/ (git archive REV advisor rules)", file=sys.stderr)
            return 2
        tools["before"] = Tool([sys.executable, "-m", "advisor", "diagnose", "--json", "-"],
                               # PYTHONSAFEPATH: not this checkout from the working directory
                               {"PYTHONPATH": str(args.before.resolve()), "PYTHONSAFEPATH": "1",
                                "XDG_CACHE_HOME": tempfile.mkdtemp(prefix="ioadvisor-bench-cache-")})
    tools["job_stats"] = Tool([sys.executable, "-m", "darshan", "job_stats"])
    drishti = drishti_path(args.drishti)
    if drishti:
        tools["drishti"] = Tool([drishti])
    else:
        print("Drishti not found (--drishti, $DRISHTI): timing ioadvisor only", file=sys.stderr)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    print(f"{len(chosen)} of {len(logs)} logs under {args.corpus}"
          f"{'' if args.all else ' (stratified sample; --all for every log)'}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for tool in tools.values():  # warm-up, untimed
        measure([*tool.command, str(chosen[0])], args.timeout, tool.env)
    cold = measure([*tools["ioadvisor"].command, str(chosen[0])], args.timeout, {"IOADVISOR_RULE_CACHE": "0"})
    print(f"ioadvisor without its rule cache, {chosen[0].name}: {_cell(cold)}")
    results = run_all(chosen, args.corpus, tools, args.timeout)
    summarize(results)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
