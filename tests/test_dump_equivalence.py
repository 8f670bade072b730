"""A Darshan log and its darshan-parser / darshan-dxt-parser dump give the same profile.

Generated corpus: every case with both `case.darshan` and a real darshan-parser
dump. darshan-logs collection: it ships no dumps, so dumps are printed by
tests/darshan_parser_ref.py (libdarshan-util's own record printers) for a set of
logs chosen to cover every log version, both LUSTRE forms, partial modules,
HDF5/PnetCDF/DFS/DAOS/APMPI, heatmaps and DXT.

"Same" means: same modules (non-DXT, with record counts and partial flags), same
record ids, ranks and file names, same integer counters exactly, float counters
within the dump's printed precision (%f: 1e-6 s), same Lustre layouts, same
metrics.summarize integers (bytes, ops, histograms) and floats within that
precision, and for DXT the same segments (times printed with 4 decimals).
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from advisor import metrics
from advisor.api import load
from advisor.errors import InputError
from advisor.ingest.parser_dump import load_dump
from advisor.profile import JobProfile
from tests.conftest import CORPUS, REPO

GENERATED = CORPUS / "generated"
F_TOL = 1.01e-6  # darshan-parser prints float counters with %f
DXT_TOL = 0.5e-4 + 1e-9  # darshan-dxt-parser prints times with %.4f


def _dump(folder: Path, stem: str) -> Path | None:
    return next((p for p in (folder / f"{stem}.txt", folder / f"{stem}.txt.gz") if p.exists()), None)


def _cases(*dumps: str) -> list[str]:
    """Generated cases with a log and each of the `dumps` (parametrized, never skipped)."""
    if not GENERATED.is_dir():
        return ["<corpus missing>"]
    return sorted(p.name for p in GENERATED.iterdir()
                  if (p / "case.darshan").exists() and all(_dump(p, stem) for stem in dumps))


@lru_cache(maxsize=4)
def _log(path: Path) -> JobProfile:
    return load(path)


# -- comparison ----------------------------------------------------------------------------
def assert_same_job(log: JobProfile, dump: JobProfile) -> None:
    for key in ("jobid", "uid", "nprocs", "exe", "metadata", "library_version"):
        assert getattr(dump.job, key) == getattr(log.job, key), key
    assert dump.job.runtime_s == pytest.approx(log.job.runtime_s, abs=0.5e-4 + 1e-9)
    for key in ("start_time", "end_time"):  # the dump has whole seconds
        a, b = getattr(log.job, key), getattr(dump.job, key)
        assert (a is None) == (b is None) or a == b == 0 or (a is not None and abs(a - b) < 1), key
    assert [(m.path, m.fstype) for m in dump.mounts] == [(m.path, m.fstype) for m in log.mounts]


def assert_same_records(log: JobProfile, dump: JobProfile) -> None:
    counter_modules = {k for k in log.modules if not k.startswith("DXT_")}
    assert {k for k in dump.modules if not k.startswith("DXT_")} == counter_modules
    for name in counter_modules:
        a, b = log.modules[name], dump.modules[name]
        assert (b.partial, b.version) == (a.partial, a.version), name
        if a.supported:
            assert b.records == a.records, name
    for module, ra in log.records.items():
        rb = dump.records[module]
        oa, ob = np.lexsort((ra.ranks, ra.ids)), np.lexsort((rb.ranks, rb.ids))
        assert np.array_equal(ra.ids[oa], rb.ids[ob]) and np.array_equal(ra.ranks[oa], rb.ranks[ob]), module
        assert set(rb.counters) == set(ra.counters), module
        assert set(rb.fcounters) == set(ra.fcounters), module
        for name, col in ra.counters.items():
            assert np.array_equal(rb.counters[name][ob], col[oa]), f"{module} {name}"
        for name, col in ra.fcounters.items():
            assert np.allclose(rb.fcounters[name][ob], col[oa], rtol=1e-12, atol=F_TOL, equal_nan=True), \
                f"{module} {name}"
        if module == "DAOS":
            continue  # darshan-parser prints DAOS object ids where other modules print names
        for rid in np.unique(ra.ids):
            assert dump.names.get(int(rid)) == log.names.get(int(rid)), f"name of {rid}"
    assert set(dump.records) == set(log.records)
    assert {k: _layout(v) for k, v in dump.lustre.items()} == {k: _layout(v) for k, v in log.lustre.items()}


def _layout(layout):
    # file-system OST/MDT counts: only old-form dumps carry them, the log reader does not keep them
    return dataclasses.replace(layout, osts=None, mdts=None)


def assert_same_summary(log: JobProfile, dump: JobProfile) -> None:
    a, b = dataclasses.asdict(metrics.summarize(log)), dataclasses.asdict(metrics.summarize(dump))
    a.pop("dxt_segments"), b.pop("dxt_segments")  # a parser dump has no segments
    _close(a, b, "summary")


def _close(x, y, path: str) -> None:
    if isinstance(x, dict):
        assert set(x) == set(y), path
        for k in x:
            _close(x[k], y[k], f"{path}.{k}")
    elif isinstance(x, (list, tuple)):
        assert len(x) == len(y), path
        for i, (p, q) in enumerate(zip(x, y)):
            _close(p, q, f"{path}[{i}]")
    elif isinstance(x, np.ndarray):
        assert x.shape == y.shape, path
        if x.dtype.kind in "iu":
            assert np.array_equal(x, y), path
        else:  # sums of %f-rounded values and ratios of them
            assert np.allclose(x, y, rtol=1e-2, atol=1e-5 * max(1, len(x))), path
    elif isinstance(x, float) or isinstance(y, float):
        assert (x is None) == (y is None), path
        if x is not None and not (math.isnan(x) and math.isnan(y)):
            assert math.isclose(x, y, rel_tol=1e-2, abs_tol=1e-4), f"{path}: {x} vs {y}"
    else:
        assert x == y, path


def assert_same_dxt(log: JobProfile, dump: JobProfile) -> None:
    for module, t in log.dxt.items():
        u = dump.dxt[module]
        assert u.readable
        if not t.readable:  # e.g. a DXT version pydarshan cannot read: the dump still can
            continue
        assert len(u) == len(t), module
        ka = np.lexsort((np.round(t.start, 4), t.length, t.offset, t.op, t.record_id, t.rank))
        kb = np.lexsort((u.start, u.length, u.offset, u.op, u.record_id, u.rank))
        for col in ("rank", "record_id", "op", "offset", "length"):
            assert np.array_equal(getattr(u, col)[kb], getattr(t, col)[ka]), f"{module} {col}"
        for col in ("start", "end"):
            assert np.allclose(getattr(u, col)[kb], getattr(t, col)[ka], rtol=0, atol=DXT_TOL), f"{module} {col}"
        assert u.hostnames == t.hostnames
        assert bool(u.note) == bool(t.note), module  # partial traces say so both ways


def assert_same_profile(log: JobProfile, dump: JobProfile) -> None:
    assert_same_job(log, dump)
    assert_same_records(log, dump)
    assert_same_summary(log, dump)


# -- generated corpus: real darshan-parser dumps ------------------------------------------------
@pytest.mark.parametrize("case", _cases("darshan-parser"))
def test_generated_log_and_parser_dump(corpus, case):
    folder = GENERATED / case
    dump_path = _dump(folder, "darshan-parser")
    try:
        dump = load_dump(dump_path)
    except InputError as exc:
        # darshan-parser refuses a partial module unless --show-incomplete: use that dump
        assert "--show-incomplete" in exc.reason
        dump = load_dump(_dump(folder, "darshan-parser-show-incomplete"))
    assert_same_profile(_log(folder / "case.darshan"), dump)


@pytest.mark.parametrize("case", _cases("darshan-parser", "darshan-dxt-parser"))
def test_generated_log_and_dxt_dump(corpus, case):
    folder = GENERATED / case
    log = _log(folder / "case.darshan")
    path = _dump(folder, "darshan-dxt-parser")
    try:
        dump = load_dump(path)
    except InputError as exc:  # a partial DXT module darshan-dxt-parser refused to print
        assert "--show-incomplete" in exc.reason and any(log.modules[m].partial for m in log.dxt)
        return
    assert set(dump.dxt) == set(log.dxt)
    assert_same_job(log, dump)
    assert_same_dxt(log, dump)


def test_dxt_dump_reads_what_pydarshan_cannot(corpus):
    """The development-Darshan log (DXT v2): pydarshan has no segments, its dump has all."""
    folder = GENERATED / "x_dxt_v2_devel_darshan"
    log, dump = _log(folder / "case.darshan"), load_dump(folder / "darshan-dxt-parser.txt")
    assert not log.dxt["DXT_POSIX"].readable
    trace = dump.dxt["DXT_POSIX"]
    posix = log.records["POSIX"]
    assert len(trace) == int(posix.counters["POSIX_READS"].sum() + posix.counters["POSIX_WRITES"].sum())


def test_second_log_of_a_case(corpus):
    folder = GENERATED / "k_fio_randwrite_4k"
    assert_same_profile(_log(folder / "case.2.darshan"), load_dump(folder / "darshan-parser.2.txt"))


# -- darshan-logs collection: dumps printed by libdarshan-util's own printers ---------------------
REFERENCE_LOGS = [
    "darshan-logs/darshan_logs/release_logs/mpi-io-test-x86_64-3.0.0.darshan",
    "darshan-logs/darshan_logs/release_logs/mpi-io-test-ppc64-3.1.0.darshan",  # BG/Q, big-endian
    "darshan-logs/darshan_logs/release_logs/mpi-io-test-x86_64-3.1.3.darshan",  # first DXT
    "darshan-logs/darshan_logs/release_logs/mpi-io-test-x86_64-3.2.1.darshan",
    "darshan-logs/darshan_logs/release_logs/mpi-io-test-x86_64-3.4.0.darshan",  # APMPI, HEATMAP
    "darshan-logs/darshan_logs/release_logs/mpi-io-test-x86_64-3.5.0.darshan",  # LUSTRE v2
    "darshan-logs/darshan_logs/dlio_logs/snyder_python3_id3116902-2110365_12-19-66957-188958432683465822_1.darshan",
    "darshan-logs/darshan_logs/imbalanced_io/imbalanced-io.darshan",  # old LUSTRE, partial POSIX
    "darshan-logs/darshan_logs/skew_io/skew-app.darshan",  # 65,536 processes
    "darshan-logs/darshan_logs/partial_data_dxt/partial_data_dxt.darshan",
    "darshan-logs/darshan_logs/partial_data_stdio/partial_data_stdio.darshan",
    "darshan-logs/darshan_logs/ior_daos/snyder_ior-DFS_id4681120-53379_5-8-15060-3270540599978592154_1.darshan",
    "darshan-logs/darshan_logs/ior_pnetcdf_hdf5/shane_ior-PNETCDF_id438100-438100_11-9-41525-10280033558448664385_1.darshan",
    "darshan-logs/darshan_logs/hdf5_diagonal_write_only/hdf5_diagonal_write_1_byte_dxt.darshan",
    "darshan-logs/darshan_logs/mpi_io_test_with_dxt/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan",
    "darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input/sample-badost.darshan",  # LUSTRE, 1 slow OST
]


@pytest.fixture(scope="module")
def reference_dumps(corpus, tmp_path_factory) -> Path:
    """Print the dumps of all REFERENCE_LOGS in one child process (libdarshan-util is native)."""
    out = tmp_path_factory.mktemp("reference-dumps")
    logs = [str(corpus / rel) for rel in REFERENCE_LOGS]
    subprocess.run([sys.executable, str(REPO / "tests" / "darshan_parser_ref.py"), "--batch", str(out), *logs],
                   check=True, cwd=REPO, timeout=600, capture_output=True)
    return out


@pytest.mark.parametrize("index", range(len(REFERENCE_LOGS)), ids=[Path(p).name[:40] for p in REFERENCE_LOGS])
def test_collection_log_and_reference_dumps(corpus, reference_dumps, index):
    log = load(corpus / REFERENCE_LOGS[index])
    dump = load_dump(reference_dumps / f"{index}.parser.txt")
    assert_same_profile(log, dump)
    if any(len(t) or not t.readable for t in log.dxt.values()):
        assert_same_dxt(log, load_dump(reference_dumps / f"{index}.dxt.txt"))


def test_reference_printer_matches_real_darshan_parser(corpus, tmp_path):
    """The reference printer reproduces the real darshan-parser's record and DXT lines."""
    folder = GENERATED / "d_mpiio_independent_256k"
    subprocess.run([sys.executable, str(REPO / "tests" / "darshan_parser_ref.py"), "--batch", str(tmp_path),
                    str(folder / "case.darshan")], check=True, cwd=REPO, timeout=300)

    def data_lines(path: Path) -> list[str]:
        return [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]

    assert data_lines(tmp_path / "0.dxt.txt") == data_lines(folder / "darshan-dxt-parser.txt")
    ours = [ln for ln in data_lines(tmp_path / "0.parser.txt") if not ln.startswith("total_")]  # --all
    assert ours == data_lines(folder / "darshan-parser.txt")
