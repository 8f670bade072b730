"""Recorder traces of MPI-IO and HDF5 jobs read through their layers as Darshan would count them
(tests/data/recorder: traces of IOR runs recorded for these tests, README there)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from advisor.ingest.recorder import load

TRACES = Path(__file__).resolve().parent / "data" / "recorder"


def test_collective_hdf5_writes_carry_the_bytes_written_below_not_the_rmw_reads() -> None:
    """ior -a HDF5 -c -t 4k -b 64k: 16 H5Dwrite and 16 H5Dread of 4 KiB per rank. Each collective
    write on HDF5's derived view is an MPI_File_write_at_all of MPI_TYPE_UNKNOWN whose POSIX calls
    are a pread then a pwrite of the block (ROMIO's read-modify-write): the write moved the pwrite's
    bytes only, as Darshan's MPI_Type_size of the call would say (the reads doubled them before)."""
    profile = load(TRACES / "hdf5-coll-4k")
    h5d, mpiio, posix = (profile.records[m].counters for m in ("H5D", "MPI-IO", "POSIX"))
    assert h5d["H5D_BYTES_WRITTEN"].tolist() == [64 << 10] * 4
    assert h5d["H5D_BYTES_READ"].tolist() == [64 << 10] * 4
    assert h5d["H5D_ACCESS1_ACCESS"].tolist() == [4096] * 4
    assert h5d["H5D_ACCESS1_COUNT"].tolist() == [32] * 4
    # MPI-IO wrote what POSIX wrote below it (HDF5's metadata writes included), not what it read
    assert np.array_equal(mpiio["MPIIO_BYTES_WRITTEN"], posix["POSIX_BYTES_WRITTEN"])
    # the read-modify-write reads are POSIX's alone: 16 blocks of 4 KiB per rank more than MPI-IO read
    assert (posix["POSIX_BYTES_READ"] - mpiio["MPIIO_BYTES_READ"] >= 64 << 10).all()
