"""The parameter blocks of IOR text output and its summary table, mapped to the model.

Two parameter block forms exist: ``Options:`` with ``key : value`` lines (IOR 3.2
and later) and ``Summary:`` with tab-indented ``key = value`` lines (IOR 2.x to
3.1). The "Summary of all tests" table states exact sizes and counts, so its
values win over the rounded sizes of the parameter blocks.
"""

from __future__ import annotations

import math
import re

from advisor.ingest.ior.model import FPP, SHARED, IorParams, IorSummary
from advisor.ingest.ior.options import parse_human


def _int(text: str) -> int | None:
    m = re.match(r"\s*(-?\d+)", text)
    return int(m.group(1)) if m else None


def _access(params: IorParams, value: str) -> None:
    low = value.lower()
    if "file-per-process" in low:
        params.access = FPP
    elif "shared" in low:
        params.access = SHARED
    if "collective" in low:
        params.collective = True
    elif "independent" in low:
        params.collective = False


def _api(params: IorParams, value: str) -> None:
    name, _, version = value.partition("(")
    params.api = name.strip()
    if version and not params.api_version:
        params.api_version = version.rstrip(")").strip()


def _clients(params: IorParams, value: str) -> None:
    # "16384 (8 per node)"
    params.tasks = _int(value)
    m = re.search(r"\((\d+) per node\)", value)
    if m:
        params.tasks_per_node = int(m.group(1))


def _pattern(params: IorParams, value: str) -> None:
    # "segmented (1 segment)" / "strided (4 segments)"
    m = re.search(r"\((\d+) segment", value)
    if m:
        params.segments = int(m.group(1))


def _ordering(params: IorParams, value: str) -> None:
    params.random_offsets = value.strip().lower().startswith("random")


def _inter_file(params: IorParams, value: str) -> None:
    params.ordering_inter_file = value.strip()
    low = value.lower()
    if "random task offset" in low:
        params.reorder_random = True
    elif "constant task offset" in low:
        params.reorder_tasks = True
        m = re.search(r"=\s*(\d+)", value)
        if m:
            params.task_offset = int(m.group(1))


def _type(params: IorParams, value: str) -> None:
    params.collective = value.strip().lower() == "collective"


def _setter(name: str, convert):
    def apply(params: IorParams, value: str) -> None:
        converted = convert(value)
        if converted is not None:
            setattr(params, name, converted)
    return apply


_HANDLERS = {
    "api": _api,
    "apiversion": _setter("api_version", lambda v: v.strip() or None),
    "test filename": _setter("test_file", lambda v: v.strip() or None),
    "access": _access,
    "type": _type,
    "segments": _setter("segments", _int),
    "pattern": _pattern,
    "ordering in a file": _ordering,
    "ordering": _ordering,
    "ordering inter file": _inter_file,
    "task offset": _setter("task_offset", _int),
    "nodes": _setter("nodes", _int),
    "tasks": _setter("tasks", _int),
    "clients": _clients,
    "clients per node": _setter("tasks_per_node", _int),
    "repetitions": _setter("repetitions", _int),
    "xfersize": _setter("transfer_size", parse_human),
    "blocksize": _setter("block_size", parse_human),
    "aggregate filesize": _setter("aggregate_size", parse_human),
    "stonewallingtime": _setter("stonewall_s", lambda v: float(_int(v) or 0) or None),
    "stonewallingwearout": _setter("stonewall_wearout", lambda v: bool(_int(v))),
}


def apply_option(params: IorParams, key: str, value: str) -> None:
    """Apply one ``key : value`` (or ``key = value``) line of a parameter block."""
    norm = re.sub(r"\s+", " ", key.strip().lower())
    handler = _HANDLERS.get(norm)
    if handler:
        handler(params, value)
    else:
        params.other[key.strip()] = value.strip()


# ---- the "Summary of all tests" table -------------------------------------------------

def summary_columns(header: str) -> list[str]:
    """Column names of a summary table header, the two StdDev columns told apart."""
    cols: list[str] = []
    for token in header.split():
        if token == "StdDev" and cols and cols[-1] == "Mean(OPs)":
            token = "StdDev(OPs)"
        cols.append(token)
    return cols


def number(value: str | None) -> float | None:
    """A number IOR printed, or None for a cell with none: empty, ``NA``, ``-``, text, and
    also NaN and infinities (a zero time's bandwidth), which measure nothing and would
    break every integer conversion after them."""
    if not value:
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def summary_row(columns: list[str], tokens: list[str]) -> tuple[IorSummary | None, dict[str, str]]:
    """(summary, raw column dict) of one row; summary None when the bandwidths are unreadable."""
    row = dict(zip(columns, tokens))
    values = [number(row.get(c)) for c in ("Max(MiB)", "Min(MiB)", "Mean(MiB)")]
    if any(v is None for v in values):
        return None, row
    reps = _int(row.get("reps", "0") or "0") or 0
    return IorSummary(
        operation=tokens[0], max_mib=values[0], min_mib=values[1], mean_mib=values[2],
        stddev_mib=number(row.get("StdDev")) or 0.0, ops_max=number(row.get("Max(OPs)")),
        ops_min=number(row.get("Min(OPs)")), ops_mean=number(row.get("Mean(OPs)")),
        mean_time_s=number(row.get("Mean(s)")), stonewall_s=number(row.get("Stonewall(s)")),
        stonewall_mib=number(row.get("Stonewall(MiB)")), repetitions=reps, source="summary"), row


def apply_summary_row(params: IorParams, row: dict[str, str]) -> None:
    """Exact counts and sizes from a summary row (they win over the rounded block values)."""
    exact = {"#Tasks": "tasks", "segcnt": "segments", "blksiz": "block_size",
             "xsize": "transfer_size", "reps": "repetitions", "tPN": "tasks_per_node"}
    for col, name in exact.items():
        value = _int(row.get(col, ""))
        if value is not None and value > 0:
            setattr(params, name, value)
    if "aggsize" in row and _int(row["aggsize"]):
        params.aggregate_size = _int(row["aggsize"])
    elif number(row.get("aggs(MiB)")):
        params.aggregate_size = int(number(row["aggs(MiB)"]) * (1 << 20))
    flags = {"fPP": ("access", lambda v: FPP if v else SHARED),
             "reord": ("reorder_tasks", bool), "reordrand": ("reorder_random", bool)}
    for col, (name, convert) in flags.items():
        value = _int(row.get(col, ""))
        if value is not None:
            setattr(params, name, convert(value))
    if row.get("API") and not params.api:
        params.api = row["API"]
