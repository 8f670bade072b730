"""The `hints` fix on a real replay: MPI007's ROMIO hints for the T02 trap (IOR -a MPIIO -c, one
aggregator, 48x read-modify-write) reach MPI_File_open, as MPI_File_get_info reads them back in
the ranks under mpiexec on the local file system."""

from __future__ import annotations

import sys
from pathlib import Path

from advisor.config import SiteConfig
from advisor.engine import diagnose
from advisor.ingest.darshan_log import load
from advisor.replay_plan import build_plan
from replay import launch, safety
from replay.plan import MPIIO, MPIIO_COLL
from replay.transforms import apply_fix
from tests.helpers import require

T02 = Path(__file__).parent / "data" / "traps" / "T02.darshan"


def test_mpi007_hints_reach_mpi_file_open(tmp_path):
    require((Path(sys.executable).parent / "mpiexec").exists(), "no mpiexec in the venv (pip install mpich)")
    profile = load(T02)
    fix = next(f.fix for f in diagnose(profile, SiteConfig()).findings if f.code == "MPI007")
    assert fix["transform"] == "hints" and fix["romio_ds_write"] == "disable"
    plan = build_plan(profile, scale=0.05)
    assert (plan.ops["api"] == MPIIO_COLL).any() or (plan.ops["api"] == MPIIO).any()
    fixed = apply_fix(plan, fix)
    with safety.Scratch(tmp_path) as scratch:
        dirs = [plan.save(scratch.path / "a"), fixed.save(scratch.path / "b")]
        result = launch.run_plans(scratch, dirs, ["recorded", "hints"],
                                  launch.LaunchOptions(np=plan.nranks, cache="none"))
    got = {v["label"]: v["record"] for v in result["variants"]}
    asked = {k: str(v) for k, v in fix.items() if k != "transform"}
    assert got["hints"]["hints"] == asked  # every hint, as the MPI-IO library reports it back
    assert got["recorded"]["hints"] == {}  # the recorded job asked for none
    assert got["hints"]["totals"]["bytes_written"] == got["recorded"]["totals"]["bytes_written"] > 0
