"""Diagnoses of the shared Recorder traces: the rules apply to calls as they apply to Darshan logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.api import diagnose_path, diagnose_profile, load
from advisor.config import SiteConfig
from advisor.facts import FactContext
from advisor.report.figures import figure_data
from tests.recorder_traces import flash_trace, recorder_dir  # noqa: F401


def _codes(diagnosis, severities=("high", "warn")) -> set[str]:
    return {f.code for f in diagnosis.findings if f.severity in severities}


def test_small_shared_writes_found(corpus: Path) -> None:
    """ior -t 4k on one shared file: 4,096 writes of 4 KiB, counted from the per-call segments."""
    for name in ("R1_posix_small_shared", "R1_posix_small_shared_interprocess"):
        d = diagnose_path(recorder_dir(corpus) / name / "trace")
        assert {"IO001", "IO003"} <= _codes(d), name
        (small,) = [f for f in d.findings if f.code == "IO001"]
        assert small.evidence["small_write_count"] == 4096
        assert small.evidence["small_count_method"] == "dxt"


def test_good_file_per_process_has_no_warning(corpus: Path) -> None:
    d = diagnose_path(recorder_dir(corpus) / "R3_posix_fpp_good" / "trace")
    assert d.error is None and _codes(d) == set()
    assert d.summary["bytes_written"] == 256 << 20 and d.summary["bytes_read"] == 256 << 20


def test_mdtest_metadata_reaches_the_metadata_facts(corpus: Path) -> None:
    """mdtest -n 200 -F on 4 ranks: the facts MD001/MD003 read come from the calls; 800 files and
    2.6% of a 1.6 s run (mostly MPI start-up) are below their thresholds (1,000 files, 10%)."""
    d = diagnose_path(recorder_dir(corpus) / "R4_mdtest" / "trace")
    assert d.error is None
    assert d.summary["bytes_written"] == 0 and d.summary["bytes_read"] == 0
    assert d.summary["files_accessed"] == 800  # the files; the tree's directories are no files
    # all of its I/O time is metadata on its files: opens (creates), closes, unlinks (the tree's
    # mkdir and rmdir are the job's, listed apart as Darshan records no directories)
    assert d.summary["meta_time_s"] == d.summary["io_time_s"] > 0.01
    assert 0.005 < d.summary["io_share"] < 0.1


def test_flash_layers_from_hdf5_mpiio_and_posix(flash_trace: Path) -> None:  # noqa: F811
    profile = load(flash_trace, timeout_s=900)
    assert profile.job.nprocs == 1024
    assert {"POSIX", "MPI-IO", "H5F", "H5D", "DXT_POSIX", "DXT_MPIIO"} <= set(profile.modules)
    d = diagnose_profile(profile)
    assert d.error is None
    assert d.summary["interfaces"] == ["POSIX", "MPI-IO", "HDF5"]
    layers = figure_data(profile)["io_time"]  # the report's time-per-layer figure
    assert layers["modules"] == ["POSIX", "MPI-IO", "H5F", "H5D"]
    write = dict(zip(layers["modules"], layers["write"]))
    meta = dict(zip(layers["modules"], layers["meta"]))
    # H5Dwrite encloses its MPI-IO writes, which enclose the POSIX writes of the aggregators
    assert write["H5D"] > write["MPI-IO"] > write["POSIX"] > 0
    assert meta["H5F"] > 0
    # HDF5 writes carry the bytes of their MPI-IO calls; MPI-IO those of the POSIX writes below
    h5d, mpiio = profile.records["H5D"], profile.records["MPI-IO"]
    posix = profile.records["POSIX"]
    assert 0.99 < h5d.counters["H5D_BYTES_WRITTEN"].sum() / mpiio.counters["MPIIO_BYTES_WRITTEN"].sum() <= 1
    assert 0.99 < mpiio.counters["MPIIO_BYTES_WRITTEN"].sum() / posix.counters["POSIX_BYTES_WRITTEN"].sum() <= 1
    assert mpiio.counters["MPIIO_COLL_WRITES"].sum() == 128 * 1024
    # FLASH's collective H5Dwrite calls move 2.2 KiB per rank each (128 per rank): MPI008's facts, the only
    # real input they pass its thresholds on; its time above POSIX is the layer account's
    # (layers.time_above, waited for the aggregators: read + write only, never above the MPI-IO row's own
    # time) and the MPI-IO time it states is the account's one MPI-IO time
    found = {f.code: f for f in d.findings}
    ctx = FactContext(profile, SiteConfig())
    (row,) = [r for r in d.summary["layers"]["rows"] if r["layer"] == "MPI-IO"]
    assert ctx.get("mpiio_coll_calls_per_rank") == 128 and ctx.get("mpiio_coll_call_size") < 4096
    assert ctx.get("mpiio_time_s") == pytest.approx(row["time_s"])
    above = ctx.get("mpiio_coll_above_posix_s")
    assert 0.5 * row["time_s"] < above <= min(row["own_time_s"], row["write_s"])
    # the same calls at the layer the application called: 131,152 H5Dwrite calls of 2.2 KiB (H5D's size
    # bins, named _AGG_ as Darshan's); collective below, so their fix is fewer, larger collective calls
    # (not coalescing the aggregators' POSIX requests). One finding for one traffic: HDF004's cost is the
    # calls' time, MPI008's time above POSIX (19.9 s) is inside it, so MPI008 is silent and the seconds are
    # counted, ranked and summed once (both were high, 31.6 s and 19.9 s, for one fix)
    hdf004 = found["HDF004"]
    assert hdf004.evidence["hdf5_small_calls"] == hdf004.evidence["hdf5_dataset_ops"] == 131152
    assert hdf004.fix["transform"] == "mpiio_calls" and "MPI008" not in found
    assert ctx.get("mpiio_call_overhead_cost_s") < hdf004.cost_s
    assert "collectively" not in hdf004.recommendation.text
    (fix,) = [s for s in d.fixes() if s.fix["transform"] == "mpiio_calls"]
    assert set(fix.codes) == {"HDF004"} and not [s for s in d.fixes() if s.fix["transform"] == "coalesce"]
    # rank 0 moves 6.5x the median rank's bytes, most of them in collective H5Dwrite calls it alone fills
    # (the grid's tree datasets, for all 1,024 ranks): the aggregators write them, every rank waits in the
    # same calls, so aggregating is what the job already does (no fix) and rank 0 costs only its extra
    # time inside its calls (0.08 s), not the 1.9 s its span from first to last byte said
    imb = found["IMB002"]
    assert imb.ranks == [0] and imb.evidence["rank_bytes_imbalance"] > 6
    assert imb.evidence["heavy_bytes_collective"] is True and imb.fix is None
    assert imb.cost_s < 0.2 and imb.severity == "info"
    assert not [s for s in d.fixes() if s.fix["transform"] == "aggregate"]
    # the driver and transfer mode HDF5 used, read from the MPI-IO calls beneath its calls (Recorder does not
    # follow property lists): every file opened through MPI-IO; the 128 collective H5Dwrite calls per rank
    # collective, the 80 writes of rank 0's own datasets independent: HDF001 is silent because the job is
    # collective, not because the trace hid the driver
    h5f = profile.records["H5F"].counters
    assert h5f["H5F_USE_MPIIO"].all()
    ctx = FactContext(profile, SiteConfig())
    assert ctx.get("hdf5_uses_mpiio") and ctx.get("hdf5_indep_share") < 0.01
    assert ctx.get("hdf5_indep_ops") == ctx.get("hdf5_dataset_ops") - 128 * 1024 == 80
    assert "HDF001" not in found


def test_md004_names_mdtests_empty_files_by_what_they_are(corpus: Path) -> None:
    """MD004: R4's 800 files are created, stat'ed and removed without a byte moved, 200 per rank: a
    metadata load recognised by the files' shape (counted operations), not by a 1.6 s run's timings.
    R1 and R3 move data in every file they open: silent."""
    d = diagnose_path(recorder_dir(corpus) / "R4_mdtest" / "trace")
    (md004,) = [f for f in d.findings if f.code == "MD004"]
    assert md004.severity == "warn" and md004.category == "metadata"
    assert md004.evidence["empty_file_count"] == md004.evidence["files_accessed"] == 800
    assert md004.evidence["files_per_rank"] == 200 and md004.evidence["posix_opens"] >= 800
    for name in ("R1_posix_small_shared", "R3_posix_fpp_good"):
        assert "MD004" not in {f.code for f in diagnose_path(recorder_dir(corpus) / name / "trace").findings}
