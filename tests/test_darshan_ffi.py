"""pydarshan's cffi declarations compiled once per user (advisor.ingest.darshan_ffi): the cached
module reads real logs exactly as the in-line declarations do, and a cache that is missing,
damaged or not ours only means parsing the declarations again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.ingest import darshan_ffi
from advisor.ingest.darshan_lib import _load_file

LOG = "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/sample-badost.darshan"
STRUCTS = ("struct darshan_job", "struct darshan_posix_file", "struct darshan_lustre_record",
           "struct dxt_file_record", "struct segment_info", "struct darshan_mod_info")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("IOADVISOR_RULE_CACHE", raising=False)
    return tmp_path / "cache" / "ioadvisor"


def header() -> str:
    import importlib.util

    base = Path(importlib.util.find_spec("darshan").origin).parent
    return _load_file("api_def_c", base / "backend" / "api_def_c.py").load_darshan_header("")


def cached_module(home: Path) -> Path:
    found = list(home.glob(f"cffi-*/{darshan_ffi.MODULE}.py"))
    assert len(found) == 1, found
    return found[0]


def test_the_compiled_declarations_lay_out_every_struct_as_the_parsed_ones(home):
    import cffi

    parsed = cffi.FFI()
    parsed.cdef(header())
    darshan_ffi.declared(header())  # compiles and caches
    module = cached_module(home)
    compiled = darshan_ffi._loaded(module)  # read back from the file
    assert compiled is not None and not isinstance(compiled, cffi.FFI)
    for struct in STRUCTS:
        assert compiled.sizeof(struct) == parsed.sizeof(struct), struct
        assert compiled.offsetof(struct, parsed.typeof(struct).fields[-1][0]) == \
            parsed.offsetof(struct, parsed.typeof(struct).fields[-1][0])
    assert module.stat().st_mode & 0o022 == 0


@pytest.mark.parametrize("spoil", ["damaged", "writable by others"])
def test_a_spoilt_cache_file_is_not_used_but_rebuilt(home, spoil):
    import cffi

    darshan_ffi.declared(header())
    module = cached_module(home)
    if spoil == "damaged":
        module.write_text("ffi = undefined_name\n")
    else:
        module.write_text("raise SystemExit('a file anyone could have written')\n")
        module.chmod(0o666)
    assert darshan_ffi._loaded(module) is None
    ffi = darshan_ffi.declared(header())
    parsed = cffi.FFI()
    parsed.cdef(header())
    assert not isinstance(ffi, cffi.FFI) and ffi.sizeof("struct darshan_job") == parsed.sizeof("struct darshan_job")
    assert module.stat().st_mode & 0o022 == 0 and "undefined_name" not in module.read_text()


def test_no_place_for_a_cache_means_parsing_the_declarations(tmp_path, monkeypatch):
    import cffi

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # the cache folder cannot be made under a file
    monkeypatch.delenv("IOADVISOR_RULE_CACHE", raising=False)
    ffi = darshan_ffi.declared(header())
    assert isinstance(ffi, cffi.FFI) and ffi.sizeof("struct darshan_job") > 0


_SHOW = """
import hashlib, json, pickle, sys
from advisor.ingest import start_profile
profile = start_profile(sys.argv[1], isolate=False)()
profile.ingest = {}
print(json.dumps({"parser": profile.source.parser, "profile": hashlib.sha256(pickle.dumps(profile)).hexdigest(),
                  "pycparser": "pycparser" in sys.modules, "metadata": "importlib.metadata" in sys.modules}))
"""


def _read(log: Path, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", _SHOW, str(log)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_log_reads_the_same_with_the_cache_without_parsing_declarations(corpus, tmp_path):
    log = corpus / LOG
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONHASHSEED": "0"}  # one pickle per profile
    env.pop("IOADVISOR_RULE_CACHE", None)
    uncached = _read(log, {**env, "IOADVISOR_RULE_CACHE": "0"})
    first = _read(log, env)  # compiles the declarations into the cache
    again = _read(log, env)
    assert uncached["pycparser"] and not again["pycparser"]
    assert not again["metadata"]  # pydarshan's version read from its dist-info, not importlib.metadata
    assert first["profile"] == again["profile"] == uncached["profile"]
    from importlib import metadata

    assert f"pydarshan {metadata.version('darshan')}" in again["parser"]
