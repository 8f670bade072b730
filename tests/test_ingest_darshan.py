"""Darshan 3.x ingest (pydarshan's libdarshan-util), isolation and derived metrics, on real logs."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from advisor.errors import InputError
from advisor.ingest import detect, load_profile
from advisor.ingest.darshan_log import _check_usable, load, sniff, sniff_gzip
from advisor.ingest.isolate import IsolatedCrash, run_isolated
from advisor.metrics import SIZE_BINS, per_file, summarize
from replay.plan import size_bins
from advisor.profile import DXT_READ, DXT_WRITE, SHARED_RANK

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
TRACES = REPO / "traces"
SMALL = TRACES / "ior-small-shared-4k.darshan"  # IOR -t 4k -b 16m, 4 ranks, one shared file
GOOD = TRACES / "ior-good-fpp-1m.darshan"  # IOR -F -t 1m -b 64m, 4 ranks
IMBALANCE = TRACES / "ior-imbalance-rank0-10x.darshan"
BADOST = TRACES / "sample-badost.darshan"


@pytest.fixture(scope="module")
def small():
    return load(SMALL)


# ------------------------------------------------------------------ sniffing


def test_sniff_accepts_3x_logs_and_2x_gzip_refuses_text(tmp_path):
    assert sniff(SMALL, SMALL.read_bytes()[:4096])
    gz = DATA / "darshan-2.2.0-mpi-io-test.darshan.gz"
    assert sniff_gzip(gz, gz.read_bytes()[:4096]) and not sniff(gz, gz.read_bytes()[:4096])
    assert detect(gz).name == "darshan-gzip"
    text = tmp_path / "notes.txt"
    text.write_text("3.41 is a version number, not a log\n")
    assert not sniff(text, text.read_bytes())
    assert detect(SMALL).name == "darshan"


def test_darshan_2x_log_is_refused_with_what_to_do():
    with pytest.raises(InputError) as exc:
        load_profile(DATA / "darshan-2.2.0-mpi-io-test.darshan.gz")
    reason = exc.value.reason
    assert "Darshan 2.01 log" in reason and "3.x" in reason and "darshan-parser" in reason
    assert "\n" not in str(exc.value)


# ------------------------------------------------------------------ job and counters


def test_job_metadata_matches_darshan_parser(small):
    # values from the corpus' darshan-parser.txt of this very log
    assert small.job.jobid == "12999"
    assert small.job.nprocs == 4
    assert small.job.exe == "ior -a POSIX -t 4k -b 16m -o /scratch/b_small_io_shared_4k/testfile"
    assert small.job.library_version == "3.5.0"
    assert small.job.runtime_s == pytest.approx(0.1222, abs=1e-3)
    assert small.source.log_version == "3.41"
    assert small.source.format == "darshan" and "pydarshan" in small.source.parser
    assert [m.path for m in small.mounts][-1] == "/"


def test_counters_use_full_darshan_names_and_shared_rank(small):
    posix = small.records["POSIX"]
    assert len(posix) == 1 and posix.ranks[0] == SHARED_RANK
    assert small.name_of(posix.ids[0]) == "/scratch/b_small_io_shared_4k/testfile"
    assert posix.get("POSIX_WRITES")[0] == 16384
    assert posix.get("POSIX_BYTES_WRITTEN")[0] == 67108864
    assert posix.get("POSIX_SIZE_WRITE_1K_10K")[0] == 16384
    assert posix.get("POSIX_F_WRITE_TIME")[0] == pytest.approx(0.265725, abs=1e-6)
    assert posix.counters["POSIX_WRITES"].dtype == np.int64
    assert posix.fcounters["POSIX_F_WRITE_TIME"].dtype == np.float64
    assert small.modules["POSIX"].records == 1 and small.modules["POSIX"].version == 4


def test_heatmap_records_are_named_like_darshan_parser(small):
    heat = small.records["HEATMAP"]
    assert {small.name_of(i) for i in heat.ids} == {"heatmap:POSIX", "heatmap:STDIO"}
    assert heat.has("HEATMAP_F_BIN_WIDTH_SECONDS") and heat.has("HEATMAP_WRITE_BIN_0")
    posix_rows = [small.name_of(i) == "heatmap:POSIX" for i in heat.ids]
    written = sum(heat.get(n)[posix_rows].sum() for n in heat.counters if "_WRITE_BIN_" in n)
    assert written == 67108864  # the heatmap saw every POSIX byte written


def test_oldest_format_3_00_is_up_converted():
    p = load(DATA / "mpi-io-test-x86_64-3.0.0.darshan")
    assert p.source.log_version == "3.00"
    assert p.records["POSIX"].has("POSIX_BYTES_WRITTEN")
    assert summarize(p).bytes_written > 0


def test_partial_flag_and_unsupported_modules_are_reported():
    partial = load(DATA / "partial-data-stdio.darshan")
    assert partial.modules["STDIO"].partial and partial.partial_modules == ["STDIO"]
    ap = load(DATA / "mpi-io-test-apmpi-apxc.darshan")
    for name in ("APMPI", "APXC"):
        assert not ap.modules[name].supported and "AutoPerf" in ap.modules[name].note
    assert ap.modules["POSIX"].supported and len(ap.records["POSIX"]) == 1


def test_dfs_and_daos_modules_are_read():
    p = load(DATA / "ior-dfs.darshan")
    s = summarize(p)
    assert "DFS" in s.base_modules
    assert s.modules["DFS"].bytes_written == 16 * 2**20 and s.modules["DFS"].writes == 64
    assert len(p.records["DAOS"]) == 3


def test_hdf5_datasets_fold_into_their_file():
    p = load(DATA / "hdf5-independent-256k.darshan")
    h5d = p.records["H5D"]
    assert h5d.counters["H5D_FILE_REC_ID"].dtype == np.uint64
    top = per_file(p)[0]
    assert top.path.endswith("testfile.h5")
    assert top.modules[0] == "POSIX" and {"MPI-IO", "H5D", "H5F"} <= set(top.modules)
    assert top.by_module["H5D"].bytes_written == 67108864
    assert top.shared and top.ranks == 4


# ------------------------------------------------------------------ LUSTRE, both forms


def test_lustre_component_form_3_4_6():
    p = load(DATA / "mpi-io-test-x86_64-3.5.0.darshan")
    [layout] = p.lustre.values()
    assert p.name_of(layout.record_id) == "/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat"
    [comp] = layout.components
    assert (comp.stripe_count, comp.stripe_size, comp.pattern, comp.ost_ids) == (1, 1048576, "raid0", [1])
    lus = p.records["LUSTRE"]
    assert lus.get("LUSTRE_COMP1_STRIPE_SIZE")[0] == 1048576
    assert lus.get("LUSTRE_NUM_COMPONENTS")[0] == 1
    assert p.modules["LUSTRE"].version == 2


def test_lustre_pfl_extent_and_pool():
    p = load(DATA / "ior-posix-lustre-pfl-pool.darshan")
    [layout] = p.lustre.values()
    comp = layout.components[0]
    assert comp.extent_end == 536870912000 and comp.pool == "ddn_ssd" and comp.ost_ids == [102]


def test_lustre_old_form_per_file_osts():
    p = load(BADOST)
    assert p.modules["LUSTRE"].version == 1 and "pre-3.4.6" in p.modules["LUSTRE"].note
    assert len(p.lustre) == 2048
    layouts = list(p.lustre.values())
    assert {lay.stripe_size for lay in layouts} == {1048576}
    assert {lay.stripe_count for lay in layouts} == {1}
    assert {lay.ost_ids[0] for lay in layouts} == set(range(24))  # Edison scratch1: 24 OSTs
    assert layouts[0].components[0].pattern == "unknown"  # the old form did not record it
    files = per_file(p)
    assert files[0].layout is not None and files[0].fstype == "lustre"
    # the slow OST of this run stands out once write time is grouped by OST
    by_ost: dict[int, list[float]] = {}
    for f in files:
        if f.layout:
            by_ost.setdefault(f.layout.ost_ids[0], []).append(f.stats.write_time)
    means = {ost: np.mean(times) for ost, times in by_ost.items()}
    slowest = max(means, key=means.get)
    assert means[slowest] > 10 * np.median(list(means.values()))


# ------------------------------------------------------------------ DXT


def test_dxt_segments_are_numpy_and_consistent_with_counters(small):
    t = small.dxt["DXT_POSIX"]
    assert t.readable and len(t) == 32768
    assert t.length.dtype == np.int64 and t.start.dtype == np.float64 and t.rank.dtype == np.int32
    assert (t.op == DXT_WRITE).sum() == 16384 and (t.op == DXT_READ).sum() == 16384
    assert t.length[t.op == DXT_WRITE].sum() == small.records["POSIX"].get("POSIX_BYTES_WRITTEN")[0]
    assert set(np.unique(t.rank)) == {0, 1, 2, 3} and t.hostnames == {r: "vm" for r in range(4)}
    # sorted by rank, then start time
    key = t.rank.astype(np.float64) * 1e6 + t.start
    assert np.all(np.diff(key) >= 0)
    assert np.all(t.end >= t.start)


def test_dxt_from_newer_darshan_is_unreadable_not_empty():
    p = load(DATA / "dxt-v2-devel.darshan")
    t = p.dxt["DXT_POSIX"]
    assert not t.readable and "version" in t.note and "counters" in t.note
    assert not p.modules["DXT_POSIX"].supported
    assert summarize(p).dxt_segments == {"DXT_POSIX": None}
    assert summarize(p).modules["POSIX"].bytes_written == 4 * 64 * 2**20  # counters still used


def test_dxt_mpiio_is_read():
    p = load(DATA / "hdf5-independent-256k.darshan")
    assert p.dxt["DXT_MPIIO"].readable and len(p.dxt["DXT_MPIIO"]) > 0
    assert len(p.dxt["DXT_POSIX"]) > 0


# ------------------------------------------------------------------ bad input


def _truncated(tmp_path: Path, src: Path, size: int) -> Path:
    out = tmp_path / f"{src.stem}-{size}.darshan"
    out.write_bytes(src.read_bytes()[:size])
    return out


@pytest.mark.parametrize("size", [200, 1400, 2000])
def test_truncated_logs_give_one_line_reasons(tmp_path, size):
    with pytest.raises(InputError) as exc:
        load_profile(_truncated(tmp_path, GOOD, size))
    assert "truncated" in exc.value.reason and "\n" not in str(exc.value)


def test_log_cut_in_the_dxt_module_keeps_counters_and_says_so(tmp_path):
    p = load_profile(_truncated(tmp_path, GOOD, 5000))
    assert p.records["POSIX"] and not p.dxt["DXT_POSIX"].readable
    assert "DXT_POSIX" in p.modules and not p.modules["DXT_POSIX"].supported


def test_log_with_job_metadata_only_is_an_error():
    with pytest.raises(InputError) as exc:
        load_profile(DATA / "empty-log.darshan")
    assert "empty log" in exc.value.reason and "4 processes" in exc.value.reason


def test_silently_empty_log_is_an_error():
    p = load(GOOD)
    p.job.nprocs = 0
    for m in p.modules.values():
        m.records = 0
    with pytest.raises(InputError, match="empty"):
        _check_usable(p, GOOD, {})


# ------------------------------------------------------------------ isolation


def _segfault(path):
    os.kill(os.getpid(), signal.SIGSEGV)


def _sleep(path):
    time.sleep(60)


def _hog(path):
    return [bytearray(64 << 20) for _ in range(64)]


def _bug(path):
    return {}["no such key"]


def test_isolated_load_returns_the_profile():
    p = run_isolated(load, SMALL, timeout_s=60)
    assert len(p.dxt["DXT_POSIX"]) == 32768 and p.job.jobid == "12999"


@pytest.mark.parametrize("loader, timeout, expect", [
    (_segfault, 60, "crashed (SIGSEGV)"),
    (_sleep, 3, "longer than 3 s"),
    (_hog, 60, "ran out of memory"),
])
def test_child_failures_become_input_errors(loader, timeout, expect):
    with pytest.raises(InputError) as exc:
        run_isolated(loader, Path("some.darshan"), timeout_s=timeout, memory_bytes=256 << 20)
    assert exc.value.path == "some.darshan" and expect in exc.value.reason
    assert not multiprocessing.active_children()  # nothing left running


def test_a_loader_bug_is_not_disguised_as_bad_input():
    with pytest.raises(IsolatedCrash, match="KeyError"):
        run_isolated(_bug, Path("x.darshan"), timeout_s=30)


# ------------------------------------------------------------------ metrics


def test_size_bins_are_darshans_upper_inclusive_bins():
    names = [n for n, _ in SIZE_BINS]
    idx = size_bins(np.array([0, 100, 101, 1024, 1025, 1048576, 1048577, 2**30, 2**30 + 1]))
    assert [names[i] for i in idx] == ["0_100", "0_100", "100_1K", "100_1K", "1K_10K",
                                       "100K_1M", "1M_4M", "100M_1G", "1G_PLUS"]


@pytest.mark.parametrize("trace", [SMALL, GOOD, IMBALANCE])
def test_histogram_from_counters_equals_histogram_of_dxt_sizes(trace):
    p = load(trace)
    ms = summarize(p).modules["POSIX"]
    t = p.dxt["DXT_POSIX"]
    for op, hist in ((DXT_READ, ms.size_hist_read), (DXT_WRITE, ms.size_hist_write)):
        counts = np.bincount(size_bins(t.length[t.op == op]), minlength=len(SIZE_BINS))
        assert {name: int(c) for (name, _), c in zip(SIZE_BINS, counts)} == hist


def test_summary_of_small_shared_io(small):
    s = summarize(small)
    assert s.base_modules == ["POSIX", "STDIO"]
    posix = s.modules["POSIX"]
    assert (posix.bytes_read, posix.bytes_written) == (67108864, 67108864)
    assert (posix.reads, posix.writes) == (16384, 16384)
    assert posix.common_sizes == [(4096, 32768)]
    assert posix.shared_files == 1 and posix.files == 1
    assert posix.consec_write_frac == pytest.approx(16380 / 16384)
    assert posix.seq_write_frac == pytest.approx(16383 / 16384)
    assert s.bytes_written == 67108864 + s.modules["STDIO"].bytes_written
    assert s.io_time_per_rank_s == pytest.approx(s.io_time_s / 4)
    assert 0 < s.io_fraction < 1
    assert s.dxt_segments == {"DXT_POSIX": 32768}


def test_shared_file_imbalance_uses_slowest_rank():
    ms = summarize(load(IMBALANCE)).modules["POSIX"]
    busy = 0.037900 + 0.279507 + 0.002296
    assert ms.shared_time_imbalance == pytest.approx(0.126361 / (busy / 4), rel=1e-3)
    f = per_file(load(IMBALANCE))[0]
    assert f.stats.slowest_rank_bytes == 335544320 and f.stats.fastest_rank_bytes == 33554432


def test_per_rank_imbalance_of_the_slow_ost_run():
    s = summarize(load(BADOST))
    posix = s.modules["POSIX"]
    assert len(posix.rank_time) == 2048 and posix.rank_bytes_imbalance == pytest.approx(1.0)
    assert posix.rank_time_imbalance > 5  # ranks on the bad OST took far longer
    assert s.files == 2051 and len(per_file(load(BADOST), limit=5)) == 5


def test_pythons_import_time_report_is_not_a_note_of_the_library():
    """A user profiling start-up (-X importtime) writes to the fd whose lines become the log's notes."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", "--json", "-", str(GOOD)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    assert "import time:" in out.stderr  # the report went where the user asked for it
    notes = json.loads(out.stdout)["source"]["notes"]
    assert not [n for n in notes if "import time" in n]
