"""Cost of reading darshan-parser / darshan-dxt-parser dumps, against reading the log itself.

For the largest dumps of the generated corpus (the million-segment DXT trace of
`s_big_dxt_1k` and the 688,000-line counter dump of `g_mdtest_files_n2000`), each in its
own process: wall time, CPU time and peak RSS of ioadvisor's dump reader, and of
ioadvisor's log reader (pydarshan's libdarshan-util, in-process) on the same job's log,
with the ratio. Then the median over all the corpus's dumps.

    .venv/bin/python bench/dump_ingest.py [--corpus DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
BIG = [("s_big_dxt_1k", "darshan-dxt-parser.txt.gz"), ("g_mdtest_files_n2000", "darshan-parser.txt.gz")]
DUMP = ("from pathlib import Path; import sys; from advisor.ingest.parser_dump import load_dump\n"
        "from advisor.errors import InputError\n"
        "try:\n    load_dump(Path(sys.argv[1]))\nexcept InputError:\n    pass  # refused dumps cost too")
LOG = "import sys; from pathlib import Path; from advisor.ingest.darshan_log import load; load(Path(sys.argv[1]))"
IMPORTS = "import advisor.ingest.parser_dump, advisor.ingest.darshan_log"


def measure(code: str, path: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS MiB) of reading `path`, import time excluded."""
    script = (f"import time, resource; {IMPORTS}\n"
              f"w, c = time.perf_counter(), time.process_time()\n{code}\n"
              "print(time.perf_counter() - w, time.process_time() - c,"
              " resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True,
                         cwd=REPO, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    wall, cpu, rss = out.stdout.split()[-3:]
    return float(wall), float(cpu), int(rss) // 1024


def best(code: str, path: Path, repeat: int) -> tuple[float, float, int]:
    runs = [measure(code, path) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    gen = args.corpus / "generated"
    print(f"{'input':58} {'wall s':>7} {'cpu s':>6} {'RSS MiB':>8}")
    for case, dump in BIG:
        d = best(DUMP, gen / case / dump, args.repeat)
        g = best(LOG, gen / case / "case.darshan", args.repeat)
        print(f"{case + '/' + dump:58} {d[0]:7.2f} {d[1]:6.2f} {d[2]:8d}")
        print(f"{case + '/case.darshan (log reader)':58} {g[0]:7.2f} {g[1]:6.2f} {g[2]:8d}")
        print(f"{'  dump / log':58} {d[0] / g[0]:7.2f} {d[1] / g[1]:6.2f} {d[2] / g[2]:8.2f}")
    others = sorted(p for p in gen.glob("*/darshan*parser*.txt*") if p.parent.name not in dict(BIG))
    walls = [measure(DUMP, p)[0] for p in others]
    print(f"other {len(others)} dumps: median {statistics.median(walls):.3f} s, max {max(walls):.3f} s")


if __name__ == "__main__":
    main()
