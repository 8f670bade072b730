"""The verification's statistics (replay.stats), its round bookkeeping (replay.sampling) and its
one wording (advisor.verification), on numbers built here: no MPI, no timing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.verification import Side, Verification, sentence
from advisor.verify import Variant, _verification
from replay import stats
from replay.executor import _evict, parse_args
from replay.launch import LaunchOptions
from replay.sampling import (MAX_PASSES, STOP_BEATEN, STOP_DECIDED, STOP_EXTENDED, STOP_FUTILE, STOP_HALVED,
                             STOP_MAX_PAIRS, STOP_REPEAT, Budget, RaceRule, Schedule, passes_for)

# Student's t quantiles from the tables (scipy.stats.t.ppf), to 1e-6
T_TABLE = {(0.975, 1): 12.706205, (0.975, 4): 2.776445, (0.975, 9): 2.262157, (0.975, 39): 2.022691,
           (0.995, 2): 9.924843, (0.99875, 6): 4.980694, (0.999, 120): 3.159539}


@pytest.mark.parametrize(("p", "df"), list(T_TABLE))
def test_t_quantile_matches_the_tables(p, df):
    assert stats.t_quantile(p, df) == pytest.approx(T_TABLE[(p, df)], abs=1e-5)
    assert stats.t_quantile(1 - p, df) == pytest.approx(-T_TABLE[(p, df)], abs=1e-5)


@given(st.floats(-50, 50), st.integers(1, 300))
def test_t_cdf_is_a_distribution_function(t, df):
    c = stats.t_cdf(t, df)
    assert 0.0 <= c <= 1.0
    assert stats.t_cdf(t + 0.5, df) >= c - 1e-12
    assert c + stats.t_cdf(-t, df) == pytest.approx(1.0, abs=1e-12)


def test_look_schedule_grows_and_ends_at_max_pairs():
    assert stats.look_schedule(5, 40) == (5, 7, 10, 14, 20, 28, 40)
    assert stats.look_schedule(3, 3) == (3,)
    assert stats.look_schedule(1, 4)[0] == 2  # a spread needs two pairs
    policy = stats.Policy()
    assert policy.look_alpha() == pytest.approx(0.05 / (len(policy.looks()) + 1))


def _pairs(effect: float, sd: float, n: int, seed: int = 0) -> np.ndarray:
    return math.log(effect) + np.random.default_rng(seed).normal(0.0, sd, n)


def test_a_large_effect_is_improved_at_the_first_look():
    d = _pairs(3.0, 0.1, 5)
    decision = stats.sequential(d, stats.Policy())
    assert decision.verdict == stats.IMPROVED and decision.pairs == 5
    assert decision.ci[0] > 1.05 and decision.speedup == pytest.approx(math.exp(d.mean()))


def test_a_slower_fix_is_regressed_and_no_effect_is_equivalent_where_runs_reproduce():
    assert stats.sequential(_pairs(0.5, 0.1, 5), stats.Policy()).verdict == stats.REGRESSED
    exact = stats.Policy(reproducibility=0.0)
    flat = stats.sequential(_pairs(1.0, 0.02, 40, seed=3), exact)
    assert flat.verdict == stats.EQUIVALENT and 1 / 1.05 <= flat.ci[0] <= flat.ci[1] <= 1.05
    # where runs reproduce to +-10 % (the default), +-5 % cannot be told: never equivalent, and
    # the test does not ask for more pairs that could not decide
    here = stats.sequential(_pairs(1.0, 0.02, 40, seed=3), stats.Policy(), final=True)
    assert here.verdict == stats.INCONCLUSIVE and here.more_pairs is None
    assert here.ci[0] < 1 / 1.05 and here.ci[1] > 1.05


def test_the_interval_never_narrows_below_the_reproducibility():
    policy = stats.Policy(reproducibility=0.04)
    tight = stats.decide(_pairs(2.0, 1e-4, 40), policy)
    assert math.log(tight.ci[1] / tight.ci[0]) / 2 == pytest.approx(stats.Z95 * 0.04, rel=1e-2)


@pytest.mark.parametrize("sd", [0.02, 0.05])
def test_a_rerun_does_not_reverse_a_verdict_on_no_effect(sd):
    """Each measurement draws its own offset from the run-to-run spread (sd 0.05 in ln speedup,
    as measured on this VM), which its pairs cannot see. Without the floor, 1,000 measurements of
    no effect call it improved or regressed more often than alpha; with it, under a fifth of
    alpha (the demo's collective fix: 0.89x 'regressed' in one run, 0.99x 'equivalent' the next)."""
    rng = np.random.default_rng(11)
    runs = [rng.normal(rng.normal(0.0, 0.05), sd, 40) for _ in range(1000)]

    def false_calls(policy: stats.Policy) -> float:
        verdicts = [stats.sequential(d, policy).verdict for d in runs]
        return sum(v in (stats.IMPROVED, stats.REGRESSED) for v in verdicts) / len(verdicts)

    assert false_calls(stats.Policy(reproducibility=0.0)) > stats.Policy.alpha
    assert false_calls(stats.Policy(reproducibility=0.05)) < stats.Policy.alpha / 5


def test_an_effect_at_the_margin_stays_inconclusive_and_says_what_more_would_take():
    d = _pairs(1.06, 0.05, 40, seed=1)
    final = stats.sequential(d, stats.Policy(), final=True)
    assert final.verdict == stats.INCONCLUSIVE and final.pairs == 40
    assert final.ci[0] < 1.05 < final.ci[1]
    assert final.more_pairs is None or final.more_pairs > 40
    noisy = stats.sequential(_pairs(1.3, 0.4, 5, seed=2), stats.Policy(), final=True)
    assert noisy.verdict == stats.INCONCLUSIVE and noisy.more_pairs > 5


def test_the_first_deciding_look_is_the_verdict():
    """Later pairs never overturn a verdict the test already gave (the measurement stopped there)."""
    d = np.concatenate([_pairs(2.0, 0.05, 5), _pairs(0.5, 0.05, 35)])
    assert stats.sequential(d, stats.Policy()).pairs == 5
    assert stats.sequential(d, stats.Policy()).verdict == stats.IMPROVED


@pytest.mark.parametrize("sd", [0.02, 0.2, 0.5])
def test_no_effect_is_rarely_called_improved_or_regressed(sd):
    """Under no effect at all, a false improved/regressed over all the looks of a measurement
    stays under alpha (5 %) however noisy the pairs: 2,000 simulated measurements, fixed seed."""
    rng = np.random.default_rng(7)
    verdicts = [stats.sequential(rng.normal(0.0, sd, 40), stats.Policy()).verdict for _ in range(2000)]
    false = sum(v in (stats.IMPROVED, stats.REGRESSED) for v in verdicts)
    assert false / len(verdicts) < stats.Policy.alpha


def test_a_decided_but_wide_interval_measures_on_for_the_speedup():
    """2x with a spread of 0.2: decided at 5 pairs, but 1.3x-3.1x would not repeat; settled once
    the interval is within x/÷1.25, with the same verdict."""
    d = _pairs(2.0, 0.2, 40, seed=4)
    early = stats.sequential(d[:5], stats.Policy())
    assert early.verdict == stats.IMPROVED and not early.settled
    settled = stats.sequential(d, stats.Policy())
    assert settled.settled and settled.verdict == stats.IMPROVED and settled.pairs > 5
    assert math.log(settled.ci[1] / settled.ci[0]) / 2 <= math.log(1.25)
    loose = stats.sequential(d[:8], stats.Policy(), final=True)
    assert loose.verdict == stats.IMPROVED and not loose.settled  # the budget ended it: verdict kept


def test_between_run_sd_recovers_the_spread_the_pairs_cannot_see():
    """Runs whose means scatter by 0.05 beyond their standard errors give back about 0.05; runs
    that agree within their errors give 0 (the estimate behind [replay] reproducibility)."""
    rng = np.random.default_rng(3)
    groups = [[(effect + rng.normal(0, 0.05) + rng.normal(0, 0.02), 0.02) for _ in range(8)]
              for effect in rng.normal(0, 1, 40)]
    assert stats.between_run_sd(groups) == pytest.approx(0.05, abs=0.01)
    agree = [[(effect + rng.normal(0, 0.02), 0.02) for _ in range(8)] for effect in rng.normal(0, 1, 40)]
    assert stats.between_run_sd(agree) < 0.01
    assert math.isnan(stats.between_run_sd([[(0.1, 0.02)]]))


def test_fixed_policy_looks_once():
    policy = stats.Policy.fixed(7)
    assert policy.looks() == (7,) and policy.look_alpha() == pytest.approx(0.025)


def test_log_ratios_pair_by_round_and_spread_is_of_logs():
    assert stats.log_ratios([2.0, 4.0, 9.9], [1.0, 1.0]).tolist() == pytest.approx([math.log(2), math.log(4)])
    assert stats.relative_spread([1.0, 1.0, 1.0]) == 0.0
    assert math.isnan(stats.relative_spread([1.0]))


# -- auto-ranging and rounds --------------------------------------------------------------------
def test_passes_make_a_sample_last_the_minimum():
    assert passes_for(0.05, 1.0) == 20
    assert passes_for(0.3, 1.0) == 4
    assert passes_for(2.0, 1.0) == 1
    assert passes_for(0.05, 0.0) == 1
    assert passes_for(0.0, 1.0) == MAX_PASSES


def _run(schedule: Schedule, times) -> list[list[int]]:
    """Rounds until the schedule stops; times(v, round) is variant v's time per pass."""
    rounds = []
    while order := schedule.next_round():
        rounds.append(order)
        for v in order:
            schedule.add(v, times(v, len(rounds) - 1))
        schedule.end_round(0.01, 0)
    return rounds


def test_schedule_stops_each_fix_when_decided():
    rng = np.random.default_rng(0)
    effect = {0: 1.0, 1: 1 / 3.0, 2: 1.0 / 1.2}  # baseline, a 3x fix, a 1.2x fix

    def times(v, r):
        return effect[v] * math.exp(rng.normal(0, 0.05))

    schedule = Schedule(3, stats.Policy(), adaptive=True)
    rounds = _run(schedule, times)
    assert schedule.stop_reason == STOP_DECIDED
    assert schedule.stopped_at[1] == 5 and schedule.stopped_at[2] >= 5
    assert all(sorted(r)[0] == 0 for r in rounds)  # the baseline runs every round
    assert sum(1 in r for r in rounds) == 5  # the decided fix leaves the rounds
    assert {tuple(r) for r in rounds[:5]} != {(0, 1, 2)}  # shuffled order


def test_a_fix_out_of_reach_stops_early_and_leaves_the_rounds_to_the_others():
    """1.05x under a spread of 0.3 would need hundreds of pairs: stopped at the third look, while
    a 1.3x fix under the same noise goes on to its decision."""
    effect = {0: 1.0, 1: 1 / 1.05, 2: 1 / 1.3}
    exact = stats.Policy(reproducibility=0.0)  # the pairs' noise alone (the floor: tests above)
    schedule = Schedule(3, exact, adaptive=True)
    noise = np.random.default_rng(5).normal(0, 1, (3, 40))  # one draw per (variant, round): any order
    _run(schedule, lambda v, r: effect[v] * math.exp(noise[v, r] * (0.3 if v else 0.02)))
    looks = exact.looks()
    assert schedule.stopped_why[1] == STOP_FUTILE and schedule.stopped_at[1] == looks[2]
    assert schedule.stopped_why[2] == STOP_DECIDED and schedule.stopped_at[2] > looks[2]


def test_schedule_without_a_decision_ends_at_max_pairs_or_the_budget():
    def flat(v: int, r: int) -> float:
        return 1.0 if v == 0 else (1.06 if r % 2 else 0.94) ** -1

    schedule = Schedule(2, stats.Policy(max_pairs=10, reproducibility=0.0), adaptive=True)
    _run(schedule, flat)
    assert schedule.stop_reason == STOP_MAX_PAIRS and schedule.rounds == 10
    # where runs reproduce to +-10 %, +-5 % cannot be decided at all: out of reach at the third look
    here = Schedule(2, stats.Policy(), adaptive=True)
    _run(here, flat)
    assert here.stopped_why[1] == STOP_FUTILE and here.rounds == stats.Policy().looks()[2]
    timed = Schedule(2, stats.Policy(), adaptive=True, budget=Budget(seconds=0.0))
    _run(timed, lambda v, r: 1.0)
    assert timed.stop_reason == "time budget" and timed.rounds == 2  # two rounds whatever the budget
    fixed = Schedule(3, stats.Policy(), adaptive=False, repeat=4)
    _run(fixed, lambda v, r: 1.0)
    assert fixed.stop_reason == STOP_REPEAT and fixed.rounds == 4


# -- one wording -------------------------------------------------------------------------------
def test_sentences_say_one_thing_per_verdict():
    assert sentence("improved", 2.26, [1.72, 2.96], 5) == "improved: 2.26x faster (95 % CI 1.72x-2.96x, 5 pairs)"
    assert sentence("regressed", 0.5, [0.4, 0.6], 7).startswith("regressed: 2.00x slower (speedup 0.50x")
    assert sentence("equivalent", 1.01, [0.98, 1.03], 10).startswith("equivalent: within +-5% (speedup 1.01x")
    text = sentence("inconclusive", 1.07, [1.03, 1.1], 40, more_pairs=47, more_s=90.0, stop_reason="max-pairs")
    assert text == ("inconclusive: speedup 1.07x, 95 % CI 1.03x-1.10x after 40 pairs (max-pairs); "
                    "about 47 pairs in all, ~1.5 min would decide")
    assert "margin: more pairs would not decide" in sentence("inconclusive", 1.05, [1.0, 1.1], 40)
    assert sentence("inconclusive", 1.0, [0.9, 1.1], 40, reproducibility=0.04).endswith(
        "more pairs would not decide: the effect is within this target's run-to-run reproducibility (+-8%) "
        "of the +-5% margin")
    assert sentence("not-verifiable", why="no room") == "not verifiable: no room"


def test_verification_round_trip_and_legacy_verdicts():
    v = Verification(verdict="improved", reason=sentence("improved", 2.0, [1.5, 2.5], 5), speedup=2.0,
                     ci95=[1.5, 2.5], pairs=5, baseline=Side(median_s=0.2, passes=5), fixed=Side(median_s=0.1))
    again = Verification.from_dict(v.to_dict())
    assert again == v and again.detail == "2.00x faster (95 % CI 1.50x-2.50x, 5 pairs)"
    old = Verification.from_dict({"verdict": "no-change", "speedup": 1.1, "reason": "r", "unknown": 1})
    assert old.verdict == "inconclusive" and old.detail == "r"
    assert Verification.from_dict({"verdict": "maybe"}) is None and Verification.from_dict("x") is None
    assert Verification.not_verifiable("no room").reason == "not verifiable: no room"


@given(st.floats(0.05, 20.0), st.floats(0.0, 0.3), st.integers(3, 40))
def test_the_sentence_says_the_speedup_the_json_keeps(ratio, noise, pairs):
    """Words and JSON come from one rounded number: 2.2849 is not '2.28x' beside a JSON 2.285."""
    v = _simulated_verification(ratio, noise, pairs, stats.Policy())
    assert f"{v.speedup:.2f}x" in v.reason
    assert v.ci95 is None or all(f"{x:.2f}x" in v.reason for x in v.ci95)


def test_the_verdict_is_decided_on_the_interval_as_reported():
    """An interval from 1.0502 is reported from 1.05 (4 digits), which does not clear a 5 % margin:
    not improved (CI once printed 'improved ... CI 1.05x-1.59x' and the JSON said 1.05)."""
    policy = stats.Policy(reproducibility=0.0)
    unit = np.array([-2.0, -1.0, 0.0, 1.0, 2.0]) / math.sqrt(2.5)  # mean 0, sd 1
    half = stats.t_quantile(1 - policy.look_alpha() / 2, 4) * 0.05 / math.sqrt(5)
    look = stats.decide(math.log(1.0502) + half + 0.05 * unit, policy)
    assert look.ci[0] == 1.05 and look.verdict == stats.INCONCLUSIVE
    assert stats.outward(1.0502, 1.5913) == (1.05, 1.592) and stats.outward(0.99999, 1.0000001) == (0.9999, 1.001)


@given(st.floats(0.85, 1.25), st.floats(0.0, 0.2), st.integers(3, 40))
def test_the_reported_interval_supports_the_verdict(ratio, noise, pairs):
    """Whatever the verdict, the interval the JSON keeps says it: above 1 + margin for improved,
    below 1 / (1 + margin) for regressed, inside both for equivalent (no floor: all four occur)."""
    v = _simulated_verification(ratio, noise, pairs, stats.Policy(reproducibility=0.0))
    lo, hi = v.ci95 or (math.nan, math.nan)
    top, bottom = 1 + v.margin, 1 / (1 + v.margin)
    assert {"improved": lo > top, "regressed": hi < bottom, "equivalent": bottom <= lo and hi <= top,
            "inconclusive": True}[v.verdict], v


def _simulated_verification(ratio: float, noise: float, pairs: int, policy: stats.Policy) -> Verification:
    rng = np.random.default_rng(pairs)
    base = [1.0 + noise * rng.random() for _ in range(pairs)]
    fixed = [t / ratio * (1 + noise * rng.random()) for t in base]
    return _verification(Variant("coalesce", {}, plan=object()), {"runs": {
        "baseline": _replayed_side(base), "coalesce": _replayed_side(fixed)},
        "stop_reason": "", "cache_policy": "evict"}, {}, policy)


def _replayed_side(times: list[float]) -> dict:
    return {"runs": [{"time_s": t, "sample_s": t, "bytes_read": 0, "bytes_written": 1 << 20, "passes": 1,
                      "data_ops": 16} for t in times]}


# -- the launcher and the executor agree on the options -----------------------------------------
def test_launch_options_reach_the_executor_unchanged():
    opts = LaunchOptions(np=2, repeat=3, cache="evict", odirect=True, min_sample_s=0.75,
                         policy=stats.Policy(margin=0.1, reproducibility=0.02, min_pairs=4, max_pairs=12),
                         budget_s=90.0, budget_bytes=5e9)
    args = parse_args([*opts.executor_args(), "--plan", "p", "--scratch", "s", "--out", "o"])
    assert (args.repeat, args.cache, args.odirect, args.min_sample_s) == (3, "evict", True, 0.75)
    assert (args.adaptive, args.margin, args.min_pairs, args.max_pairs) == (True, 0.1, 4, 12)
    assert args.reproducibility == 0.02
    assert (args.budget_s, args.budget_bytes) == (90.0, 5e9)
    plain = parse_args([*LaunchOptions(np=1).executor_args(), "--plan", "p", "--scratch", "s", "--out", "o"])
    assert not plain.adaptive and math.isinf(plain.budget_s) and plain.min_sample_s == 0.0


def test_evict_writes_a_file_back_and_keeps_its_data(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 65536)
    _evict(str(path))
    assert path.read_bytes() == b"x" * 65536


# -- a tune's rung: the race's decisions between rounds ----------------------------------------
def test_a_race_stops_sampling_what_halving_sets_aside_and_what_the_leader_beats():
    """A rung of the job and three candidates, 3 rounds, halving keeping one: the candidate 20x
    behind the leader in both first rounds gets no third sample, nor does one 2x behind; a
    candidate near the leader is sampled to the rung's end. A longer rung rules out with
    confidence what the leader beats in every round (3 shared rounds at the race's level)."""
    noise = np.random.default_rng(3).normal(0, 0.05, (4, 12))
    effect = {0: 1.0, 1: 1 / 40, 2: 1 / 2, 3: 1 / 36}  # job, the leader, 20x behind it, near it

    def times(v, r):
        return effect[v] * math.exp(noise[v, r])

    rule = RaceRule(keep=1)
    schedule = Schedule(4, stats.Policy(), adaptive=False, repeat=3, race=rule)
    rounds = _run(schedule, times)
    assert [len(t) for t in schedule.times] == [3, 3, 2, 3] and schedule.stop_reason == STOP_REPEAT
    assert schedule.stopped_why[2] == STOP_HALVED and schedule.stopped_at[2] == 2
    assert all(0 in r for r in rounds)  # the reference is sampled in every round
    # keeping two: the candidate 20x behind is not halved, it is beaten with confidence at 3 rounds
    wide = Schedule(4, stats.Policy(), adaptive=False, repeat=5, race=RaceRule(keep=3))
    _run(wide, times)
    assert wide.stopped_why[2] == STOP_BEATEN and wide.stopped_at[2] == 3 and len(wide.times[1]) == 5
    # the same rung without a race: every variant every round
    plain = Schedule(4, stats.Policy(), adaptive=False, repeat=3)
    _run(plain, times)
    assert [len(t) for t in plain.times] == [3, 3, 3, 3]


def test_a_race_extends_an_undecided_leader_beside_the_reference_up_to_its_projection():
    """Two hint settings near 1.5x the job under 15 % noise: after the rung's 3 rounds the leader
    is undecided and a decision is projected within max_pairs; it goes on beside the job alone,
    in the same job, and stops once decided on the verification's schedule (or at the projected
    pairs). A leader decided in the rounds, or one far from its rival, is not extended."""
    noise = np.random.default_rng(8).normal(0, 0.15, (3, 20))
    effect = {0: 1.0, 1: 1 / 1.6, 2: 1 / 1.5}

    def times(v, r):
        return effect[v] * math.exp(noise[v, r])

    policy = stats.Policy(max_pairs=10)
    schedule = Schedule(3, policy, adaptive=False, repeat=3, race=RaceRule(keep=1, extend_to=10))
    first = stats.sequential(np.log(np.array([times(0, r) / times(1, r) for r in range(3)])), policy, final=True)
    rounds = _run(schedule, times)
    assert not first.decided and first.more_pairs and first.more_pairs <= 10
    lead = schedule.extended
    assert lead in (1, 2) and schedule.stopped_why[lead] == STOP_EXTENDED
    other = 3 - lead
    assert len(schedule.times[other]) <= 3 and len(schedule.times[0]) == len(schedule.times[lead]) > 3
    assert all(set(r) == {0, lead} for r in rounds[3:])
    n = len(schedule.times[lead])
    decided = stats.sequential(schedule.log_ratios(lead), policy).decided
    assert decided or n >= max(first.more_pairs, 5)
    # the progress line counts the rung's rounds, then says the leader went on (not "of at most 10")
    assert schedule.progress().startswith(f"round {schedule.rounds}, the leader beside the reference (at most 10)")
    assert Schedule(3, policy, adaptive=False, repeat=3, race=RaceRule(keep=1, extend_to=10)).progress() \
        .startswith("round 0 of at most 3,")
    # decided within the rounds: the rung ends there
    sure = Schedule(3, policy, adaptive=False, repeat=3, race=RaceRule(keep=1, extend_to=10))
    _run(sure, lambda v, r: {0: 1.0, 1: 0.1, 2: 0.11}[v] * math.exp(noise[v, r] / 10))
    assert sure.extended is None and sure.rounds == 3
    # no extension asked for (extend_to 0): exactly the rung's rounds
    plain = Schedule(3, policy, adaptive=False, repeat=3, race=RaceRule(keep=1))
    _run(plain, times)
    assert plain.extended is None and plain.rounds == 3
