"""Predicted vs measured speedup of the fixes of the generated corpus cases, and the default model.

    python bench/models.py [--model MODEL] [--target DIR] [--repeat K] [--cases a,b,... | --all]
    python bench/models.py --regenerate [--budget MINUTES] [--data DIR]...

The first form predicts, with the model (default: the one shipped in
advisor/models/default/), the speedup of every fix the diagnosis proposes for each case,
replays the same plan before and after each fix on --target with the replayer, and prints
both with the relative error |predicted - measured| / measured and its median (target:
< 25 %). --all takes every generated case with a Darshan log (cases without a fix add
no row). The second form regenerates the shipped default model: a calibration of --target
(the demo's local file system) for --budget minutes into --data (resumed if it exists),
`ioadvisor train` on it, the model and its calibration rows written to advisor/models/default/.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# bench/replay.py would shadow the `replay` package: import from the repository, not from bench/
sys.path[:] = [str(REPO)] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
CORPUS = REPO.parent / "shared" / "corpus" / "generated"
DEFAULT_DIR = REPO / "advisor" / "models" / "default"
CASES = ("b_small_io_shared_4k", "n_fsync_per_write_Y_4k", "d_mpiio_independent_256k",
         "c_random_shared_64k", "i_misaligned_1000000", "s_big_dxt_1k")


def regenerate(target: Path, data: list[Path], budget_min: float) -> None:
    """Calibrate `target` (resuming the first data directory), train on every data directory, and
    write the shipped default model with all their rows."""
    from advisor.models.build import build_model
    from advisor.models.calibrate import DATA_FILE, MOUNT_FILE, Dataset, calibrate
    from advisor.models.store import describe, save
    from advisor.verify import default_np

    if budget_min > 0:
        progress = calibrate(target, data[0], default_np(1 << 20), budget_min * 60)
        print(f"calibration: {progress.measured} new patterns, {progress.done_before + progress.measured} "
              f"in {data[0]} ({progress.stopped or 'design complete'})")
    patterns = sum(len({row["key"] for row in Dataset(d).rows()}) for d in data)
    model, _ = build_model([str(d) for d in data])
    model.meta["trained_on"] = [f"ioadvisor calibrate --target {target} (the demo's local file system), "
                                f"{len(data)} calibration run(s): {model.meta['rows']} phases of {patterns} "
                                "patterns; rows in advisor/models/default/calibration.csv.gz"]
    DEFAULT_DIR.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(DEFAULT_DIR / "calibration.csv.gz", "wb", mtime=0) as dst:
        for i, d in enumerate(data):
            with open(d / DATA_FILE, "rb") as src:
                lines = src.read().splitlines(keepends=True)
            dst.writelines(lines if i == 0 else lines[1:])  # one header
    # the mount record makes the directory a calibration `ioadvisor train` rebuilds the model from
    shutil.copyfile(data[0] / MOUNT_FILE, DEFAULT_DIR / MOUNT_FILE)
    save(model, DEFAULT_DIR / "model.skops")
    print(f"default model: {describe(model.meta)}")


def compare_cases(model_path: str, target: Path, repeat: int, cases: list[str]) -> int:
    from advisor import api
    from advisor.models.check import compare, median_error
    from advisor.models.expect import mount_differences
    from advisor.models.predict import load
    from advisor.models.store import describe

    model = load(model_path)
    print(f"model: {describe(model.meta)}")
    for diff in mount_differences(model, target):
        print(f"warning: the target is not the model's mount: {diff}")
    print(f"{'case':28} {'fix':34} {'predicted':>16} {'measured':>16} {'error':>7}  verdict")
    rows = []
    for case in cases:
        t0 = time.monotonic()
        profile = api.load(CORPUS / case / "case.darshan")
        for c in compare(model, profile, target, repeat=repeat, label=case):
            rows.append(c)
            fix = json.dumps(c.fix, separators=(",", ":"))[:34]
            pred = f"{c.predicted:.2f}x" + ("*" if c.extrapolated else "") if c.predicted else "-"
            if c.interval and c.predicted:
                pred += f" [{c.interval[0]:.2f}-{c.interval[1]:.2f}]"
            meas = f"{c.measured:.2f}x" if c.measured else "-"
            if c.measured_ci95 and c.measured and c.measured_ci95[0] is not None:
                meas += f" [{c.measured_ci95[0]:.2f}-{c.measured_ci95[1]:.2f}]"
            err = f"{c.error:.0%}" if c.error is not None else "-"
            print(f"{case:28} {fix:34} {pred:>16} {meas:>16} {err:>7}  {c.verdict} {c.reason[:60]}")
        print(f"  ({case}: {time.monotonic() - t0:.0f} s)", file=sys.stderr)
    med = median_error(rows)
    n = sum(c.error is not None for c in rows)
    inside = sum(c.error is not None and c.interval is not None and c.interval[0] <= c.measured <= c.interval[1]
                 for c in rows)
    print(f"median absolute error of the predicted speedup: {med:.1%} over {n} fixes "
          f"(target < 25 %; * = outside the training ranges); measured inside the predicted "
          f"interval: {inside} of {n}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--target", type=Path, default=None, help="scratch directory on the mount (default: a temp dir)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--all", action="store_true", help="every generated case with a case.darshan")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--budget", type=float, default=40.0,
                    help="minutes of calibration for --regenerate (0: train on --data as it is)")
    ap.add_argument("--data", type=Path, action="append",
                    help="calibration directory (repeatable; the first is resumed); default out/calibration-default")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ioadvisor-bench-models-") as tmp:
        target = args.target or Path(tmp)
        if args.regenerate:
            regenerate(target, args.data or [REPO / "out" / "calibration-default"], args.budget)
            return 0
        cases = ([d.name for d in sorted(CORPUS.iterdir()) if (d / "case.darshan").is_file()] if args.all
                 else [c for c in args.cases.split(",") if c])
        return compare_cases(args.model, target, args.repeat, cases)


if __name__ == "__main__":
    sys.exit(main())
