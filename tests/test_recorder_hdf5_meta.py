"""HDF5 metadata time read through the calls beneath it (Recorder traces of tests/data/recorder, README
there): HDF002 prices what a metadata fix removes, and does not ask for what the job already asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.api import diagnose_profile
from advisor.config import SiteConfig
from advisor.facts import FactContext
from advisor.ingest.recorder import load

TRACES = Path(__file__).resolve().parent / "data" / "recorder"
COLL_METADATA = ("H5Pset_all_coll_metadata_ops", "H5Pset_coll_metadata_write")


def _facts(trace: str) -> FactContext:
    return FactContext(load(TRACES / trace), SiteConfig())


@pytest.mark.parametrize("trace", ["hdf5-one-dataset", "hdf5-coll-4k"])
def test_opening_and_closing_a_parallel_hdf5_file_is_not_metadata_to_make_collective(trace: str) -> None:
    """One collective H5Dwrite of 4 MiB per rank (0.56 s of a 1.0 s run in H5Fcreate/H5Dcreate/H5Fclose), and
    ior -a HDF5 -c -t 4k -b 64k (0.61 s of 5.8 s): under those calls MPI_File_open/close and HDF5's barriers,
    two metadata writes of 0.1 ms. HDF002 was high with the collective-metadata advice, which removes
    neither; the metadata I/O below is all a metadata setting acts on."""
    ctx = _facts(trace)
    assert ctx.get("hdf5_meta_time_s") > 0.4
    assert ctx.get("hdf5_meta_fixable_s") < 0.01
    d = diagnose_profile(ctx.profile)
    assert "HDF002" not in {f.code for f in d.findings}


def test_flushes_of_a_checkpoint_with_collective_metadata_are_priced_and_not_advised_again() -> None:
    """A checkpoint that asks for collective metadata (both property calls on its file access list) and
    flushes after each of 2 steps: what a fix can still remove is the flushes and the metadata I/O below
    HDF5's calls, and the advice is fewer flushes and larger metadata blocks, not the property calls
    the trace shows it already makes."""
    ctx = _facts("hdf5-ckpt-collmeta")
    assert ctx.get("hdf5_coll_metadata_set") is True
    h5f = ctx.profile.records["H5F"]
    flushed = float(h5f.get("H5F_F_FLUSH_TIME").sum() + h5f.get("H5F_F_META_IO_TIME").sum()) / 4
    assert ctx.get("hdf5_meta_fixable_s") == pytest.approx(flushed)
    assert 0 < ctx.get("hdf5_meta_fixable_s") < ctx.get("hdf5_meta_time_s")
    (hdf002,) = [f for f in diagnose_profile(ctx.profile).findings if f.code == "HDF002"]
    assert hdf002.cost_s == pytest.approx(flushed, rel=1e-3)
    said = " ".join([hdf002.recommendation.text, *hdf002.recommendation.commands])
    assert not [c for c in COLL_METADATA if c in said] and "Make metadata collective" not in said
    assert "already asks for collective metadata" in hdf002.message
    assert "H5Fflush" in hdf002.recommendation.text


def test_darshan_metadata_time_is_priced_whole_as_its_counters_do_not_split_it(corpus) -> None:
    """MACSio (Darshan, 16 ranks): H5F_F_META_TIME has no split by call, so the fixable time is all of it."""
    from advisor.ingest.darshan_log import load as load_log

    log = ("darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/"
           "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan")
    ctx = FactContext(load_log(corpus / log), SiteConfig())
    assert ctx.get("hdf5_meta_fixable_s") == ctx.get("hdf5_meta_time_s") > 0.8
    assert ctx.get("hdf5_coll_metadata_set") is False


def _created_then_written(written: int) -> list[tuple]:
    """One rank: H5Fcreate (MPI_File_open below), H5Dcreate2 whose collective write of 2 MiB below is the
    fill value (as parallel HDF5 writes it into a chunked dataset's space at creation), an H5Dwrite of
    `written` bytes, closes. (function, depth, args, start s, end s)"""
    h, fid, did = "/scratch/t/c.h5", "72057594037927936", "360287970189639680"

    def write(at: float, nbytes: int) -> list[tuple]:
        return [("MPI_File_write_at_all", 1, ("0-0", "0", "%p", "1", "MPI_TYPE_UNKNOWN", "%p"), at, at + 0.2),
                ("pwrite", 2, (h, "%p", str(nbytes), "4096"), at + 0.05, at + 0.15)]

    return [("H5Fcreate", 0, (h, "2", "0", "%p"), 0.0, 0.01),
            ("MPI_File_open", 1, ("MPI_COMM_WORLD", h, "37", "%p", "0-0"), 0.001, 0.005),
            ("H5Dcreate2", 0, (fid, "density", "1", "2", "3", "4", "5"), 0.02, 0.3), *write(0.05, 2 << 20),
            ("H5Dwrite", 0, (did, "1", "2", "3", "4", "%p"), 0.4, 0.7), *write(0.45, written),
            ("H5Dclose", 0, (did,), 0.8, 0.81), ("H5Fclose", 0, (fid,), 0.82, 0.9),
            ("MPI_File_close", 1, ("0-0",), 0.83, 0.89)]


def test_fill_values_written_at_creation_are_their_own_finding_not_metadata(tmp_path: Path) -> None:
    """A collective job writing four chunked 8 MiB datasets, recorded here (Recorder c1c3dcbf, 4 ranks):
    each H5Dcreate2 wrote the rank's 2 MiB chunk with the fill value before H5Dwrite wrote it again, 32 MiB
    of the 65.5 MiB that reached the file; HDF002 priced those writes as metadata I/O and advised fewer
    flushes. With H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) the same program wrote 33.5 MiB."""
    from tests.recorder_build import write_trace

    ctx = FactContext(load(write_trace(tmp_path / "full", [_created_then_written(2 << 20)])), SiteConfig())
    assert ctx.get("hdf5_fill_bytes") == 2 << 20 and ctx.get("hdf5_fill_datasets") == 1
    assert ctx.get("hdf5_fill_time_s") == pytest.approx(0.2)
    assert float(ctx.profile.records["H5D"].get("H5D_F_META_IO_TIME").sum()) == 0  # not metadata I/O
    (hdf006,) = [f for f in diagnose_profile(ctx.profile).findings if f.code == "HDF006"]
    assert "H5D_FILL_TIME_NEVER" in " ".join(hdf006.recommendation.commands)
    # a dataset the job does not write in full keeps its fill value: nothing to advise
    part = FactContext(load(write_trace(tmp_path / "part", [_created_then_written(1 << 20)])), SiteConfig())
    assert part.get("hdf5_fill_bytes") == 0
    assert "HDF006" not in {f.code for f in diagnose_profile(part.profile).findings}


def test_metadata_advice_names_only_what_the_job_does(tmp_path: Path) -> None:
    """HDF002 told every job to keep files open instead of reopening them and to drop H5Fflush from loops;
    a collective job recorded here that opens its file and each dataset once and never flushes was told so.
    The checkpoint flushes (8) and reopens nothing (its 4 dataset names are created again in each step's
    group: one record per name, 2 creates, not a reopen): only the flushes are named."""
    from tests.recorder_build import write_trace

    ctx = _facts("hdf5-ckpt-collmeta")
    assert ctx.get("hdf5_reopens") == 0 and ctx.get("hdf5_flushes") == 8
    (hdf002,) = [f for f in diagnose_profile(ctx.profile).findings if f.code == "HDF002"]
    assert "Drop H5Fflush from loops (8 flushes)" in hdf002.recommendation.text
    assert "reopening" not in hdf002.recommendation.text
    h, fid = "/scratch/t/r.h5", "72057594037927936"
    twice = [("H5Fcreate", 0, (h, "2", "0", "%p"), 0.0, 0.1), ("H5Fclose", 0, (fid,), 0.2, 0.3),
             ("H5Fopen", 0, (h, "0", "%p"), 0.4, 0.5), ("H5Fclose", 0, (fid,), 0.6, 0.7)]
    again = FactContext(load(write_trace(tmp_path / "t", [twice, twice])), SiteConfig())
    assert again.get("hdf5_reopens") == 2  # one per rank
    steps = [("H5Fcreate", 0, (h, "2", "0", "%p"), 0.0, 0.1), ("H5Dcreate2", 0, (fid, "u", "1", "2", "3", "4", "5"),
                                                              0.1, 0.2)]
    steps += [("H5Dopen2", 0, (fid, "u", "0"), 0.3 + 0.1 * i, 0.35 + 0.1 * i) for i in range(3)]
    assert FactContext(load(write_trace(tmp_path / "s", [steps])), SiteConfig()).get("hdf5_reopens") == 3
