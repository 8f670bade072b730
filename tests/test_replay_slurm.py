"""Inside a real Slurm allocation the replay starts its ranks with srun (mpich wheel, PMI-2),
as the job user, and the job size is checked."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import CORPUS
from tests.helpers import require, require_root
from tests.slurm import MISSING_HINT, missing_components, start_cluster

pytestmark = pytest.mark.xdist_group("slurm")

LOG = CORPUS / "generated" / "n_fsync_per_write_Y_4k" / "case.darshan"


@pytest.fixture(scope="module")
def slurm():
    require_root("a real Slurm (slurmctld, slurmd, munge) and a job user")
    missing = missing_components()
    require(not missing, f"{', '.join(missing)} missing: {MISSING_HINT}")
    cluster = start_cluster()
    yield cluster
    cluster.stop()
    shutil.rmtree(cluster.root, ignore_errors=True)


def test_replay_in_an_allocation_uses_srun(slurm):
    work = slurm.workdir("replay")
    script = (f"mkdir t\n"
              f"{slurm.ioadvisor} replay '{LOG}' --target $PWD/t --np 1 --scale 0.25 --repeat 3 "
              f"--fix MD010 --json $PWD/out.json\n"
              f"ls -A t > left.txt")
    job = slurm.sbatch(script, work)
    states = slurm.wait_jobs([job.jobid], timeout_s=300)
    log = (work / f"slurm-{job.jobid}.out").read_text()
    assert states[job.jobid] == "COMPLETED", log
    doc = json.loads((work / "out.json").read_text())
    assert doc["launcher"].split()[0].endswith("srun") and "--mpi=pmi2" in doc["launcher"]
    assert doc["np"] == 1 and doc["fidelity"]["worst_error"] == 0.0
    assert doc["baseline"]["record_totals"]["fsyncs"] > 0
    assert doc["verifications"][0]["verdict"] in ("improved", "regressed", "equivalent", "inconclusive")
    assert (work / "left.txt").read_text() == ""  # scratch removed
