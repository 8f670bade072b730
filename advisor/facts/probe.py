"""Facts of a storage-target probe (``ioadvisor probe --snapshot``): which target is slow, by how
much, and how new files can be kept off it on this file system."""

from __future__ import annotations

from typing import Any

from advisor.facts import FactContext, NotApplicable, fact
from advisor.ingest.snapshot import SnapshotProfile

MiB = 1 << 20


def _probe(ctx: FactContext) -> dict[str, Any]:
    if not isinstance(ctx.profile, SnapshotProfile) or "probe" not in ctx.profile.settings:
        raise NotApplicable("not a snapshot written by ioadvisor probe")
    return ctx.profile.settings["probe"]


@fact("probe_slow_targets", "index", "Targets the probe found slow_ost_factor times slower than the typical one.",
      label="slow targets")
def probe_slow_targets(ctx: FactContext) -> list[int]:
    return list(_probe(ctx)["slow"])


@fact("probe_target_kind", "enum", "What the probed storage targets are: OST (Lustre) or OSD (CephFS).",
      label="targets probed")
def probe_target_kind(ctx: FactContext) -> str:
    return _probe(ctx)["target_kind"]


@fact("probe_is_lustre", "flag", "The probed file system is Lustre (else CephFS).", label="Lustre")
def probe_is_lustre(ctx: FactContext) -> bool:
    return _probe(ctx)["fstype"] == "lustre"


@fact("probe_mount", "path", "Mount point of the probed file system.", label="mount point")
def probe_mount(ctx: FactContext) -> str:
    return _probe(ctx)["mount"]


@fact("probe_dir", "path", "The directory the probe wrote in (where new files should avoid the slow target).",
      label="directory probed")
def probe_dir(ctx: FactContext) -> str:
    return _probe(ctx)["target"]


@fact("probe_targets", "count", "Storage targets the probe measured.", label="targets measured")
def probe_targets(ctx: FactContext) -> int:
    return len(_probe(ctx)["targets"])


@fact("probe_rounds", "count", "Rounds of pinned writes and reads per target.", label="rounds per target")
def probe_rounds(ctx: FactContext) -> int:
    return int(_probe(ctx)["rounds"])


@fact("probe_slow_rate", "rate", "Median rate of the slowest probed target.", label="slowest target's rate")
def probe_slow_rate(ctx: FactContext) -> float:
    doc = _probe(ctx)
    rates = {t["id"]: t["rate_mib_s"] for t in doc["targets"]}
    return rates[doc["slow"][0]] * MiB if doc["slow"] else 0.0


@fact("probe_typical_rate", "rate", "Median of the probed targets' median rates.", label="typical target's rate")
def probe_typical_rate(ctx: FactContext) -> float:
    return float(_probe(ctx)["typical_mib_s"]) * MiB


@fact("probe_healthy_targets", "index", "The targets new files may use (all but the slow ones).",
      label="healthy targets")
def probe_healthy_targets(ctx: FactContext) -> list[int]:
    doc = _probe(ctx)
    return [t["id"] for t in doc["targets"] if t["id"] not in doc["slow"]]


@fact("probe_avoid_pool", "text", "CephFS: the widest data pool without the slow OSDs ('' if none).",
      label="pool without the slow OSDs")
def probe_avoid_pool(ctx: FactContext) -> str:
    return (_probe(ctx).get("avoid") or {}).get("pool", "")


@fact("probe_lustre_fsname", "text", "Lustre: the file system name (the mount source's MGS:/fsname); '' elsewhere.",
      label="Lustre file system name")
def probe_lustre_fsname(ctx: FactContext) -> str:
    doc = _probe(ctx)
    if doc["fstype"] != "lustre":
        return ""
    for m in ctx.profile.settings.get("mounts", []):
        if m.get("path") == doc["mount"] and ":/" in str(m.get("device", "")):
            return str(m["device"]).rsplit(":/", 1)[1].split("/")[0]
    return "FSNAME"
