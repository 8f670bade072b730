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
