"""Access-pattern facts (random, misaligned, redundant, read/write mix) and metadata facts
(opens, fsync, small files): numbers on a hand-built job, and on real logs against their counters."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pathlib import Path

import pytest

from advisor.config import SiteConfig
from advisor.facts import FactContext, Missing
from advisor.facts.access import MISALIGNED_PENALTY, RANDOM_PENALTY
from advisor.ingest.darshan_log import load
from tests.profiles import SHARED, facts, job, module

TRACES = Path(__file__).resolve().parents[1] / "traces"
MiB = 1 << 20
RANKS = 4


def _posix():
    """File 1, shared: 100 reads of which 60 sequential, the whole 8 MiB read twice, 40 requests
    misaligned; file 2 (rank 0): 10 sequential writes of its 1 MiB, written once, with fsyncs."""
    return module("POSIX", [
        (1, SHARED, {"POSIX_READS": 100, "POSIX_SEQ_READS": 60, "POSIX_BYTES_READ": 16 * MiB,
                     "POSIX_MAX_BYTE_READ": 8 * MiB - 1, "POSIX_OPENS": 8, "POSIX_FILE_NOT_ALIGNED": 40,
                     "POSIX_FILE_ALIGNMENT": 4096, "POSIX_MEM_NOT_ALIGNED": 0, "POSIX_MEM_ALIGNMENT": 8,
                     "POSIX_RW_SWITCHES": 0, "POSIX_F_READ_TIME": 8.0, "POSIX_F_META_TIME": 0.4}),
        (2, 0, {"POSIX_WRITES": 10, "POSIX_SEQ_WRITES": 10, "POSIX_BYTES_WRITTEN": MiB,
                "POSIX_MAX_BYTE_WRITTEN": MiB - 1, "POSIX_OPENS": 1, "POSIX_FSYNCS": 10, "POSIX_FILE_ALIGNMENT": 4096,
                "POSIX_MEM_ALIGNMENT": 8, "POSIX_RW_SWITCHES": 3, "POSIX_F_WRITE_TIME": 2.0, "POSIX_F_META_TIME": 1.0}),
    ])


def test_random_requests_and_their_cost():
    ctx = facts(job(_posix(), nprocs=RANKS))
    assert ctx.get("random_read_count") == 40 and ctx.get("random_read_share") == pytest.approx(0.4)
    assert ctx.get("random_read_cost_s") == pytest.approx(8.0 / RANKS * 0.4 * RANDOM_PENALTY)
    assert ctx.get("random_write_count") == 0 and ctx.get("random_write_cost_s") == 0
    assert ctx.get("random_files") == ["/scratch/f1"]


def test_misaligned_requests_against_the_recorded_alignment():
    ctx = facts(job(_posix(), nprocs=RANKS))
    assert ctx.get("file_alignment") == 4096
    assert ctx.get("file_misaligned_share") == pytest.approx(40 / 110)
    assert ctx.get("mem_misaligned_share") == 0
    # a misaligned request loses the one block more it touches: 4 KiB of a 158 KiB mean request, not 30 %
    mean_request = 17 * MiB / 110
    assert ctx.get("misaligned_cost_s") == pytest.approx((8.0 + 2.0) / RANKS * 40 / 110 * 4096 / mean_request)
    assert 4096 / mean_request < MISALIGNED_PENALTY
    assert ctx.get("misaligned_files") == ["/scratch/f1"]


def test_redundant_reads_are_the_bytes_beyond_the_extent():
    ctx = facts(job(_posix(), nprocs=RANKS))
    assert ctx.get("redundant_read_bytes") == 8 * MiB and ctx.get("redundant_read_factor") == pytest.approx(2.0)
    assert ctx.get("redundant_read_cost_s") == pytest.approx(8.0 * 0.5 / RANKS)  # half the bytes were extra
    assert ctx.get("redundant_read_files") == ["/scratch/f1"]
    assert ctx.get("redundant_write_bytes") == 0 and ctx.get("redundant_write_files") == []


def test_read_write_mix():
    ctx = facts(job(_posix(), nprocs=RANKS))
    assert ctx.get("read_share_ops") == pytest.approx(100 / 110)
    assert ctx.get("read_share_bytes") == pytest.approx(16 / 17)
    assert ctx.get("rw_switches") == 3


def test_metadata_and_fsync():
    ctx = facts(job(_posix(), nprocs=RANKS))
    assert ctx.get("posix_opens") == 9
    assert ctx.get("fsync_count") == 10
    assert ctx.get("fsync_per_write") == pytest.approx(1.0)  # one fsync per write of file 2
    assert ctx.get("fsync_files") == ["/scratch/f2"]


def test_without_posix_records_the_access_facts_say_why():
    stdio = module("STDIO", [(3, 0, {"STDIO_WRITES": 1, "STDIO_BYTES_WRITTEN": 10})])
    ctx = facts(job(stdio))
    with pytest.raises(Missing, match="no POSIX records"):
        ctx.get("random_read_share")


@pytest.mark.parametrize("log", ["ior-small-shared-4k.darshan", "ior-good-fpp-1m.darshan"])
def test_access_facts_of_real_logs_match_their_counters(log):
    profile = load(TRACES / log)
    ctx, posix = facts(profile), profile.records["POSIX"]
    reads, writes = int(posix.get("POSIX_READS").sum()), int(posix.get("POSIX_WRITES").sum())
    seq_w = int(posix.get("POSIX_SEQ_WRITES").sum())
    assert ctx.get("random_write_count") == pytest.approx(writes - seq_w, abs=1)
    stdio = profile.records.get("STDIO")
    s_reads, s_writes = (int(stdio.get("STDIO_READS").sum()), int(stdio.get("STDIO_WRITES").sum())) if stdio else (0, 0)
    assert ctx.get("read_share_ops") == pytest.approx((reads + s_reads) / (reads + writes + s_reads + s_writes))
    assert ctx.get("posix_opens") == int(posix.get("POSIX_OPENS").sum())
    assert ctx.get("file_misaligned_share") == pytest.approx(
        min(int(posix.get("POSIX_FILE_NOT_ALIGNED").sum()) / (reads + writes), 1.0))


def test_python_imports_never_drive_a_data_finding(corpus):
    """h5py's .pyc imports make 200 of the 240 POSIX requests of this run, half of them off the
    alignment; the HDF5 files the job writes are its data, and 10 of their 40 writes are."""
    from advisor.engine import diagnose
    from advisor.facts._darshan import is_data_path

    log = corpus / "darshan-logs/darshan_logs/hdf5_diagonal_write_only/hdf5_diagonal_write_half_flush_dxt.darshan"
    ctx = FactContext(load(log), SiteConfig())
    assert all(p.endswith(".h5") for p in ctx.get("misaligned_files"))
    assert ctx.get("file_misaligned_share") == pytest.approx(10 / 40)
    assert "IO020" not in {f.code for f in diagnose(load(log), SiteConfig()).findings}
    assert not is_data_path("/usr/lib64/libhdf5.so.103.1.0") and not is_data_path("/proc/self/maps")
    assert is_data_path("/lus/scratch/run/out.h5") and is_data_path("/scratch/pyc-data/x.dat")


def test_rereading_through_stdio_is_redundant_reading(corpus: Path):
    """A production job on Polaris (8 ranks, 8.1 h) rereads its per-rank inputs with fread: 529.4 TiB
    read (STDIO_BYTES_READ) of files whose extents (STDIO_MAX_BYTE_READ) hold ~11 GiB, 2.3 h per
    process of STDIO reads. It made 92 POSIX reads in all, so judging POSIX alone found nothing."""
    from advisor.engine import diagnose

    log = load(corpus / "darshan-production/polaris-cug25/case-study-2/1977553-17460120447186390966.darshan")
    stdio = log.records["STDIO"]
    read = stdio.counters["STDIO_BYTES_READ"].astype(float)
    ctx = FactContext(log, SiteConfig())
    assert ctx.get("redundant_read_factor") > 10_000
    assert ctx.get("redundant_read_bytes") > 0.99 * read.sum()
    # nearly all the read time was spent on bytes already read: ~8,130 s of the 8,140 s per process
    per_process = stdio.fcounters["STDIO_F_READ_TIME"].sum() / log.job.nprocs
    assert 0.99 * per_process < ctx.get("redundant_read_cost_s") <= per_process
    assert ctx.get("redundant_read_files")[0].startswith("/lus/grand/")
    (io030,) = [f for f in diagnose(log, SiteConfig()).findings if f.code == "IO030"]
    assert io030.severity == "warn" and io030.cost_s > 0.25 * log.job.runtime_s
    # review11 (its darshan-parser dump): each rank rereads its own file, so there is no other rank to
    # share one read with: keep it in memory, no MPI_Bcast
    assert ctx.get("redundant_read_shared_share") < 0.01
    assert "mostly by the rank that had read them before" in io030.message
    assert "share it with MPI" not in io030.recommendation.text
    assert not any("MPI_Bcast" in c for c in io030.recommendation.commands)


def test_a_shared_file_each_rank_reads_its_own_block_of_again_is_kept_in_memory_not_broadcast(corpus: Path):
    """IOR -i 3 reads its shared file three times over four ranks, each rank its own 32 MiB block
    (DXT): every byte read again is one the same rank read before, so no other rank could share the
    read (MPI_Bcast had been proposed because the file is shared). Without DXT the file decides."""
    from advisor.engine import diagnose

    log = load(corpus / "generated/h4_repetitions_i3/case.darshan")
    ctx = FactContext(log, SiteConfig())
    assert ctx.get("redundant_read_bytes") == 256 << 20 and ctx.get("redundant_read_shared_share") == 0.0
    (io030,) = [f for f in diagnose(log, SiteConfig()).findings if f.code == "IO030"]
    assert not any("MPI_Bcast" in c for c in io030.recommendation.commands)
    assert "without DXT" not in io030.recommendation.text
    log.dxt.clear()  # the same log without its trace: a shared file is one its ranks may share a read of
    assert FactContext(log, SiteConfig()).get("redundant_read_shared_share") == 1.0
    # ... but the advice says the log cannot tell which rank read the bytes first
    (io030,) = [f for f in diagnose(log, SiteConfig()).findings if f.code == "IO030"]
    assert "without DXT the log cannot tell" in io030.recommendation.text


def test_union_of_extents_within_each_group():
    """Bytes covered once however often and in whatever order the extents overlap, per group."""
    from advisor.facts.access import _union_bytes

    group = np.array([0, 0, 0, 1, 1])
    start = np.array([10, 0, 5, 0, 100])
    end = np.array([20, 8, 12, 50, 150])
    assert _union_bytes(group, start, end) == 20 + 50 + 50  # [0, 20) in group 0; [0, 50), [100, 150) in 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 200), st.integers(1, 40)), min_size=1, max_size=40))
def test_union_of_extents_equals_the_bytes_counted_one_by_one(extents):
    """The sweep against the set of bytes each group's extents cover, counted byte by byte."""
    from advisor.facts.access import _union_bytes

    group, start, length = (np.array(v) for v in zip(*extents))
    covered = {(g, b) for g, s, n in extents for b in range(s, s + n)}
    assert _union_bytes(group, start, start + length) == len(covered)


def test_requests_smaller_than_the_alignment_cost_only_the_boundaries_they_cross(corpus):
    """A Python workflow worker reads 94,340 records of ~3.9 KiB from a file system that reports a
    4 MiB alignment: nearly every offset is off the 4 MiB grid, but a 3.9 KiB request crosses a
    boundary once in ~1,000. Its time is the small reads' (IO002, coalesce), not misalignment's:
    IO020 priced all of it and told the job to align 3.9 KiB requests to 4 MiB."""
    from advisor.engine import diagnose

    log = corpus / "darshan-logs/_branch_snyder_add-nonmpi-workflow/darshan_logs/nonmpi_workflow/worker_6.darshan"
    ctx = FactContext(load(log), SiteConfig())
    size, alignment = ctx.get("common_access_size"), ctx.get("file_alignment")
    assert size < 4096 and alignment == 4 << 20 and ctx.get("file_misaligned_share") > 0.99
    assert ctx.get("misaligned_cost_s") < 0.01
    codes = {f.code for f in diagnose(load(log), SiteConfig()).findings}
    assert "IO002" in codes and "IO020" not in codes
