"""The speedup model's rows and inputs (advisor.models.speedrows), on the shipped measured fixes."""

from __future__ import annotations

import math

import numpy as np

from advisor.models import pairs
from advisor.models.predict import DEFAULT_MODEL
from advisor.models.speedrows import INPUTS, LOAD, QUIET, Rows, inputs, load_of, ranges


def test_inputs_are_the_plan_the_change_and_the_load():
    before = {"log2_call_pages": 0.0, "small_call_share": 1.0}
    after = {"log2_call_pages": 10.0, "small_call_share": 0.0}
    x = inputs(before, after)
    assert x["b_log2_call_pages"] == 0.0 and x["d_log2_call_pages"] == 10.0
    assert x["d_small_call_share"] == -1.0
    # a descriptor missing on either side is no change the model may read
    assert math.isnan(x["d_log2_calls_per_mib"]) and math.isnan(x["b_log2_calls_per_mib"])
    assert x[LOAD] == QUIET and set(x) == set(INPUTS)


def test_the_load_of_a_row_is_per_cpu_and_nan_when_unsaid():
    assert load_of({"load1": "6", "cpus": "2"}) == 3.0
    assert math.isnan(load_of({"load1": "6"})) and math.isnan(load_of({"load1": "x", "cpus": "2"}))
    assert math.isnan(load_of({"load1": "6", "cpus": "0"}))


def test_rows_of_the_shipped_fixes_and_what_they_measured():
    rows = pairs.read(DEFAULT_MODEL.parent / pairs.PAIRS_FILE)
    m = Rows.of(rows)
    assert len(m) == len(rows) == m.x.shape[0] and m.x.shape[1] == len(INPUTS)
    assert np.allclose(10 ** m.y, [float(r["speedup"]) for r in rows])
    seen = ranges(m)
    assert {"coalesce", "fsync", "collective"} <= set(seen["transforms"])
    lo, hi = seen["inputs"]["b_log2_call_pages"]
    assert lo < 0 < hi  # requests below a page (about 1 KiB) to many MiB were measured
    half = m.subset(m.transform == "coalesce")
    assert 0 < len(half) < len(m) and set(half.transform) == {"coalesce"}
