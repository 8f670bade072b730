"""Import discipline of a plain `ioadvisor diagnose LOG --json -`: the heavy libraries load only
for the stages that use them (start-up imports are most of a one-log diagnosis)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# Each is used by a stage or a command a plain `diagnose --json -` does not run: the learned
# models (scikit-learn), the fleet (pandas, Dask, Arrow), the HTML report, the terminal (rich),
# the rule files once their checked form is cached (YAML); pydarshan's own package imports pandas.
# numpy.ma: loaded by numpy's own np.unique, np.isin and np.median of floats (advisor.arrays avoids it).
HEAVY = ("sklearn", "scipy", "pandas", "matplotlib", "dask", "distributed", "pyarrow", "rich", "yaml",
         "darshan", "numpy.ma", "advisor.models", "advisor.report.html", "advisor.report.terminal", "advisor.fleet.run")
# The readers, facts and views of the other kinds of input (IOR, IOzone, fio, mdtest, campaigns,
# node snapshots): a Darshan log's diagnosis, from the cached catalogue, imports none of them.
OTHER_INPUTS = ("advisor.ingest.ior", "advisor.ingest.iozone", "advisor.ingest.fio", "advisor.ingest.mdtest",
                "advisor.ingest.snapshot", "advisor.campaign", "advisor.collect", "advisor.facts.ior",
                "advisor.facts.benchmarks", "advisor.facts.bench_tests", "advisor.facts.campaign",
                "advisor.facts.snapshot", "advisor.facts.probe", "advisor.report.surface")

_RUN = """
import json, sys
from advisor.cli import main
try:
    main(["diagnose", "--json", "-", sys.argv[1]])
finally:
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _diagnose(log, env) -> tuple[dict, set[str]]:
    done = subprocess.run([sys.executable, "-c", _RUN, str(log)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout), set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_a_plain_diagnose_loads_no_heavy_library(corpus, tmp_path):
    log = corpus / "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/sample-badost.darshan"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}  # a rule cache of its own
    env.pop("IOADVISOR_RULE_CACHE", None)
    first, _ = _diagnose(log, env)  # fills the rule cache, as any first run does
    again, modules = _diagnose(log, env)
    codes = [f["code"] for f in first["findings"]]
    assert codes and [f["code"] for f in again["findings"]] == codes
    loaded = sorted(name for name in modules if any(name == h or name.startswith(h + ".") for h in HEAVY))
    assert not loaded, f"a plain diagnose --json imported {loaded}"
    others = sorted(name for name in modules if any(name == o or name.startswith(o + ".") for o in OTHER_INPUTS))
    assert not others, f"a Darshan log's diagnosis imported the code of other inputs: {others}"
    # what it does use is there: the check above cannot pass on a run that did nothing
    assert {"numpy", "advisor.engine", "advisor.report.figures"} <= modules



def test_a_recorder_trace_loads_no_masked_arrays(tmp_path):
    """The Recorder reader (in its parsing child) and the HDF5 facts a checkpoint trace reaches use
    advisor.arrays too: -X importtime, which children inherit, lists every module imported."""
    from tests.conftest import REPO

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    trace = REPO / "tests" / "data" / "recorder" / "hdf5-ckpt-collmeta"
    done = subprocess.run([sys.executable, "-m", "advisor", "diagnose", "--json", "-", str(trace)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "advisor.ingest.recorder.records" in imported and json.loads(done.stdout)[0]["findings"]
    assert "numpy.ma" not in imported
