"""calibrate + train end to end on the local file system (real replayer, real MPI), with a short
budget: resumable data with the mount's identity, a model whose CV error is printed."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

from advisor.models import store
from advisor.models.calibrate import DATA_FILE, MOUNT_FILE
from advisor.models.features import FEATURES_VERSION
from tests.helpers import require

IOADVISOR = [sys.executable, "-m", "advisor"]


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*IOADVISOR, *args], capture_output=True, text=True, timeout=timeout)


def _keys(data: Path) -> list[str]:
    with open(data / DATA_FILE, newline="") as fh:
        return [row["key"] for row in csv.DictReader(fh)]


def test_calibrate_resume_and_train(tmp_path):
    require((Path(sys.executable).parent / "mpiexec").exists(), "no mpiexec in the venv (pip install mpich)")
    target, data, model = tmp_path / "scratch", tmp_path / "data", tmp_path / "model.skops"
    target.mkdir()
    first = _run("calibrate", "--target", str(target), "--out", str(data), "--np", "2", "--budget", "0.6",
                 "--repeat", "1", "--quiet")
    assert first.returncode == 0, first.stderr
    assert "calibrate: measured" in first.stderr and "designed patterns" in first.stderr
    meta = json.loads((data / MOUNT_FILE).read_text())
    assert meta["identity"]["fstype"] and meta["identity"]["source"] and meta["snapshot"]["host"]
    before = _keys(data)
    assert before and list(target.iterdir()) == []  # the replayer cleaned its scratch directories

    again = _run("calibrate", "--target", str(target), "--out", str(data), "--np", "2", "--budget", "0.2",
                 "--repeat", "1", "--quiet")
    assert again.returncode == 0, again.stderr
    after = _keys(data)
    assert after[:len(before)] == before and len(after) > len(before)  # appended, nothing redone
    points = {k for k in after}
    assert len(points) == len({(k) for k in after}) and not set(before) & set(after[len(before):])

    trained = _run("train", str(data), "--out", str(model))
    assert trained.returncode == 0, trained.stderr
    print(trained.stdout)  # the CV error and the importances, in the test log
    assert "cross-validated (5-fold" in trained.stdout and "median absolute percentage error" in trained.stdout
    assert "log2_call_bytes" in trained.stdout
    loaded = store.load(model)
    assert loaded.meta["identity"] == meta["identity"] and loaded.meta["rows"] == len(after)
    assert loaded.meta["cv"]["mdape"] > 0 and loaded.meta["cv"]["r2"] <= 1


def test_the_default_model_is_what_its_shipped_calibration_trains(tmp_path):
    """advisor/models/default holds the rows and the mount record: `train` rebuilds the model."""
    import numpy as np
    import sklearn

    from advisor.models.features import matrix
    from advisor.models.predict import DEFAULT_MODEL
    from advisor.models.rows import collect

    rebuilt_path = tmp_path / "rebuilt.skops"
    done = _run("train", str(DEFAULT_MODEL.parent), "--out", str(rebuilt_path))
    assert done.returncode == 0, done.stderr
    shipped, rebuilt = store.load(DEFAULT_MODEL), store.load(rebuilt_path)
    assert rebuilt.meta["identity"] == shipped.meta["identity"] and rebuilt.meta["rows"] == shipped.meta["rows"]
    x = matrix(collect([str(DEFAULT_MODEL.parent)]).rows, shipped.features)
    gap = max(np.max(np.abs(a - b)) for a, b in zip(shipped.predict_log(x), rebuilt.predict_log(x)))
    if shipped.meta["versions"]["scikit-learn"] == sklearn.__version__:
        assert gap == 0.0  # the same library trains the same trees
        # ... and calibrates the same interval, from the same replayed fixes (to the last bits a
        # CPU's vectorised sums may order differently: 0.6290662062033524 on one VM, ...523 on another)
        assert _same(rebuilt.meta["speedup_interval"], shipped.meta["speedup_interval"])
        # the model of measured fixes too: the same predictions of every shipped fix, the same interval
        from advisor.models import pairs, speedup

        fixes = speedup.Rows.of(pairs.read(DEFAULT_MODEL.parent / pairs.PAIRS_FILE))
        assert np.array_equal(speedup.predict(shipped.speedup, fixes.x), speedup.predict(rebuilt.speedup, fixes.x))
        assert _same(rebuilt.meta["speedup_model"], shipped.meta["speedup_model"])
    else:
        assert abs(rebuilt.meta["cv"]["mdape"] - shipped.meta["cv"]["mdape"]) < 0.03


def _same(a, b) -> bool:
    """Equal structures whose floats agree to 1e-12 relative."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_a_shipped_calibration_is_read_never_resumed(tmp_path):
    from advisor.models.predict import DEFAULT_MODEL

    data = tmp_path / "shipped"
    data.mkdir()
    for name in ("calibration.csv.gz", MOUNT_FILE):
        (data / name).write_bytes((DEFAULT_MODEL.parent / name).read_bytes())
    done = _run("calibrate", "--target", str(tmp_path), "--out", str(data), "--budget", "0.1", "--quiet")
    assert done.returncode == 2 and "holds a finished calibration" in done.stderr, done.stderr
    assert sorted(p.name for p in data.iterdir()) == ["calibration.csv.gz", MOUNT_FILE]


def test_calibrate_refuses_data_of_another_mount_and_a_bad_target(tmp_path):
    target, data = tmp_path / "scratch", tmp_path / "data"
    target.mkdir()
    data.mkdir()
    (data / MOUNT_FILE).write_text(json.dumps({
        "schema": "ioadvisor/calibration/v1", "features_version": FEATURES_VERSION,
        "identity": {"fstype": "lustre", "source": "10.0.0.1@tcp:/scratch", "mount_point": "/lus"}}))
    done = _run("calibrate", "--target", str(target), "--out", str(data), "--budget", "0.1", "--quiet")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "was measured on another mount" in done.stderr and "lustre" in done.stderr
    assert not (data / DATA_FILE).exists()
    missing = _run("calibrate", "--target", str(tmp_path / "nowhere"), "--out", str(tmp_path / "d2"),
                   "--budget", "0.1", "--quiet")
    assert missing.returncode == 2 and "target does not exist" in missing.stderr
    assert len([ln for ln in missing.stderr.splitlines() if ln.strip()]) == 1


def test_train_needs_enough_rows_and_says_so(tmp_path):
    corpus = Path(__file__).resolve().parents[2] / "shared" / "corpus"
    log = corpus / "generated" / "b_small_io_shared_4k" / "case.darshan"
    require(log.exists(), "shared corpus not found")
    done = _run("train", str(log), "--out", str(tmp_path / "m.skops"))
    assert done.returncode == 2 and "usable rows; at least 20 are needed" in done.stderr
    assert not (tmp_path / "m.skops").exists()
