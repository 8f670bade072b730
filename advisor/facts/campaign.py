"""Facts about a benchmark campaign (several IOR runs as scaling curves, advisor.campaign)."""

from __future__ import annotations

from advisor.campaign import (Campaign, CampaignProfile, collapse, exceed_point, gain_per_doubling, knee,
                              pair_curves, regressions)
from advisor.facts import FactContext, Missing, NotApplicable, fact, param
from advisor.facts.ior import OBJECT_APIS

KNEE_GAIN = param("campaign_knee_gain", 0.10, "after the knee, adding clients gains less than this per doubling",
                  kind="fraction")
OST_DROP = param("campaign_ost_drop", 0.10, "a drop this large where clients start to exceed OSTs is reported",
                 kind="fraction")
COLLAPSE = param("campaign_collapse", 0.20, "the largest scale losing this much against the one before is a collapse",
                 kind="fraction")
RW_GAP = param("campaign_rw_gap", 1.30, "read/write (or write/read) ratio reported as a gap", kind="ratio")
REGRESSION = param("campaign_regression", 0.10, "a drop this large against the baseline is a regression",
                   kind="fraction")
FLAT = param("campaign_flat", 1.30,
             "a curve whose best point is less than this times its first, over 4x the tasks, is flat",
             kind="ratio")


# Record fields (what each curve finding holds): a point of a scaling curve, then each fact's.
POINT = {"tasks": "count", "bw_mib_s": "rate MiB/s"}
KNEE = {"curve": "text", "tasks": "count", "bw_mib_s": "rate MiB/s", "gain_after": "fraction", "peak": POINT,
        "per_ost": "count"}
OST_DROP_FIELDS = {"curve": "text", "before": POINT, "after": POINT, "drop": "fraction", "recovered_at": "count"}
COLLAPSE_FIELDS = {"curve": "text", "previous": POINT, "last": POINT, "drop": "fraction"}
RW_GAP_FIELDS = {"curve": "text", "tasks": "count", "read_over_write": "ratio", "faster": "enum",
                 "last_tasks": "count", "last_read_over_write": "ratio"}
FLAT_FIELDS = {"curve": "text", "first": POINT, "last": POINT, "best_mib_s": "rate MiB/s", "stripe_count": "count"}
REGRESSION_FIELDS = {"curve": "text", "tasks": "count", "baseline_mib_s": "rate MiB/s", "new_mib_s": "rate MiB/s",
                     "drop": "fraction", "test": "text", "source": "path", "baseline_source": "path"}


def _campaign(ctx: FactContext) -> Campaign:
    if not isinstance(ctx.profile, CampaignProfile):
        raise NotApplicable("not a campaign")
    return ctx.profile.campaign


def _pt(p) -> dict:
    return {"tasks": p.tasks, "bw_mib_s": round(p.bw_mib, 2)}



@fact("campaign_clients", "enum", "What the campaign's scale counts: IOR's tasks or IOzone's threads.",
      label="scale counted in")
def campaign_clients(ctx: FactContext) -> str:
    return _campaign(ctx).x_label


@fact("campaign_knees", "record", "Curves with a knee: the task count after which doubling the clients "
      "gains less than campaign_knee_gain on the way to the curve's peak (flat curves excluded).",
      label="curves with a knee", fields=KNEE)
def campaign_knees(ctx: FactContext) -> list[dict]:
    osts = ctx.config.system.osts
    flat = {f["curve"] for f in ctx.get("campaign_flat_curves")}
    out = []
    for curve in _campaign(ctx).curves:
        k = knee(curve)
        if k is None or curve.label in flat:
            continue
        top = max(curve.points, key=lambda p: p.bw_mib)
        gain = gain_per_doubling(k, top)
        if gain < ctx.param(KNEE_GAIN):
            out.append({"curve": curve.label, **_pt(k), "gain_after": round(gain, 4), "peak": _pt(top),
                        "per_ost": round(k.tasks / osts, 1) if osts else None})
    return out


@fact("campaign_ost_drops", "record", "File-per-process curves that drop by campaign_ost_drop or more "
      "right after the files outnumber the OSTs, and where they recover.", label="drops past the OST count",
      fields=OST_DROP_FIELDS)
def campaign_ost_drops(ctx: FactContext) -> list[dict]:
    osts = ctx.get("ior_osts")
    out = []
    for curve in _campaign(ctx).curves:
        pair = exceed_point(curve, osts)
        if pair is None:
            continue
        before, after = pair
        drop = 1 - after.bw_mib / before.bw_mib if before.bw_mib else 0.0
        if drop >= ctx.param(OST_DROP):
            later = [p for p in curve.points if p.tasks > after.tasks and p.bw_mib >= before.bw_mib]
            out.append({"curve": curve.label, "before": _pt(before), "after": _pt(after), "drop": round(drop, 4),
                        "recovered_at": later[0].tasks if later else None})
    return out


@fact("campaign_collapses", "record", "Curves whose largest task count loses campaign_collapse or more "
      "against the one before.", label="collapsing curves", fields=COLLAPSE_FIELDS)
def campaign_collapses(ctx: FactContext) -> list[dict]:
    out = []
    for curve in _campaign(ctx).curves:
        pair = collapse(curve)
        if pair is None:
            continue
        prev, last = pair
        drop = 1 - last.bw_mib / prev.bw_mib if prev.bw_mib else 0.0
        if drop >= ctx.param(COLLAPSE):
            out.append({"curve": curve.label, "previous": _pt(prev), "last": _pt(last), "drop": round(drop, 4)})
    return out


@fact("campaign_rw_gaps", "record", "Kinds of test whose read and write rates differ by campaign_rw_gap "
      "or more at some task count: the largest gap and the one at the largest scale.", label="read/write gaps",
      fields=RW_GAP_FIELDS)
def campaign_rw_gaps(ctx: FactContext) -> list[dict]:
    out = []
    for write, read in pair_curves(_campaign(ctx).curves):
        reads = {p.tasks: p.bw_mib for p in read.points}
        ratios = [(p.tasks, reads[p.tasks] / p.bw_mib) for p in write.points if p.tasks in reads and p.bw_mib > 0]
        if not ratios:
            continue
        tasks, ratio = max(ratios, key=lambda tr: max(tr[1], 1 / tr[1]))
        if max(ratio, 1 / ratio) >= ctx.param(RW_GAP):
            last_tasks, last_ratio = ratios[-1]
            out.append({"curve": write.label.replace(" · write", ""), "tasks": tasks,
                        "read_over_write": round(ratio, 3), "faster": "read" if ratio > 1 else "write",
                        "last_tasks": last_tasks, "last_read_over_write": round(last_ratio, 3)})
    return out


@fact("campaign_flat_curves", "record", "Curves that gain less than campaign_flat over at least 4x the tasks.",
      label="flat curves", fields=FLAT_FIELDS)
def campaign_flat_curves(ctx: FactContext) -> list[dict]:
    out = []
    for curve in _campaign(ctx).curves:
        pts = curve.points
        if len(pts) < 3 or pts[-1].tasks < 4 * pts[0].tasks or pts[0].bw_mib <= 0:
            continue
        best = max(p.bw_mib for p in pts)
        if best < ctx.param(FLAT) * pts[0].bw_mib:
            out.append({"curve": curve.label, "first": _pt(pts[0]), "last": _pt(pts[-1]),
                        "best_mib_s": round(best, 2), "stripe_count": curve.key.stripe_count})
    return out


@fact("campaign_regressions", "record", "Tests the baseline campaign also ran (same kind, same task count) "
      "that lost campaign_regression or more.", label="regressed tests", fields=REGRESSION_FIELDS)
def campaign_regressions(ctx: FactContext) -> list[dict]:
    campaign = _campaign(ctx)
    if not campaign.baseline:
        raise NotApplicable("no baseline campaign (--baseline)")
    pairs = regressions(campaign)
    if not pairs:
        raise Missing("no test of the baseline matches a test of this campaign (same kind, task count)")
    out = []
    for key, old, new in pairs:
        drop = 1 - new.bw_mib / old.bw_mib if old.bw_mib else 0.0
        if drop >= ctx.param(REGRESSION):
            out.append({"curve": key.label(), "tasks": new.tasks, "baseline_mib_s": round(old.bw_mib, 2),
                        "new_mib_s": round(new.bw_mib, 2), "drop": round(drop, 4), "test": new.test,
                        "source": new.source, "baseline_source": old.source})
    return sorted(out, key=lambda r: -r["drop"])


@fact("campaign_compared_tests", "count", "Tests matched between the campaign and its baseline.",
      label="tests compared with the baseline")
def campaign_compared_tests(ctx: FactContext) -> int:
    campaign = _campaign(ctx)
    if not campaign.baseline:
        raise NotApplicable("no baseline campaign (--baseline)")
    return len(regressions(campaign))


@fact("campaign_regressed_sources", "path", "Files of the tests that regressed, and of their baseline tests.",
      label="files of the regressed tests")
def campaign_regressed_sources(ctx: FactContext) -> list[str]:
    return sorted({r[key] for r in ctx.get("campaign_regressions") for key in ("source", "baseline_source")})


@fact("campaign_through_files", "flag", "Every curve's IOR API writes files of a file system (not an object "
      "store's or a burst buffer's client: DFS, S3, CHFS, IME ...), where OSTs and `lfs` can mean something.",
      label="every curve through a file system")
def campaign_through_files(ctx: FactContext) -> bool:
    return all(c.key.api.upper() not in OBJECT_APIS for c in _campaign(ctx).curves)
