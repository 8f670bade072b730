"""ioadvisor and Drishti 0.8 on the same ~400 hostile inputs made from real ones, side by side.

    .venv/bin/python bench/fuzz.py [--seed 18] [--timeout 180] [--drishti PATH] [--keep DIR] [--limit N]

The set is deterministic (a seeded choice of mutations of the real inputs in tests/data,
bench/hostile.py says what each mutation does): truncated, bit-flipped and header- or
job-record-edited Darshan logs of every format there (3.00 to 3.41, DXT, LUSTRE, HDF5,
APMPI, DAOS, partial, a 2.x log), darshan-parser and darshan-dxt-parser dumps with edited
header lines, counters, ranks and a decompression bomb, IOR text/JSON/CSV outputs and a
node snapshot (tests/data/snapshot) with absurd numbers or deep nesting, a valid log under hostile file names,
and special files (FIFO, directory, socket, symlink loop, /dev/urandom, a 1 GiB sparse file).

Each input is given to `ioadvisor diagnose PATH` and to `drishti PATH` (Drishti reads
Darshan logs only: every other input is an input it should refuse cleanly), one fresh
process per input and tool, sequentially, each in a scratch working directory. A run is a
hang after --timeout seconds and is killed past 4 GiB resident (others share the machine).
Prints per tool: inputs, clean errors, successes, internal errors (a bug: ioadvisor's exit
3; Drishti has no such status, so an exit on an uncaught exception), tracebacks printed,
signals, hangs, runs over 2 GiB; then the same over the binary Darshan logs only, and the
inputs behind each of ioadvisor's defects. Target for ioadvisor: 0 internal errors,
tracebacks, signals, hangs and runs over 2 GiB.

Drishti 0.8 lives in its own venv under /tmp (bench/fleet.py installs it on first use).
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
import hostile  # noqa: E402  (bench/ is not a package: its sibling module)
from fleet import drishti_command  # noqa: E402

DATA = REPO / "tests" / "data"
LOGS = sorted(DATA.glob("*.darshan")) + [DATA / "dumps" / "a_good_fpp_posix_1m.darshan",
                                        DATA / "dumps" / "d_mpiio_independent_256k.darshan"]
DUMPS = [DATA / "dumps" / n for n in ("a_good_fpp_posix_1m.parser.txt", "a_good_fpp_posix_1m.dxt.txt",
                                      "release_3.5.0_lustre.all.parser.txt", "k_fio_nonmpi.parser.txt",
                                      "d_mpiio_independent_256k.parser.txt.gz",
                                      "d_mpiio_independent_256k.dxt.txt.gz")]
IOR = [DATA / "ior" / n for n in ("ior_text_4.0.0_v.txt", "ior_4.0.0_summary.json", "ior_csv_4.0.0.txt",
                                  "ior_2.10_two_tests.txt", "io500_psm_noise.txt", "ior_text_3.3.0.txt")] + [
    DATA / "snapshot" / "vm-2core.json"]
OLD_LOG = DATA / "darshan-2.2.0-mpi-io-test.darshan.gz"
MEMORY_LINE = 2 << 30
COLUMNS = ("inputs", "clean errors", "successes", "internal errors", "tracebacks", "signals", "hangs",
           "over 2 GiB")


@dataclass
class Case:
    name: str     # what was done, for the defect list
    path: Path
    log: bool     # a binary Darshan log (Drishti's input format)


class _Set:
    """The inputs written so far, numbered in order."""

    def __init__(self, out: Path, rng: random.Random):
        self.out, self.rng, self.cases = out, rng, []

    def add(self, name: str, data: bytes, suffix: str, log: bool = False) -> None:
        path = self.out / f"{len(self.cases):03d}{suffix}"
        path.write_bytes(data)
        self.cases.append(Case(name, path, log))


def build(out: Path, seed: int) -> list[Case]:
    """The deterministic set of hostile inputs, written under `out`."""
    s = _Set(out, random.Random(seed))
    for src in LOGS:
        _log_cases(s, src)
    old = OLD_LOG.read_bytes()
    for keep in (10, len(old) // 2):
        s.add(f"{OLD_LOG.name} cut at {keep}", hostile.truncate(old, keep), ".darshan.gz", True)
    for src in DUMPS:
        _dump_cases(s, src)
    bomb = gzip.compress(b"\n" * (256 << 20), compresslevel=9)
    s.add("dump of 256 MiB blank lines (gzip)", gzip.compress(DUMPS[0].read_bytes()[:3000]) + bomb, ".txt.gz")
    for src in IOR:
        _text_cases(s, src.name, src.read_text())
    good = LOGS[-2].read_bytes()
    for i, name in enumerate(hostile.HOSTILE_NAMES):
        path = out / f"n{i:02d}-{name}"
        path.write_bytes(good)
        s.cases.append(Case(f"hostile name {name!r}", path, True))
    for kind in hostile.SPECIAL_KINDS:
        s.cases.append(Case(f"special file: {kind}", hostile.special_file(kind, out / f"s-{kind}.darshan"), True))
    return s.cases


def _log_cases(s: _Set, src: Path) -> None:
    """Truncations, bit flips (in the header or anywhere), header and job-record edits."""
    data, rng = src.read_bytes(), s.rng
    layout = hostile.darshan_layout(data)
    head = layout.header_size if layout else 64
    for keep in (0, 8, head // 2, head, head + 40, len(data) // 2, len(data) - 1):
        s.add(f"{src.name} cut at {keep}", hostile.truncate(data, keep), ".darshan", True)
    for n in (1, 1, 8, 64, 512):
        region = head if rng.random() < 0.5 else len(data)
        bits = [rng.randrange(8 * region) for _ in range(n)]
        s.add(f"{src.name} {n} bit(s) flipped", hostile.flip_bits(data, bits), ".darshan", True)
    for _ in range(5):
        field = rng.choice(hostile.DARSHAN_HEADER_FIELDS)
        value = rng.choice(hostile.ABSURD_INTS + (len(data), len(data) + 1, 341, 299, 999))
        s.add(f"{src.name} header {field}={value}", hostile.darshan_header_edit(data, field, value), ".darshan", True)
    for _ in range(4 if layout else 0):
        field, value = rng.choice(hostile.DARSHAN_JOB_FIELDS), rng.choice(hostile.ABSURD_INTS)
        s.add(f"{src.name} job {field}={value}", hostile.darshan_job_edit(data, field, value), ".darshan", True)


def _dump_cases(s: _Set, src: Path) -> None:
    """Truncations and bit flips of the file; header lines and counter cells edited in its text."""
    raw, rng = src.read_bytes(), s.rng
    zipped = src.suffix == ".gz"
    text = (gzip.decompress(raw) if zipped else raw).decode()
    suffix = ".txt.gz" if zipped else ".txt"
    for keep in (len(raw) // 3, len(raw) - 2):
        s.add(f"{src.name} cut at {keep}", hostile.truncate(raw, keep), suffix)
    s.add(f"{src.name} 16 bits flipped", hostile.flip_bits(raw, [rng.randrange(8 * len(raw)) for _ in range(16)]),
          suffix)
    edits = [(f"header {key}", hostile.dump_header_edit(text, key, rng.choice(hostile.ABSURD_NUMBERS)))
             for key in ("nprocs", "run time", "start_time", "end_time", "darshan log version", "exe")]
    for _ in range(8):
        column, value = rng.choice((1, 2, 3, 4, 4, 4, 5)), rng.choice(hostile.ABSURD_NUMBERS)
        edits.append((f"counter column {column}={value[:20]}",
                      hostile.dump_counter_edit(text, rng.randrange(1 << 30), column, value)))
    for name, edited in edits:
        s.add(f"{src.name} {name}", gzip.compress(edited.encode()) if zipped else edited.encode(), suffix)


def _text_cases(s: _Set, name: str, text: str) -> None:
    """IOR outputs and snapshots: absurd numbers, cut in half, nested 100,000 deep (JSON)."""
    suffix = ".json" if name.endswith(".json") else ".txt"
    for _ in range(5):
        value = s.rng.choice(hostile.ABSURD_NUMBERS)
        edited = hostile.replace_number(text, s.rng.randrange(1 << 30), value)
        s.add(f"{name} a number={value[:20]}", edited.encode(), suffix)
    s.add(f"{name} cut in half", text[: len(text) // 2].encode(), suffix)
    if suffix == ".json":
        s.add(f"{name} nested 100,000 deep", hostile.nest_json(text, 100_000).encode(), suffix)


def ioadvisor() -> list[str]:
    exe = REPO / ".venv" / "bin" / "ioadvisor"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "advisor"]


def tally(outcomes: list[hostile.Outcome], internal_status: int | None) -> dict[str, int]:
    kinds = Counter(o.kind(internal_status) for o in outcomes)
    return {"inputs": len(outcomes), "clean errors": kinds["clean error"], "successes": kinds["success"],
            "internal errors": kinds["internal error"], "tracebacks": sum(o.traceback for o in outcomes),
            "signals": kinds["signal"], "hangs": kinds["hang"],
            "over 2 GiB": sum(o.peak_rss > MEMORY_LINE or o.capped for o in outcomes)}


def table(title: str, rows: dict[str, dict[str, int]]) -> None:
    print(f"\n{title}")
    print(f"{'':10s}" + "".join(f"{c:>16s}" for c in COLUMNS))
    for name, counts in rows.items():
        print(f"{name:10s}" + "".join(f"{counts[c]:16,d}" for c in COLUMNS))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--drishti", default=None, help="Drishti's command (default: bench/fleet.py's venv)")
    ap.add_argument("--keep", type=Path, default=None, help="write the inputs here and keep them")
    ap.add_argument("--limit", type=int, default=None, help="run only every input up to this many (a quick look)")
    args = ap.parse_args()
    if args.drishti:
        os.environ["DRISHTI"] = args.drishti
    drishti = str(drishti_command())
    root = Path(tempfile.mkdtemp(prefix="ioadvisor-fuzz-"))
    inputs = args.keep or root / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    try:
        cases = build(inputs, args.seed)[:args.limit]
        print(f"{len(cases)} hostile inputs (seed {args.seed}) in {inputs}; timeout {args.timeout:g} s, "
              f"memory cap 4 GiB", flush=True)
        tools = {"ioadvisor": ([*ioadvisor(), "diagnose"], 3), "drishti": ([drishti], None)}
        results: dict[str, list[hostile.Outcome]] = {name: [] for name in tools}
        for n, case in enumerate(cases, 1):
            for name, (command, _) in tools.items():
                scratch = root / "cwd" / name
                scratch.mkdir(parents=True, exist_ok=True)
                results[name].append(hostile.run([*command, str(case.path)], args.timeout, cwd=str(scratch),
                                                 env={"COLUMNS": "120", "NO_COLOR": "1"}))
                shutil.rmtree(scratch, ignore_errors=True)
            if n % 25 == 0:
                print(f"  {n}/{len(cases)}", flush=True)
        table(f"all {len(cases)} inputs", {name: tally(results[name], status) for name, (_, status) in tools.items()})
        logs = [i for i, case in enumerate(cases) if case.log]
        table(f"the {len(logs)} binary Darshan logs and files named as one (Drishti's input format)",
              {name: tally([results[name][i] for i in logs], status) for name, (_, status) in tools.items()})
        defects = [(case, o) for case, o in zip(cases, results["ioadvisor"])
                   if o.kind() in ("internal error", "signal", "hang", "memory") or o.traceback
                   or o.peak_rss > MEMORY_LINE]
        for case, o in defects:
            print(f"ioadvisor defect: {case.name} ({case.path.name}): {o.kind()}, peak {o.peak_rss >> 20} MiB: "
                  f"{(o.stderr.strip().splitlines() or [''])[-1][:160]}")
        peak = max(o.peak_rss for o in results["ioadvisor"])
        print(f"\nioadvisor peak resident memory over all runs: {peak / (1 << 20):,.0f} MiB; "
              f"defects: {len(defects)} (target 0)")
        return 1 if defects else 0
    finally:
        shutil.rmtree(root / "cwd", ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
