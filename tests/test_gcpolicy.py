"""The garbage collector's work in ioadvisor's processes: young collections every THRESHOLD
allocations, and a diagnosis that leaves no cycles behind for it (advisor.gcpolicy)."""

from __future__ import annotations

import gc

from advisor import gcpolicy
from advisor.engine import diagnose
from advisor.facts import FactContext
from advisor.ingest import load_profile


def test_young_collections_are_rarer_and_older_ones_unchanged():
    before = gc.get_threshold()
    try:
        gcpolicy.for_bursts()
        assert gc.get_threshold() == (gcpolicy.THRESHOLD, *before[1:])
    finally:
        gc.set_threshold(*before)


def test_a_diagnosis_leaves_no_cycles_to_collect(corpus):
    # both logs miss facts (no DXT, no Lustre layouts ...): the reasons kept for them once held
    # their tracebacks' frames, which held the fact context (5,000-9,000 objects in cycles)
    for log in ("darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/sample-badost.darshan",
                "darshan-logs/darshan_logs/partial_data_stdio/partial_data_stdio.darshan"):
        profile = load_profile(corpus / log)
        diagnose(profile)  # modules and caches loaded: what the second run leaves is its own
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            findings = diagnose(profile).findings
            gc.collect()
            left = list(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert findings, log  # a diagnosis that did something
        assert not [o for o in left if isinstance(o, FactContext)], log
        assert len(left) < 100, f"{log}: {len(left)} objects left in cycles"
