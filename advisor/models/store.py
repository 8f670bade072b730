"""Model files that are safe to open: skops (never pickle) plus readable metadata.

A model file is a skops archive (a zip of a JSON schema and numpy arrays: loading it
runs no code from the file) with one more member, ``ioadvisor.json``: what the model is
(features and their version, training ranges, where its rows came from, cross-validated
error, importances, the mount it learned, library versions) and a SHA-256 content hash
over the archive's members and that metadata.

Loading refuses, with a one-line reason: a pickle (ioadvisor never unpickles a file),
a file that is not a model, a file whose hash does not match (damaged or edited), a
model of another feature version or scikit-learn minor version, and any type outside
:data:`TRUSTED` (skops lists the types a file would build before building them). The
hash detects damage and careless edits, not a forger: safety comes from skops.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import time
import zipfile
from pathlib import Path

from advisor.fileio import write_atomic
from advisor.errors import InputError
from advisor.models.features import FEATURES_VERSION
from advisor.models.train import Model

FORMAT = "ioadvisor/model/v1"
META = "ioadvisor.json"
SUFFIX = ".skops"
TRUSTED = [
    # what a fitted HistGradientBoostingRegressor holds beyond skops' default trusted types
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
]
"""Types a model file may build besides skops' defaults (scikit-learn estimators, numpy, builtins)."""


def versions() -> dict[str, str]:
    import numpy
    import sklearn
    import skops

    from advisor import __version__

    return {"scikit-learn": sklearn.__version__, "skops": skops.__version__, "numpy": numpy.__version__,
            "python": platform.python_version(), "ioadvisor": __version__}


def save(model: Model, path: str | Path) -> Path:
    """Write `model` to `path` atomically (skops archive + ioadvisor.json)."""
    import skops.io as sio

    path = Path(path)
    payload = {"median": model.estimator, "lower": model.lower, "upper": model.upper,
               "features": list(model.features)}
    if model.speedup is not None:
        payload["speedup"] = model.speedup
    meta = {**model.meta, "format": FORMAT, "features": list(model.features),
            "features_version": model.features_version, "versions": versions(),
            "created": model.meta.get("created") or time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    buffer = io.BytesIO(sio.dumps(payload, compression=zipfile.ZIP_DEFLATED))
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        meta["content_hash"] = _hash(archive, meta)
        archive.writestr(META, json.dumps(meta, indent=1, sort_keys=True, default=_plain))
    write_atomic(path, buffer.getvalue())
    model.meta = meta
    return path


def _plain(value):
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _hash(archive: zipfile.ZipFile, meta: dict) -> str:
    """SHA-256 over every member but the metadata (in name order) and the metadata itself."""
    digest = hashlib.sha256()
    for name in sorted(n for n in archive.namelist() if n != META):
        digest.update(name.encode() + b"\0" + archive.read(name) + b"\0")
    body = {k: v for k, v in meta.items() if k != "content_hash"}
    digest.update(json.dumps(body, sort_keys=True, default=_plain).encode())
    return "sha256:" + digest.hexdigest()


def read_meta(path: str | Path) -> tuple[dict, bytes]:
    """The metadata of a model file (checked: format, hash) and the file's bytes."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), "no such model file") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None
    if data[:1] == b"\x80" or data[:2] in (b"(d", b"(l", b"}q", b"]q"):
        raise InputError(str(path), "is a pickle; ioadvisor never unpickles a model file "
                                    "(train one with `ioadvisor train`)")
    if data[:4] != b"PK\x03\x04":
        raise InputError(str(path), "not an ioadvisor model file (not a skops archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            if META not in archive.namelist():
                raise InputError(str(path), f"not an ioadvisor model file (a skops archive without {META})")
            meta = json.loads(archive.read(META))
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                raise InputError(str(path), f"not an ioadvisor model file ({META} is not {FORMAT})")
            if meta.get("content_hash") != _hash(archive, meta):
                raise InputError(str(path), "content hash mismatch: the model file was modified or damaged "
                                            "after ioadvisor wrote it")
    except (zipfile.BadZipFile, ValueError, KeyError, OSError) as exc:
        raise InputError(str(path), f"damaged model file: {exc}") from None
    return meta, data


def compatibility(meta: dict) -> tuple[str | None, list[str]]:
    """(reason to refuse or None, warnings) for a model's versions against this installation."""
    if meta.get("features_version") != FEATURES_VERSION:
        return (f"its features are version {meta.get('features_version')}, this ioadvisor computes "
                f"version {FEATURES_VERSION}: retrain it with `ioadvisor train`"), []
    here, there = versions(), meta.get("versions") or {}
    trained = str(there.get("scikit-learn", "?"))
    if trained.split(".")[:2] != here["scikit-learn"].split(".")[:2]:
        return (f"trained with scikit-learn {trained}, this is {here['scikit-learn']}: "
                "retrain it with `ioadvisor train`"), []
    warnings = []
    if trained != here["scikit-learn"]:
        warnings.append(f"trained with scikit-learn {trained}, this is {here['scikit-learn']}")
    return None, warnings


def load(path: str | Path) -> Model:
    """A model file, checked (see the module doc); InputError with the reason otherwise."""
    import skops.io as sio

    meta, data = read_meta(path)
    refuse, warnings = compatibility(meta)
    if refuse:
        raise InputError(str(path), f"model refused: {refuse}")
    try:
        untrusted = [t for t in sio.get_untrusted_types(data=data) if t not in TRUSTED]
    except Exception as exc:  # skops raises many kinds on a malformed schema
        raise InputError(str(path), f"damaged model file: {exc}") from None
    if untrusted:
        raise InputError(str(path), "model refused: it would build untrusted types: " + ", ".join(untrusted))
    try:
        payload = sio.loads(data, trusted=TRUSTED)
    except Exception as exc:
        raise InputError(str(path), f"damaged model file: {exc}") from None
    if not isinstance(payload, dict) or not hasattr(payload.get("median"), "predict"):
        raise InputError(str(path), "not an ioadvisor model file (no regressor inside)")
    if list(payload.get("features") or []) != list(meta.get("features") or []):
        raise InputError(str(path), "damaged model file: the regressor's features differ from its metadata")
    meta = dict(meta, warnings=list(meta.get("warnings") or []) + warnings, path=str(path))
    return Model(payload["median"], list(payload["features"]), payload.get("lower"), payload.get("upper"),
                 meta=meta, features_version=int(meta["features_version"]), speedup=payload.get("speedup"))


def describe(meta: dict) -> str:
    """One line saying what a model is and was trained on."""
    cv = meta.get("cv") or {}
    ident = meta.get("identity") or {}
    where = f"{ident.get('fstype', '?')} {ident.get('source', '')} at {ident.get('mount_point', '?')}" \
        f" on {ident.get('host', '?')}" if ident else "unknown mount"
    err = f"CV median abs. error {cv['mdape']:.0%}, R^2 {cv['r2']:.2f}" if "mdape" in cv else "no CV error"
    fixes = meta.get("speedup_model") or {}
    learned = f"; fixes' speedups from {fixes['fixes']} measured fixes" if fixes.get("fixes") else ""
    return f"{meta.get('kind', 'model')} of {meta.get('rows', '?')} rows ({where}); {err}{learned}"
