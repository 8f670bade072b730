"""Start the executor as an MPI job: the venv's ``mpiexec`` (mpich wheel), or ``srun``
inside a Slurm allocation; one job runs every variant and every sample."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from replay import safety, stats
from replay.safety import Scratch
from replay.sampling import PROGRESS, RaceRule


class LaunchError(Exception):
    """The MPI job could not start or failed (the message is the executor's own line)."""


@dataclass
class LaunchOptions:
    np: int
    repeat: int = 1  # rounds, when not adaptive
    cache: str = "drop"  # drop (else evict) | evict | neighbour | none
    odirect: bool = False
    think_time: bool = False
    timeout_s: float | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    min_sample_s: float = 0.0  # auto-ranging: shorter passes run back to back within a sample
    policy: stats.Policy | None = None  # adaptive: variant 0 is the baseline, rounds until decided
    budget_s: float = math.inf
    budget_bytes: float = math.inf
    on_progress: Callable[[str], None] | None = None  # called with each round's progress line
    passes: list[int] | None = None  # per plan, passes per sample known from an earlier run (0: not): no warm-up
    race: RaceRule | None = None  # a tune's rung: decisions between its rounds (not adaptive)

    def executor_args(self) -> list[str]:
        args = ["--repeat", str(self.repeat), "--cache", self.cache, "--min-sample-s", repr(self.min_sample_s)]
        if self.policy is not None:
            p = self.policy
            args += ["--adaptive", "--margin", repr(p.margin), "--reproducibility", repr(p.reproducibility),
                     "--precision", repr(p.precision),
                     "--min-pairs", str(p.min_pairs), "--max-pairs", str(p.max_pairs)]
        if math.isfinite(self.budget_s):
            args += ["--budget-s", repr(self.budget_s)]
        if math.isfinite(self.budget_bytes):
            args += ["--budget-bytes", repr(float(self.budget_bytes))]
        if self.race is not None and self.policy is None:
            args += self.race.args()
        for known in self.passes if any(self.passes or []) else []:
            args += ["--passes", str(int(known))]
        if self.odirect:
            args.append("--odirect")
        if self.think_time:
            args.append("--think-time")
        return args


def launcher(np_: int) -> list[str]:
    """The command prefix that starts `np_` ranks here."""
    if os.environ.get("SLURM_JOB_ID") and shutil.which("srun") and not os.environ.get("IOADVISOR_NO_SRUN"):
        return ["srun", f"--mpi={os.environ.get('IOADVISOR_SRUN_MPI', 'pmi2')}", "-n", str(np_)]
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        found = shutil.which("mpiexec")
        if not found:
            raise LaunchError("no mpiexec found (install the 'mpich' wheel in this environment)")
        mpiexec = Path(found)
    return [str(mpiexec), "-n", str(np_)]


def run_plans(scratch: Scratch, plans: list[Path], labels: list[str], opts: LaunchOptions) -> dict:
    """Run saved plans interleaved in one MPI job; the executor's result (JSON) as a dict,
    with each variant's (file, rank) record rows under ``record["pairs"]``."""
    assert scratch.path is not None
    out = scratch.path / "result.json"
    cmd = launcher(opts.np) + [sys.executable, "-m", "replay.executor", "--scratch", str(scratch.path),
                               "--out", str(out), "--expect-size", str(opts.np), *opts.executor_args()]
    for plan, label in zip(plans, labels):
        cmd += ["--plan", str(plan), "--label", label]
    env = dict(os.environ, **opts.extra_env)
    env.setdefault("PYTHONUNBUFFERED", "1")
    proc = scratch.adopt(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          env=env, start_new_session=True,
                                          preexec_fn=_launcher_dies_with_us))
    try:
        stdout, stderr = _communicate(proc, opts)
    except subprocess.TimeoutExpired:
        scratch.kill_children()
        raise LaunchError(f"replay did not finish within {opts.timeout_s:.0f} s") from None
    if proc.returncode != 0 or not out.exists():
        raise LaunchError(_failure_line(proc.returncode, stdout, stderr))
    result = json.loads(out.read_text())
    result["launcher"] = " ".join(cmd[:cmd.index(sys.executable)])
    for v in result["variants"]:
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in v["label"])
        pairs = out.with_name(f"{out.stem}.{safe}.pairs.npy")
        v["record"]["pairs"] = np.load(pairs, allow_pickle=False) if pairs.exists() else None
    return result


def _communicate(proc: subprocess.Popen, opts: LaunchOptions) -> tuple[str, str]:
    """The job's stdout and stderr, its progress lines passed to `opts.on_progress` as they come
    (stderr is read line by line in a thread, so the job never blocks on a full pipe)."""
    if opts.on_progress is None:
        return proc.communicate(timeout=opts.timeout_s)
    errors: list[str] = []

    def pump() -> None:
        for line in proc.stderr:
            if line.startswith(PROGRESS):
                opts.on_progress(line[len(PROGRESS):].strip())
            else:
                errors.append(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    stdout = proc.stdout.read()
    proc.wait(timeout=opts.timeout_s)
    reader.join()
    return stdout, "".join(errors)


def _failure_line(code: int, stdout: str, stderr: str) -> str:
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    ours = [ln for ln in lines if ln.startswith("replay:")]
    if ours:
        return ours[0].removeprefix("replay:").strip()
    tail = lines[-1] if lines else "no output"
    return f"the MPI job failed (exit {code}): {tail[:300]}"


def _launcher_dies_with_us() -> None:
    # SIGKILL, not SIGTERM: mpiexec forwards SIGTERM to ranks that may be inside a collective and
    # then waits for them forever. Killed, it closes its proxies' control sockets; they exit, and
    # the ranks die with them (the executor asks for that too).
    safety.die_with_parent(signal.SIGKILL)
