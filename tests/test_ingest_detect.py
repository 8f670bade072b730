"""Format detection imports a reader only when the readers before it in sniff order did not
match: a Darshan log never imports the text readers or the Recorder reader (a tenth of a
one-log diagnose), and every input is still given the format it was given before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from advisor.ingest.recorder_folder import is_trace

READERS = ("advisor.ingest.parser_dump", "advisor.ingest.ior", "advisor.ingest.iozone", "advisor.ingest.fio",
           "advisor.ingest.mdtest", "advisor.ingest.snapshot", "advisor.ingest.recorder")

_DETECT = """
import json, sys
from advisor.ingest import detect
found = detect(sys.argv[1]).name
print(json.dumps([found, sorted(m for m in sys.modules if m.startswith("advisor.ingest."))]))
"""


def readers_in(modules: set[str], readers: tuple[str, ...] = READERS) -> list[str]:
    return sorted(m for m in modules if any(m == r or m.startswith(r + ".") for r in readers))


def detect_fresh(path: Path) -> tuple[str, set[str]]:
    """The format `path` is detected as, and the ingest modules that took, in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", _DETECT, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    name, modules = json.loads(done.stdout)
    return name, set(modules)


def test_a_darshan_log_imports_no_other_reader(corpus):
    log = corpus / "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/sample-badost.darshan"
    name, modules = detect_fresh(log)
    assert name == "darshan"
    assert "advisor.ingest.darshan_log" in modules
    assert not readers_in(modules), sorted(modules)


def test_each_input_kind_gets_its_format_and_the_readers_before_it_only(corpus):
    trace = corpus / "recorder/R1_posix_small_shared/trace"
    cases = {corpus / "generated/h3_segments_s16/darshan-parser.txt": "darshan-parser",
             corpus / "generated/h3_segments_s16/darshan-dxt-parser.txt": "darshan-dxt-parser",
             corpus / "ior-logs/public/ubccr__akrr/tests/unit_tests/appkernelsparsers/test_ior/v30/appstdout": "ior",
             corpus / "iozone/auto_3.434_n-g-y-q_psteinb.txt": "iozone",
             trace: "recorder", trace / "recorder.mt": "recorder"}
    for path, expected in cases.items():
        name, modules = detect_fresh(path)
        assert name == expected, path
        if expected.startswith("darshan"):
            assert not readers_in(modules, READERS[1:]), (path, sorted(modules))


def test_only_a_trace_folder_or_its_metadata_file_is_a_trace(corpus):
    trace = corpus / "recorder/R1_posix_small_shared/trace"
    assert is_trace(trace) and is_trace(trace / "recorder.mt")
    assert not is_trace(trace.parent) and not is_trace(trace.parent / "ior.txt")
    assert not is_trace(trace / "VERSION")
