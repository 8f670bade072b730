"""Recorder traces as an input: sniffed as a folder, calls turned into Darshan-like records."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from advisor.errors import InputError
from advisor.ingest import detect, load_profile
from advisor.ingest.recorder import load
from tests.recorder_traces import recorder_dir


def _trace(corpus: Path, name: str) -> Path:
    return recorder_dir(corpus) / name / "trace"


def test_folder_and_its_metadata_file_are_sniffed(corpus: Path) -> None:
    folder = _trace(corpus, "R3_posix_fpp_good")
    assert detect(folder).name == "recorder"
    assert detect(folder / "recorder.mt").name == "recorder"
    with pytest.raises(InputError, match="not a recognised input"):
        detect(folder / "0.cfg")


def test_small_shared_writes_become_posix_records_and_segments(corpus: Path) -> None:
    """ior -t 4k -b 4m -w -r on 4 ranks: 1,024 writes and reads of 4 KiB per rank on one file."""
    profile = load_profile(_trace(corpus, "R1_posix_small_shared"))
    posix = profile.records["POSIX"]
    assert profile.job.nprocs == 4 and profile.source.format == "recorder"
    assert sorted(posix.ranks.tolist()) == [0, 1, 2, 3]
    assert set(profile.names[i] for i in posix.ids.tolist()) == {"/scratch/rec/R1/f"}
    assert posix.counters["POSIX_WRITES"].tolist() == [1024] * 4
    assert posix.counters["POSIX_BYTES_WRITTEN"].sum() == 16 << 20
    assert posix.counters["POSIX_SIZE_WRITE_1K_10K"].tolist() == [1024] * 4
    assert posix.counters["POSIX_ACCESS1_ACCESS"].tolist() == [4096] * 4
    # each rank writes its own 4 MiB block in order: lseek to offset, write 4 KiB
    assert posix.counters["POSIX_MAX_BYTE_WRITTEN"][np.argsort(posix.ranks)].tolist() == \
        [(r + 1) * (4 << 20) - 1 for r in range(4)]
    assert posix.counters["POSIX_CONSEC_WRITES"].tolist() == [1023] * 4
    dxt = profile.dxt["DXT_POSIX"]
    assert len(dxt) == 8192 and set(dxt.length.tolist()) == {4096}
    writes = dxt.subset((dxt.rank == 2) & (dxt.op == 1))
    assert writes.offset.tolist() == list(range(8 << 20, 12 << 20, 4096))
    assert (writes.end >= writes.start).all() and (np.diff(writes.start) > 0).all()
    calls = profile.extras["recorder"]["calls"]
    assert calls["POSIX"]["write"] == 4096 and calls["POSIX"]["lseek"] == 8192


def test_mdtest_metadata_calls(corpus: Path) -> None:
    """mdtest -n 200 -u -F: 200 files per rank created, opened again and removed."""
    profile = load_profile(_trace(corpus, "R4_mdtest"))
    posix = profile.records["POSIX"]
    files = [profile.names[i] for i in posix.ids.tolist()]
    assert sum("file.mdtest" in f for f in files) == 800
    assert posix.counters["POSIX_OPENS"].sum() == 1600
    assert "POSIX_WRITES" not in posix.counters
    assert (posix.fcounters["POSIX_F_META_TIME"] > 0).all()
    calls = profile.extras["recorder"]["calls"]["POSIX"]
    assert calls["unlink"] == 800 and calls["close"] == 1600


def test_damaged_trace_is_one_line(corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "t"
    shutil.copytree(_trace(corpus, "R3_posix_fpp_good"), folder)
    cfg = folder / "3.cfg"
    cfg.chmod(0o644)
    cfg.write_bytes(cfg.read_bytes()[:100])
    with pytest.raises(InputError) as err:
        load(folder)
    assert str(err.value).startswith(str(folder)) and "3.cfg: grammar truncated" in str(err.value)
    assert "\n" not in str(err.value)


def test_show_lists_calls_per_layer_and_function(corpus: Path) -> None:
    from advisor.report.show import show_entry

    entry = show_entry(load_profile(_trace(corpus, "R4_mdtest")))
    assert entry["source"]["format"] == "recorder" and entry["job"]["nprocs"] == 4
    tables = {title: rows for title, _, rows in entry["extra_tables"]}
    assert tables["Recorder calls per layer"] == [["POSIX", "4,015", "6"], ["MPI", "145", "10"]]
    assert tables["Recorder calls per function"][:3] == [
        ["POSIX", "close", "close", "1,600"], ["POSIX", "open", "open", "1,600"], ["POSIX", "unlink", "remove", "800"]]
    assert entry["recorder"]["calls"]["POSIX"]["mkdir"] == 6


def test_call_arguments_and_file_positions_follow_darshans_rules():
    """recorder.calls: which paths Darshan would record, integers Recorder prints; recorder.events:
    the file position carried through one file's calls (open sets 0, lseek sets or adds, a read
    or write without an offset advances it)."""
    from advisor.ingest.recorder.calls import integer, traced_path
    from advisor.ingest.recorder.events import _scan

    assert traced_path("/scratch/rec/R1/testFile") and not traced_path("/proc/self/maps")
    assert not traced_path("0x7ffd1234") and (integer("4096"), integer("MPI_INFO_NULL")) == (4096, 0)
    # two files (segments): open, write 10, write 10, lseek(SET, 100), write 5 | open, write 7
    first = np.array([1, 0, 0, 0, 0, 1, 0], bool)
    is_set = np.array([1, 0, 0, 1, 0, 1, 0], bool)
    set_value = np.array([0, 0, 0, 100, 0, 0, 0])
    step = np.array([0, 10, 10, 0, 5, 0, 7])
    assert _scan(first, is_set, set_value, step).tolist() == [0, 0, 10, 20, 100, 0, 0]


def test_directories_are_metadata_of_the_job_not_files(corpus: Path) -> None:
    """mdtest's tree: the directories it makes and removes are no records (Darshan records no
    directories); their calls are the job's metadata."""
    profile = load_profile(_trace(corpus, "R4_mdtest"))
    names = [profile.names[i] for i in profile.records["POSIX"].ids.tolist()]
    assert len(names) == 800 and all("file.mdtest" in n for n in names)
    directories = profile.extras["recorder"]["directories"]
    assert directories["paths"] == 10 and directories["calls"] >= 15 and directories["meta_time_s"] > 0
