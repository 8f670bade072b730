"""Measure the held-out file system's sample on a real GlusterFS volume started here.

    python bench/held_out_mount.py --out FILE [--budget MINUTES] [--base DIR]

Starts a 4-brick distributed GlusterFS volume (tests/gluster.py: glusterd, FUSE mount, root
only), measures the sample of campaign workloads of :mod:`advisor.models.crossmount` on it with
the campaign's protocol (:func:`advisor.models.campaign.run`, ``advisor.verify.measure``, 40 s a
workload), appending every measured fix to FILE with the load it ran under (resumes: workloads
already in FILE are skipped), and tears the volume down. The load average is printed every
workload (stderr) and the volume's identity at the start.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:] = [str(REPO)] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget", type=float, default=45.0, help="minutes of measuring")
    ap.add_argument("--base", type=Path, default=Path("/var/tmp/ioadvisor-held-out-gluster"),
                    help="directory of the bricks and the mount (removed after)")
    args = ap.parse_args()
    from advisor.models import campaign, crossmount
    from advisor.models.mount import identity
    from tests.gluster import gluster_volume

    with gluster_volume(args.base) as mnt:
        scratch = mnt / "campaign"
        scratch.mkdir(exist_ok=True)
        version = subprocess.run(["glusterfs", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        print(f"mount {identity(scratch)}; {version}; load {os.getloadavg()}", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        rows = campaign.run(scratch, args.out.resolve(), args.budget * 60, 40.0, crossmount.order())
        print(f"{rows} fixes measured in {(time.monotonic() - t0) / 60:.1f} min; load {os.getloadavg()}",
              file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
