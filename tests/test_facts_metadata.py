"""Metadata facts on hand-built POSIX records: where the metadata time went, small files."""

from __future__ import annotations

import pytest

from advisor.engine.chain import _fix
from advisor.engine.evaluator import Evaluator
from advisor.engine.rules import load_catalogue
from tests.profiles import SHARED, facts, job, module


def _meta(rows):
    return facts(job(module("POSIX", [(rid, rank, {"POSIX_OPENS": 1, "POSIX_F_META_TIME": t})
                                      for rid, rank, t in rows]), nprocs=4))


def test_metadata_time_on_per_process_files_against_shared_ones():
    # file 1 shared (reduced record), file 2 opened by ranks 0 and 1 (shared too), files 3-4 own
    ctx = _meta([(1, SHARED, 1.0), (2, 0, 0.5), (2, 1, 0.5), (3, 2, 2.0), (4, 3, 4.0)])
    assert ctx.get("own_file_meta_share") == pytest.approx(6.0 / 8.0)
    assert _meta([(1, SHARED, 0.0)]).get("own_file_meta_share") == 0.0  # no metadata time: no share


def test_the_metadata_rules_fix_follows_where_the_time_went():
    """MD001 proposes one shared file for per-process files, aggregators for shared ones."""
    md001 = load_catalogue().get("MD001")
    own = _meta([(3, 2, 2.0), (4, 3, 4.0)])
    shared = _meta([(1, SHARED, 3.0), (4, 3, 1.0)])
    assert _fix(md001, Evaluator(own.get, lambda code: False), own) == {"transform": "layout", "mode": "shared"}
    # aggregators for 4 ranks would be all 4: every rank still moves its own bytes, no fix (review12)
    assert _fix(md001, Evaluator(shared.get, lambda code: False), shared) is None
    wide = facts(job(module("POSIX", [(1, SHARED, {"POSIX_OPENS": 1, "POSIX_F_META_TIME": 3.0})]), nprocs=64))
    assert _fix(md001, Evaluator(wide.get, lambda code: False), wide) == {"transform": "aggregate", "aggregators": 8}


def test_the_syncs_time_is_the_write_time_the_writes_themselves_did_not_take():
    """fresh14's 4 KiB writes with an fsync every 4 (Recorder): the write time less the writes' own
    durations is the syncs' (0.93 s of a 1.0 s run per process); a file DXT did not time every write
    of is left out, or its whole write time would read as syncs."""
    from pathlib import Path

    import numpy as np

    from advisor import api
    from advisor.config import SiteConfig
    from advisor.facts import FactContext

    trace = Path(__file__).parent / "data" / "recorder" / "posix-fsync-every-4"
    log = api.load(str(trace))
    ctx = FactContext(log, SiteConfig())
    assert ctx.get("fsync_count") == 4096 and ctx.get("writes_per_sync") == 4
    assert 0.85 < ctx.get("sync_time_s") < 1.0 and ctx.get("sync_share_of_write_time") > 0.9
    dxt = log.dxt["DXT_POSIX"]
    one_file = dxt.record_id == dxt.record_id[0]
    log.dxt["DXT_POSIX"] = dxt.subset(~one_file | (np.cumsum(one_file) > 10))  # 10 of its writes untimed
    partial = FactContext(log, SiteConfig())
    assert 0.6 * ctx.get("sync_time_s") < partial.get("sync_time_s") < 0.8 * ctx.get("sync_time_s")


def test_md011_reports_syncs_every_few_writes_by_their_time_and_leaves_md010s_to_it(corpus):
    """MD011 fires on the syncs every 4 writes (its evidence the syncs' own time, its fix fsync at
    close), stays silent where MD010 (a sync per write) fires and on IOR -e's 4 syncs at close."""
    from pathlib import Path

    from advisor import api
    from advisor.config import SiteConfig
    from advisor.engine import diagnose

    trace = Path(__file__).parent / "data" / "recorder" / "posix-fsync-every-4"
    found = {f.code: f for f in diagnose(api.load(str(trace)), SiteConfig()).findings}
    md011 = found["MD011"]
    assert "MD010" not in found and md011.severity == "high"
    assert md011.evidence["writes_per_sync"] == 4 and md011.evidence["sync_share_of_write_time"] > 0.9
    assert 0.85 < md011.cost_s < 1.0 and "one every 4 writes" in md011.message
    assert md011.fix == {"transform": "fsync", "mode": "at-close"}
    for name, silent_because in (("n_fsync_per_write_Y_4k", "MD010"), ("h2_fsync_e", None)):
        codes = {f.code for f in diagnose(api.load(str(corpus / "generated" / name / "case.darshan")),
                                          SiteConfig()).findings}
        assert "MD011" not in codes and (silent_because is None or silent_because in codes)
