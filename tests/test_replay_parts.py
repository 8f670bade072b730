"""The plan builders' helpers (synthesized sizes and offsets, sessions, prefill, the DXT and IOR
sources) and one replay rank on its own (the ops it executes, the record it keeps), without the
launcher: tests/test_replay_plan.py and test_replay_fidelity.py run whole plans under mpiexec."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from advisor import api
from advisor.errors import InputError
from advisor.replay_plan import build_plan
from advisor.replay_plan.counters import BIN_HI, BIN_LO, mpiio_ids, split_even, synth_offsets, synth_sizes, \
    uniform_sizes
from advisor.replay_plan.dxt import usable_traces
from advisor.replay_plan.ior import ior_bytes_ops, ior_test
from advisor.replay_plan.stream import is_pseudo_file, prefill_bytes, split_sessions
from replay.collective import independent
from replay.edit import collapse, merge, stream_runs
from replay.plan import FSYNC, MPIIO, MPIIO_COLL, OPEN, POSIX, READ, WRITE, Plan, op_columns, size_bins
from replay.rank import Buffer, file_path
from replay.record import FIELDS, Record
from tests.conftest import CORPUS

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "traces" / "ior-small-shared-4k.darshan"
KiB, MiB = 1 << 10, 1 << 20


# -- counters: a stream consistent with Darshan's counters -----------------------------------------
def test_an_even_split_gives_the_remainder_to_the_first_parts():
    assert [split_even(10, 4, k) for k in range(4)] == [3, 3, 2, 2]
    assert uniform_sizes(10, 4).tolist() == [3, 3, 2, 2] and uniform_sizes(0, 2).tolist() == [1, 1]


def test_synthesized_sizes_keep_the_histogram_the_common_sizes_and_the_bytes():
    hist = np.zeros(len(BIN_HI), np.int64)
    hist[2] = 6  # 1K-10K
    hist[4] = 2  # 100K-1M
    budget = [(4096, 4)]
    nbytes = 4 * 4096 + 2 * 2000 + 2 * 500_000
    sizes = synth_sizes(hist, nbytes, budget, np.random.default_rng(1))
    assert np.bincount(size_bins(sizes), minlength=len(hist)).tolist() == hist.tolist()
    assert int((sizes == 4096).sum()) >= 4 and budget == [(4096, 0)]  # the common size used up
    assert int(sizes.sum()) == nbytes and (sizes >= BIN_LO[size_bins(sizes)]).all()


def test_synthesized_offsets_lay_requests_forward_then_trade_places_for_backward_jumps():
    sizes = np.full(100, 4096, np.int64)
    rng = np.random.default_rng(2)
    offsets, moved = synth_offsets(sizes, consec=60, seq=99, base=MiB, region=2 * MiB, rng=rng)
    ends = offsets + moved
    assert int((offsets[1:] == ends[:-1]).sum()) == 60 and (offsets[1:] >= ends[:-1]).all()  # no backward jump
    assert offsets.min() == MiB and ends.max() <= 3 * MiB  # the gaps spread over the file's region
    shuffled, moved2 = synth_offsets(sizes, consec=60, seq=80, base=MiB, region=2 * MiB, rng=rng)
    assert sorted(shuffled.tolist()) != shuffled.tolist() and sorted(moved2.tolist()) == sizes.tolist()
    assert shuffled.min() >= MiB and (shuffled + moved2).max() <= 3 * MiB


def test_a_log_without_mpiio_has_no_mpiio_records_to_replay():
    assert mpiio_ids(api.load(DEMO)) == set()
    ids = mpiio_ids(api.load(CORPUS / "generated" / "e_mpiio_collective_256k" / "case.darshan"))
    assert len(ids) == 1


# -- stream helpers ----------------------------------------------------------------------------------
def test_stream_helpers():
    assert is_pseudo_file("<STDOUT>") and is_pseudo_file("heatmap:POSIX") and not is_pseudo_file("/a/<b>")
    assert split_sessions(np.array([0, 0, 1, 1, 1]), 2) == [(0, 2), (2, 5)]  # cut at the phase change
    assert split_sessions(np.array([0, 0]), 3) == [(0, 1), (1, 2), (2, 2)]
    assert split_sessions(np.array([0]), 0) == []
    ops = op_columns(4, op=[READ, WRITE, READ, READ], file=[0, 1, 1, 1], offset=[0, 0, 0, 8 * KiB],
                     length=[KiB, 4 * KiB, 4 * KiB, KiB], phase=[0, 0, 1, 1])
    # file 0 is only read: its bytes must exist; file 1's reads find what phase 0 wrote, but not past it
    assert prefill_bytes(ops, 2).tolist() == [KiB, 9 * KiB]


# -- the DXT and IOR sources ------------------------------------------------------------------------
def test_dxt_source_is_the_traces_that_can_be_replayed():
    traces = usable_traces(api.load(DEMO))
    assert list(traces) == ["DXT_POSIX"] and len(traces["DXT_POSIX"]) == 4 * 2 * 4096
    plan = build_plan(api.load(DEMO), source="dxt", scale=1.0)
    assert plan.summary()["ops"]["write"] == plan.summary()["ops"]["read"] == 4 * 4096


def test_ior_source_is_the_first_test_with_sizes():
    profile = api.load(CORPUS / "ior-versions" / "ior_text_4.0.0.txt")
    test, ntests = ior_test(profile)
    assert ntests == 1 and test.params.transfer_size == MiB
    total, ops = ior_bytes_ops(profile)
    assert total == 2 * 16 * MiB * 2 * 2 * 2 and ops == total // MiB  # tasks x block x segments x w+r x reps
    with pytest.raises(InputError, match="states no transfer and block size"):
        ior_test(api.load(DEMO))


# -- plan editing ------------------------------------------------------------------------------------
def test_runs_collapse_and_merge_keep_execution_order():
    ops = op_columns(4, op=[WRITE] * 4, offset=[0, KiB, 2 * KiB, 8 * KiB], length=[KiB] * 4)
    run = stream_runs(ops, np.ones(4, bool), contiguous=True)
    assert run.tolist() == [0, 0, 0, 1]
    assert collapse(ops, run)["length"].tolist() == [3 * KiB, KiB]
    new = op_columns(1, op=[FSYNC])
    merged = merge(ops, new, anchors=np.array([2.5]), keep=np.array([True, True, True, False]))
    assert merged["op"].tolist() == [WRITE, WRITE, WRITE, FSYNC]


def test_independent_is_the_fallback_when_collective_calls_cannot_match():
    plan = Plan.build(2, op_columns(4, rank=[0, 0, 1, 1], op=[OPEN, WRITE, OPEN, WRITE], api=MPIIO_COLL,
                                    length=[0, KiB, 0, KiB], offset=[0, 0, 0, KiB]),
                      {"dir": np.zeros(1, np.int32), "comm": np.ones(1, np.int8)})
    fixed = independent(plan, "collective calls of rank 1 could not be matched")
    assert set(fixed.ops["api"].tolist()) == {MPIIO} and fixed.files["comm"].tolist() == [0]
    assert fixed.meta["notes"] == ["collective calls of rank 1 could not be matched"]


# -- one rank ----------------------------------------------------------------------------------------
def test_scratch_paths_hold_ids_only_and_buffers_are_aligned():
    assert file_path(Path("/s/run1"), np.array([0, 3]), 1) == "/s/run1/d00003/f0000001"
    buf = Buffer(10 * KiB)
    assert buf.size >= 10 * KiB and len(buf.view(3000)) == 3000
    assert buf.view(3000) is buf.view(3000) and bytes(buf.view(4))[:4] == b"\x00\x01\x02\x03"


def test_a_record_counts_what_a_rank_did_per_file():
    rec = Record(2)
    rec.add(1, "writes", 2)
    rec.add(1, "bytes_written", 8 * KiB)
    rec.add_meta(0, OPEN)
    rec.add_sizes(op_columns(3, op=[WRITE, WRITE, READ], file=[1, 1, 0], length=[4 * KiB, 4 * KiB, 50],
                             flags=[0, 0, 0]))
    totals = dict(zip(FIELDS, rec.totals().tolist()))
    assert totals["writes"] == 2 and totals["bytes_written"] == 8 * KiB and totals["opens"] == 1
    assert rec.m[1, len(FIELDS) + 10 + 2] == 2  # two writes in the 1K-10K bin of file 1


RANK_SCRIPT = """
import json, sys
from pathlib import Path
import numpy as np
from mpi4py import MPI
from replay.plan import Plan, op_columns, OPEN, CREATE, WRITE, READ, CLOSE, POSIX
from replay.rank import Buffer, RankRunner
from replay.record import reduce_record

rundir = Path(sys.argv[1])
ops = op_columns(6, op=[CREATE, WRITE, WRITE, CLOSE, OPEN, READ], offset=[0, 0, 4096, 0, 0, 0],
                 length=[0, 4096, 4096, 0, 0, 8192], api=POSIX)
plan = Plan.build(1, ops, {"dir": np.zeros(1, np.int32), "source": np.array([77], np.uint64)})
(rundir / "d00000").mkdir(parents=True)
runner = RankRunner(MPI.COMM_SELF, plan, rundir, odirect=False, think_time=False, buffer=Buffer(1 << 20), hints={})
elapsed, phases = runner.run(plan.nphases)
doc = reduce_record(MPI.COMM_SELF, runner.record, plan.files["source"])
print(json.dumps({"elapsed": elapsed, "totals": doc["totals"], "per_file": doc["per_file"]}))
"""


def test_one_rank_executes_its_ops_and_keeps_their_record(tmp_path):
    done = subprocess.run([sys.executable, "-c", RANK_SCRIPT, str(tmp_path / "run")], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout.splitlines()[-1])
    assert (tmp_path / "run" / "d00000" / "f0000000").stat().st_size == 8192
    t = doc["totals"]
    assert (t["writes"], t["bytes_written"], t["reads"], t["bytes_read"], t["opens"], t["closes"]) == \
        (2, 8192, 1, 8192, 2, 1)  # the plan's one close; the runner closes the read session uncounted
    (f,) = doc["per_file"]
    assert f["source"] == 77 and f["write_sizes"][2] == 2 and f["read_sizes"][2] == 1
    assert doc["elapsed"] > 0 and POSIX == 0
