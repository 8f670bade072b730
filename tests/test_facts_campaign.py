"""Campaign facts on hand-built scaling curves: the knee, a collapse at the largest scale, a
regression against the baseline, and that nothing but a campaign is judged by them."""

from __future__ import annotations

import pytest

from advisor.campaign import Campaign, Curve, CurveKey, Point, campaign_profile, gain_per_doubling
from advisor.config import SiteConfig
from advisor.facts import PARAMS, FactContext, NotApplicable
from advisor.facts.campaign import COLLAPSE, KNEE_GAIN
from tests.profiles import job, module

KEY = CurveKey(study="", access="fpp", operation="write", api="POSIX", transfer_size=1 << 20,
               stripe_count=1, stripe_size=1 << 20)


def _curve(points: dict[int, float], key: CurveKey = KEY) -> Curve:
    return Curve(key, [Point(t, bw, bw, f"run-{t}.txt", f"test 0 ({t} tasks)") for t, bw in sorted(points.items())])


def _ctx(curves: list[Curve], baseline: list[Curve] | None = None) -> FactContext:
    campaign = Campaign(curves, baseline or [], sources=[f"/runs/{i}.txt" for i in range(4)])
    return FactContext(campaign_profile(campaign), SiteConfig())


def test_the_knee_is_where_doubling_stops_paying():
    ctx = _ctx([_curve({8: 1000.0, 16: 2000.0, 32: 3900.0, 64: 4000.0, 128: 4050.0})])
    (knee,) = ctx.get("campaign_knees")
    assert knee["tasks"] == 32 and knee["peak"]["tasks"] == 128
    assert knee["gain_after"] == pytest.approx(gain_per_doubling(Point(32, 3900.0, 0, "", ""),
                                                                 Point(128, 4050.0, 0, "", "")), abs=1e-4)
    assert knee["gain_after"] < PARAMS[KNEE_GAIN].default


def test_a_collapse_at_the_largest_scale():
    ctx = _ctx([_curve({16: 2000.0, 32: 4000.0, 64: 2000.0})])
    (c,) = ctx.get("campaign_collapses")
    assert (c["previous"]["tasks"], c["last"]["tasks"]) == (32, 64) and c["drop"] == pytest.approx(0.5)
    assert PARAMS[COLLAPSE].default < 0.5
    assert _ctx([_curve({16: 2000.0, 32: 4000.0, 64: 3900.0})]).get("campaign_collapses") == []  # 2.5 %: not one


def test_a_drop_against_the_baseline_is_a_regression():
    old = _curve({16: 2000.0, 32: 4000.0})
    new = _curve({16: 2000.0, 32: 3000.0})
    (r,) = _ctx([new], [old]).get("campaign_regressions")
    assert r["tasks"] == 32 and r["drop"] == pytest.approx(0.25)
    assert _ctx([old], [old]).get("campaign_regressions") == []


def test_a_job_is_not_a_campaign():
    ctx = FactContext(job(module("POSIX", [(1, 0, {"POSIX_WRITES": 1})])), SiteConfig())
    with pytest.raises(NotApplicable):
        ctx.get("campaign_knees")

