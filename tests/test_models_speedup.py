"""The speedup of a fix learned from measured fixes: inputs that transfer, the held-out protocol,
fixes outside what the model measured, predictions beside measurements, learning from --verify."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from advisor import api
from advisor.findings import Finding, Prediction
from advisor.fixes import fix_summaries
from advisor.models import campaign, pairs, speedup
from advisor.models.calibrate import plan_for
from advisor.models.design import Point
from advisor.models.predict import DEFAULT_MODEL, OUTSIDE, against_measured, load, predict_fixes
from advisor.verification import Verification
from replay.transforms import apply_fix
from tests.conftest import CORPUS, REPO
from tests.helpers import require

SHIPPED_PAIRS = DEFAULT_MODEL.parent / pairs.PAIRS_FILE
DEMO = REPO / "traces" / "ior-small-shared-4k.darshan"


def _point(**kw) -> Point:
    base = dict(op="write-read", transfer=4096, layout="shared", nprocs=2, api="posix", fsync="none",
                order="sequential", aligned=True, volume="small")
    return Point(**{**base, **kw})


def test_a_plan_is_described_by_shares_and_ratios_and_one_volume():
    small = pairs.plan_features(plan_for(_point(volume="tiny"), "ext4"), "ext4")
    large = pairs.plan_features(plan_for(_point(volume="small"), "ext4"), "ext4")
    for name in ("log2_call_pages", "log2_calls_per_mib", "small_call_share", "shared_fraction", "ranks_per_file",
                 "read_fraction", "fsync_per_write"):
        assert small[name] == large[name], name
    # 1 MiB and 4 MiB per rank and phase: the volume the per-phase fixed costs are a share of
    assert (small["log2_rank_phase_mib"], large["log2_rank_phase_mib"]) == (0.0, 2.0)
    fixed = pairs.plan_features(apply_fix(plan_for(_point(), "ext4"), campaign.COALESCE), "ext4")
    x = speedup.inputs(large, fixed)
    assert x["d_log2_call_pages"] > 5  # 4 KiB requests coalesced toward 4 MiB: what the fix changes
    assert x["d_small_call_share"] == -1.0


def test_every_family_pairs_its_workloads_with_fixes_that_apply():
    for family, workloads in campaign.families().items():
        assert {campaign.pattern(w) for w in workloads} == {family}
        for w in campaign.NEW.get(family, []):
            for fix in campaign.fixes(w):
                apply_fix(campaign.workload_plan(w, "ext4"), fix)  # raises when a fix does not apply


def test_interface_direction_ranks_and_syncing_are_crossed_within_the_pattern_families():
    """A family held out must leave other families with every interface, direction, rank count and
    syncing it has: each is a factor inside the families, not a family of its own (the first
    campaign's `collective` and `write-only` families were declined whole when held out)."""
    families = campaign.families()
    assert len(families) >= 6
    cells = {f: {(w.point.api, w.direction) for w in ws} for f, ws in families.items()}
    for family, have in cells.items():
        views = {"collective-view"} if family.endswith("random") else set()  # a file view sorts offsets
        assert {a for a, _ in have} == {"posix", "mpiio", "collective", "collective-view"} - views, family
        for interface in ("posix", "mpiio", "collective"):
            directions = {d for a, d in have if a == interface}
            assert directions == {"write-read", "write-only", "cold-read"}, (family, interface)
        workloads = families[family]
        assert any(w.point.nprocs == 1 for w in workloads) or family == "large-unaligned"
        assert any(w.point.fsync != "none" for w in workloads), family
    for value in ("random", "unaligned", "sequential"):  # every geometry and size class in two families
        assert sum(f.endswith(value) for f in families) == 2
    assert sum(f.startswith("small") for f in families) == sum(f.startswith("large") for f in families) == 3


def test_the_volume_a_rank_moves_in_a_phase_tells_the_demo_from_the_campaigns_4k_workload():
    """The demo's coalescing measured 3.2x-4.4x, the campaign's 4 KiB shared workload 2.6x-2.9x,
    with every other descriptor equal within 0.01 (opens per call: 1/16,384 and 1/1,024): the demo
    moves 32 MiB per rank and phase, that workload 4 MiB (the miss that motivated the third design)."""
    from advisor.verify import replay_plan

    demo = pairs.plan_features(replay_plan(api.load(DEMO)), "ext4")
    first = pairs.plan_features(plan_for(_point(), "ext4"), "ext4")
    assert (demo["log2_rank_phase_mib"], first["log2_rank_phase_mib"]) == (5.0, 2.0)
    differ = {k for k in pairs.DESCRIPTORS if abs(demo[k] - first[k]) > 0.01}
    assert differ == {"log2_rank_phase_mib"}


def test_the_volume_per_rank_is_crossed_inside_every_family():
    """Every family has workloads moving at most 1 MiB and at least 64 MiB per rank and phase, so
    a family held out leaves others with its volumes (a check on the designed plans, no speedup)."""
    for family, workloads in campaign.families().items():
        volumes = [pairs.plan_features(campaign.workload_plan(w, "ext4"), "ext4")["log2_rank_phase_mib"]
                   for w in workloads]
        assert min(volumes) <= 0 and max(volumes) >= 6, family


def test_a_volume_above_what_was_measured_is_predicted_below_it_declined():
    """Above the largest volume measured, fixed costs weigh less still (the trees hold the largest's
    speedup); below the smallest they weigh more: outside what the model measured."""
    measured = {"inputs": {"b_log2_rank_phase_mib": [-1.0, 7.0], "b_log2_call_pages": [0.0, 12.0]},
                "transforms": ["coalesce"]}
    assert speedup.outside(measured, {"b_log2_rank_phase_mib": 9.0}, "coalesce") == []
    assert speedup.outside(measured, {"b_log2_call_pages": 14.0}, "coalesce") != []
    (why,) = speedup.outside(measured, {"b_log2_rank_phase_mib": -3.0}, "coalesce")
    assert why == "log2_rank_phase_mib -3 vs measured -1..7"


def test_a_log2_input_beyond_its_range_is_judged_by_the_margin_rule():
    """The margin of a log2 input: 10 % of its span (at least 0.5), 0.5 whatever the span, or none;
    a share input's margin is the same under every rule."""
    measured = {"inputs": {"b_log2_call_pages": [-2.0, 14.0], "b_read_fraction": [0.0, 0.5]},
                "transforms": ["coalesce"]}
    small = {"b_log2_call_pages": -3.0}  # 512 B against 1 KiB measured: a factor 2 below
    assert speedup.outside(measured, small, "coalesce", "share-of-span") == []
    (why,) = speedup.outside(measured, small, "coalesce", "fixed-factor")
    assert why == "log2_call_pages -3 vs measured -2..14"
    assert speedup.outside(measured, {"b_log2_call_pages": -2.4}, "coalesce", "fixed-factor") == []
    assert speedup.outside(measured, {"b_log2_call_pages": -2.4}, "coalesce", "none") != []
    for rule in speedup.MARGIN_RULES:
        assert speedup.outside(measured, {"b_read_fraction": 0.54}, "coalesce", rule) == []
        assert speedup.outside(measured, {"b_read_fraction": 0.6}, "coalesce", rule) != []
    with pytest.raises(ValueError):
        speedup.outside(measured, small, "coalesce", "wide")


def test_no_shipped_fix_lies_outside_the_other_families():
    """The point of crossing the factors: with any family held out, the others span every input
    value it has, so leave-family-out declines none of its fixes (the first campaign declined the
    whole `collective` and `write-only` families). Inputs only: no model is fitted."""
    rows = speedup.Rows.of(pairs.read(SHIPPED_PAIRS))
    for family in set(rows.family):
        held = rows.family == family
        measured = speedup.ranges(rows.subset(~held))
        for i in np.flatnonzero(held):
            assert speedup.outside(measured, dict(zip(speedup.INPUTS, rows.x[i])), str(rows.transform[i])) == [], \
                (family, rows.workload[i], rows.transform[i])


def test_the_shipped_measured_fixes_cover_every_family_and_transform():
    rows = pairs.read(SHIPPED_PAIRS)
    assert {r["family"] for r in rows} == set(campaign.families())
    assert {r["transform"] for r in rows} >= {"coalesce", "collective", "aggregate", "fsync", "align",
                                              "sequential", "layout"}
    assert all(float(r["speedup"]) > 0 and int(r["pairs"]) >= 2 for r in rows)
    assert all(r["version"] == str(pairs.PAIRS_VERSION) and float(r["cpus"]) > 0 for r in rows)


def test_a_shipped_row_is_what_its_workload_and_fix_describe():
    """The campaign's rows are refreshed from their workload and fix (campaign.refresh): a plan is
    a pure function of both, so the shipped descriptors are the ones this version computes."""
    rows = pairs.read(SHIPPED_PAIRS)
    sample = [r for r in rows if r["workload"] in {rows[0]["workload"], rows[-1]["workload"]}]
    fresh = campaign.refresh(sample, 2)
    for old, new in zip(sample, fresh):
        described = [k for k in old if k[:2] in ("b_", "a_")]
        assert {k: old[k] for k in described} == {k: str(new[k]) for k in described}
        assert new["family"] == old["family"]


def test_the_file_system_sees_what_collective_buffering_makes_of_the_calls():
    """Independent pieces reach the file system as they are; the pieces of one collective call are
    merged into contiguous extents per aggregator (4 KiB calls of two ranks' separate blocks stay
    4 KiB; a file view of two adjacent 4 MiB blocks becomes one 8 MiB request with one aggregator)."""
    per_call = plan_for(_point(api="collective"), "ext4")
    total, requests = pairs.fs_requests(per_call)
    pieces = int((per_call.ops["length"] > 0).sum())
    assert requests == pieces and total == per_call.ops["length"].sum()
    view = pairs.plan_features(plan_for(_point(api="collective-view"), "ext4"), "ext4")
    assert view["log2_fs_request_pages"] == 11.0 and view["log2_call_pages"] == 10.0
    two = pairs.plan_features(apply_fix(plan_for(_point(), "ext4"), campaign.COLLECTIVE_2), "ext4")
    assert two["log2_fs_request_pages"] == 10.0  # two aggregators: each writes its half
    posix = pairs.plan_features(plan_for(_point(), "ext4"), "ext4")
    assert posix["log2_fs_request_pages"] == posix["log2_call_pages"] == 0.0


def test_a_site_file_of_the_first_version_takes_new_rows_and_reads_back(tmp_path):
    """A site's pairs.csv started by version 1 (no cpus, no log2_fs_request_pages): --verify keeps
    appending to it with its own columns, and the rows read back with those values unknown."""
    import csv

    rows = pairs.read(SHIPPED_PAIRS)[:3]
    old_columns = [c for c in pairs.COLUMNS if c != "cpus" and "fs_request" not in c and "rank_phase" not in c]
    site = tmp_path / "pairs.csv"
    with open(site, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=old_columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows([dict(r, version="1") for r in rows[:2]])
    pairs.append(site, rows[2:])
    back = pairs.read(site)
    assert len(back) == 3 and "cpus" not in back[2]
    fitted = speedup.Rows.of(back)
    assert np.isnan(fitted.x[:, speedup.INPUTS.index(speedup.LOAD)]).all()
    assert np.isnan(fitted.x[:, speedup.INPUTS.index("b_log2_fs_request_pages")]).all()
    assert np.isnan(fitted.x[:2, speedup.INPUTS.index("b_log2_rank_phase_mib")]).all()


def test_the_load_is_a_condition_never_a_reason_to_decline():
    rows = pairs.read(SHIPPED_PAIRS)
    fitted = speedup.Rows.of(rows)
    load = fitted.x[:, speedup.INPUTS.index(speedup.LOAD)]
    assert np.allclose(load, [float(r["load1"]) / float(r["cpus"]) for r in rows])
    measured = speedup.ranges(fitted)
    x = dict(zip(speedup.INPUTS, fitted.x[0]), **{speedup.LOAD: 1000.0})
    assert speedup.outside(measured, x, str(fitted.transform[0])) == []
    assert speedup.inputs({}, {})[speedup.LOAD] == speedup.QUIET  # a prediction is for a quiet node


def test_a_held_out_family_is_predicted_by_a_model_that_never_saw_it():
    rows = speedup.Rows.of(pairs.read(SHIPPED_PAIRS))
    judged = speedup.leave_out(rows, "family")
    assert len(judged) == len(rows)
    family = "small-random"
    alone = speedup.fit(rows.subset(rows.family != family))
    held = rows.family == family
    expected = 10 ** speedup.predict(alone, rows.x[held])
    got = [j.predicted for j in judged if j.family == family]
    still = [speedup.unchanged(dict(zip(speedup.INPUTS, x))) for x in rows.x[held]]
    assert any(still) and not all(still)
    for e, g, s in zip(expected, got, still):  # a fix that changes nothing: 1.00x, as in production
        assert g is None or abs(g - (1.0 if s else e)) < 1e-9 * e
    figures = speedup.figures(judged)
    assert figures["fixes"] == len(rows) and 0 <= figures["coverage"] <= 1


def test_a_fix_outside_what_the_model_measured_gets_no_number():
    model = load("default")
    meta = model.meta["speedup_model"]
    before = pairs.plan_features(plan_for(_point(), "ext4"), "ext4")
    far = dict(before, fsync_per_write=40.0)  # 40 fsyncs a write: never measured
    why = speedup.predict_fix(model.speedup, meta, before, far, "fsync")
    assert isinstance(why, list) and any("fsync_per_write change 40 vs measured" in w for w in why)
    # a stripe layout changes nothing a local disk's model describes, and it never measured one
    profile = api.load(DEMO)
    (p,) = predict_fixes(model, profile, [{"transform": "stripe", "count": 4, "size": 1 << 20}]).values()
    assert p.speedup is None and p.reason.startswith(OUTSIDE) and "'stripe'" in p.reason
    s = fix_summaries([Finding("LUS001", "lustre", "warn", "t", "m", fix={"transform": "stripe", "count": 4},
                               prediction=p)])[0]
    assert f"no prediction: {OUTSIDE} (" in s.outcome()


def test_a_measurement_outside_the_predicted_interval_is_said_and_the_saving_is_measured():
    fix = {"transform": "coalesce", "transfer_size": 4 << 20}
    p = Prediction(speedup=2.03, interval=[1.21, 3.43], time_saved_s=0.0418, job_io_s=0.0824, saving="predicted")
    v = Verification(verdict="improved", reason="improved: 4.25x faster (95 % CI 4.0x-4.5x, 5 pairs)",
                     speedup=4.25, ci95=[4.0, 4.5], pairs=5)
    f = Finding("IO001", "requests", "warn", "t", "m", fix=fix, prediction=p, verification=v)
    from advisor.findings import Diagnosis

    d = Diagnosis(source={"path": "x"}, job={}, findings=[f])
    against_measured(d)
    assert p.saving == "measured" and abs(p.time_saved_s - 0.0824 * (1 - 1 / 4.25)) < 1e-4
    assert p.versus_measured == ("measured 4.25x, outside the predicted 1.21x-3.43x: "
                                 "the model underestimates this workload")
    line = fix_summaries([f])[0].outcome()
    assert "saves ~63" in line and "(measured)" in line and "underestimates" in line
    assert line.index("saves") < line.index("predicted 2.03x")  # the saving belongs to the measurement
    # an undecided measurement's saving is its point estimate, and says so
    f.verification = Verification(verdict="inconclusive", reason="inconclusive: speedup 1.26x, 95 % CI 0.86x-1.85x",
                                  speedup=1.26, ci95=[0.86, 1.85], pairs=10)
    p.saving = "predicted"
    against_measured(d)
    line = fix_summaries([f])[0].outcome()
    assert "saves ~" in line and "(the measured point, not decided)" in line and "(measured)" not in line


def _ioadvisor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "ioadvisor"), *args], capture_output=True, text=True,
                          timeout=900, env=env)


def test_verify_appends_its_measured_fixes_and_train_folds_them_in(tmp_path):
    """A real --verify of the demo trace on the local disk; its fixes land in the site's data, and
    `ioadvisor train` learns from them beside the shipped ones."""
    import os

    require((Path(sys.executable).parent / "mpiexec").exists(), "no mpiexec in the venv (pip install mpich)")
    data = tmp_path / "model-data"
    site = tmp_path / "site.toml"
    site.write_text(f'[model]\ndata = "{data}"\n[replay]\nmin_sample_s = 0.05\n')
    (tmp_path / "scratch").mkdir()
    env = dict(os.environ)
    done = _ioadvisor("diagnose", str(DEMO), "--config", str(site), "--model", "default", "--verify", "--target",
                      str(tmp_path / "scratch"), "--repeat", "2", "--json", str(tmp_path / "d.json"), env=env)
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads((tmp_path / "d.json").read_text())
    measured = {json.dumps(f["fix"], sort_keys=True) for f in doc["findings"]
                if f.get("fix") and (f.get("verification") or {}).get("speedup")}
    rows = pairs.read(data / pairs.SITE_PAIRS_FILE)
    assert len(rows) == len(measured) >= 1
    assert all(r["family"].startswith("verified:") and r["fstype"] for r in rows)
    for f in doc["findings"]:
        p, v = f.get("prediction") or {}, f.get("verification") or {}
        if p.get("speedup") and v.get("speedup"):
            assert p["saving"] == "measured" and p["versus_measured"].startswith(f"measured {v['speedup']:.3g}"[:10])
    off = tmp_path / "off.toml"
    off.write_text(f'[model]\ndata = "{tmp_path / "none"}"\nlearn_from_verify = false\n[replay]\nmin_sample_s = 0.05\n')
    _ioadvisor("diagnose", str(DEMO), "--config", str(off), "--verify", "--target", str(tmp_path / "scratch"),
               "--repeat", "2", env=env)
    assert not (tmp_path / "none").exists()
    # what `ioadvisor train advisor/models/default DATA` reads and fits (advisor.models.build), without
    # the bandwidth model's minutes of cross-validation (test_models_pipeline runs the whole command)
    from advisor.models.rows import collect

    collected = collect([str(DEFAULT_MODEL.parent), str(data)])
    built = speedup.build(collected.pairs)
    assert built is not None
    assert built[1]["fixes"] == load("default").meta["speedup_model"]["fixes"] + len(rows)
    assert any(f.startswith("verified:") for f in built[1]["families"])


def test_corpus_workloads_are_predicted_or_declined_with_the_reason(corpus):
    model = load("default")
    for case in ("b_small_io_shared_4k", "n_fsync_per_write_Y_4k", "d_mpiio_independent_256k"):
        profile = api.load(CORPUS / "generated" / case / "case.darshan")
        fixes = [{"transform": "coalesce", "transfer_size": 4 << 20}, {"transform": "collective", "cb_nodes": 1}]
        for p in predict_fixes(model, profile, fixes).values():
            assert (p.speedup and p.interval[0] < p.speedup < p.interval[1]) or p.reason.startswith(OUTSIDE)


def test_the_sites_measured_fixes_go_where_the_config_says(tmp_path, monkeypatch):
    """models.learn.data_dir: [model] data when set, else $XDG_DATA_HOME/ioadvisor/model-data."""
    from advisor.config import ModelConfig
    from advisor.models.learn import data_dir

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir(ModelConfig()) == tmp_path / "xdg" / "ioadvisor" / "model-data"
    assert data_dir(ModelConfig(data=str(tmp_path / "site"))) == tmp_path / "site"


def test_the_interval_is_calibrated_by_the_effect_predicted():
    """Out-of-family residuals grow with the effect a fix is predicted to have (a fix near 1x is
    predicted closer than one removing a sync per write): one width per bin of |log10 predicted|,
    each the 80 % conformal quantile of its own fixes, each fix binned by its out-of-family
    prediction; a model saved before the bins keeps the pooled width."""
    rows = speedup.Rows.of(pairs.read(SHIPPED_PAIRS))
    cal = speedup.out_of_family_calibration(rows)
    widths = cal["widen_by_effect"]["widen_log10"]
    assert cal["widen_by_effect"]["edges"] == list(speedup.EFFECT_EDGES)
    assert sum(cal["widen_by_effect"]["fixes"]) == len(rows)
    assert widths[0] < cal["widen_log10"] < widths[-1]
    pred = speedup.family_predictions(rows)
    for b, width in enumerate(widths):
        mine = np.digitize(np.abs(pred), speedup.EFFECT_EDGES) == b
        assert (np.abs(rows.y[mine] - pred[mine]) <= width + 1e-12).mean() >= 0.8
    assert speedup.effect_width(cal, 0.0) == widths[0] and speedup.effect_width(cal, -1.5) == widths[-1]
    assert speedup.effect_width(cal, None) == cal["widen_log10"]
    assert speedup.effect_width({"widen_log10": 0.2}, 1.5) == 0.2


def test_a_prediction_gets_the_width_of_its_effect_and_the_held_out_protocol_the_same_rule():
    model = load("default")
    meta = model.meta["speedup_model"]
    before = pairs.plan_features(plan_for(_point(fsync="per-write"), "ext4"), "ext4")
    after = pairs.plan_features(apply_fix(plan_for(_point(fsync="per-write"), "ext4"),
                                          {"transform": "fsync", "mode": "at-close"}), "ext4")
    ratio, low, high = speedup.predict_fix(model.speedup, meta, before, after, "fsync")
    half = np.log10(high / ratio)
    assert ratio > 2 and abs(half - speedup.effect_width(meta, np.log10(ratio))) < 1e-9
    assert abs(np.log10(ratio / low) - half) < 1e-9
    width, said = speedup.width_for(meta, "fsync", predicted=np.log10(ratio))
    assert abs(width - half) < 1e-12 and said == []


def test_a_fix_that_changes_nothing_the_model_describes_is_predicted_to_buy_nothing():
    """Coalescing writes each followed by an fsync merges none of them: the plan's description is
    unchanged, so the fix buys nothing (1.00x), its interval that of the measured fixes that changed
    nothing, not what the trees make of the plan alone."""
    model = load("default")
    meta = model.meta["speedup_model"]
    w = next(w for ws in campaign.families().values() for w in ws
             if w.write_only and w.point.fsync == "per-write" and campaign.COALESCE in campaign.fixes(w))
    plan = campaign.workload_plan(w, "ext4")
    before, after = (pairs.plan_features(p, "ext4") for p in (plan, apply_fix(plan, campaign.COALESCE)))
    assert speedup.unchanged(speedup.inputs(before, after)) and speedup.changes_nothing(meta, before, after)
    ratio, low, high = speedup.predict_fix(model.speedup, meta, before, after, "coalesce")
    width = max(meta["no_change"]["widen_log10"], speedup.effect_width(meta, 0.0))
    assert ratio == 1.0 and abs(np.log10(high) - width) < 1e-9 and abs(np.log10(low) + width) < 1e-9
    assert 0 < width < meta["widen_log10"]
    # on another mount the cross-mount calibration still applies on top
    _, low_far, high_far = speedup.predict_fix(model.speedup, meta, before, after, "coalesce", mount="lustre")
    assert low_far < low and high_far > high
    assert speedup.changes_nothing({}, before, after) is False  # a model saved before: the trees decide
