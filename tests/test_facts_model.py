"""Anomaly facts read the model's expectation from the fact context (the model stage's typed input)."""

from __future__ import annotations

import math

import pytest

from advisor.config import SiteConfig
from advisor.expectation import JobExpectation
from advisor.facts import FactContext, Missing, NotApplicable
from advisor.units import MiB
from tests.profiles import job, module


def _ctx(expectation: JobExpectation | None) -> FactContext:
    profile = job(module("POSIX", [(1, 0, {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": MiB})]))
    return FactContext(profile, SiteConfig(), expectation)


def test_measured_against_expected():
    exp = JobExpectation(model="rf", measured_s=8.0, expected_s=2.0, expected_fast_s=1.0, expected_slow_s=4.0,
                         bytes=64 * MiB, extrapolation=["log2_nprocs"])
    ctx = _ctx(exp)
    assert ctx.get("model_measured_rate") == pytest.approx(8.0 * MiB)  # 64 MiB in 8 s, in bytes/s
    assert ctx.get("model_expected_rate") == pytest.approx(32.0 * MiB)
    assert ctx.get("model_expected_low_rate") == pytest.approx(16.0 * MiB)  # at the slow end of the band
    assert ctx.get("model_shortfall") == pytest.approx(4.0)
    assert ctx.get("model_lost_s") == pytest.approx(6.0)
    assert ctx.get("model_extrapolation") == ["log2_nprocs"] and ctx.get("model_name") == "rf"


def test_a_job_faster_than_expected_lost_nothing():
    ctx = _ctx(JobExpectation(measured_s=1.0, expected_s=2.0, bytes=MiB))
    assert ctx.get("model_lost_s") == 0.0 and ctx.get("model_shortfall") == pytest.approx(0.5)


def test_without_a_model_the_facts_do_not_apply_and_with_no_comparison_they_say_why():
    with pytest.raises(NotApplicable):
        _ctx(None).get("model_shortfall")
    with pytest.raises(Missing, match="too little data"):
        _ctx(JobExpectation(reason="the job moved too little data")).get("model_shortfall")
    with pytest.raises(Missing, match="no finite prediction"):
        _ctx(JobExpectation(measured_s=1.0, expected_s=math.nan, bytes=MiB)).get("model_expected_rate")
