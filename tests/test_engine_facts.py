"""Fact helpers on real logs: which counter record each DXT segment belongs to."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.facts.requests import segment_rows
from advisor.ingest.darshan_log import load
from advisor.profile import SHARED_RANK, ModuleRecords

TRACES = Path(__file__).resolve().parents[1] / "traces"


@pytest.mark.parametrize("log, shared", [("ior-small-shared-4k.darshan", True),
                                         ("ior-good-fpp-1m.darshan", False)])
def test_each_segment_maps_to_its_file_on_its_rank_or_the_files_shared_record(log, shared):
    profile = load(TRACES / log)
    records, trace = profile.records["POSIX"], profile.dxt["DXT_POSIX"]
    rows = segment_rows(records, trace)
    assert len(rows) == len(trace.rank) > 0 and (rows >= 0).all()
    assert np.array_equal(records.ids[rows], trace.record_id)
    expected_ranks = np.full(len(rows), SHARED_RANK) if shared else trace.rank
    assert np.array_equal(records.ranks[rows], expected_ranks)
    assert len(np.unique(trace.rank)) == 4  # segments of every rank were mapped


def test_a_segment_without_a_counter_record_maps_to_no_row():
    profile = load(TRACES / "ior-good-fpp-1m.darshan")
    records, trace = profile.records["POSIX"], profile.dxt["DXT_POSIX"]
    keep = records.ranks != 0  # as if rank 0's record had been lost (a partial log)
    without_rank0 = ModuleRecords(records.module, records.ids[keep], records.ranks[keep])
    rows = segment_rows(without_rank0, trace)
    assert np.array_equal(rows == -1, trace.rank == 0)
    assert np.array_equal(without_rank0.ranks[rows[rows >= 0]], trace.rank[rows >= 0])
