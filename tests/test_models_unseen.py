"""Predictions on conditions the speedup model never measured: a fix transform missing from its
measured fixes, another file system than the one they were measured on (advisor.models.speedup
width_for). Real measured fixes throughout: the shipped campaign's, and the held-out file
system's (GlusterFS, advisor/models/default/other-mount-pairs.csv.gz)."""

from __future__ import annotations

import copy
import math

import numpy as np

from advisor import api
from advisor.findings import Finding
from advisor.fixes import fix_summaries
from advisor.models import pairs, speedup
from advisor.models.predict import DEFAULT_MODEL, OUTSIDE, load, predict_fixes
from tests.conftest import CORPUS

SHIPPED = pairs.read(DEFAULT_MODEL.parent / pairs.PAIRS_FILE)
RANDOM_64K = CORPUS / "generated" / "c_random_shared_64k" / "case.darshan"
SEQUENTIAL = {"transform": "sequential"}


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
    # a transform it measured keeps the out-of-family interval, with nothing said
    (c,) = predict_fixes(model, api.load(RANDOM_64K), [{"transform": "coalesce", "transfer_size": 4 << 20}]).values()
    assert c.speedup and not c.interval_basis
    assert math.isclose(math.log10(c.interval[1] / c.interval[0]) / 2, meta["widen_log10"], rel_tol=0.01)


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
