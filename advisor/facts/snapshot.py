"""Facts about one node snapshot (``ioadvisor collect``) against the site's [targets].

Storage servers: hyper-threading, block read-ahead, request size and queue depth of
the devices that hold OSTs/MDTs. Clients: RPCs in flight, pages per RPC, dirty cache
per OSC, and the default layouts of the directories named at collect time.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from advisor.facts import FactContext, Missing, NotApplicable, fact
from advisor.ingest.snapshot import SnapshotProfile
from advisor.lustre_tools import client_oscs
from advisor.units import KiB, MiB

PAGE = 4096  # bytes per page when the snapshot does not say

# Record fields: the kernel's own settings keep their names and units (read_ahead_kb is KiB).
LOW_READ_AHEAD = {"name": "text", "read_ahead_kb": "bytes KiB", "target": "bytes KiB"}
SMALL_REQUESTS = {"name": "text", "max_sectors_kb": "bytes KiB", "max_hw_sectors_kb": "bytes KiB",
                  "hardware_limited": "flag", "commands_per_rpc": "count", "settable_kb": "bytes KiB"}
SHALLOW_QUEUE = {"name": "text", "queue_depth": "count", "nr_requests": "count", "low_queue_depth": "flag",
                 "low_nr_requests": "flag"}
LAYOUT = {"path": "path", "stripe_count": "count", "stripe_size": "bytes", "components": "count",
          "want_count": "count", "want_size": "bytes"}


def _doc(ctx: FactContext) -> dict[str, Any]:
    if not isinstance(ctx.profile, SnapshotProfile):
        raise NotApplicable("not a node snapshot")
    return ctx.profile.settings


def _targets(ctx: FactContext):
    return ctx.config.section("targets")


def _params(ctx: FactContext) -> dict[str, str]:
    return _doc(ctx)["lustre"].get("params", {})


# ---- which node, which devices ----------------------------------------------------------

@fact("snap_host", "text", "Host name of the snapshot's node.", label="host")
def snap_host(ctx: FactContext) -> str:
    return _doc(ctx)["host"].get("hostname", "")


def _target_mount_disks(doc: dict[str, Any]) -> set[str]:
    # a Lustre target (OST/MDT) is mounted from a block device with fstype lustre
    return {m["block_device"] for m in doc["mounts"] if m["fstype"] == "lustre" and m.get("block_device")}


@fact("snap_is_server", "flag", "The node serves Lustre targets: [targets] server, else OST/MDT mounts, "
      "obdfilter/ost parameters or named storage devices present.", label="serves Lustre targets")
def snap_is_server(ctx: FactContext) -> bool:
    doc, targets = _doc(ctx), _targets(ctx)
    if targets.server is not None:
        return bool(targets.server)
    params = _params(ctx)
    return bool(_target_mount_disks(doc) or any(k.startswith(("obdfilter.", "ost.OSS", "mds.MDS"))
                                                for k in params) or _named_devices(ctx))


def _named_devices(ctx: FactContext) -> list[dict[str, Any]]:
    patterns = _targets(ctx).storage_devices
    return [d for d in _doc(ctx)["block_devices"]
            if any(fnmatch.fnmatchcase(d["name"], p) for p in patterns)]


@fact("snap_storage_devices", "text", "Block devices holding storage targets: those [targets] storage_devices "
      "names, the disks of mounted OSTs/MDTs, and the members of those (dm, md).", label="storage devices")
def snap_storage_devices(ctx: FactContext) -> list[str]:
    doc = _doc(ctx)
    devices = {d["name"]: d for d in doc["block_devices"]}
    names = {d["name"] for d in _named_devices(ctx)} | _target_mount_disks(doc)
    for name in list(names):
        names.update(s for s in devices.get(name, {}).get("slaves", []) if s in devices)
    if not names:
        raise Missing("no storage target devices: name them in the site config ([targets] "
                      "storage_devices) or collect on a server with its OSTs/MDTs mounted")
    return sorted(names)


def _storage(ctx: FactContext) -> list[dict[str, Any]]:
    devices = {d["name"]: d for d in _doc(ctx)["block_devices"]}
    return [devices[n] for n in ctx.get("snap_storage_devices") if n in devices]


def _below(ctx: FactContext, key: str, target: int) -> list[dict[str, Any]]:
    return [{"name": d["name"], key: d[key], "target": target} for d in _storage(ctx)
            if d.get(key) is not None and d[key] < target]


# ---- servers ----------------------------------------------------------------------------

@fact("snap_threads_per_core", "count", "Hardware threads per CPU core (2 or more: hyper-threading/SMT on).",
      label="hardware threads per core")
def snap_threads_per_core(ctx: FactContext) -> int:
    threads = _doc(ctx)["cpu"].get("threads_per_core")
    if threads is None:
        raise Missing("the snapshot has no CPU topology")
    return int(threads)


@fact("snap_ht_wanted", "flag", "Hyper-threading is wanted on storage servers ([targets] hyperthreading).",
      label="hyper-threading wanted")
def snap_ht_wanted(ctx: FactContext) -> bool:
    _doc(ctx)
    return bool(_targets(ctx).hyperthreading)


@fact("snap_ht_runtime_control", "flag", "The kernel can switch SMT off at run time "
      "(/sys/devices/system/cpu/smt/control).", label="SMT switchable at run time")
def snap_ht_runtime_control(ctx: FactContext) -> bool:
    return _doc(ctx)["cpu"].get("smt_control") in ("on", "off", "forceoff")


@fact("read_ahead_target", "bytes", "Block read-ahead storage devices should have ([targets] read_ahead_kb).",
      label="read-ahead target")
def read_ahead_target(ctx: FactContext) -> int:
    _doc(ctx)
    return int(_targets(ctx).read_ahead_kb) * KiB


@fact("low_read_ahead_devices", "record", "Storage devices whose read_ahead_kb is below the target.",
      label="devices with a low read-ahead", fields=LOW_READ_AHEAD)
def low_read_ahead_devices(ctx: FactContext) -> list[dict]:
    return _below(ctx, "read_ahead_kb", ctx.get("read_ahead_target") // KiB)


@fact("low_read_ahead_names", "text", "Names of the storage devices with a low read-ahead.",
      label="devices with a low read-ahead")
def low_read_ahead_names(ctx: FactContext) -> list[str]:
    return [d["name"] for d in ctx.get("low_read_ahead_devices")]


@fact("max_sectors_target", "bytes", "Smallest max_sectors_kb storage devices should have ([targets] "
      "max_sectors_kb).", label="largest request target (max_sectors_kb)")
def max_sectors_target(ctx: FactContext) -> int:
    _doc(ctx)
    return int(_targets(ctx).max_sectors_kb) * KiB


@fact("small_request_devices", "record", "Storage devices whose max_sectors_kb is below the target, "
      "with the hardware limit and how many commands one RPC ([system] rpc_size) becomes.",
      label="devices that split RPCs", fields=SMALL_REQUESTS)
def small_request_devices(ctx: FactContext) -> list[dict]:
    target = ctx.get("max_sectors_target") // KiB
    rpc_kb = max(1, ctx.get("rpc_size") // 1024)
    out = []
    for d in _storage(ctx):
        kb = d.get("max_sectors_kb")
        if kb is not None and 0 < kb < target:
            hw = d.get("max_hw_sectors_kb")
            out.append({"name": d["name"], "max_sectors_kb": kb, "max_hw_sectors_kb": hw,
                        "hardware_limited": hw is not None and hw < target,
                        "commands_per_rpc": -(-rpc_kb // kb), "settable_kb": min(target, hw or target)})
    return out


@fact("small_request_names", "text", "Names of the storage devices that split 1 MiB requests.",
      label="devices that split RPCs")
def small_request_names(ctx: FactContext) -> list[str]:
    return [d["name"] for d in ctx.get("small_request_devices")]


@fact("small_request_hw_limited", "flag", "At least one of those devices cannot take larger requests "
      "(max_hw_sectors_kb).", label="limited by the hardware")
def small_request_hw_limited(ctx: FactContext) -> bool:
    return any(d["hardware_limited"] for d in ctx.get("small_request_devices"))


@fact("queue_target", "count", "Queue depth and nr_requests storage devices should have ([targets]).",
      label="queue depth target")
def queue_target(ctx: FactContext) -> int:
    _doc(ctx)
    return int(max(_targets(ctx).queue_depth, _targets(ctx).nr_requests))


@fact("shallow_queue_devices", "record", "Storage devices whose device queue_depth or block nr_requests is "
      "below the target.", label="devices with a shallow queue",
      fields=SHALLOW_QUEUE)
def shallow_queue_devices(ctx: FactContext) -> list[dict]:
    targets = _targets(ctx)
    out = []
    for d in _storage(ctx):
        depth, nr = d.get("queue_depth"), d.get("nr_requests")
        low_depth = depth is not None and depth < targets.queue_depth
        low_nr = nr is not None and 0 < nr < targets.nr_requests
        if low_depth or low_nr:
            out.append({"name": d["name"], "queue_depth": depth, "nr_requests": nr,
                        "low_queue_depth": low_depth, "low_nr_requests": low_nr})
    return out


@fact("shallow_queue_names", "text", "Names of the storage devices with a shallow queue.",
      label="devices with a shallow queue")
def shallow_queue_names(ctx: FactContext) -> list[str]:
    return [d["name"] for d in ctx.get("shallow_queue_devices")]


@fact("shallow_depth_names", "text", "Names of the devices whose device/queue_depth is low.",
      label="devices with a low queue_depth")
def shallow_depth_names(ctx: FactContext) -> list[str]:
    return [d["name"] for d in ctx.get("shallow_queue_devices") if d["low_queue_depth"]]


@fact("shallow_nr_names", "text", "Names of the devices whose queue/nr_requests is low.",
      label="devices with a low nr_requests")
def shallow_nr_names(ctx: FactContext) -> list[str]:
    return [d["name"] for d in ctx.get("shallow_queue_devices") if d["low_nr_requests"]]


# ---- clients ----------------------------------------------------------------------------

def _osc_values(ctx: FactContext, name: str) -> dict[str, int]:
    values = {k: int(v) for k, v in client_oscs(_params(ctx), f"osc.*.{name}").items()
              if v.strip().lstrip("-").isdigit()}
    if not values:
        raise Missing(f"no client osc.*.{name} in the snapshot (not a Lustre client, or lctl missing)")
    return values


@fact("rpcs_in_flight_target", "count", "RPCs in flight per OSC the site wants ([targets] max_rpcs_in_flight).",
      label="RPCs in flight target")
def rpcs_in_flight_target(ctx: FactContext) -> int:
    _doc(ctx)
    return int(_targets(ctx).max_rpcs_in_flight)


@fact("osc_rpcs_in_flight", "count", "Smallest osc.*.max_rpcs_in_flight of the client's OSCs.",
      label="smallest max_rpcs_in_flight")
def osc_rpcs_in_flight(ctx: FactContext) -> int:
    return min(_osc_values(ctx, "max_rpcs_in_flight").values())


@fact("low_rpcs_oscs", "count", "Client OSCs with max_rpcs_in_flight below the target.", label="OSCs below the target")
def low_rpcs_oscs(ctx: FactContext) -> int:
    target = ctx.get("rpcs_in_flight_target")
    return sum(v < target for v in _osc_values(ctx, "max_rpcs_in_flight").values())


@fact("osc_dirty_bytes", "bytes", "Smallest osc.*.max_dirty_mb of the client's OSCs.", label="smallest max_dirty_mb")
def osc_dirty_bytes(ctx: FactContext) -> int:
    return min(_osc_values(ctx, "max_dirty_mb").values()) * MiB


@fact("dirty_target_bytes", "bytes", "Dirty cache per OSC the site wants ([targets] max_dirty_mb).",
      label="dirty cache target")
def dirty_target_bytes(ctx: FactContext) -> int:
    _doc(ctx)
    return int(_targets(ctx).max_dirty_mb) * MiB


@fact("osc_pages_per_rpc", "count", "Smallest osc.*.max_pages_per_rpc of the client's OSCs.",
      label="smallest max_pages_per_rpc")
def osc_pages_per_rpc(ctx: FactContext) -> int:
    return min(_osc_values(ctx, "max_pages_per_rpc").values())


@fact("pages_per_rpc_target", "count", "Pages one RPC needs to carry the file system's RPC size ([system] "
      "rpc_size / page size).", label="pages per RPC target")
def pages_per_rpc_target(ctx: FactContext) -> int:
    page = _doc(ctx)["memory"].get("page_size") or PAGE
    return max(1, ctx.get("rpc_size") // int(page))


@fact("client_rpc_bytes", "bytes", "Bytes one client RPC carries (max_pages_per_rpc x page size).",
      label="bytes per client RPC")
def client_rpc_bytes(ctx: FactContext) -> int:
    page = _doc(ctx)["memory"].get("page_size") or PAGE
    return ctx.get("osc_pages_per_rpc") * int(page)



# ---- directory layouts ------------------------------------------------------------------

@fact("layout_mismatch_dirs", "record", "Directories (collect --dir) whose default layout differs from "
      "[system] default_stripe_count / default_stripe_size.", label="directories with another default layout",
      fields=LAYOUT)
def layout_mismatch_dirs(ctx: FactContext) -> list[dict]:
    layouts = _doc(ctx)["lustre"].get("layouts", {})
    system = ctx.config.system
    if not layouts:
        raise Missing("no directory layouts in the snapshot (collect with --dir DIR on a Lustre client)")
    if system.default_stripe_count is None and system.default_stripe_size is None:
        raise Missing("the site config states no default layout ([system] default_stripe_count, "
                      "default_stripe_size)")
    out = []
    for entry in layouts.values():
        comps = entry.get("components") or []
        if not comps:
            continue
        first = comps[0]
        count_off = system.default_stripe_count is not None and first["stripe_count"] != system.default_stripe_count
        size_off = system.default_stripe_size is not None and first["stripe_size"] != system.default_stripe_size
        if count_off or size_off:
            out.append({"path": entry["path"], "stripe_count": first["stripe_count"],
                        "stripe_size": first["stripe_size"], "components": len(comps),
                        "want_count": system.default_stripe_count or first["stripe_count"],
                        "want_size": system.default_stripe_size or first["stripe_size"]})
    return out


@fact("layout_mismatch_paths", "path", "Paths of the directories whose default layout differs from the site's.",
      label="directories with another default layout")
def layout_mismatch_paths(ctx: FactContext) -> list[str]:
    return [d["path"] for d in ctx.get("layout_mismatch_dirs")]
