"""Chains of references in `ioadvisor tune`: a candidate measured only beside another candidate,
itself measured only beside a third, gets its speedup against the job through every link."""

from __future__ import annotations

import math

import numpy as np

from advisor.api import load
from advisor.tune import chain, race
from advisor.verify import replay_plan
from replay import stats

FSYNC = "generated/n_fsync_per_write_Y_4k/case.darshan"  # 4 KiB writes, an fsync after each


def _t_half(x: np.ndarray) -> np.ndarray:
    """The 95 % Student-t half-width of each row's mean."""
    n = x.shape[1]
    return stats.t_quantile(0.975, n - 1) * x.std(axis=1, ddof=1) / math.sqrt(n)


def test_a_chains_interval_covers_at_least_95_percent_whatever_its_links():
    """The links' Student-t half-widths added in quadrature (chain.chain_interval, link by link):
    at least 95 % coverage of the true sum for 1-3 links of 2-5 rounds, equal or very unequal
    spreads (Banerjee's rule; a Welch-type interval would undercover with 2-round links)."""
    rng = np.random.default_rng(26)
    draws = 4000
    for counts, spreads in [((3, 2), (1.0, 10.0)), ((2, 2, 2), (1.0, 10.0, 0.1)), ((3, 5, 2), (0.1, 0.1, 10.0)),
                            ((5, 5, 5), (1.0, 1.0, 1.0)), ((3, 2, 2), (1.0, 1.0, 1.0))]:
        links = [rng.normal(0.0, s, (draws, n)) for n, s in zip(counts, spreads)]  # true ln ratios 0
        covered = 0
        for i in range(draws):
            first = links[0][i]
            centre, half = float(first.mean()), float(_t_half(first[None])[0])
            for x in links[1:]:
                centre, lo, _ = chain.chain_interval(centre, half, list(x[i]))
                half = centre - lo
            covered += abs(centre) <= half
        assert covered / draws >= 0.94, (counts, spreads, covered / draws)


def test_a_best_two_links_from_the_job_is_decided_through_both(corpus, tmp_path):
    """Real replays: fsync at close beside the job (5 pairs), coalescing added beside it, and a
    larger coalesce size beside that one only. The last one's verdict is decided through both
    links (the middle one has no pairs beside the job; on a quiet machine it clears the margin: no
    final pairs beside the job, whose samples are the slowest); the reported verdict says the
    same, and its chained interval overlaps a verification of it beside the job."""
    from advisor.config import ReplayConfig
    from advisor.tune.search import Options, _Rungs, _verdicts
    from advisor.verify import measure

    profile = load(corpus / FSYNC)
    base = replay_plan(profile, np=2, scale=0.2)
    settings = ReplayConfig(min_sample_s=0.05, history=False)
    doc = {"replay_s": 0.0, "context": {}}
    rungs = _Rungs(profile, base, tmp_path, settings, Options(np=2), doc, None)
    at_close = {"transform": "fsync", "mode": "at-close"}
    first, middle, last = (race.Entry(fixes=fixes, origin="setting", status=race.RACING) for fixes in (
        [at_close], [at_close, {"transform": "coalesce", "transfer_size": 64 << 10}],
        [at_close, {"transform": "coalesce", "transfer_size": 1 << 20}]))
    entries = {e.key: e for e in (first, middle, last)}
    r = race.Race(entries, list(entries), nranks=base.nranks, rung=0)
    r.record(rungs.run([first], race.FINAL_PAIRS))
    r.ref = first.key
    r.record(rungs.run([middle], race.FIRST_ROUNDS, first.fixes))
    r.ref = middle.key
    r.record(rungs.run([last], race.FIRST_ROUNDS, middle.fixes))
    assert last.pairs == middle.pairs == 0 and chain.estimate(entries, first.key) is not None
    # one link alone does not reach the job: the middle one has no pairs beside it
    assert chain._chain(entries, last)[0] == middle.key and len(middle.direct()) == 0
    centre, half = chain.estimate(entries, last.key)
    # the chain's half-width holds every link's: wider than the first link's alone
    assert half > chain.estimate(entries, first.key)[1]
    # the search's decision and the reported verdict compose the same links the same way: decided
    # through both (a quiet machine: the chain clears the margin), or, under heavy load, undecided in both
    decided = race.settled(entries, last)
    v = _verdicts(r, base, tmp_path, settings, doc)[last.key]
    assert "chained" in v.reason and v.ci95[0] <= v.speedup <= v.ci95[1]
    assert (v.verdict == "improved") == decided, (v.verdict, v.ci95, first.direct(), last.against(), centre, half)
    assert math.isclose(math.log(v.speedup), centre, abs_tol=0.05)
    direct = measure(profile, last.fixes, tmp_path, repeat=3, base=base, settings=settings).verifications[0]
    assert direct.ci95[0] <= v.ci95[1] and v.ci95[0] <= direct.ci95[1], (direct.ci95, v.ci95)
