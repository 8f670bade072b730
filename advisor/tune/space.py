"""What `ioadvisor tune` searches: each proposed fix's settings, and pairs of fixes combined.

A proposed fix (``{"transform": "coalesce", "transfer_size": 4194304}``) becomes an *axis* of
settings per parameter (transfer sizes 64 KiB-16 MiB; aggregators 1..the replay's ranks; stripe
counts 1, 2, 4, all and sizes 1 MiB, 4 MiB searched together since they interact), the
proposal's own value always among them. Fixes of different transforms combine two at a time
(coalescing and striping, aggregation and stripe count interact), applied in a fixed order: what
a rank does first (coalesce, align, fsync, ...), then how ranks share it (collective buffering,
aggregation, hints), then where it lands (layouts).

Every candidate is made concrete for the target before anything runs: a layout the target cannot
set is ``not-verifiable`` there, and candidates whose replay would be the same plan (coalescing to
16 MiB when no run of contiguous requests exceeds 4 MiB) are measured once.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.fixes import fix_key
from advisor.units import KiB, MiB
from replay.layout import LayoutError, Unsupported
from replay.layout import wishes as layout_wishes
from replay.plan import Plan
from replay.transforms import check_fix

SIZES = {
    "coalesce": {"transfer_size": (64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB)},
    "align": {"boundary": (4 * KiB, 64 * KiB, MiB, 4 * MiB)},
    "mpiio_calls": {"call_bytes": (MiB, 4 * MiB, 16 * MiB)},
    "hints": {"cb_buffer_size": (MiB, 4 * MiB, 16 * MiB)},
    "stripe": {"count": (1, 2, 4, -1), "size": (MiB, 4 * MiB)},
    "fsync": {"every_writes": (8, 64, 512), "every_bytes": (MiB, 16 * MiB)},  # besides at close alone
}
OPEN_ENDED = {"every_writes", "every_bytes"}
"""Parameters whose absence is the far end of their axis (no interval: fsync at close alone)."""
RANK_COUNTS = {"collective": "cb_nodes", "hints": "cb_nodes", "aggregate": "aggregators"}
TOGETHER = {"stripe"}  # transforms whose parameters are searched as a product
ORDER = ("sequential", "align", "coalesce", "fsync", "layout", "mpiio_calls", "collective", "aggregate",
         "hints", "stripe", "avoid-targets")
"""The order fixes combine in: a rank's own requests, then how ranks share them, then layouts."""


@dataclass
class Candidate:
    """One configuration: a fix, or fixes combined, with where it came from."""

    fixes: list[dict[str, Any]]
    origin: str  # "proposed" (as the diagnosis proposes it), "setting" or "combination"
    codes: list[str] = field(default_factory=list)  # findings proposing its transform(s)
    digest: str = ""  # of the replay plan it makes on the target ('' before prepared)
    unusable: str = ""  # why it cannot be replayed here ('' when it can)
    same_as: str = ""  # the key of a candidate whose replay plan is identical

    @property
    def key(self) -> str:
        return fix_key(self.fixes)

    @property
    def transforms(self) -> tuple[str, ...]:
        return tuple(str(f["transform"]) for f in self.fixes)

    def label(self) -> str:
        """'coalesce transfer_size=1 MiB + collective cb_nodes=2': short, for tables and plots."""
        return " + ".join(setting_text(f) for f in self.fixes)


def setting_text(fix: dict[str, Any]) -> str:
    from advisor.formatting import fmt_bytes

    def value(k: str, v: Any) -> str:
        return fmt_bytes(v) if k in ("transfer_size", "boundary", "call_bytes", "cb_buffer_size", "size",
                                     "striping_unit", "object_size", "every_bytes") and isinstance(v, int) and v > 0 \
            else ("all" if k == "count" and v == -1 else str(v))
    params = " ".join(f"{k}={value(k, v)}" for k, v in fix.items() if k != "transform")
    return f"{fix['transform']} {params}".strip()


def rank_counts(nranks: int, below: bool = False) -> tuple[int, ...]:
    """1, 2, 4, ... up to the replay's ranks (aggregation: below them, or it changes nothing)."""
    top = nranks - 1 if below else nranks
    counts = {1 << k for k in range(16) if 1 << k <= top} | ({top} if top >= 1 else set())
    return tuple(sorted(counts))


def axes(fix: dict[str, Any], nranks: int, pinned: tuple[str, ...] = ()) -> dict[str, tuple]:
    """Parameter -> the values searched for this fix, the proposal's own value included
    (`pinned`: parameters the user set, which stay as set)."""
    transform = fix["transform"]
    out = {k: tuple(v) for k, v in SIZES.get(transform, {}).items()}
    if transform in RANK_COUNTS:
        out[RANK_COUNTS[transform]] = rank_counts(nranks, below=transform == "aggregate")
    for k, values in out.items():
        if isinstance(fix.get(k), int) and fix[k] not in values:
            out[k] = tuple(sorted({*values, fix[k]}, key=lambda x: (x == -1, x)))
    return {k: v for k, v in out.items() if k not in pinned}


def settings_of(fix: dict[str, Any], nranks: int, pinned: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every setting searched for one proposed fix: one parameter at a time around the proposal
    (all together for stripes), the proposal first."""
    found = [dict(fix)]
    grid = axes(fix, nranks, pinned)
    if fix["transform"] in TOGETHER:
        names = list(grid)
        for values in itertools.product(*grid.values()):
            found.append({**fix, **dict(zip(names, values))})
    else:
        for k, values in grid.items():
            found.extend({**fix, k: v} for v in values)
    unique: dict[str, dict[str, Any]] = {}
    for f in found:
        check_fix(f)
        unique.setdefault(fix_key(f), f)
    return list(unique.values())


def neighbours(c: Candidate, nranks: int) -> list[list[dict[str, Any]]]:
    """The configurations one step away from `c` on one axis of one of its fixes (refinement)."""
    out = []
    for i, fix in enumerate(c.fixes):
        for k, values in axes(fix, nranks).items():
            if k in OPEN_ENDED and not any(fix.get(x) for x in OPEN_ENDED):
                out.append([*c.fixes[:i], {**fix, k: values[-1]}, *c.fixes[i + 1:]])
            if fix.get(k) not in values:
                continue
            at = values.index(fix[k])
            for j in (at - 1, at + 1):
                if 0 <= j < len(values):
                    out.append([*c.fixes[:i], {**fix, k: values[j]}, *c.fixes[i + 1:]])
    return out


def combined(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Two configurations of different transforms as one, in :data:`ORDER`; None when they share one."""
    fixes = [*a, *b]
    names = [f["transform"] for f in fixes]
    if len(set(names)) < len(names):
        return None
    return sorted(fixes, key=lambda f: ORDER.index(f["transform"]) if f["transform"] in ORDER else len(ORDER))


def build(proposed: list[tuple], nranks: int) -> list[Candidate]:
    """The whole space: every setting of every proposed fix [(fix, codes[, pinned parameters])],
    then every pair of settings of two different transforms, then every triple of the proposals
    themselves (three fixes as the diagnosis proposes them)."""
    singles: list[Candidate] = []
    for fix, codes, *pinned in proposed:
        for i, setting in enumerate(settings_of(fix, nranks, tuple(pinned[0]) if pinned else ())):
            singles.append(Candidate([setting], "proposed" if i == 0 else "setting", list(codes)))
    seen = {c.key for c in singles}
    pairs = []
    for a, b in itertools.combinations(singles, 2):
        fixes = combined(a.fixes, b.fixes)
        if fixes is not None and (c := Candidate(fixes, "combination", sorted({*a.codes, *b.codes}))).key not in seen:
            seen.add(c.key)
            pairs.append(c)
    proposals = [c for c in singles if c.origin == "proposed"]
    for trio in itertools.combinations(proposals, 3):
        fixes = combined(combined(trio[0].fixes, trio[1].fixes) or [], trio[2].fixes)
        if fixes is not None and len(fixes) == 3 and \
                (c := Candidate(fixes, "combination", sorted({x for t in trio for x in t.codes}))).key not in seen:
            seen.add(c.key)
            pairs.append(c)
    return _dedupe_keys(singles) + pairs


def _dedupe_keys(cands: list[Candidate]) -> list[Candidate]:
    out: dict[str, Candidate] = {}
    for c in cands:
        out.setdefault(c.key, c)
    return list(out.values())


def prepare(cands: list[Candidate], base: Plan, target: Path) -> None:
    """Make every candidate concrete for `target` (in place): its plan's digest, why it cannot
    run here, or which candidate makes the same replay."""
    from advisor.verify import apply_fixes

    by_digest: dict[str, str] = {plan_digest(base): ""}
    for c in cands:
        try:
            plan = layout_wishes.prepare(apply_fixes(base, c.fixes), target)
        except ValueError as exc:
            c.unusable = f"the fix does not apply to this workload: {exc}"
            continue
        except Unsupported as exc:
            c.unusable = str(exc)
            continue
        except LayoutError as exc:
            c.unusable = f"its layouts cannot be set on {target}: {exc}"
            continue
        c.digest = plan_digest(plan)
        if c.digest in by_digest:
            c.same_as = by_digest[c.digest] or "the job as recorded"
        else:
            by_digest[c.digest] = c.key


def plan_digest(plan: Plan) -> str:
    """What a replay of `plan` does, as a hash (ops, files with their layouts, hints)."""
    h = hashlib.sha256()
    for part in (plan.ops, plan.files):
        for k in sorted(part):
            h.update(k.encode())
            h.update(part[k].tobytes())
    h.update(json.dumps(plan.hints, sort_keys=True).encode())
    h.update(json.dumps(plan.meta.get("avoid_targets", []), default=str).encode())
    return h.hexdigest()[:20]
