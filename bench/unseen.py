"""The speedup model on workloads it never saw: predicted vs verified speedups, split in two halves.

    python bench/unseen.py --list                     # the workloads, their family, half and fixes
    python bench/unseen.py --measure look --target DIR --save FILE [--model M]
    python bench/unseen.py --judge FILE... [--model M]  # re-predict saved measurements (no replay)

The held-out set and its split are bench/predict13_protocol.md's, committed before any of them was
measured: Recorder traces recorded here (reclive), the corpus's Recorder traces and the corpus's
Darshan cases (generated, traps), none of them a campaign workload (the speedup model's only
training rows are advisor/models/default/pairs.csv.gz). Families are programs (or one program's
pattern), never split between the halves. Measurement is :func:`advisor.models.check.compare`
(what ``diagnose --verify`` measures); the figures are the protocol's: the median
|predicted / measured - 1| over the fixes predicted, and the share of all measured fixes inside the
predicted 80 % interval, a fix without a prediction counting as a miss; and the share without one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# bench/replay.py would shadow the `replay` package: import from the repository, not from bench/
sys.path[:] = [str(REPO)] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
CORPUS = REPO.parent / "shared" / "corpus"
PER_WORKLOAD_S = 40.0  # [replay] budget_s of one workload: the campaign's, which measured the training rows
RECLIVE = REPO / "out" / "p13" / "rectraces"  # a copy of /tmp/rectraces (reclive's traces)


def _c(case: str) -> tuple[str, Path]:
    """A corpus case: (label, its directory)."""
    return case, CORPUS / case


def _r(name: str) -> tuple[str, Path]:
    """One of reclive's Recorder traces: (label, its trace folder)."""
    return f"rec/{name}", RECLIVE / name / "trace"


# family -> (half, [(label, path)]); "look": may be looked at while the model is changed; "judged": only at the end
WORKLOADS: dict[str, tuple[str, list[tuple[str, Path]]]] = {
    # looked at before this work (reclive's --verify, the demo, bench/models.py's DEVELOPMENT cases): look half
    "posix-fsync-small": ("look", [_r("posix_fsync"),
                                   _r("posix_fsync_tid_ptr"),
                                   _c("generated/n_fsync_per_write_Y_4k")]),
    "mpiio-small-indep": ("look", [_r("mpiio_small"),
                                   _r("mpiio_small_nolevel"),
                                   _c("traps/T07")]),
    "ior-posix-small-shared": ("look", [_c("generated/b_small_io_shared_4k"),
                                        ("corpus-rec/R1", CORPUS / "recorder/R1_posix_small_shared/trace"),
                                        ("corpus-rec/R1_interprocess",
                                         CORPUS / "recorder/R1_posix_small_shared_interprocess/trace")]),
    "ior-posix-random": ("look", [_c("generated/c_random_shared_64k")]),
    "ior-mpiio-indep-256k": ("look", [_c("generated/d_mpiio_independent_256k")]),
    "ior-posix-misaligned": ("look", [_c("generated/i_misaligned_1000000")]),
    "ior-posix-1k-dxt": ("look", [_c("generated/s_big_dxt_1k")]),
    # never looked at: alternated, families in this order, so that each half has POSIX, MPI-IO, HDF5, STDIO
    "hdf5-small-indep": ("look", [_r("h5_indep")]),
    "hdf5-collective-write": ("judged", [_r("h5_coll"),
                                         _r("h5_coll_interprocess"),
                                         _r("h5_coll_nolevel"),
                                         _r("h5_coll_fillnever")]),
    "hdf5-collective-read": ("look", [_r("h5_read")]),
    "mpiio-collective-view": ("judged", [_r("mpiio_hints"),
                                         _r("mpiio_hints_interprocess"),
                                         _c("traps/T02")]),
    "mpiio-read-mixed": ("look", [_r("mpiio_read")]),
    "stdio-small": ("judged", [_r("stdio_log"), _c("traps/T03"),
                               _c("generated/k2_python_small_writes")]),
    "metadata": ("look", [_r("meta_storm"),
                          ("corpus-rec/R4_mdtest", CORPUS / "recorder/R4_mdtest/trace"),
                          _c("generated/g_mdtest_files_n2000"),
                          _c("generated/g2_mdtest_n2000_default_mem_partial"),
                          _c("traps/T06")]),
    "ior-posix-large-fpp": ("judged", [("corpus-rec/R3", CORPUS / "recorder/R3_posix_fpp_good/trace"),
                                       _c("generated/a_good_fpp_posix_1m"),
                                       _c("traps/T01")]),
    "ior-mpiio-collective-256k": ("look", [_c("generated/e_mpiio_collective_256k")]),
    "ior-hdf5-256k": ("judged", [_c("generated/f_hdf5_independent_256k"),
                                 _c("generated/f2_hdf5_collective_256k")]),
    "ior-posix-options": ("look", [_c("generated/h1_reorder_read_neighbor_C"),
                                   _c("generated/h3_segments_s16"),
                                   _c("generated/h4_repetitions_i3"),
                                   _c("generated/r_stonewall_D1_wearout")]),
    "ior-posix-fsync-at-end": ("judged", [_c("generated/h2_fsync_e")]),
    "imbalance": ("look", [_c("generated/j_imbalance_rank0_10x"),
                           _c("generated/j2_straggler_rank0_slow"),
                           _c("traps/T05")]),
    "single-process-tools": ("judged", [_c("generated/k_fio_randwrite_4k"),
                                        _c("generated/k3_dd_4k_writes"),
                                        _c("traps/T04")]),
    "ior-posix-output-forms": ("look", [_c("generated/l_verbose_v"),
                                        _c("generated/l2_verbose_vv"),
                                        _c("generated/l3_verbose_vvv"),
                                        _c("generated/p_csv_summary_and_rank_details"),
                                        _c("generated/x_dxt_v2_devel_darshan")]),
    "ior-posix-odirect": ("judged", [_c("generated/o_small_io_odirect_4k"),
                                     _c("generated/o2_good_fpp_odirect_1m")]),
}


def input_path(path: Path) -> Path:
    """A case directory's Darshan log, or a Recorder trace folder as it is."""
    return path / "case.darshan" if (path / "case.darshan").is_file() else path


def workloads(half: str | None = None) -> list[tuple[str, str, str, Path]]:
    """(family, half, label, input) of every workload (of `half`)."""
    return [(fam, h, label, input_path(p)) for fam, (h, items) in WORKLOADS.items() for label, p in items
            if half in (None, h)]


def list_fixes(items: list[tuple[str, str, str, Path]] | None = None) -> None:
    """Every workload's (of `items`, default :func:`workloads`) family, half and the fixes its
    diagnosis proposes (no model, no prediction)."""
    from advisor import api, pipeline
    from advisor.config import load_config
    from advisor.fixes import proposed_fixes

    config = load_config()
    for fam, half, label, path in items or workloads():
        try:
            diagnosis = pipeline.run([api.load(path)], pipeline.Stages(), config).results[0].diagnosis
            fixes = sorted({f"{fix.get('transform')}" for fix, _ in proposed_fixes(diagnosis.findings).values()})
        except Exception as exc:  # a listing: say what failed and go on
            fixes = [f"error: {exc}"]
        print(f"{half:6} {fam:26} {label:46} {', '.join(fixes) or '-'}")


def measure(items: list[tuple[str, str, str, Path]], model_path: str, target: Path, save: Path) -> None:
    """Predict and replay every fix of every workload of `items` ((family, half, label, input), as
    :func:`workloads`), saving after each workload (resumes)."""
    from advisor import api
    from advisor.config import ReplayConfig
    from advisor.models.check import compare
    from advisor.models.predict import load
    from advisor.models.store import describe

    model = load(model_path)
    settings = ReplayConfig(budget_s=PER_WORKLOAD_S)
    doc = json.loads(save.read_text()) if save.exists() else {"model": describe(model.meta), "workloads": {}}
    for fam, h, label, path in items:
        if label in doc["workloads"]:
            continue
        t0, load0 = time.monotonic(), os.getloadavg()[0]
        try:
            found = [c.to_dict() for c in compare(model, api.load(path), target, label=label, settings=settings)]
            error = ""
        except Exception as exc:  # one workload failing to replay is its own line, not the run's end
            found, error = [], f"{type(exc).__name__}: {exc}"
        doc["workloads"][label] = {"family": fam, "half": h, "path": str(path), "comparisons": found, "error": error,
                                   "load1": [load0, os.getloadavg()[0]], "seconds": time.monotonic() - t0}
        save.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        print(f"{label}: {len(found)} fixes, {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}"
              f"{' ' + error if error else ''}", file=sys.stderr)


def judged(doc: dict, model_path: str | None, rule: str = "") -> list[tuple[str, str, object]]:
    """(family, half, comparison) of every measured fix, re-predicted by `model_path` (None: as saved;
    `rule`: with that margin of "outside", :data:`advisor.models.speedup.MARGIN_RULES`)."""
    from advisor import api
    from advisor.models.check import Comparison, repredict
    from advisor.models.predict import load

    model = load(model_path or "default") if model_path or rule else None
    if rule:
        model.meta["speedup_model"]["margin_rule"] = rule
    out = []
    for w in doc["workloads"].values():
        comps = [Comparison.from_dict(d) for d in w["comparisons"]]
        comps = [c for c in comps if c.measured]
        if model is not None and comps:
            comps = repredict(model, api.load(Path(w["path"])), comps)
        out += [(w["family"], w["half"], c) for c in comps]
    return out


NO_DATA = "moves no data"  # advisor.models.predict's reason for a metadata-only plan


def figures(comps: list) -> dict:
    """The protocol's figures over measured fixes: median error (predicted ones), inside (of all), declined."""
    errors = [c.error for c in comps if c.error is not None]
    inside = sum(1 for c in comps if c.inside)
    none = sum(1 for c in comps if not c.predicted)
    n = len(comps)
    return {"fixes": n, "predicted": len(errors), "median_error": statistics.median(errors) if errors else None,
            "inside": inside, "inside_share": inside / n if n else None, "declined": none,
            "declined_share": none / n if n else None}


def _share(x: float | None) -> str:
    return f"{x:.0%}" if x is not None else "-"


def say(name: str, f: dict) -> None:
    med = f"{f['median_error']:.1%}" if f["median_error"] is not None else "-"
    print(f"{name}: {f['fixes']} fixes; median |pred/meas - 1| {med} over {f['predicted']} predicted; inside the "
          f"80 % interval {f['inside']} of {f['fixes']} = {_share(f['inside_share'])} (of the predicted "
          f"{_share(f['inside'] / f['predicted'] if f['predicted'] else None)}); no prediction "
          f"{f['declined']} = {_share(f['declined_share'])}")


def judge(paths: list[Path], model_path: str | None, rule: str = "") -> list[tuple[str, str, object]]:
    """Print every measured fix re-predicted, and the protocol's figures by half; return the fixes."""
    rows = []
    for p in paths:
        try:
            doc = json.loads(p.read_text())
            gone = [w["path"] for w in doc["workloads"].values() if not Path(w["path"]).exists()]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            sys.exit(f"{p}: not a saved measurement file ({exc})")
        if gone and (model_path or rule):  # re-predicting reads each workload again
            sys.exit(f"{p}: {len(gone)} workload(s) are no longer where they were measured, e.g. {gone[0]} "
                     "(put them back, or edit their paths in the file)")
        rows += judged(doc, model_path, rule)
    print(f"{'family':26} {'workload':40} {'fix':12} {'measured':>9} {'predicted [80 %]':>24} error")
    for fam, _, c in rows:
        pred = f"{c.predicted:.2f}x [{c.interval[0]:.2f}-{c.interval[1]:.2f}]" if c.predicted else "no prediction"
        err = f"{c.error:.0%}" if c.error is not None else "-"
        print(f"{fam:26} {c.job:40} {str(c.fix.get('transform')):12} {c.measured:8.2f}x {pred:>24} {err:>5}"
              f"{'' if c.inside else ' !'}")
        if not c.predicted:
            print(f"{'':26}   {c.reason.split('no prediction: ')[-1][:150]}")
    for half in sorted({h for _, h, _ in rows}):
        say(f"{half} half", figures([c for _, h, c in rows if h == half]))
        # not the headline: a metadata-only plan's fixes are never predictable by a model of data movement
        say(f"{half} half, plans that move data", figures([c for _, h, c in rows if h == half and
                                                          NO_DATA not in (c.reason or "")]))
    say("all", figures([c for _, _, c in rows]))
    return rows


def measure_to(items: list[tuple[str, str, str, Path]], args: argparse.Namespace) -> None:
    """:func:`measure` `items` as the command line says (--target, --save, --model)."""
    if not args.target or not args.save:
        sys.exit("--measure needs --target DIR and --save FILE")
    args.target.mkdir(parents=True, exist_ok=True)
    measure(items, args.model or "default", args.target, args.save)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--measure", choices=("look", "judged"))
    ap.add_argument("--target", type=Path)
    ap.add_argument("--save", type=Path)
    ap.add_argument("--judge", type=Path, nargs="+")
    ap.add_argument("--model", default=None, help="measure: the model predicting (default: default); "
                                                  "judge: re-predict with it (default: the predictions saved)")
    args = ap.parse_args()
    if args.list:
        list_fixes()
    elif args.measure:
        measure_to(workloads(args.measure), args)
    elif args.judge:
        judge(args.judge, args.model)
    else:
        ap.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
