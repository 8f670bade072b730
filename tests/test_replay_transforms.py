"""Each fix transform on a plan small enough to write down: what it changes and what it keeps.

The plans here are built row by row, so every expected offset, length and row order is stated
in the test; tests/test_replay_plan.py runs the same transforms on plans built from corpus logs.
"""

from __future__ import annotations

import numpy as np
import pytest

from replay import transforms
from replay.plan import (CLOSE, COMM_SELF, COMM_WORLD, FLAG_PAD, FSYNC, MPIIO, MPIIO_COLL, OPEN, POSIX, READ,
                         RECV, SEND, STAT, WRITE, Plan)
from replay.transforms import FIXES, apply_fix

KiB, MiB = 1 << 10, 1 << 20


def plan(rows: list[tuple], nranks: int = 1, nfiles: int = 1, **files) -> Plan:
    """A plan from rows (rank, op, file, offset, length[, api[, phase]]) in each rank's order."""
    cols = {k: [r[i] for r in rows] for i, k in enumerate(("rank", "op", "file", "offset", "length"))}
    cols["api"] = [r[5] if len(r) > 5 else POSIX for r in rows]
    cols["phase"] = [r[6] if len(r) > 6 else 0 for r in rows]
    return Plan.build(nranks, cols, {"dir": np.zeros(nfiles, np.int32), **files}, meta={"source": "test"})


def rows(p: Plan, rank: int | None = None) -> list[tuple[int, int, int, int]]:
    """(op, file, offset, length) of a rank's rows (every row when rank is None), in order."""
    ops = p.ops if rank is None else p.rank_ops(rank)
    return list(zip(ops["op"].tolist(), ops["file"].tolist(), ops["offset"].tolist(), ops["length"].tolist()))


def moved(p: Plan, op: int) -> int:
    """Bytes the plan moves with `op`, padding calls left out."""
    return int(p.ops["length"][p.data_mask() & (p.ops["op"] == op)].sum())


def test_every_fix_of_the_catalogue_has_a_test_here():
    tested = {"coalesce", "sequential", "fsync", "align", "stripe", "layout", "collective", "aggregate",
              "avoid-targets", "hints", "mpiio_calls"}
    assert set(FIXES) == tested


# -- coalesce -----------------------------------------------------------------------------
def test_coalesce_merges_back_to_back_requests_up_to_the_transfer_size():
    p = plan([(0, OPEN, 0, 0, 0)] + [(0, WRITE, 0, i * MiB, MiB) for i in range(5)]
             + [(0, WRITE, 0, 8 * MiB, MiB), (0, CLOSE, 0, 0, 0)])
    fixed = apply_fix(p, {"transform": "coalesce", "transfer_size": 2 * MiB})
    assert rows(fixed) == [(OPEN, 0, 0, 0), (WRITE, 0, 0, 2 * MiB), (WRITE, 0, 2 * MiB, 2 * MiB),
                           (WRITE, 0, 4 * MiB, MiB),  # the end of the contiguous run
                           (WRITE, 0, 8 * MiB, MiB),  # after a hole: never merged across it
                           (CLOSE, 0, 0, 0)]
    assert moved(fixed, WRITE) == moved(p, WRITE)
    assert fixed.meta["transforms"] == [{"transform": "coalesce", "transfer_size": 2 * MiB}]
    assert p.ops["length"].tolist()[1] == MiB  # the input plan is left as it was


def test_coalesce_keeps_ranks_files_directions_and_collective_calls_apart():
    p = plan([(0, WRITE, 0, 0, KiB), (0, WRITE, 1, KiB, KiB),  # another file
              (0, READ, 1, 2 * KiB, KiB),  # another direction
              (1, WRITE, 0, KiB, KiB), (1, WRITE, 0, 2 * KiB, KiB)], nranks=2, nfiles=2)
    fixed = transforms.coalesce(p, 4 * MiB)
    assert rows(fixed, 0) == rows(p, 0)
    assert rows(fixed, 1) == [(WRITE, 0, KiB, 2 * KiB)]
    coll = plan([(r, op, 0, off, KiB, MPIIO_COLL) for r in range(2)
                 for op, off in ((OPEN, 0), (WRITE, r * 2 * KiB), (WRITE, r * 2 * KiB + KiB), (CLOSE, 0))],
                nranks=2)
    assert rows(transforms.coalesce(coll)) == rows(coll)


def test_coalesce_refuses_a_size_of_zero():
    with pytest.raises(ValueError, match="transfer_size must be positive"):
        transforms.coalesce(plan([(0, WRITE, 0, 0, KiB)]), 0)


# -- sequential ---------------------------------------------------------------------------
def test_sequential_sorts_each_run_by_offset_and_keeps_what_surrounds_it():
    offsets = [3, 0, 2, 1]
    p = plan([(0, OPEN, 0, 0, 0)] + [(0, WRITE, 0, o * KiB, KiB) for o in offsets]
             + [(0, FSYNC, 0, 0, 0)] + [(0, READ, 0, o * KiB, KiB) for o in offsets] + [(0, CLOSE, 0, 0, 0)])
    fixed = transforms.sequential(p)
    assert rows(fixed) == ([(OPEN, 0, 0, 0)] + [(WRITE, 0, o * KiB, KiB) for o in range(4)] + [(FSYNC, 0, 0, 0)]
                           + [(READ, 0, o * KiB, KiB) for o in range(4)] + [(CLOSE, 0, 0, 0)])
    assert fixed.meta["transforms"] == [{"transform": "sequential"}]


# -- fsync --------------------------------------------------------------------------------
def test_fsync_after_every_write_becomes_one_before_the_close():
    p = plan([(0, OPEN, 0, 0, 0), (0, WRITE, 0, 0, KiB), (0, FSYNC, 0, 0, 0), (0, WRITE, 0, KiB, KiB),
              (0, FSYNC, 0, 0, 0), (0, CLOSE, 0, 0, 0),
              (0, OPEN, 1, 0, 0), (0, WRITE, 1, 0, KiB), (0, CLOSE, 1, 0, 0)], nfiles=2)  # never synced
    fixed = apply_fix(p, {"transform": "fsync", "mode": "at-close"})
    assert rows(fixed) == [(OPEN, 0, 0, 0), (WRITE, 0, 0, KiB), (WRITE, 0, KiB, KiB), (FSYNC, 0, 0, 0),
                           (CLOSE, 0, 0, 0), (OPEN, 1, 0, 0), (WRITE, 1, 0, KiB), (CLOSE, 1, 0, 0)]


def test_fsync_keeps_the_syncs_of_a_collectively_opened_file():
    p = plan([(r, op, 0, off, ln, MPIIO_COLL) for r in range(2)
              for op, off, ln in ((OPEN, 0, 0), (WRITE, r * KiB, KiB), (FSYNC, 0, 0), (CLOSE, 0, 0))], nranks=2)
    assert rows(transforms.fsync_at_close(p)) == rows(p)  # MPI_File_sync is collective: all ranks call it


def test_fsync_interval_syncs_every_n_writes_and_at_close():
    writes = [(0, WRITE, 0, i * KiB, KiB) for i in range(5)]
    p = plan([(0, OPEN, 0, 0, 0), *[x for w in writes for x in (w, (0, FSYNC, 0, 0, 0))], (0, CLOSE, 0, 0, 0)])
    fixed = apply_fix(p, {"transform": "fsync", "every_writes": 2})
    ops = [r[0] for r in rows(fixed)]
    assert ops == [OPEN, WRITE, WRITE, FSYNC, WRITE, WRITE, FSYNC, WRITE, FSYNC, CLOSE]
    assert fixed.meta["transforms"] == [{"transform": "fsync", "mode": "at-close", "every_writes": 2}]
    # by bytes: 1 KiB writes, every 2 KiB; the 4th write ends an interval and is the last: no second fsync
    four = plan([(0, OPEN, 0, 0, 0), *[x for w in writes[:4] for x in (w, (0, FSYNC, 0, 0, 0))], (0, CLOSE, 0, 0, 0)])
    ops = [r[0] for r in rows(apply_fix(four, {"transform": "fsync", "every_bytes": 2 * KiB}))]
    assert ops == [OPEN, WRITE, WRITE, FSYNC, WRITE, WRITE, FSYNC, CLOSE]
    with pytest.raises(ValueError, match="one interval"):
        apply_fix(p, {"transform": "fsync", "every_writes": 2, "every_bytes": KiB})
    with pytest.raises(ValueError, match="every_writes must be int"):
        apply_fix(p, {"transform": "fsync", "every_writes": "2; rm -rf /"})


def test_fsync_knows_one_mode():
    with pytest.raises(ValueError, match="unknown mode 'never'"):
        transforms.fsync_at_close(plan([(0, WRITE, 0, 0, KiB)]), "never")


# -- align --------------------------------------------------------------------------------
def test_align_moves_an_extent_to_the_boundary_and_cuts_it_in_boundary_pieces():
    p = plan([(0, WRITE, 0, 1000 + i * 1000 * KiB, 1000 * KiB) for i in range(3)])  # 3 x ~1 MB from 1000 B
    fixed = apply_fix(p, {"transform": "align", "boundary": MiB})
    total = 3 * 1000 * KiB
    assert rows(fixed) == [(WRITE, 0, MiB, MiB), (WRITE, 0, 2 * MiB, MiB), (WRITE, 0, 3 * MiB, total - 2 * MiB)]
    assert moved(fixed, WRITE) == moved(p, WRITE)


def test_align_keeps_the_order_and_gaps_of_extents_on_one_file():
    p = plan([(0, WRITE, 0, 10, KiB), (1, WRITE, 0, 10 + 2 * MiB, KiB)], nranks=2)
    fixed = transforms.align(p, MiB)
    starts = [fixed.rank_ops(r)["offset"].tolist() for r in range(2)]
    assert starts == [[MiB], [3 * MiB]]  # rank 1's extent stays 2 MiB after rank 0's


def test_align_refuses_a_boundary_of_zero():
    with pytest.raises(ValueError, match="boundary must be positive"):
        transforms.align(plan([(0, WRITE, 0, 0, KiB)]), 0)


# -- stripe -------------------------------------------------------------------------------
def test_stripe_sets_the_layout_of_files_with_data_only():
    p = plan([(0, WRITE, 0, 0, MiB), (0, STAT, 1, 0, 0)], nfiles=2)
    fixed = apply_fix(p, {"transform": "stripe", "count": -1, "size": 4 * MiB})  # -1: every OST
    assert fixed.files["stripe_count"].tolist() == [-1, 0] and fixed.files["stripe_size"].tolist() == [4 * MiB, 0]
    assert rows(fixed) == rows(p)


@pytest.mark.parametrize("count, size", [(0, MiB), (-2, MiB), (4, -1)])
def test_stripe_refuses_an_empty_layout(count, size):
    with pytest.raises(ValueError, match="count must be positive or -1"):
        transforms.stripe(plan([(0, WRITE, 0, 0, KiB)]), count, size)


def test_stripe_size_zero_keeps_the_file_systems_default():
    fixed = transforms.stripe(plan([(0, WRITE, 0, 0, KiB)]), 4)
    assert fixed.files["stripe_count"].tolist() == [4] and fixed.files["stripe_size"].tolist() == [0]


# -- avoid-targets ------------------------------------------------------------------------
def test_avoid_targets_marks_files_with_data_only_and_keeps_the_rows():
    p = plan([(0, WRITE, 0, 0, MiB), (0, STAT, 1, 0, 0)], nfiles=2)
    fixed = apply_fix(p, {"transform": "avoid-targets", "targets": "5,2"})
    assert fixed.files["avoid"].tolist() == [1, 0] and fixed.meta["avoid_targets"] == [2, 5]
    assert rows(fixed) == rows(p)


# -- layout -------------------------------------------------------------------------------
def test_layout_fpp_gives_each_rank_its_own_file_with_its_requests_packed():
    p = plan([(r, op, 0, off, ln, MPIIO_COLL) for r in range(2)
              for op, off, ln in ((OPEN, 0, 0), (WRITE, r * MiB, KiB), (WRITE, r * MiB + 4 * KiB, KiB), (CLOSE, 0, 0))]
             + [(0, WRITE, 1, 0, KiB)], nranks=2, nfiles=2)  # file 1: rank 0's own
    fixed = apply_fix(p, {"transform": "layout", "mode": "fpp"})
    assert fixed.nfiles == 4  # the shared file's table entry stays; rank 0 and 1 get files 2 and 3
    assert rows(fixed, 0) == [(OPEN, 2, 0, 0), (WRITE, 2, 0, KiB), (WRITE, 2, KiB, KiB), (CLOSE, 2, 0, 0),
                              (WRITE, 1, 0, KiB)]
    assert rows(fixed, 1) == [(OPEN, 3, 0, 0), (WRITE, 3, 0, KiB), (WRITE, 3, KiB, KiB), (CLOSE, 3, 0, 0)]
    assert set(fixed.ops["api"][fixed.ops["file"] >= 2].tolist()) == {MPIIO}  # no collective on one rank
    assert fixed.files["comm"][2:].tolist() == [COMM_SELF] * 2 and fixed.files["group"][2:].tolist() == [0, 0]
    assert moved(fixed, WRITE) == moved(p, WRITE)


def test_layout_shared_lays_sibling_files_end_to_end_on_mib_regions():
    group = np.array([0, 0, -1], np.int32)
    p = plan([(0, WRITE, 0, 0, 3 * KiB), (1, WRITE, 1, 0, 3 * KiB), (1, READ, 1, 0, KiB), (1, WRITE, 2, 0, KiB)],
             nranks=2, nfiles=3, group=group)
    fixed = apply_fix(p, {"transform": "layout", "mode": "shared"})
    assert rows(fixed, 0) == [(WRITE, 0, 0, 3 * KiB)]
    assert rows(fixed, 1) == [(WRITE, 0, MiB, 3 * KiB), (READ, 0, MiB, KiB), (WRITE, 2, 0, KiB)]


def test_layout_shared_needs_file_per_process_groups():
    with pytest.raises(ValueError, match="no file-per-process groups"):
        transforms.layout(plan([(0, WRITE, 0, 0, KiB)]), "shared")
    with pytest.raises(ValueError, match="unknown mode 'sideways'"):
        transforms.layout(plan([(0, WRITE, 0, 0, KiB)]), "sideways")


# -- collective ---------------------------------------------------------------------------
def test_collective_turns_independent_writes_into_matched_collective_calls():
    p = plan([(r, op, 0, off, ln, MPIIO) for r in range(2)
              for op, off, ln in ((OPEN, 0, 0), (WRITE, r * 8 * KiB, 8 * KiB),
                                  (WRITE, r * 8 * KiB + 16 * KiB, 8 * KiB), (CLOSE, 0, 0))]
             + [(0, WRITE, 1, 0, KiB, MPIIO)],  # another rank's extra call must be matched with a pad
             nranks=2, nfiles=2)
    fixed = apply_fix(p, {"transform": "collective", "cb_nodes": 1})
    fixed.validate()
    shared = fixed.ops["file"] == 0
    assert set(fixed.ops["api"][shared].tolist()) == {MPIIO_COLL}
    assert fixed.files["comm"].tolist() == [COMM_WORLD, COMM_SELF]  # file 1 is one rank's: untouched
    assert fixed.hints == {"romio_cb_write": "enable", "romio_cb_read": "enable", "cb_nodes": "1"}
    data = fixed.data_mask() & shared
    assert [len(np.unique(fixed.ops["batch"][data & (fixed.ops["rank"] == r)])) for r in range(2)] == [1, 1]
    assert moved(fixed, WRITE) == moved(p, WRITE)
    assert (WRITE, 1, 0, KiB) in rows(fixed, 0)


def test_collective_pads_a_rank_with_less_to_do():
    p = plan([(0, WRITE, 0, 0, 8 * KiB, MPIIO), (1, WRITE, 0, 8 * KiB, 8 * KiB, MPIIO),
              (0, READ, 0, 0, 8 * KiB, MPIIO)], nranks=2)  # rank 1 never reads
    fixed = transforms.collective(p)
    fixed.validate()
    pads = (fixed.ops["flags"] & FLAG_PAD) != 0
    ops = fixed.ops
    assert list(zip(ops["rank"][pads].tolist(), ops["op"][pads].tolist(), ops["length"][pads].tolist())) == \
        [(1, READ, 0)]  # a zero-length read_all: matched, never counted as I/O
    assert moved(fixed, READ) == 8 * KiB


def test_collective_needs_a_shared_file():
    with pytest.raises(ValueError, match="no shared file with data"):
        transforms.collective(plan([(0, WRITE, 0, 0, KiB), (1, WRITE, 1, 0, KiB)], nranks=2, nfiles=2))


# -- mpiio_calls --------------------------------------------------------------------------
def test_mpiio_calls_merges_collective_calls_and_pads_the_rank_left_with_fewer():
    p = plan([(r, op, 0, off, n, MPIIO_COLL) for r, ln in ((0, 4 * KiB), (1, 2 * KiB))
              for op, off, n in [(OPEN, 0, 0)] + [(WRITE, r * 64 * KiB + i * ln, ln) for i in range(3)]
              + [(CLOSE, 0, 0)]]
             + [(0, WRITE, 1, off, KiB, MPIIO) for off in (0, KiB, 4 * KiB)],  # independent, one hole
             nranks=2, nfiles=2)
    fixed = apply_fix(p, {"transform": "mpiio_calls", "call_bytes": 8 * KiB})
    fixed.validate()
    from replay.mpiio_calls import mpiio_calls  # the transform itself gives the same plan

    assert rows(mpiio_calls(p, call_bytes=8 * KiB), 0) == rows(fixed, 0)
    assert rows(fixed, 0) == [(OPEN, 0, 0, 0), (WRITE, 0, 0, 8 * KiB), (WRITE, 0, 8 * KiB, 4 * KiB),
                                               (CLOSE, 0, 0, 0), (WRITE, 1, 0, 2 * KiB), (WRITE, 1, 4 * KiB, KiB)]
    assert rows(fixed, 1) == [(OPEN, 0, 0, 0), (WRITE, 0, 64 * KiB, 6 * KiB),
                              (WRITE, 0, 0, 0),  # a zero-length write_at_all matches rank 0's second call
                              (CLOSE, 0, 0, 0)]
    ops = fixed.ops
    assert ((ops["flags"] & FLAG_PAD) != 0).sum() == 1
    assert set(ops["api"][ops["file"] == 0].tolist()) == {MPIIO_COLL} and (ops["batch"] < 0).all()
    assert moved(fixed, WRITE) == moved(p, WRITE)
    assert fixed.meta["transforms"] == [{"transform": "mpiio_calls", "call_bytes": 8 * KiB}]


def test_mpiio_calls_sends_scattered_collective_pieces_through_one_file_view():
    p = plan([(r, WRITE, 0, off, KiB, MPIIO_COLL) for r in range(2)
              for off in (r * KiB + 8 * KiB, r * KiB)],  # each rank: two pieces, the later one first
             nranks=2)
    fixed = transforms.mpiio_calls(p, call_bytes=MiB)
    fixed.validate()
    for r in range(2):
        ops = fixed.rank_ops(r)
        assert ops["offset"].tolist() == [r * KiB, r * KiB + 8 * KiB]  # a file view names them in order
        assert len(set(ops["batch"].tolist())) == 1 and ops["batch"][0] >= 0
    assert fixed.max_request(mpi_only=True) == 2 * KiB


def test_mpiio_calls_needs_mpiio_calls():
    with pytest.raises(ValueError, match="no MPI-IO data calls"):
        transforms.mpiio_calls(plan([(0, WRITE, 0, 0, KiB)]))


# -- aggregate ----------------------------------------------------------------------------
def test_aggregate_ships_the_writes_of_a_group_to_its_first_rank():
    p = plan([(r, op, 0, off, ln) for r in range(4)
              for op, off, ln in ((OPEN, 0, 0), (WRITE, r * KiB, KiB), (CLOSE, 0, 0))]
             + [(3, READ, 0, 0, KiB)], nranks=4)  # a read: never shipped
    fixed = apply_fix(p, {"transform": "aggregate", "aggregators": 2})
    assert rows(fixed, 0) == [(OPEN, 0, 0, 0), (RECV, 0, 0, KiB), (WRITE, 0, 0, 2 * KiB), (CLOSE, 0, 0, 0)]
    assert rows(fixed, 1) == [(SEND, 0, KiB, KiB)]  # its open and close had nothing left to do
    assert rows(fixed, 2) == [(OPEN, 0, 0, 0), (RECV, 0, 0, KiB), (WRITE, 0, 2 * KiB, 2 * KiB), (CLOSE, 0, 0, 0)]
    assert rows(fixed, 3) == [(OPEN, 0, 0, 0), (SEND, 0, 3 * KiB, KiB), (CLOSE, 0, 0, 0), (READ, 0, 0, KiB)]
    peers = fixed.ops["peer"][np.isin(fixed.ops["op"], (SEND, RECV))].tolist()
    assert peers == [1, 0, 3, 2]  # rank 0 receives from 1, 1 sends to 0, ...
    assert moved(fixed, WRITE) == moved(p, WRITE)
    assert fixed.meta["transforms"] == [{"transform": "aggregate", "aggregators": 2}]


def test_aggregate_needs_writes_to_a_shared_file():
    with pytest.raises(ValueError, match="no writes to shared files"):
        transforms.aggregate(plan([(0, READ, 0, 0, KiB), (1, READ, 0, 0, KiB)], nranks=2), 1)
    with pytest.raises(ValueError, match="aggregators must be positive"):
        transforms.aggregate(plan([(0, WRITE, 0, 0, KiB)]), 0)


# -- hints --------------------------------------------------------------------------------
def test_hints_set_romio_hints_for_the_mpiio_opens_and_keep_the_calls():
    p = plan([(0, WRITE, 0, 0, KiB, MPIIO_COLL), (1, WRITE, 0, KiB, KiB, MPIIO_COLL)], nranks=2)
    p = p.replace(hints={"cb_nodes": "2"})
    out = apply_fix(p, {"transform": "hints", "romio_ds_write": "disable", "cb_buffer_size": 4 * MiB,
                        "striping_unit": 4 * MiB})
    assert out.hints == {"cb_nodes": "2", "romio_ds_write": "disable", "cb_buffer_size": str(4 * MiB),
                         "striping_unit": str(4 * MiB)}
    assert rows(out) == rows(p) and out.meta["transforms"][-1] == {
        "transform": "hints", "cb_buffer_size": 4 * MiB, "romio_ds_write": "disable", "striping_unit": 4 * MiB}


def test_hints_need_mpiio_calls_and_known_values():
    with pytest.raises(ValueError, match="no MPI-IO call"):
        transforms.hints(plan([(0, WRITE, 0, 0, KiB)]), cb_nodes=2)
    mpi = plan([(0, WRITE, 0, 0, KiB, MPIIO)])
    with pytest.raises(ValueError, match="no hint given"):
        transforms.hints(mpi)
    with pytest.raises(ValueError, match="cb_buffer_size must be positive"):
        transforms.hints(mpi, cb_buffer_size=0)
    with pytest.raises(ValueError, match="romio_ds_write must be one of enable, disable, automatic"):
        apply_fix(mpi, {"transform": "hints", "romio_ds_write": "off"})


# -- fix dicts ----------------------------------------------------------------------------
def test_a_fix_dict_is_typed_before_its_transform_runs():
    func, kwargs = transforms.check_fix({"transform": "stripe", "count": "8", "size": 4.0 * MiB})
    assert func is transforms.stripe and kwargs == {"count": 8, "size": 4 * MiB}
    assert transforms.check_fix({"transform": "sequential"}) == (transforms.sequential, {})
