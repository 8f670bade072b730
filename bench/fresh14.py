"""The speedup model on fresh workloads recorded for it (bench/fresh14/), and the margins of "outside".

    python bench/fresh14.py --list                                  # each workload's fixes (no model)
    python bench/fresh14.py --measure --target DIR --save FILE      # replay and predict (the shipped model)
    python bench/fresh14.py --judge FILE [--rule R]... [--model M]  # re-predict by each margin rule

The workloads, the candidate rules and the adoption rule are bench/fresh14_protocol.md's, committed
before any of them was recorded. Traces: out/fresh14/NAME/trace (bench/fresh14/record.sh NAME).
Measurement and figures are bench/unseen.py's; each workload is its own family, all in one half.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import unseen  # noqa: E402  (bench/unseen.py: measure, judge)

TRACES = unseen.REPO / "out" / "fresh14"
LIST = Path(__file__).resolve().parent / "fresh14" / "workloads.txt"


def workloads() -> list[tuple[str, str, str, Path]]:
    """(family, half, label, trace folder) of every fresh workload (bench/fresh14/workloads.txt): each
    its own family; the half is its batch (``fresh``: the 14 designed first; ``zone``: the addendum)."""
    rows = [line.split() for line in LIST.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return [(name, half, name, TRACES / name / "trace") for name, half, *_ in rows]


def main() -> int:
    from advisor.models.speedup import MARGIN_RULES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--target", type=Path)
    ap.add_argument("--save", type=Path)
    ap.add_argument("--judge", type=Path)
    ap.add_argument("--rule", action="append", choices=MARGIN_RULES, help="judge: the margin rule(s) (default all)")
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    if args.list:
        unseen.list_fixes(workloads())
    elif args.measure:
        unseen.measure_to(workloads(), args)
    elif args.judge:
        for rule in args.rule or MARGIN_RULES:
            print(f"\n== margin rule: {rule}")
            unseen.judge([args.judge], args.model, rule)
    else:
        ap.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
