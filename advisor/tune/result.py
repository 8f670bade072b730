"""What a search found, as the JSON `tune` object, terminal lines and the settings to apply.

``best: {fixes, speedup, ci95, verdict, reason, apply}``; ``candidates: [{fixes, label, speedup,
ci95, verdict, status, why, pairs, predicted, ...}]`` (statuses: best, runner-up, ruled-out,
set-aside, untried, identical, not-verifiable); ``replay_s``, the replay time spent. Each fix is
in the form ``replay --fix`` takes (``{"transform": "coalesce", "transfer_size": 1048576}``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.fixes import describe
from advisor.formatting import shell_word, size_arg
from advisor.tune import race as racing
from advisor.tune.race import Entry, Race
from advisor.verification import Verification

STATUS_ORDER = (racing.BEST, racing.RUNNER_UP, racing.RULED_OUT, racing.SET_ASIDE, racing.RACING,
                racing.UNTRIED, racing.PRUNED, racing.IDENTICAL, racing.NOT_VERIFIABLE)


def document(the_race: Race, best: Entry | None, verdicts: dict[str, Verification], doc: dict, *,
             state: Path, learned: Path | None, budget_s: float) -> dict[str, Any]:
    """The `tune` object of the JSON document."""
    rows = [_candidate(e, verdicts.get(e.key)) for e in the_race.entries.values()]
    rows.sort(key=lambda r: (STATUS_ORDER.index(r["status"]), -(r["speedup"] or 0.0)))
    context = doc.get("context") or {}
    v = verdicts.get(best.key) if best else None
    return {
        "best": None if best is None or v is None else {
            "fixes": best.fixes, "label": best.label(), "speedup": v.speedup, "ci95": v.ci95,
            "verdict": v.verdict, "reason": v.reason,
            "apply": apply_lines(best.fixes, context.get("fstype") or "")},
        "candidates": rows, "replay_s": round(doc["replay_s"], 2), "budget_s": budget_s,
        "rungs": the_race.rung, "stop_reason": doc["stop_reason"],
        "space": len(rows), "measured": sum(1 for e in the_race.entries.values() if e.measured),
        "target": context.get("target"), "fstype": context.get("fstype"), "np": context.get("np"),
        "scale": context.get("scale"), "cache_policy": context.get("cache_policy"),
        "load": v.load if v else None, "state": str(state), "model_data": str(learned) if learned else None,
    }


def _candidate(e: Entry, v: Verification | None) -> dict[str, Any]:
    return {"fixes": e.fixes, "label": e.label(), "origin": e.origin, "codes": e.codes,
            "speedup": v.speedup if v else None, "ci95": v.ci95 if v else None,
            "verdict": v.verdict if v else None, "reason": v.reason if v else None,
            "status": e.status, "why": e.why, "pairs": e.pairs,
            "rounds": sum(len(r["fixed"]) for r in e.rungs if r.get("ref") != e.key),
            "predicted": e.predicted, "predicted_interval": e.predicted_interval,
            "predicted_reason": e.predicted_reason}


def apply_lines(fixes: list[dict[str, Any]], fstype: str) -> list[str]:
    """The settings to apply, one line each: what to change, and the command or hint that does it
    (shell-safe: every value is a number or a quoted word)."""
    return [line for fix in fixes for line in _apply(fix, fstype)]


def _apply(fix: dict[str, Any], fstype: str) -> list[str]:
    t = fix["transform"]
    if t == "coalesce":
        n = int(fix["transfer_size"])
        return [f"{describe(fix)}: buffer each rank's contiguous requests (IOR: -t {size_arg(n)})"]
    if t in ("collective", "hints"):
        hints = {k: v for k, v in fix.items() if k != "transform"}
        if t == "collective":
            hints = {"romio_cb_write": "enable", "romio_cb_read": "enable", **hints}
        words = " ".join(f"{k}={shell_word(v)}" for k, v in hints.items())
        file_lines = "\\n".join(f"{k} {v}" for k, v in hints.items())
        out = [describe(fix)] if t == "collective" else []
        return out + [f"ROMIO hints {words}: printf {shell_word(file_lines)} > romio-hints; "
                      f"export ROMIO_HINTS=$PWD/romio-hints"]
    if t == "stripe":
        return [f"{describe(fix)}: {_stripe_command(fix, fstype)}"]
    if t == "align":
        n = int(fix["boundary"])
        return [f"{describe(fix)} (HDF5: H5Pset_alignment(fapl, 0, {n}); IOR: -t {size_arg(n)} -b a multiple of it)"]
    if t == "fsync" and (fix.get("every_writes") or fix.get("every_bytes")):
        return [f"{describe(fix)}: one fsync per interval instead of after every write (fio: fsync=N)"]
    if t == "fsync":
        return [f"{describe(fix)}: one fsync before each close instead of after every write (IOR: -e, not -Y)"]
    if t == "layout":
        return [describe(fix) + (" (IOR: -F)" if fix.get("mode") == "fpp" else " (IOR: without -F)")]
    return [describe(fix)]


def _stripe_command(fix: dict[str, Any], fstype: str) -> str:
    count, size = int(fix.get("count", 1)), int(fix.get("size") or 0)
    if "ceph" in fstype:
        unit = size or 4 << 20
        obj = max(int(fix.get("object_size") or 0), unit)
        stripe_count = count if count > 0 else 4
        layout = f"stripe_unit={unit} stripe_count={stripe_count} object_size={obj}"
        return f"setfattr -n ceph.dir.layout -v {shell_word(layout)} DIR (files created in DIR afterwards)"
    return f"lfs setstripe -c {count}" + (f" -S {size_arg(size, upper=True)}" if size else "") + " DIR"


def read(path: str | Path) -> dict[str, Any]:
    """The `tune` object of a saved result (``ioadvisor tune --json``); InputError naming the file
    and the reason when it cannot be read or is not one."""
    import json

    from advisor.errors import InputError

    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(str(path), f"not JSON: {exc}") from None
    t = doc.get("tune") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("schema") != "ioadvisor/tune/v1" or not isinstance(t, dict) \
            or not isinstance(t.get("candidates"), list) or not all(k in t for k in ("best", "replay_s", "target")):
        raise InputError(str(path), "not a tune result (ioadvisor tune --json writes one: schema ioadvisor/tune/v1)")
    return {**t, "input": doc.get("input")}
