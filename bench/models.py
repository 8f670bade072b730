"""Predicted vs measured speedup of the fixes of the corpus cases, and the default model.

    python bench/models.py [--model MODEL] [--target DIR] [--repeat K] [--cases a,b,... | --all]
                           [--save FILE] [--measured FILE] [--data DIR]...
    python bench/models.py --regenerate [--budget MINUTES] [--data DIR]... [--replays FILE] [--held-out-mount FILE]
    python bench/models.py --held-out [--pairs FILE]... [--learning] [--margin-rule R]
    python bench/models.py --held-out-mount OTHER_PAIRS [--held-out-mount OTHER_PAIRS]... [--pairs FILE]...

The third form is the held-out protocol of the speedup model (docs/models.md section 6),
written down before any held-out figure was seen and not tuned on one: on the measured fixes
of the campaign (--pairs, default the shipped advisor/models/default/pairs.csv.gz),

- leave-family-out (the figure the targets apply to): every pattern family of the campaign
  (advisor.models.campaign.families(): request geometry x size class, with interface,
  direction, ranks and syncing crossed inside each) is held out whole in turn, predicted by a model fitted on
  the other families, its 80 % interval calibrated on the other families' out-of-family
  residuals (advisor.models.speedup.leave_out);
- leave-fix-type-out: every fix transform held out in turn, the same way;

each printing the median |predicted / measured - 1| over the fixes predicted (target <= 25 %)
and the share of *all* held-out fixes whose measured speedup lies in the predicted 80 %
interval, a fix the model declines ("outside what this model measured") counting as a miss
(target >= 80 %). --learning: for each family, the error on its fixes as 0, 1, 2, 4 of its own
workloads' measured fixes join the training rows (what a site's verifications add).

The first form replays, on --target, the plan of each case before and after every fix its
diagnosis proposes (the sequential paired test of advisor.verify decides how many rounds;
--repeat K: exactly K), prints the verdict sentence of each fix, and judges two predictions
of each measured speedup:

- the model's (default: the one shipped in advisor/models/default/), as it is;
- leave-workload-out: a model trained on the calibration (--data, default the shipped one's
  rows) plus the replayed phases of every *other* workload of this run, its interval
  calibrated on those workloads' out-of-sample scores (advisor.models.holdout). A workload
  never judges a model that saw its own measurements: this is the held-out figure.

For each: the median absolute error |predicted - measured| / measured (target < 25 %) and the
share of measurements inside the predicted 80 % interval (target >= 80 %), over every fix and
over the cases not looked at while the calibration design was widened (DEVELOPMENT). --all
takes every generated and trap case with a Darshan log; --save keeps every measurement (with
the phases replayed) for --measured (judge another model without replaying) and --replays.

The second form regenerates the shipped default model: a calibration of --target (the
demo's local file system) for --budget minutes into the first --data directory (resumed),
then advisor/models/default/ gets the rows of every --data directory, the replayed fixes of
--replays (a --save file) and the model `ioadvisor train advisor/models/default` makes of them.
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# bench/replay.py would shadow the `replay` package: import from the repository, not from bench/
sys.path[:] = [str(REPO)] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_DIR = REPO / "advisor" / "models" / "default"
CASES = ("b_small_io_shared_4k", "n_fsync_per_write_Y_4k", "d_mpiio_independent_256k",
         "c_random_shared_64k", "i_misaligned_1000000", "s_big_dxt_1k")
DEVELOPMENT = {f"generated/{c}" for c in CASES}
"""Cases looked at while the calibration design was widened (fsync frequencies, aggregators,
holes): the other cases judge the model on workloads its design was not tuned on."""


def regenerate(target: Path, data: list[Path], budget_min: float, replayed: Path | None,
               measured_fixes: list[Path] | None = None, other_mount: list[Path] | None = None) -> None:
    """Calibrate `target` (resuming the first data directory), then write the shipped default
    model's directory (every data directory's rows, the replayed fixes, the measured fixes of the
    campaign) and train it from it. Without `data`, the shipped calibration rows stay as they are."""
    from advisor.models.build import build_model
    from advisor.models.calibrate import DATA_FILE, MOUNT_FILE, Dataset, calibrate
    from advisor.models.check import Comparison
    from advisor.models.replays import REPLAYS_FILE, table, write
    from advisor.models.store import describe, save
    from advisor.verify import default_np
    from advisor.models import pairs

    if budget_min > 0 and data:
        progress = calibrate(target, data[0], default_np(1 << 20), budget_min * 60)
        print(f"calibration: {progress.measured} new patterns, {progress.done_before + progress.measured} "
              f"in {data[0]} ({progress.stopped or 'design complete'})")
    patterns = sum(len({row["key"] for row in Dataset(d).rows()}) for d in data or [DEFAULT_DIR])
    DEFAULT_DIR.mkdir(parents=True, exist_ok=True)
    if data:
        with gzip.GzipFile(DEFAULT_DIR / "calibration.csv.gz", "wb", mtime=0) as dst:
            for i, d in enumerate(data):
                with open(d / DATA_FILE, "rb") as src:
                    lines = src.read().splitlines(keepends=True)
                dst.writelines(lines if i == 0 else lines[1:])  # one header
        # the mount record makes the directory a calibration `ioadvisor train` rebuilds the model from
        shutil.copyfile(data[0] / MOUNT_FILE, DEFAULT_DIR / MOUNT_FILE)
    fixes = ""
    if measured_fixes:
        rows = [r for path in measured_fixes for r in pairs.read(path)]
        pairs.write_gz(DEFAULT_DIR / pairs.PAIRS_FILE, rows)
        fixes += (f", {len(rows)} fixes of {len({r['workload'] for r in rows})} workloads measured as --verify "
                  f"measures them ({pairs.PAIRS_FILE})")
    for path in other_mount or []:  # never training rows: they calibrate the interval on another mount
        name = path.name if path.name.endswith(".gz") else path.name + ".gz"
        if not fnmatch.fnmatch(name, pairs.OTHER_MOUNT_GLOB):
            sys.exit(f"{path}: a file of fixes measured on another mount is named {pairs.OTHER_MOUNT_GLOB}")
        pairs.write_gz(DEFAULT_DIR / name, pairs.read(path))
    for path in pairs.other_mount_files(DEFAULT_DIR):
        rows = pairs.read(path)
        fixes += (f", {len(rows)} fixes measured on {', '.join(sorted({r['fstype'] for r in rows}))} calibrating "
                  f"its interval on another mount ({path.name})")
    if replayed:
        comparisons = [Comparison.from_dict(d) for rows in _stored(replayed).values() if isinstance(rows, list)
                       for d in rows]
        write(DEFAULT_DIR / REPLAYS_FILE, table(comparisons))
    if (DEFAULT_DIR / REPLAYS_FILE).exists():
        import csv

        with gzip.open(DEFAULT_DIR / REPLAYS_FILE, "rt", newline="") as fh:
            rows = list(csv.DictReader(fh))
        measured = len({(r["case"], r["fix"]) for r in rows if r["fix"]})
        fixes += (f" and the {len(rows)} phases of {measured} replayed fixes of "
                 f"{len({r['workload'] for r in rows})} corpus workloads (replays.csv.gz)")
    model, _ = build_model([str(DEFAULT_DIR)])
    for cal in model.meta["calibrations"]:  # the checkout's path says nothing to a user of the wheel
        cal["path"] = str(DEFAULT_DIR.relative_to(REPO))
    runs = sum(len(c.get("runs") or [c]) for c in model.meta["calibrations"])
    model.meta["trained_on"] = [f"ioadvisor calibrate --target {target} (the demo's local file system), "
                                f"{runs} calibration run(s): {patterns} patterns "
                                f"(advisor/models/default/calibration.csv.gz){fixes}; {model.meta['rows']} rows"]
    save(model, DEFAULT_DIR / "model.skops")
    print(f"default model: {describe(model.meta)}; speedup interval: {model.meta['speedup_interval']}")


def case_paths(spec: str, every: bool) -> list[str]:
    """Case names as `generated/NAME` or `traps/NAME` (a bare name is a generated case)."""
    if every:
        return [f"{d.parent.name}/{d.name}" for root in ("generated", "traps")
                for d in sorted((CORPUS / root).iterdir()) if (d / "case.darshan").is_file()]
    return [c if "/" in c else f"generated/{c}" for c in spec.split(",") if c]


def compare_cases(model_path: str, target: Path, repeat: int | None, cases: list[str],
                  measured: dict[str, list] | None = None, save: Path | None = None) -> list:
    """Predict and replay (or, with `measured`, re-predict stored measurements) every case's fixes."""
    from advisor import api
    from advisor.models.check import Comparison, compare, repredict
    from advisor.models.expect import mount_differences
    from advisor.models.predict import load
    from advisor.models.store import describe

    model = load(model_path)
    print(f"model: {describe(model.meta)}")
    for diff in mount_differences(model, target):
        print(f"warning: the target is not the model's mount: {diff}")
    how = f"stored measurements of {measured['_from']}" if measured else \
        (f"{repeat} rounds per fix" if repeat else "the sequential paired test of [replay]")
    print(f"measured by: {how}; load average at start: {_load()}")
    _header()
    rows = []
    for case in cases:
        t0 = time.monotonic()
        profile = api.load(CORPUS / case / "case.darshan")
        if measured is not None:
            found = repredict(model, profile, [Comparison.from_dict(d) for d in measured.get(case, [])])
        else:
            found = compare(model, profile, target, repeat=repeat, label=case)
        for c in found:
            rows.append(c)
            _print_row(c)
        print(f"  ({case}: {time.monotonic() - t0:.0f} s, load {_load()})", file=sys.stderr)
        if save:  # after every case: an interrupted run keeps what it measured
            save.write_text(json.dumps({"model": describe(model.meta), "load": _load(), "measured_by": how,
                                        "cases": {done: [c.to_dict() for c in rows if c.job == done]
                                                  for done in cases[:cases.index(case) + 1]}},
                                       indent=1, default=str) + "\n")
    _figures("the model as it is", rows)
    return rows


def held_out(rows: list, data: list[Path]) -> None:
    """Leave-workload-out predictions of the measured fixes, and both figures."""
    from advisor.models.holdout import leave_workload_out

    t0 = time.monotonic()
    judged = leave_workload_out(rows, [str(d) for d in data])
    print(f"\nleave-workload-out: trained on {', '.join(map(str, data))} (its calibration rows) and the other "
          f"workloads' replays of this run ({time.monotonic() - t0:.0f} s)")
    _header()
    for c in judged:
        _print_row(c, sentence=False)
    _figures("leave-workload-out", judged)


def held_out_pairs(paths: list[Path], learning: bool) -> None:
    """The speedup model's held-out protocol on measured fixes (see the module doc)."""
    import numpy as np

    from advisor.models import pairs, speedup

    rows = speedup.Rows.of([r for p in paths for r in pairs.read(p)])
    load = rows.x[:, speedup.INPUTS.index(speedup.LOAD)]
    print(f"{len(rows)} measured fixes of {len(set(rows.workload))} workloads, "
          f"{len(set(rows.family))} families, {len(set(rows.transform))} fix transforms "
          f"({', '.join(map(str, paths))}); "
          f"measured at load per CPU {np.nanmin(load):.1f}-{np.nanmax(load):.1f} (median {np.nanmedian(load):.1f})")
    for by in ("family", "transform"):
        judged = speedup.leave_out(rows, by)
        print(f"\nleave-{by}-out")
        print(f"{by:18} {'fix':12} {'measured':>9} {'predicted [80 %]':>24}  error")
        for j in sorted(judged, key=lambda j: (getattr(j, by), j.workload)):
            pred = (f"{j.predicted:.2f}x [{j.interval[0]:.2f}-{j.interval[1]:.2f}]" if j.predicted
                    else "no prediction")
            err = f"{j.error:.0%}" if j.error is not None else "-"
            print(f"{getattr(j, by):18} {j.transform:12} {j.measured:8.2f}x {pred:>24}  {err}"
                  f"{'' if j.inside else ' !'}{'  (' + j.outside[0] + ')' if j.outside else ''}")
        for name in sorted({getattr(j, by) for j in judged}) + ["all"]:
            f = speedup.figures([j for j in judged if name == "all" or getattr(j, by) == name])
            print(f"leave-{by}-out, {name}: median error {f['median_error']:.1%} over {f['predicted']} predicted "
                  f"of {f['fixes']}; inside the 80 % interval {f['inside']} of {f['fixes']} = {f['coverage']:.0%}")
    if learning:
        learning_curve(rows)


def held_out_mount(paths: list[Path], other_paths: list[Path]) -> None:
    """The held-out file systems (advisor.models.crossmount, docs/models.md "A held-out file
    system"): each other mount's measured fixes predicted by models of the home mount's; with
    several, each judged by the interval calibrated on the others (leave-one-mount-out)."""
    from advisor.models import crossmount, pairs

    home = [r for p in paths for r in pairs.read(p)]
    other = [r for p in other_paths for r in pairs.read(p)]
    by_mount = crossmount.mounts(other)
    for rows in by_mount.values():
        one_mount(home, rows)
    names = list(by_mount)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            _say_shift(f"{b} vs {a}", by_mount[a], by_mount[b])
    if len(by_mount) > 1:
        leave_one_mount_out(home, other)


def one_mount(home: list[dict], other: list[dict]) -> None:
    """One other mount's figures: what the mount moves, the shipped model, its fit/judged halves."""
    import numpy as np

    from advisor.models import crossmount, speedup

    load = np.array([speedup.load_of(r) for r in other])
    print(f"\n=== {len(other)} fixes of {len({r['workload'] for r in other})} workloads measured on "
          f"{sorted({r['fstype'] for r in other})} at load per CPU {np.nanmin(load):.1f}-{np.nanmax(load):.1f} "
          f"(median {np.nanmedian(load):.1f}); home: {len(home)} fixes on {sorted({r['fstype'] for r in home})}")
    _say_shift("the mount alone (vs home)", home, other)
    halves = {"all": lambda j: True, "fit half": lambda j: crossmount.half(j.family) == "fit",
              "judged half": lambda j: crossmount.half(j.family) == "judged"}
    shipped = crossmount.judge_shipped(home, other)
    _print_judged("the shipped model (home mount, all its fixes), its own interval", shipped, "transform")
    for name, keep in halves.items():
        _say_figures(f"shipped model, {name}", [j for j in shipped if keep(j)])
    _say_groups("shipped model", shipped)
    for how, said in (("home", "its family held out, today's interval (home out-of-family residuals)"),
                      ("mount", "its family held out, the interval of the fit half's cross-mount residuals")):
        judged = crossmount.judge_cross(home, other, how)
        _print_judged(f"judged half, {said}", judged, "family")
        _say_figures(f"judged half, {how} interval", judged)
        for fam in sorted({j.family for j in judged}):
            _say_figures(f"judged half, {how} interval, {fam}", [j for j in judged if j.family == fam])


def leave_one_mount_out(home: list[dict], other: list[dict]) -> None:
    """Every other mount judged by each rule of the interval calibrated on the other mounts only."""
    import numpy as np

    from advisor.models import crossmount

    for shipped, said in ((True, "the shipped model, calibrated on every fix of the other mounts"),
                          (False, "each family held out, calibrated on the other mounts' other families")):
        judged = crossmount.leave_one_mount_out(home, other, shipped=shipped)
        print(f"\nleave-one-mount-out: {said}")
        for (rule, mount), js in sorted(judged.items()):
            halves = [np.log10(j.interval[1] / j.interval[0]) / 2 for j in js if j.interval]
            _say_figures(f"  {rule:18} judged on {mount:15} (median x/{chr(247)}{10 ** np.median(halves):.2f})", js)
            if rule in ("pooled", "shifted"):
                _say_groups(f"    {rule} on {mount}", js, by=("transform",))
        if not shipped:
            print(f"rule chosen (crossmount.choose): {crossmount.choose(judged)}")


def _say_shift(name: str, a: list[dict], b: list[dict]) -> None:
    """How much the mount moves the same fix's speedup (b over a), overall and by transform."""
    import numpy as np

    from advisor.models import crossmount

    moved = crossmount.shift(a, b)
    if not moved:
        return
    v = np.array(list(moved.values()))
    print(f"{name}: |log10 speedup ratio| of the same fix, median x{10 ** np.median(np.abs(v)):.2f}, 80 % "
          f"quantile x{10 ** np.quantile(np.abs(v), 0.8):.2f}, larger in {int((v > 0).sum())} of {len(v)}; by "
          f"transform (median ratio): " + ", ".join(
              f"{t} x{10 ** np.median([x for (w, f), x in moved.items() if json.loads(f)['transform'] == t]):.2f}"
              f" ({sum(json.loads(f)['transform'] == t for _, f in moved)})"
              for t in sorted({json.loads(f)["transform"] for _, f in moved})))


def _say_groups(name: str, judged: list, by=("family", "transform")) -> None:
    for attr in by:
        for g in sorted({getattr(j, attr) for j in judged}):
            _say_figures(f"{name}, {g}", [j for j in judged if getattr(j, attr) == g])


def _print_judged(title: str, judged: list, by: str) -> None:
    print(f"\n{title}")
    for j in sorted(judged, key=lambda j: (getattr(j, by), j.workload)):
        pred = f"{j.predicted:.2f}x [{j.interval[0]:.2f}-{j.interval[1]:.2f}]" if j.predicted else "no prediction"
        err = f"{j.error:.0%}" if j.error is not None else "-"
        print(f"  {j.family:17} {j.transform:11} {j.measured:7.2f}x {pred:>24} {err:>5}{'' if j.inside else ' !'}"
              f"  {j.workload}{'  (' + j.outside[0] + ')' if j.outside else ''}")


def _say_figures(name: str, judged: list) -> None:
    from advisor.models import speedup

    f = speedup.figures(judged)
    print(f"{name}: median error {f['median_error']:.1%} over {f['predicted']} predicted of {f['fixes']}; "
          f"inside the 80 % interval {f['inside']} of {f['fixes']} = {f['coverage']:.0%}")


def learning_curve(rows, steps: tuple[int, ...] = (0, 1, 2, 4)) -> None:
    """Each family's error as k of its own workloads' fixes join the training rows (a site verifying)."""
    import numpy as np

    from advisor.models import speedup

    print("\nlearning from a family's own verifications: median error on its other workloads' fixes")
    totals: dict[int, list[float]] = {k: [] for k in steps}
    for family in sorted(set(rows.family)):
        mine = rows.family == family
        workloads = sorted(set(rows.workload[mine]))
        cut = workloads[:max(steps)]  # the first workloads verified; judged on the rest
        judged_rows = mine & ~np.isin(rows.workload, cut)
        line = []
        for k in steps:
            train = rows.subset(~mine | np.isin(rows.workload, cut[:k]))
            pred = speedup.predict(speedup.fit(train), rows.x[judged_rows])
            err = np.abs(10 ** (pred - rows.y[judged_rows]) - 1)
            totals[k] += err.tolist()
            line.append(f"{k} verified: {np.median(err):.0%}")
        print(f"  {family:18} " + ", ".join(line))
    print("  all families       " + ", ".join(f"{k} verified: {np.median(v):.0%}" for k, v in totals.items()))


def _header() -> None:
    print(f"{'case':34} {'fix':30} {'predicted [80 %]':>20} {'measured [95 %]':>20} {'error':>6}")


def _print_row(c, sentence: bool = True) -> None:
    fix = json.dumps(c.fix, separators=(",", ":"))[:30]
    pred = f"{c.predicted:.2f}x" + ("*" if c.extrapolated else "") if c.predicted else "-"
    if c.interval and c.predicted:
        pred += f" [{c.interval[0]:.2f}-{c.interval[1]:.2f}]"
    meas = f"{c.measured:.2f}x" if c.measured else "-"
    if c.measured_ci95 and c.measured and c.measured_ci95[0] is not None:
        meas += f" [{c.measured_ci95[0]:.2f}-{c.measured_ci95[1]:.2f}]"
    err = f"{c.error:.0%}" if c.error is not None else "-"
    mark = "!" if c.inside is False else " "  # ! = measured outside the predicted interval
    print(f"{c.job:34} {fix:30} {pred:>20} {meas:>20} {err:>6}{mark}")
    if sentence:
        print(f"{'':34}   {c.reason}")


def _figures(name: str, rows: list) -> None:
    """Both figures, over every fix and over the cases not looked at while the design was widened."""
    from advisor.models.check import inside_share, median_error
    from advisor.models.predict import OUTSIDE

    for subset, group in (("all cases", rows), ("cases outside DEVELOPMENT",
                                                [c for c in rows if c.job not in DEVELOPMENT])):
        inside, n = inside_share(group)
        # a fix the model declines ("outside what this model measured") counts as a miss
        declined = sum(1 for c in group if c.measured and not c.predicted and OUTSIDE in (c.reason or ""))
        n += declined
        jobs = len({c.job for c in group if c.measured})
        share = f"{inside / n:.0%}" if n else "-"
        print(f"{name}, {subset}: median absolute error of the predicted speedup {median_error(group):.1%} "
              f"(target < 25 %); measured inside the predicted 80 % interval: {inside} of {n} = {share} "
              f"(target >= 80 %; {declined} declined as outside what the model measured, counted as misses); "
              f"{n} fixes of {jobs} cases")
    print(f"load average now: {_load()}; * = outside the training ranges, ! = outside the interval")


def _stored(path: Path) -> dict[str, list]:
    """case -> its saved comparisons, from a --save file."""
    try:
        doc = json.loads(path.read_text())
        return {**doc["cases"], "_from": str(path)}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.exit(f"{path}: not a saved comparison of bench/models.py ({exc})")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--target", type=Path, default=None, help="scratch directory on the mount (default: a temp dir)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="exactly K rounds per fix (default: the sequential test decides)")
    ap.add_argument("--cases", default=None,
                    help="generated/NAME or traps/NAME, comma-separated (default: the development cases, "
                         "or every case of --measured)")
    ap.add_argument("--all", action="store_true", help="every generated and trap case with a case.darshan")
    ap.add_argument("--save", type=Path, help="write every comparison (JSON, with the phases replayed)")
    ap.add_argument("--measured", type=Path,
                    help="judge the model on the measurements saved by an earlier --save (no replay)")
    ap.add_argument("--no-holdout", action="store_true", help="skip the leave-workload-out models")
    ap.add_argument("--held-out", action="store_true", help="the speedup model's held-out protocol")
    ap.add_argument("--pairs", type=Path, action="append", help="--held-out: measured fixes (pairs CSV)")
    ap.add_argument("--learning", action="store_true", help="--held-out: the error as a family is verified")
    ap.add_argument("--margin-rule", default="", help="--held-out: the margin of \"outside\" of a log2 input "
                                                       "(advisor.models.speedup.MARGIN_RULES; default production's)")
    ap.add_argument("--held-out-mount", type=Path, action="append", metavar="PAIRS",
                    help="the held-out file system: these fixes measured on another mount, predicted by "
                         "models of --pairs (advisor.models.crossmount); with --regenerate: shipped as the "
                         "calibration of the interval on another mount")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--budget", type=float, default=40.0,
                    help="minutes of calibration for --regenerate (0: train on --data as it is)")
    ap.add_argument("--data", type=Path, action="append",
                    help="calibration directory (repeatable; --regenerate resumes the first; default "
                         "out/calibration-default, or for judging the shipped model's)")
    ap.add_argument("--replays", type=Path, help="--regenerate: ship the replayed fixes of this --save file")
    args = ap.parse_args()
    if args.held_out_mount and not args.regenerate:
        held_out_mount(args.pairs or [DEFAULT_DIR / "pairs.csv.gz"], args.held_out_mount)
        return 0
    if args.held_out:
        if args.margin_rule:  # a candidate judged as production would use it (bench/fresh14_protocol.md)
            from advisor.models import speedup

            if args.margin_rule not in speedup.MARGIN_RULES:
                sys.exit(f"--margin-rule {args.margin_rule}: not one of {', '.join(speedup.MARGIN_RULES)}")
            speedup.MARGIN_RULE = args.margin_rule
        held_out_pairs(args.pairs or [DEFAULT_DIR / "pairs.csv.gz"], args.learning)
        return 0
    with tempfile.TemporaryDirectory(prefix="ioadvisor-bench-models-") as tmp:
        target = args.target or Path(tmp)
        if args.regenerate:
            regenerate(target, args.data or ([REPO / "out" / "calibration-default"] if args.budget > 0 else []),
                       args.budget, args.replays, args.pairs, args.held_out_mount)
            return 0
        measured = _stored(args.measured) if args.measured else None
        if args.cases or args.all or not measured:
            cases = case_paths(args.cases or ",".join(CASES), args.all)
        else:
            cases = [c for c in measured if c != "_from"]
        rows = compare_cases(args.model, target, args.repeat, cases, measured, args.save)
        if not args.no_holdout:
            held_out(rows, args.data or [DEFAULT_DIR])
    return 0


if __name__ == "__main__":
    sys.exit(main())
