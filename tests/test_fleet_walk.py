"""The fleet's log walker and dataset store, on real folders (no Dask)."""

from __future__ import annotations

import os
import shutil
from datetime import date
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.fleet.store import FleetStore
from advisor.fleet.walk import content_hash, iter_logs


def _touch(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """A Darshan-style <Y>/<M>/<D> log tree with decoys."""
    root = tmp_path / "darshan-logs"
    for day in ("2024/1/31", "2024/2/1", "2024/2/29", "2024/3/1", "2025/12/31"):
        _touch(root / day / f"user_app_id{day.replace('/', '')}_1.darshan", day)
    _touch(root / "2024/2/1/notes.md")  # not a log name
    _touch(root / "2024/2/1/dump-darshan-parser.txt")  # a parser dump
    return root


def test_walk_lists_logs_in_stable_order(archive: Path):
    first = [log.path for log in iter_logs([str(archive)])]
    assert first == [log.path for log in iter_logs([str(archive)])]
    names = [Path(p).name for p in first]
    assert "notes.md" not in names and "dump-darshan-parser.txt" in names
    assert len(first) == 6


def test_walk_prunes_day_folders_outside_the_window(archive: Path):
    logs = [log.path for log in iter_logs([str(archive)], since=date(2024, 2, 1), until=date(2024, 2, 29))]
    days = sorted({str(Path(p).parent.relative_to(archive)) for p in logs})
    assert days == ["2024/2/1", "2024/2/29"]


def test_list_file_paths_are_relative_to_it(tmp_path: Path, archive: Path):
    listing = tmp_path / "logs.list"
    one = next(iter_logs([str(archive)])).path
    listing.write_text(f"# comment\n\n{os.path.relpath(one, tmp_path)}\n{archive / '2025'}\nmissing.darshan\n")
    paths = [log.path for log in iter_logs([f"@{listing}"])]
    assert os.path.samefile(paths[0], one)
    assert paths[1].endswith("_1.darshan") and "/2025/" in paths[1]
    assert paths[2].endswith("missing.darshan")
    missing = list(iter_logs([f"@{listing}"]))[2]
    assert missing.size == -1  # kept: it becomes an error row, not a silent gap


def test_unreadable_list_file_is_an_input_error(tmp_path: Path):
    with pytest.raises(InputError, match="list file"):
        list(iter_logs([f"@{tmp_path / 'nope'}"]))


def test_symlink_loops_and_dangling_links_do_not_trap_the_walk(tmp_path: Path, archive: Path):
    (archive / "2024" / "loop").symlink_to(archive, target_is_directory=True)
    (archive / "gone.darshan").symlink_to(tmp_path / "does-not-exist.darshan")
    target = next(iter_logs([str(archive)])).path
    (archive / "linked.darshan").symlink_to(target)
    logs = {Path(log.path).name: log for log in iter_logs([str(archive)])}
    assert logs["gone.darshan"].size == -1
    assert logs["linked.darshan"].size == os.path.getsize(target)
    assert not any("/loop/" in log.path for log in logs.values())


def test_content_hash_follows_content_not_name(tmp_path: Path):
    a = _touch(tmp_path / "a.darshan", "same")
    b = tmp_path / "b.darshan"
    shutil.copy(a, b)
    assert content_hash(a) == content_hash(b)
    b.write_text("other")
    assert content_hash(a) != content_hash(b)


def test_store_refuses_a_folder_that_is_not_a_dataset(tmp_path: Path):
    _touch(tmp_path / "data" / "thesis.tex")
    with pytest.raises(InputError, match="not a fleet dataset"):
        FleetStore(tmp_path / "data")
    with pytest.raises(InputError, match="no fleet.json"):
        FleetStore(tmp_path / "elsewhere", create=False)


def test_store_drops_an_uncommitted_batch_and_refuses_a_second_writer(tmp_path: Path):
    store = FleetStore(tmp_path / "ds").lock()
    store.write_batch([{"path": "a", "content_hash": "h"}], [{"path": "a", "content_hash": "h", "code": "X"}])
    # what a kill between the two renames leaves: a findings part without its jobs part
    orphan = store.findings_dir / "part-zzzz-000001.parquet"
    shutil.copy(next(store.findings_dir.glob("part-*.parquet")), orphan)
    with pytest.raises(InputError, match="another fleet run"):
        FleetStore(tmp_path / "ds").lock()
    store.close()
    again = FleetStore(tmp_path / "ds").lock()
    assert not orphan.exists()
    assert again.findings(["code"]).column("code").to_pylist() == ["X"]
    again.close()


def test_recorder_trace_folders_are_one_log_each(corpus: Path):
    base = corpus / "recorder"
    logs = list(iter_logs([str(base)]))
    traces = sorted(str(base / n / "trace") for n in ("R1_posix_small_shared", "R1_posix_small_shared_interprocess",
                                                      "R3_posix_fpp_good", "R4_mdtest"))
    assert sorted(log.path for log in logs if log.path.endswith("/trace")) == traces
    assert not any("/trace/" in log.path for log in logs)  # never its per-rank files
    r3 = next(log for log in logs if "R3_" in log.path)
    assert r3.size == sum(f.stat().st_size for f in Path(r3.path).iterdir())
    assert [log.path for log in iter_logs([r3.path])] == [r3.path]
    assert content_hash(r3.path) == content_hash(r3.path) != content_hash(base / "R4_mdtest" / "trace")
