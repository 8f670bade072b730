"""Model files: the shipped default loads and says what it learned; unsafe or altered files are
refused with one clear line (library and CLI); the fleet's model API uses the same files."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from advisor.errors import InputError
from advisor.models import bandwidth, store
from advisor.models.features import FEATURES_VERSION, names
from advisor.models.sources.darshan import job_features
from advisor.models.predict import DEFAULT_MODEL, load
from advisor.models.train import Model
from tests.conftest import CORPUS

B_LOG = CORPUS / "generated" / "b_small_io_shared_4k" / "case.darshan"


@pytest.fixture(scope="module")
def default_copy(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("models") / "default.skops"
    path.write_bytes(DEFAULT_MODEL.read_bytes())
    return path


def _rewrite(src: Path, dst: Path, edit_meta=None, rehash: bool = False) -> Path:
    """Copy a model file, editing its metadata (and recomputing the hash when `rehash`)."""
    with zipfile.ZipFile(src) as zin:
        members = {n: zin.read(n) for n in zin.namelist()}
    meta = json.loads(members[store.META])
    if edit_meta:
        edit_meta(meta)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zout:
        for name, data in members.items():
            if name != store.META:
                zout.writestr(name, data)
        if rehash:
            meta["content_hash"] = store._hash(zout, meta)
        zout.writestr(store.META, json.dumps(meta))
    dst.write_bytes(buf.getvalue())
    return dst


def test_default_model_is_small_loads_and_says_what_it_was_trained_on():
    assert DEFAULT_MODEL.stat().st_size < 1 << 20
    model = load("default")
    meta = model.meta
    assert meta["kind"] == "calibration" and meta["features_version"] == FEATURES_VERSION
    assert meta["identity"]["fstype"] and meta["identity"]["mount_point"]
    assert any("ioadvisor calibrate" in line for line in meta["trained_on"])
    assert 0 < meta["cv"]["mdape"] < 5 and meta["cv"]["rows"] == meta["rows"] >= 20
    assert set(meta["ranges"]) == set(names()) and meta["versions"]["scikit-learn"]
    assert (DEFAULT_MODEL.parent / "calibration.csv.gz").exists()
    x = np.zeros((1, len(model.features)))
    mid, lo, hi = model.predict_log(x)
    assert lo[0] <= mid[0] <= hi[0]


def test_a_pickle_renamed_to_the_model_suffix_is_refused(tmp_path):
    bad = tmp_path / "model.skops"
    bad.write_bytes(pickle.dumps({"median": "anything"}))
    with pytest.raises(InputError, match="is a pickle; ioadvisor never unpickles"):
        store.load(bad)


def test_a_tampered_file_fails_its_content_hash(default_copy, tmp_path):
    def lie(meta):
        meta["cv"]["mdape"] = 0.01  # a better error than measured

    tampered = _rewrite(default_copy, tmp_path / "tampered.skops", lie)
    with pytest.raises(InputError, match="content hash mismatch"):
        store.load(tampered)


def test_an_untrusted_type_is_refused_before_anything_is_built(tmp_path):
    from sklearn.preprocessing import FunctionTransformer

    evil = Model(FunctionTransformer(func=os.system), names(), meta={"kind": "calibration"})
    path = store.save(evil, tmp_path / "evil.skops")
    with pytest.raises(InputError, match=r"untrusted types: .*system"):
        store.load(path)


def test_another_scikit_learn_minor_version_is_refused_a_patch_is_warned(default_copy, tmp_path):
    import sklearn

    major, minor, *_ = sklearn.__version__.split(".")

    def older(meta):
        meta["versions"]["scikit-learn"] = f"{major}.{int(minor) + 1}.0"

    with pytest.raises(InputError, match="retrain it with `ioadvisor train`"):
        store.load(_rewrite(default_copy, tmp_path / "old.skops", older, rehash=True))

    def patch(meta):
        meta["versions"]["scikit-learn"] = f"{major}.{minor}.999"

    model = store.load(_rewrite(default_copy, tmp_path / "patch.skops", patch, rehash=True))
    assert any("999" in w for w in model.meta["warnings"])


def test_cli_refuses_a_bad_model_in_one_line(tmp_path):
    bad = tmp_path / "model.skops"
    bad.write_bytes(pickle.dumps([1, 2, 3]))
    done = subprocess.run([sys.executable, "-m", "advisor", "diagnose", str(B_LOG), "--model", str(bad)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "is a pickle" in lines[0] and str(bad) in lines[0]


def test_fleet_bandwidth_model_round_trips_through_the_same_files(tmp_path):
    from advisor import api

    logs = sorted((CORPUS / "generated").glob("*/case.darshan"))[:12]
    rows = [job_features(api.load(p)) for p in logs]
    x = bandwidth.matrix(rows * 2)  # 24 jobs: enough for a model, not for a good one
    y = np.linspace(1.0, 3.0, len(x))
    model = bandwidth.fit(x, y)
    bandwidth.save(model, tmp_path / "fleet.skops")
    again = bandwidth.load(tmp_path / "fleet.skops")
    assert again.meta["kind"] == "fleet" and again.features == model.features
    assert np.allclose(again.predict_log(x[:, [names().index(f) for f in again.features]])[0],
                       model.predict_log(x[:, [names().index(f) for f in model.features]])[0])
    old = [dict(r, features_version=1.0) for r in rows]
    with pytest.raises(InputError, match="re-run `ioadvisor fleet run`"):
        bandwidth.matrix(old)
