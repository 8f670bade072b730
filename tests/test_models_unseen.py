"""Predictions on conditions the speedup model never measured: a fix transform missing from its
measured fixes, another file system than the one they were measured on (advisor.models.speedup
width_for). Real measured fixes throughout: the shipped campaign's, and the held-out file
systems' (GlusterFS, advisor/models/default/other-mount-pairs.csv.gz; CephFS,
other-mount-pairs-cephfs.csv.gz)."""

from __future__ import annotations

import copy
import math

import numpy as np

from advisor import api
from advisor.findings import Finding
from advisor.fixes import fix_summaries
from advisor.models import pairs, speedup
from advisor.models.pairs import plan_features
from advisor.models.predict import DEFAULT_MODEL, OUTSIDE, load, max_ranks, predict_fixes
from advisor.verify import replay_plan
from replay.transforms import apply_fix
from tests.conftest import CORPUS, REPO

SHIPPED = pairs.read(DEFAULT_MODEL.parent / pairs.PAIRS_FILE)
RANDOM_64K = CORPUS / "generated" / "c_random_shared_64k" / "case.darshan"
SEQUENTIAL = {"transform": "sequential"}
DEMO = REPO / "traces" / "ior-small-shared-4k.darshan"


def _site_model(rows: list[dict], other_mount: list[dict] | None = None):
    """The shipped model with its speedup model rebuilt from `rows` (a site's own measured fixes)."""
    built = speedup.build(rows, other_mount)
    assert built is not None
    model = copy.copy(load("default"))
    model.meta = dict(model.meta, speedup_model=built[1])
    model.speedup = built[0]
    return model


def test_a_transform_never_measured_gets_the_leave_transform_out_interval_and_says_so(corpus):
    """A site's model without any `sequential` fix: the fix is predicted with the interval of fixes
    each predicted by a model without their own transform (every transform weighing the same), not
    the out-of-family one, and every report says so beside the number."""
    model = _site_model([r for r in SHIPPED if r["transform"] != "sequential"])
    meta = model.meta["speedup_model"]
    unseen = meta["unseen_transform"]
    assert "sequential" not in meta["transforms"] and "sequential" not in unseen["transforms"]
    assert unseen["widen_log10"] > meta["widen_log10"]  # a new transform is predicted worse than a new family
    (p,) = predict_fixes(model, api.load(RANDOM_64K), [SEQUENTIAL]).values()
    assert p.speedup and p.extrapolated
    assert math.isclose(math.log10(p.interval[1] / p.interval[0]) / 2, unseen["widen_log10"], rel_tol=0.01)
    assert p.interval_basis.startswith("the fix 'sequential' was never measured by this model")
    line = fix_summaries([Finding("IO003", "access", "warn", "t", "m", fix=SEQUENTIAL, prediction=p)])[0].outcome()
    assert "never measured by this model" in line
    # a transform it measured keeps the model's own interval, with nothing said of a transform never measured
    # (coalescing 64 KiB random requests merges none: 1.00x, the interval of a fix that changes nothing)
    (c,) = predict_fixes(model, api.load(RANDOM_64K), [{"transform": "coalesce", "transfer_size": 4 << 20}]).values()
    assert c.speedup == 1.0 and not c.extrapolated and "never measured" not in c.interval_basis
    own, _ = speedup.width_for(meta, "coalesce", predicted=0.0, still=True)
    assert math.isclose(math.log10(c.interval[1] / c.interval[0]) / 2, own, rel_tol=0.01)


def test_with_too_few_transforms_measured_a_new_one_is_declined(corpus):
    """Two transforms say nothing about a third: declined with the reason, never a number."""
    model = _site_model([r for r in SHIPPED if r["transform"] in ("coalesce", "collective")])
    assert model.meta["speedup_model"]["unseen_transform"] is None
    (p,) = predict_fixes(model, api.load(RANDOM_64K), [SEQUENTIAL]).values()
    assert p.speedup is None and p.reason.startswith(OUTSIDE) and "too few transforms" in p.reason


def test_leave_transform_out_calibrates_on_the_other_transforms_only():
    """The held-out protocol uses production's rule: a held-out transform's interval is the
    leave-transform-out calibration of the *other* transforms (nested), every transform alike."""
    rows = speedup.Rows.of(SHIPPED)
    scores = speedup.transform_scores(rows.subset(rows.transform != "sequential"))
    assert "sequential" not in scores and len(scores) >= speedup.MIN_TRANSFORMS
    assert all(np.all(v >= 0) and len(v) for v in scores.values())
    # the declined fixes calibrate nothing: `collective` alone changes collective_fraction
    assert "collective" not in scores


OTHER = pairs.read(DEFAULT_MODEL.parent / pairs.OTHER_MOUNT_FILE)
LUSTRE_JOB = CORPUS / "darshan-logs" / "darshan_logs" / "apmpi_apxc" / "mpi-io-test.darshan"
COALESCE = {"transform": "coalesce", "transfer_size": 4 << 20}


def test_the_held_out_file_systems_fixes_are_the_frozen_sample_measured_on_glusterfs():
    from advisor.models import crossmount

    sampled = {w.name for w in crossmount.order()}
    assert {r["fstype"] for r in OTHER} == {"fuse.glusterfs"}
    assert {r["workload"] for r in OTHER} <= sampled
    assert {r["family"] for r in OTHER} == set(crossmount.FIT_FAMILIES) | set(crossmount.JUDGED_FAMILIES)
    assert all(float(r["speedup"]) > 0 and int(r["pairs"]) >= 2 and float(r["load1"]) > 0 for r in OTHER)
    home = {(r["workload"], r["fix"]) for r in SHIPPED}
    assert {r["workload"] for r in OTHER} <= {w for w, _ in home}
    # the same fixes measured on both mounts (125 of 130: five the ext4 campaign did not measure)
    assert sum((r["workload"], r["fix"]) in home for r in OTHER) >= 0.95 * len(OTHER)


CEPH = pairs.read(DEFAULT_MODEL.parent / "other-mount-pairs-cephfs.csv.gz")


def test_the_second_held_out_file_system_is_the_same_sample_measured_on_cephfs():
    """The same frozen sample, the same 130 (workload, fix) as on GlusterFS, each with its load."""
    assert {r["fstype"] for r in CEPH} == {"fuse.ceph-fuse"}
    assert {(r["workload"], r["fix"]) for r in CEPH} == {(r["workload"], r["fix"]) for r in OTHER}
    assert all(float(r["speedup"]) > 0 and int(r["pairs"]) >= 2 and float(r["load1"]) > 0 for r in CEPH)
    assert [str(f) for f in pairs.other_mount_files(DEFAULT_MODEL.parent)] == sorted(
        str(DEFAULT_MODEL.parent / n) for n in (pairs.OTHER_MOUNT_FILE, "other-mount-pairs-cephfs.csv.gz"))


def test_leave_one_mount_out_judges_each_mount_by_the_other_mounts_calibration_only():
    """Each mount judged with production's rule calibrated on the other mount alone: every interval is
    the other mount's (never the judged one's), and it holds both ways (the figures of docs/models.md)."""
    from advisor.models import crossmount

    judged = crossmount.leave_one_mount_out(SHIPPED, OTHER + CEPH, rules=[speedup.MOUNT_RULE], shipped=True)
    home = speedup.Rows.of(SHIPPED)
    own = speedup.out_of_family_width(home)
    for judged_mount, calibrating in (("fuse.ceph-fuse", OTHER), ("fuse.glusterfs", CEPH)):
        cal = speedup.other_mount_calibration(home, calibrating)
        js = judged[(speedup.MOUNT_RULE, judged_mount)]
        assert len(js) == 130
        for j in js:
            half = math.log10(j.interval[1] / j.interval[0]) / 2
            assert math.isclose(half, max(own, speedup.mount_width(cal, j.transform)), rel_tol=1e-9)
        assert speedup.figures(js)["coverage"] >= 0.8


def test_another_mount_gets_the_cross_mount_interval_and_says_so(corpus):
    """A job on Lustre predicted by the model of fixes measured on ext4: the interval is the cross-mount
    calibration's for its fix transform (fixes measured on GlusterFS and CephFS, each by a model that
    saw neither that mount nor its family, the two mounts weighing the same), at least the home
    out-of-family one, and the prediction says which mounts it learned."""
    model = load("default")
    meta = model.meta["speedup_model"]
    other = meta["other_mount"]
    assert other["fstype"] == "fuse.ceph-fuse, fuse.glusterfs" and other["fixes"] == len(OTHER) + len(CEPH)
    assert other["rule"] == speedup.MOUNT_RULE and other["mounts"] == 2
    # a width of its own for every transform with enough fixes on the other mounts; collective wider
    assert set(other["by_transform"]) == {"aggregate", "align", "coalesce", "collective", "fsync", "layout",
                                          "sequential"}
    assert other["by_transform"]["collective"] > other["widen_log10"] > other["by_transform"]["coalesce"]
    profile = api.load(LUSTRE_JOB)
    (p,) = predict_fixes(model, profile, [COALESCE], mount="lustre").values()
    assert p.speedup and p.extrapolated
    half = math.log10(p.interval[1] / p.interval[0]) / 2
    own, _ = speedup.width_for(meta, "coalesce", predicted=math.log10(p.speedup),
                               still=speedup.changes_nothing(meta, *_described(profile, COALESCE)))
    assert math.isclose(half, max(own, other["by_transform"]["coalesce"]), rel_tol=0.01)
    assert "predicted for lustre from fixes measured on ext4" in p.interval_basis
    assert "2 other file systems" in p.interval_basis
    (home,) = predict_fixes(model, profile, [COALESCE]).values()  # as if on the model's own mount
    assert home.speedup == p.speedup and "lustre" not in home.interval_basis and not home.extrapolated
    # a model whose fixes were all measured on one mount declines another, with the reason
    alone = _site_model(SHIPPED)
    (q,) = predict_fixes(alone, profile, [COALESCE], mount="lustre").values()
    assert q.speedup is None and q.reason.startswith(OUTSIDE) and "no fix measured on another file system" in q.reason


def test_diagnose_says_the_job_is_on_another_file_system_than_the_fixes_were_measured_on(corpus):
    from advisor.models.expect import expectation

    model = load("default")
    exp = expectation(model, api.load(LUSTRE_JOB))
    assert exp.mount == "lustre" and exp.mount_warning
    demo = expectation(model, api.load(DEMO))  # the demo trace was recorded on ext4: the model's own
    assert demo.mount == ""


def _described(profile, fix: dict) -> tuple[dict, dict]:
    """The descriptors of a job's replay plan before and after a fix (at the ranks predicted)."""
    base = replay_plan(profile, np=min(max(profile.job.nprocs, 1), max_ranks(load("default"))))
    return plan_features(base, "ext4"), plan_features(apply_fix(base, fix), "ext4")
