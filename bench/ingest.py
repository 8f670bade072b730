"""Ingest cost over the shared corpus: `ioadvisor show --json` per Darshan log.

For every Darshan file of ../shared/corpus (3.x logs and the 2.x .gz logs, which
are refused), one `ioadvisor show --json -` process: wall time, CPU time (CLI +
parsing child), peak RSS of the CLI process (wait4) and of its parsing child
(the child reports its own in `source.ingest`). Then the million-segment DXT trace `generated/s_big_dxt_1k`
against the peer, pydarshan's own DXT reader (one dict per segment), in the same
run, with the ratio. Then FLASH's Recorder trace (1,024 ranks, 11.8 million calls, 145 MB
unpacked) through `ioadvisor diagnose`: wall and CPU time, peak memory (the target: under
10 s and 1 GiB).

    .venv/bin/python bench/ingest.py [--corpus DIR] [--sample N] [--recorder-only]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
BIG = "generated/s_big_dxt_1k/case.darshan"
FLASH = "recorder/flash_sedov3d_hdf5.tar.xz"
CLI = [sys.executable, "-c", "from advisor.cli import main; main()"]
PEER = """
import sys, darshan
r = darshan.DarshanReport(sys.argv[1], read_all=False)
r.mod_read_all_dxt_records("DXT_POSIX", dtype="numpy")
n = sum(len(x["read_segments"]) + len(x["write_segments"]) for x in r.records["DXT_POSIX"])
print(n)
"""


def measure(cmd: list[str]) -> tuple[float, float, int, str, int]:
    """(wall s, CPU s, peak RSS KiB of the process, stdout, exit status) of one command."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("IOADVISOR_DEBUG", None)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss, out.decode("utf-8", "replace"), proc.returncode


def show(path: Path) -> dict:
    wall, cpu, rss, out, code = measure([*CLI, "show", "--json", "-", "--files", "10", str(path)])
    result = json.loads(out)["results"][0] if out.strip() else {"ok": False}
    ingest = (result.get("source") or {}).get("ingest") or {}
    child = ingest.get("parser_peak_rss_kb", 0)
    return {"path": path, "ok": result.get("ok", False), "wall_s": wall,
            "cpu_s": cpu + ingest.get("parser_cpu_s", 0.0), "cli_rss_kb": rss, "parser_rss_kb": child,
            "peak_rss_kb": max(rss, child), "parse_s": ingest.get("parse_s"), "exit": code}


def files(corpus: Path) -> list[Path]:
    two_x = corpus / "darshan-repo-logs" / "darshan-test" / "2.x"
    return sorted(corpus.rglob("*.darshan")) + sorted(two_x.rglob("*.darshan.gz"))


def _mib(kb: float) -> str:
    return f"{kb / 1024:.0f} MiB"


def corpus_table(rows: list[dict], corpus: Path) -> None:
    ok = [r for r in rows if r["ok"]]
    print(f"{'log':64} {'ok':>3} {'wall':>7} {'CPU':>6} {'parse':>7} {'peak RSS':>9}")
    for r in sorted(rows, key=lambda r: -r["cpu_s"])[:15]:
        parse = f"{r['parse_s']:.2f}s" if r["parse_s"] is not None else "-"
        print(f"{str(r['path'].relative_to(corpus))[-64:]:64} {'y' if r['ok'] else 'n':>3} "
              f"{r['wall_s']:6.2f}s {r['cpu_s']:5.2f}s {parse:>7} {_mib(r['peak_rss_kb']):>9}")
    print(f"... ({len(rows)} logs, the 15 costliest in CPU shown)\n")
    walls, cpus = [r["wall_s"] for r in rows], [r["cpu_s"] for r in rows]
    rss = [r["peak_rss_kb"] for r in ok]
    parse = [r["parse_s"] for r in ok if r["parse_s"] is not None]
    print(f"logs: {len(rows)} ({len(ok)} read, {len(rows) - len(ok)} refused with a one-line error)")
    print(f"`ioadvisor show --json` wall time per log: median {statistics.median(walls):.2f} s, "
          f"max {max(walls):.2f} s")
    print(f"CPU time per log (CLI + parsing child): median {statistics.median(cpus):.2f} s, "
          f"max {max(cpus):.2f} s")
    print(f"parse time in the isolated child: median {statistics.median(parse):.3f} s, max {max(parse):.2f} s")
    print(f"peak RSS per log (largest process): median {_mib(statistics.median(rss))}, max {_mib(max(rss))}")


def big_dxt(corpus: Path) -> None:
    path = corpus / BIG
    ours = show(path)
    peer_wall, peer_cpu, peer_rss, peer_out, code = measure([sys.executable, "-c", PEER, str(path)])
    segments = peer_out.strip() if code == 0 else f"failed ({code})"
    print(f"\n{BIG} (DXT_POSIX segments per pydarshan: {segments})")
    print(f"  ioadvisor show --json : {ours['wall_s']:.2f} s wall, {ours['cpu_s']:.2f} s CPU, "
          f"parse {ours['parse_s']:.2f} s, peak RSS {_mib(ours['peak_rss_kb'])}")
    print(f"  pydarshan DXT reader  : {peer_wall:.2f} s wall, {peer_cpu:.2f} s CPU, peak RSS {_mib(peer_rss)}")
    print(f"  ratio (pydarshan / ioadvisor): wall {peer_wall / ours['wall_s']:.1f}x, "
          f"CPU {peer_cpu / ours['cpu_s']:.1f}x, memory {peer_rss / ours['peak_rss_kb']:.1f}x")


def recorder_flash(corpus: Path) -> None:
    """`ioadvisor diagnose` of FLASH's trace: wall, CPU of every process, largest process's RSS."""
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(corpus / FLASH) as tar:
            tar.extractall(tmp, filter="data")
        trace = Path(tmp) / "flash_sedov3d_hdf5"
        # a rule cache of its own, warmed first, as a user's is after the first run: the one in
        # ~/.cache is keyed by the code, and other checkouts on the machine replace it
        env = {**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        small = corpus / "recorder" / "R1_posix_small_shared" / "trace"
        subprocess.run([*CLI, "diagnose", str(small), "--json", os.devnull], capture_output=True, env=env)
        load = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([*CLI, "diagnose", str(trace), "--json", "-"], capture_output=True, env=env)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    doc = json.loads(proc.stdout)[0] if proc.stdout.strip() else {}
    findings = [f"{f['code']} {f['severity']}" for f in doc.get("findings", []) if f["severity"] != "info"]
    print(f"\n{FLASH} (1,024 ranks, 11.8 M calls) through `ioadvisor diagnose --json -`:")
    print(f"  wall {wall:.1f} s, CPU {cpu:.1f} s (all processes), peak RSS {_mib(after.ru_maxrss)} "
          f"(largest process), exit {proc.returncode}; "
          f"target: under 10 s and 1 GiB; load average {load:.1f} -> {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs (rule cache warm)")
    print(f"  findings (warn or high): {', '.join(findings) or 'none'}")


def startup() -> None:
    """What the parsing forkserver costs once per process, vs importing pydarshan's backend."""
    ours = measure([sys.executable, "-c", "import advisor.ingest.darshan_preload"])
    peer = measure([sys.executable, "-c", "import darshan.backend.cffi_backend"])
    print(f"\nparsing forkserver start (once per ioadvisor process, not in the CPU figures above): "
          f"{ours[1]:.2f} s CPU, {_mib(ours[2])}; importing pydarshan's cffi_backend (pulls in pandas): "
          f"{peer[1]:.2f} s CPU, {_mib(peer[2])} ({peer[1] / ours[1]:.1f}x CPU)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--sample", type=int, default=0, help="every k-th log only (0: all)")
    ap.add_argument("--recorder-only", action="store_true", help="only FLASH's Recorder trace")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"bench/ingest.py: corpus not found at {args.corpus}")
    if args.recorder_only:
        recorder_flash(args.corpus)
        return
    logs = files(args.corpus)
    if args.sample > 1:
        logs = logs[::args.sample]
    rows = []
    for i, path in enumerate(logs, 1):
        rows.append(show(path))
        print(f"\r{i}/{len(logs)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    corpus_table(rows, args.corpus)
    big_dxt(args.corpus)
    recorder_flash(args.corpus)
    startup()
    print(f"\n(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          "wall times stretch with load, CPU times much less)")


if __name__ == "__main__":
    main()
