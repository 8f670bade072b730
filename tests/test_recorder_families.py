"""Every call family of Recorder 2.5's function table decoded and counted: POSIX (p*/v* I/O,
lseek64, STDIO, truncate, rename, link), MPI-IO (collective, explicit-offset, non-blocking,
views, seek, sync) and HDF5 (files, datasets, attributes), on traces hand-built with the
format's own encoding (tests/recorder_build.py) where the shared real traces hold none; and a
function this reader does not know, counted and named, never a crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.ingest.ior.view import recorder_tables
from advisor.ingest.recorder import calls as C
from advisor.ingest.recorder import load
from advisor.ingest.recorder.format import RecorderTrace
from advisor.profile import CALL_OPS, DXT_READ, DXT_WRITE
from tests.recorder_build import FUNCTIONS, write_trace

A, S, M, H = "/scratch/t/a", "/scratch/t/s", "/scratch/t/m", "/scratch/t/h.h5"
FILE_ID, DSET_ID = "72057594037927936", "360287970189639680"

POSIX_CALLS = [
    ("open64", 0, (A, "66", "420")), ("pwrite64", 0, (A, "%p", "4096", "8192")),
    ("pread64", 0, (A, "%p", "4096", "0")), ("writev", 0, (A, "8192", "2")),
    ("lseek64", 0, (A, "65536", "0")), ("write", 0, (A, "%p", "100")), ("readv", 0, (A, "512", "1")),
    ("ftruncate", 0, (A, "1000")), ("close", 0, (A,)), ("rename", 0, (A, "/scratch/t/b")),
    ("link", 0, ("/scratch/t/b", "/scratch/t/c")), ("fopen", 0, (S, "w")),
    ("fwrite", 0, ("%p", "10", "3", S)), ("fseeko", 0, (S, "0", "0")), ("fread", 0, ("%p", "4", "2", S)),
    ("fclose", 0, (S,)), ("getcwd", 0, ("%p", "4096")), ("unlink", 0, ("/scratch/t/c",)),
]
MPIIO_CALLS = [
    ("MPI_File_open", 0, ("MPI_COMM_WORLD", M, "37", "%p", "0-0")),
    ("MPI_File_set_view", 0, ("0-0", "1024", "MPI_INT", "MPI_TYPE_UNKNOWN", "native", "%p")),
    ("MPI_File_write_at_all", 0, ("0-0", "10", "%p", "256", "MPI_INT", "%p")),
    ("MPI_File_write_all", 0, ("0-0", "%p", "16", "MPI_DOUBLE", "%p")),
    ("MPI_File_seek", 0, ("0-0", "100", "MPI_SEEK_SET")),
    ("MPI_File_write", 0, ("0-0", "%p", "8", "MPI_BYTE", "%p")),
    ("MPI_File_iwrite_at", 0, ("0-0", "2", "%p", "4", "MPI_INT", "%p")),
    ("MPI_File_iread", 0, ("0-0", "%p", "4", "MPI_INT", "%p")),
    ("MPI_File_read_at", 0, ("0-0", "0", "%p", "2", "MPI_INT", "%p")),
    ("MPI_File_read_at_all", 0, ("0-0", "1", "%p", "2", "MPI_INT", "%p")),
    ("MPI_File_sync", 0, ("0-0",)), ("MPI_File_set_size", 0, ("0-0", "4096")), ("ftruncate", 1, (M, "4096")),
    ("MPI_File_close", 0, ("0-0",)),
]
HDF5_CALLS = [
    ("H5Fcreate", 0, (H, "2", "0", "%p")), ("H5Dcreate2", 0, (FILE_ID, "density", "1", "2", "3", "4", "5")),
    ("H5Dwrite", 0, (DSET_ID, "1", "2", "3", "4", "%p")), ("pwrite", 1, (H, "%p", "800", "2048")),
    ("H5Acreate2", 0, (FILE_ID, "units", "1", "2", "3", "4")), ("H5Awrite", 0, ("1", "2", "%p")),
    ("H5Aclose", 0, ("1",)), ("H5Fflush", 0, (FILE_ID, "0")),
    ("H5Dread", 0, (DSET_ID, "1", "2", "3", "4", "%p")), ("pread", 1, (H, "%p", "800", "2048")),
    ("H5Dclose", 0, (DSET_ID,)), ("H5Fclose", 0, (FILE_ID,)), ("H5Fopen", 0, (H, "0", "%p")),
    ("H5Fclose", 0, (FILE_ID,)),
]


def _timed(calls: list[tuple]) -> list[tuple]:
    """Each call 1 ms after the one before, lasting 0.2 ms (a nested call inside its caller)."""
    return [(f, d, args, 0.001 * i + 0.0001 * d, 0.001 * i + 0.0002) for i, (f, d, args) in enumerate(calls)]


def _layer(name: str) -> int:
    """recorder2text's layer, from Recorder's table order: POSIX, then MPI (MPI-IO), then HDF5."""
    first_mpi = next(i for i, f in enumerate(FUNCTIONS) if "MPI" in f)
    if FUNCTIONS.index(name) < first_mpi:
        return 0
    return 1 if name.startswith("MPI_File") else 2 if name.startswith("MPI") else 3


def _one(profile, module: str, name: str):
    recs = profile.records[module]
    rows = [i for i, rid in enumerate(recs.ids.tolist()) if profile.names[rid] == name]
    assert len(rows) == 1, (module, name, rows)
    return lambda counter: recs.get(counter)[rows[0]]


def _segments(profile, dxt: str, op: int) -> list[tuple[int, int]]:
    t = profile.dxt[dxt]
    return [(o, n) for o, n in zip(t.offset[t.op == op].tolist(), t.length[t.op == op].tolist())]


@pytest.mark.parametrize("calls", [POSIX_CALLS, MPIIO_CALLS, HDF5_CALLS], ids=["posix", "mpiio", "hdf5"])
def test_a_hand_built_trace_decodes_as_recorder2text_prints_it(tmp_path: Path, calls: list[tuple]):
    trace = RecorderTrace(write_trace(tmp_path / "t", [_timed(calls)]))
    want = [f"{s:.7f} {e:.7f} {f} {d} {_layer(f)} ({''.join(' ' + a for a in args)} )"
            for f, d, args, s, e in _timed(calls)]
    assert trace.text(trace.rank(0)) == want


def test_every_function_of_recorder_25_has_a_layer_and_a_kind():
    assert len(FUNCTIONS) == 243 and "MPI_File_iwrite_at" in FUNCTIONS and "H5Awrite" in FUNCTIONS
    unknown = [f for f in FUNCTIONS if C.kind_of(f) == "unknown"]
    assert not unknown
    kinds = {f: C.kind_of(f) for f in FUNCTIONS}
    assert kinds["pwrite64"] == kinds["writev"] == kinds["fwrite"] == kinds["MPI_File_write_at_all"] == "write"
    assert kinds["MPI_File_iread"] == kinds["H5Dread"] == kinds["fread"] == kinds["readv"] == "read"
    assert [kinds[f] for f in ("rename", "link", "ftruncate", "lseek64")] == ["rename", "link", "truncate", "seek"]
    assert (kinds["MPI_File_set_view"], kinds["MPI_File_seek"], kinds["MPI_File_sync"]) == ("view", "seek", "sync")
    assert (kinds["H5Fflush"], kinds["H5Awrite"], kinds["MPI_Bcast"]) == ("flush", "hdf5 attribute", "mpi")


def test_posix_and_stdio_calls_count_where_they_act(tmp_path: Path):
    profile = load(write_trace(tmp_path / "t", [_timed(POSIX_CALLS)]))
    a = _one(profile, "POSIX", A)
    assert (a("POSIX_WRITES"), a("POSIX_READS"), a("POSIX_OPENS"), a("POSIX_SEEKS")) == (3, 2, 1, 1)
    assert (a("POSIX_BYTES_WRITTEN"), a("POSIX_BYTES_READ")) == (4096 + 8192 + 100, 4096 + 512)
    # pwrite64 at its offset; writev at the position the open left; write after lseek64; readv after it
    assert _segments(profile, "DXT_POSIX", DXT_WRITE) == [(8192, 4096), (0, 8192), (65536, 100)]
    assert _segments(profile, "DXT_POSIX", DXT_READ) == [(0, 4096), (65636, 512)]
    assert a("POSIX_F_META_TIME") > 0  # ftruncate, rename: metadata time of the file they name
    s = _one(profile, "STDIO", S)
    assert (s("STDIO_OPENS"), s("STDIO_WRITES"), s("STDIO_BYTES_WRITTEN"), s("STDIO_BYTES_READ")) == (1, 1, 30, 8)
    kinds = profile.extras["recorder"]["kinds"]
    assert (kinds["rename"], kinds["link"], kinds["getcwd"]) == ("rename", "link", "meta")


def test_fprintf_counts_the_bytes_it_wrote_not_recorders_terminating_nul(tmp_path: Path):
    """Recorder records fprintf as vfprintf with vsnprintf(NULL, 0, ...) + 1: a 54-byte log line
    (recorded on this VM with Recorder c1c3dcbf, a 270,000-byte log of 5,000 lines) reads 55."""
    log = [("fopen", 0, (S, "w"))] + [("vfprintf", 0, (S, "55"))] * 3 + [("fclose", 0, (S,))]
    s = _one(load(write_trace(tmp_path / "t", [_timed(log)])), "STDIO", S)
    assert (s("STDIO_WRITES"), s("STDIO_BYTES_WRITTEN"), s("STDIO_MAX_BYTE_WRITTEN")) == (3, 3 * 54, 3 * 54 - 1)


def test_mpiio_calls_count_by_mode_at_their_views_offsets(tmp_path: Path):
    profile = load(write_trace(tmp_path / "t", [_timed(MPIIO_CALLS)]))
    m = _one(profile, "MPI-IO", M)
    counts = {c: int(m(f"MPIIO_{c}")) for c in ("COLL_WRITES", "INDEP_WRITES", "NB_WRITES", "COLL_READS",
                                                 "INDEP_READS", "NB_READS", "SYNCS", "VIEWS", "COLL_OPENS")}
    assert counts == dict.fromkeys(counts, 1) | {"COLL_WRITES": 2}
    assert (m("MPIIO_BYTES_WRITTEN"), m("MPIIO_BYTES_READ")) == (1024 + 128 + 8 + 16, 16 + 8 + 8)
    # displacement 1024 + offsets in MPI_INT etypes; the pointer moved by writes and MPI_File_seek
    assert _segments(profile, "DXT_MPIIO", DXT_WRITE) == [(1064, 1024), (1024, 128), (1424, 8), (1032, 16)]
    assert _segments(profile, "DXT_MPIIO", DXT_READ) == [(1432, 16), (1024, 8), (1028, 8)]
    # MPI_File_set_size's effect on the file system: the ftruncate the trace shows below it
    calls = profile.calls
    assert [(profile.names[int(r)], CALL_OPS[o], int(n)) for r, o, n in zip(calls.record_id, calls.op, calls.length)
            ] == [(M, "truncate", 4096)]


def test_hdf5_calls_bind_files_and_datasets_and_take_bytes_from_below(tmp_path: Path):
    profile = load(write_trace(tmp_path / "t", [_timed(HDF5_CALLS)]))
    f = _one(profile, "H5F", H)
    assert (f("H5F_OPENS"), f("H5F_FLUSHES")) == (2, 1)
    d = _one(profile, "H5D", f"{H}:/density")
    assert (d("H5D_WRITES"), d("H5D_READS"), d("H5D_BYTES_WRITTEN"), d("H5D_BYTES_READ")) == (1, 1, 800, 800)
    assert _segments(profile, "DXT_POSIX", DXT_WRITE) == [(2048, 800)]
    assert profile.extras["recorder"]["kinds"]["H5Awrite"] == "hdf5 attribute"


def test_datasets_chunked_by_h5pset_chunk_are_not_called_contiguous(tmp_path: Path):
    """Recorder has no chunk counters; H5Pset_chunk's dimensions are a pointer, and an opened dataset's
    layout is not in the trace. HDF005's chunk check said 'no chunked HDF5 dataset (contiguous layout)'
    of a job chunking 2 MiB chunks and of one reading them back (recorded here with Recorder c1c3dcbf:
    H5Pset_chunk(dcpl, 2, %p) before each H5Dcreate2; H5Dopen2 of those datasets)."""
    from advisor.config import SiteConfig
    from advisor.facts import FactContext, Missing

    chunked = HDF5_CALLS[:1] + [("H5Pcreate", 0, ("720575940379279378",)),
                                ("H5Pset_chunk", 0, ("720575940379279378", "2", "%p"))] + HDF5_CALLS[1:]
    opened = [("H5Dopen2", 0, (FILE_ID, "density", "0")) if c[0] == "H5Dcreate2" else c for c in HDF5_CALLS]
    for calls, why in ((chunked, r"chunks its datasets \(1 H5Pset_chunk call\).*chunk dimensions"),
                       (opened, r"opens datasets \(1 H5Dopen call\) whose layout a Recorder trace does not"),
                       (HDF5_CALLS, "no chunked HDF5 dataset")):
        ctx = FactContext(load(write_trace(tmp_path / str(len(calls)), [_timed(calls)])), SiteConfig())
        with pytest.raises(Missing, match=why):
            ctx.get("hdf5_chunk_misfit_datasets")


def test_independent_calls_of_a_file_also_read_collectively_are_weighed_by_their_own_time(tmp_path: Path):
    """A file read with 2 collective calls of 1 MiB (0.1 s each, 0.01 s of it in pread) and 100
    independent ones of 4,000 B (0.1 ms each, half of it in pread), as a program recorded here read
    its file (32 read_all, 2,000 read_at): MPI004 priced the independent reads with the whole file's
    time above POSIX, 837 ms per process where they took 3 ms."""
    from advisor.config import SiteConfig
    from advisor.facts import FactContext

    calls = [("MPI_File_open", 0, ("MPI_COMM_WORLD", M, "37", "%p", "0-0"), 0.0, 0.001)]
    t = 0.01
    for i in range(2):
        calls += [("MPI_File_read_at_all", 0, ("0-0", str(i << 20), "%p", "1048576", "MPI_BYTE", "%p"), t, t + 0.1),
                  ("pread", 1, (M, "%p", "1048576", str(i << 20)), t + 0.05, t + 0.06)]
        t += 0.2
    for i in range(100):
        calls += [("MPI_File_read_at", 0, ("0-0", str((2 << 20) + i * 4000), "%p", "4000", "MPI_BYTE", "%p"),
                   t, t + 0.0001), ("pread", 1, (M, "%p", "4000", str((2 << 20) + i * 4000)), t + 0.00002, t + 0.00007)]
        t += 0.001
    calls += [("MPI_File_close", 0, ("0-0",), t, t + 0.001)]
    ctx = FactContext(load(write_trace(tmp_path / "t", [calls])), SiteConfig())
    assert ctx.get("mpiio_indep_read_above_posix_s") == pytest.approx(100 * 0.00005, rel=1e-3)
    m = _one(ctx.profile, "MPI-IO", M)
    assert m("MPIIO_F_READ_OWN_TIME") == pytest.approx(2 * 0.09 + 100 * 0.00005)
    # independent by calls, collective by time: the layer account says what the time above went to
    # by time (HDF5 reading its metadata with 15 independent calls beside 4 collective H5Dread ones)
    from advisor.facts.layers import account
    assert not account(ctx).row("MPI-IO").own.startswith("independent calls")


def test_a_function_this_reader_does_not_know_is_counted_and_named(tmp_path: Path):
    functions = (*FUNCTIONS, "H5Xnew_call")
    calls = _timed([("open", 0, (A, "0")), ("H5Xnew_call", 0, ("1",)), (250, 0, ("x",)),
                    ("H5Xnew_call", 0, ("2",)), ("close", 0, (A,))])
    profile = load(write_trace(tmp_path / "t", [calls], functions))
    doc = profile.extras["recorder"]
    assert doc["unknown"] == {"H5Xnew_call": 2, "func250": 1}
    shown = {row[0] for title, _, rows in recorder_tables(doc) if "does not know" in title for row in rows}
    assert shown == {"H5Xnew_call", "func250"}
    assert int(np.sum(profile.records["POSIX"].counters["POSIX_OPENS"])) == 1


@pytest.mark.parametrize("file, why", [("0.cst", "call-signature table truncated"),
                                       ("0.cfg", "grammar truncated after 0 of 2000000000 rules")])
def test_a_damaged_entry_count_is_refused_in_one_line_not_walked(tmp_path: Path, file: str, why: str):
    from advisor.errors import InputError

    trace = write_trace(tmp_path / "t", [_timed(POSIX_CALLS[:2])])
    raw = (trace / file).read_bytes()
    (trace / file).write_bytes(np.array([2_000_000_000], "<i4").tobytes() + raw[4:])
    with pytest.raises(InputError, match=why):
        load(trace)


def test_a_signature_whose_arguments_do_not_match_their_count_is_refused(tmp_path: Path):
    from advisor.errors import InputError

    trace = write_trace(tmp_path / "t", [_timed([("open", 0, (A, "0"))])])
    raw = bytearray((trace / "0.cst").read_bytes())
    raw[4 + 16 + 10] = 5  # the key's argument count (after the table's count and the entry's head)
    (trace / "0.cst").write_bytes(bytes(raw))
    with pytest.raises(InputError, match=r"0\.cst: signature 0 holds 2 arguments, not 5"):
        load(trace)
