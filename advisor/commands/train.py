"""`ioadvisor train DATA... --out MODEL`: a bandwidth model from calibration data and logs."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(name="train")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Model file to write (skops archive with metadata; suffix .skops).")
@click.option("--folds", type=click.IntRange(2, 50), default=5, show_default=True,
              help="Cross-validation folds (rows of one pattern or log stay in one fold).")
def command(paths: tuple[str, ...], out: Path, folds: int):
    """Train a model of log-bandwidth from pattern features.

    PATHS are calibration directories (`ioadvisor calibrate --out`), IOR outputs and
    Darshan logs with their measured performance (files or directories of them), and
    measured fixes (pairs.csv, appended by every `--verify`; folded into the model of
    what a fix buys). Prints
    the k-fold cross-validated error and the permutation importance of each feature.
    """
    from advisor.models.build import build_model
    from advisor.models.store import save

    model, collected = build_model(list(paths), folds)
    save(model, out)
    _report(model, collected, out)


def _report(model, collected, out: Path) -> None:
    from rich.table import Table

    from advisor.formatting import printable
    from advisor.models.conformal import interval_summary
    from advisor.models.store import describe
    from advisor.report.terminal import console

    con = console()
    cv = model.meta["cv"]
    for origin in model.meta["trained_on"]:
        con.print(printable(f"  rows from {origin}"), markup=False, highlight=False)
    for reason in collected.skipped[:10]:
        con.print(printable(f"  skipped {reason}"), markup=False, highlight=False, style="dim")
    con.print(f"cross-validated ({cv['folds']}-fold, {cv['rows']} rows): median absolute percentage error "
              f"{cv['mdape']:.1%}, R^2 {cv['r2']:.3f} (log-bandwidth), typical miss x{cv['median_factor']:.2f}")
    table = Table("feature", "permutation importance", "training range", title="what the model uses")
    for imp in model.meta["importances"]:
        span = model.meta["ranges"].get(imp["feature"]) or []
        shown = f"{span[0]:g}..{span[1]:g}" if span else "never seen"
        if imp["mean"] > 0.001 or span and span[0] != span[1]:
            table.add_row(imp["feature"], f"{imp['mean']:.3f} ± {imp['std']:.3f}", shown)
    con.print(table)
    con.print(printable(f"speedup interval: {interval_summary(model.meta)}"), markup=False, highlight=False)
    sm = model.meta.get("speedup_model")
    if sm:
        con.print(printable(f"speedup of a fix: learned from {sm['fixes']} measured fixes of {sm['workloads']} "
                            f"workloads in {len(sm['families'])} families ({', '.join(sm['transforms'])}); "
                            f"80 % interval x/÷{10 ** sm['widen_log10']:.2f} (out-of-family residuals){_by_effect(sm)}"
                            f"{_beyond(sm)}"), markup=False, highlight=False)
    else:
        con.print("speedup of a fix: the ratio of two predicted bandwidths (no measured fixes among the data, "
                  "or too few: `--verify` adds them)", markup=False, highlight=False, style="dim")
    con.print(printable(f"model written to {out}: {describe(model.meta)}"), markup=False, highlight=False)


def _by_effect(sm: dict) -> str:
    """The out-of-family interval by the effect predicted (advisor.models.speedup.EFFECT_EDGES)."""
    cal = sm.get("widen_by_effect")
    if not cal:
        return ""
    bounds = [f"{10 ** e:.2f}" for e in cal["edges"]]
    names = [f"predicted within x/÷{bounds[0]}"] + [f"to x/÷{b}" for b in bounds[1:]] + ["beyond"]
    return "; by the effect " + ", ".join(f"{n}: x/÷{10 ** w:.2f}" for n, w in zip(names, cal["widen_log10"]))


def _beyond(sm: dict) -> str:
    """What the speedup model does for a transform it never measured and for another mount."""
    unseen, other = sm.get("unseen_transform"), sm.get("other_mount")
    out = (f"; a transform never measured: x/÷{10 ** unseen['widen_log10']:.2f} (leave-transform-out)" if unseen
           else "; a transform never measured: declined (too few transforms measured)")
    return out + (f"; another mount: x/÷{10 ** other['widen_log10']:.2f} ({other['fixes']} fixes measured on "
                  f"{other['fstype']})" if other else "; another mount: declined (no fix measured on another)")
