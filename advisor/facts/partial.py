"""Partial logs: which module ran out of room, and the Darshan settings that give it more."""

from __future__ import annotations

import numpy as np

from advisor.facts import FactContext, fact
from advisor.facts._darshan import darshan_like

DEFAULT_MAX_RECORDS = 1024  # Darshan 3.x default records per module per process
DXT_DEFAULT_MIB = 2


@fact("partial_modules", "enum", "Modules Darshan flagged as incomplete (ran out of record or trace memory).",
      label="incomplete modules")
def partial_modules(ctx: FactContext) -> list[str]:
    darshan_like(ctx)
    return sorted(ctx.profile.partial_modules)


@fact("partial_records_per_rank", "count", "Most records one rank holds in a partial (non-DXT) module.",
      label="records per rank in a partial module")
def partial_records_per_rank(ctx: FactContext) -> int:
    most = 0
    for module in ctx.get("partial_modules"):
        rec = ctx.profile.records.get(module)
        if rec is not None and len(rec):
            own = rec.ranks[rec.ranks >= 0]
            per_rank = np.bincount(own).max(initial=0) if own.size else 0
            most = max(most, int(per_rank) + int((rec.ranks < 0).sum()))
    return most


@fact("darshan_config_lines", "text", "Darshan config-file lines (DARSHAN_CONFIG_PATH) that give the partial "
      "modules room.", label="Darshan config lines")
def darshan_config_lines(ctx: FactContext) -> list[str]:
    lines: list[str] = []
    record_mods = [m for m in ctx.get("partial_modules") if not m.startswith("DXT")]
    dxt_mods = [m for m in ctx.get("partial_modules") if m.startswith("DXT")]
    if record_mods:
        seen = max(ctx.get("partial_records_per_rank"), DEFAULT_MAX_RECORDS)
        records = 1 << int(np.ceil(np.log2(seen * 4)))
        lines.append(f"MAX_RECORDS {records} {','.join(record_mods)}")
        lines.append(f"MODMEM {max(8, records // 128)}")
        lines.append(f"NAMEMEM {max(4, records // 512)}")
    if dxt_mods:
        lines.append(f"MAX_RECORDS 16384 {','.join(dxt_mods)}")
        if not record_mods:
            lines.append("MODMEM 1024")
    return lines


@fact("darshan_env", "text", "Environment settings that give the partial modules room (MiB).",
      label="Darshan environment settings")
def darshan_env(ctx: FactContext) -> list[str]:
    env = []
    for line in ctx.get("darshan_config_lines"):
        key, value = line.split()[:2]
        if key in ("MODMEM", "NAMEMEM"):
            env.append(f"export DARSHAN_{key}={value}")
    return env
