"""A snapshot of this node's storage-relevant settings (``ioadvisor collect``).

Reads /sys and /proc directly and runs ``lctl``/``lfs`` where they exist (by
absolute path, never through a shell, each with a time limit). A missing command
or an unreadable file is noted in the snapshot, never an error: a client without
Lustre tools and a server without ``lfs`` both give a useful snapshot.

The document is ``ioadvisor/snapshot/v1`` (``advisor/schemas/snapshot-v1.json``,
described in docs/collect.md).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.lustre_tools import parse_get_param, parse_getstripe, parse_lfs_df

SCHEMA_ID = "ioadvisor/snapshot/v1"
SCHEMA_VERSION = 1
COMMAND_TIMEOUT_S = 20.0
SEARCH_PATH = ("/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/local/bin")
QUEUE_FILES = ("read_ahead_kb", "max_sectors_kb", "max_hw_sectors_kb", "nr_requests",
               "rotational", "scheduler", "logical_block_size", "write_cache")
LCTL_PARAMS = (
    # client RPC stream and read-ahead
    "osc.*.max_rpcs_in_flight", "osc.*.max_pages_per_rpc", "osc.*.max_dirty_mb",
    "osc.*.checksums", "mdc.*.max_rpcs_in_flight", "llite.*.max_read_ahead_mb",
    "llite.*.max_read_ahead_per_file_mb", "llite.*.max_read_ahead_whole_mb",
    # servers: bulk RPC size, service threads, read cache
    "obdfilter.*.brw_size", "ost.OSS.ost_io.threads_min", "ost.OSS.ost_io.threads_max",
    "ost.OSS.ost_io.threads_started", "ost.OSS.ost.threads_started",
    "mds.MDS.mdt.threads_started", "osd-*.*.read_cache_enable",
    "osd-*.*.writethrough_cache_enable", "version",
)


class Collector:
    """Gathers one snapshot; `root` lets tests point /sys and /proc elsewhere."""

    def __init__(self, root: str = "/", timeout_s: float = COMMAND_TIMEOUT_S):
        self.root = Path(root)
        self.timeout_s = timeout_s
        self.commands: list[dict[str, Any]] = []
        self.notes: list[str] = []

    # ---- low-level access ---------------------------------------------------------
    def read(self, path: str) -> str | None:
        """Text of a /sys or /proc file, stripped, or None when it cannot be read."""
        try:
            return (self.root / path.lstrip("/")).read_text(errors="replace").strip()
        except OSError:
            return None

    def read_int(self, path: str) -> int | None:
        text = self.read(path)
        if text is None:
            return None
        m = re.match(r"-?\d+", text)
        return int(m.group()) if m else None

    def which(self, name: str) -> str | None:
        """Absolute path of an executable `name` in the usual system directories."""
        found = shutil.which(name, path=os.pathsep.join(SEARCH_PATH))
        return os.path.abspath(found) if found else None

    def run(self, argv: list[str]) -> str | None:
        """Run `argv` (argv[0] absolute, no shell); stdout, or None with the failure noted."""
        entry: dict[str, Any] = {"argv": argv, "status": "ok"}
        self.commands.append(entry)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout_s,
                                  check=False, stdin=subprocess.DEVNULL, errors="replace")
        except subprocess.TimeoutExpired:
            entry["status"] = "timeout"
            return None
        except OSError as exc:
            entry.update(status="failed", error=str(exc))
            return None
        entry["returncode"] = proc.returncode
        if proc.returncode != 0:
            entry["status"] = "failed"
            entry["error"] = (proc.stderr.strip().splitlines() or [""])[0][:300]
        return proc.stdout if proc.stdout.strip() else None

    # ---- sections -----------------------------------------------------------------
    def host(self) -> dict[str, Any]:
        os_release = self.read("/etc/os-release") or ""
        m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', os_release, re.M)
        return {"hostname": socket.gethostname(), "kernel": platform.release(),
                "os": m.group(1) if m else "", "machine": platform.machine()}

    def cpu(self) -> dict[str, Any]:
        cpus = self._cpu_dirs()
        packages, cores, siblings = set(), set(), []
        for cpu in cpus:
            pkg = self.read_int(f"{cpu}/topology/physical_package_id")
            core = self.read_int(f"{cpu}/topology/core_id")
            packages.add(pkg)
            cores.add((pkg, core))
            sib = self.read(f"{cpu}/topology/thread_siblings_list")
            if sib is not None:
                siblings.append(len(expand_cpulist(sib)))
        threads = max(siblings) if siblings else None
        cpuinfo = self.read("/proc/cpuinfo") or ""
        model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
        return {
            "model": model.group(1).strip() if model else "",
            "logical_cpus": len(cpus),
            "online": self.read("/sys/devices/system/cpu/online") or "",
            "sockets": len(packages) if cpus else None,
            "cores": len(cores) if cpus else None,
            "threads_per_core": threads,
            "hyperthreading": (threads > 1) if threads is not None else None,
            "smt_control": self.read("/sys/devices/system/cpu/smt/control"),
        }

    def _cpu_dirs(self) -> list[str]:
        base = self.root / "sys/devices/system/cpu"
        try:
            names = sorted((p.name for p in base.iterdir() if re.fullmatch(r"cpu\d+", p.name)),
                           key=lambda n: int(n[3:]))
        except OSError:
            self.notes.append("CPU topology unreadable (/sys/devices/system/cpu)")
            return []
        return [f"/sys/devices/system/cpu/{n}" for n in names]

    def numa(self) -> list[dict[str, Any]]:
        base = self.root / "sys/devices/system/node"
        nodes = []
        try:
            names = sorted((p.name for p in base.iterdir() if re.fullmatch(r"node\d+", p.name)),
                           key=lambda n: int(n[4:]))
        except OSError:
            return nodes
        for name in names:
            meminfo = self.read(f"/sys/devices/system/node/{name}/meminfo") or ""
            m = re.search(r"MemTotal:\s*(\d+) kB", meminfo)
            nodes.append({"node": int(name[4:]), "cpus": self.read(f"/sys/devices/system/node/{name}/cpulist") or "",
                          "mem_total_bytes": int(m.group(1)) * 1024 if m else None})
        return nodes

    def memory(self) -> dict[str, Any]:
        info = self.read("/proc/meminfo") or ""
        values = {k: int(v) * 1024 for k, v in re.findall(r"^(\w+):\s+(\d+) kB", info, re.M)}
        return {"total_bytes": values.get("MemTotal"), "available_bytes": values.get("MemAvailable"),
                "page_size": os.sysconf("SC_PAGE_SIZE") if self.root == Path("/") else None,
                "dirty_bytes": values.get("Dirty"),
                "dirty_ratio": self.read_int("/proc/sys/vm/dirty_ratio"),
                "dirty_background_ratio": self.read_int("/proc/sys/vm/dirty_background_ratio")}

    def block_devices(self) -> list[dict[str, Any]]:
        base = self.root / "sys/block"
        try:
            names = sorted(p.name for p in base.iterdir())
        except OSError:
            self.notes.append("/sys/block unreadable: no block device settings")
            return []
        return [self._device(name) for name in names]

    def _device(self, name: str) -> dict[str, Any]:
        base = f"/sys/block/{name}"
        dev: dict[str, Any] = {"name": name}
        for key in QUEUE_FILES:
            text = self.read(f"{base}/queue/{key}")
            if key == "scheduler":
                dev["scheduler"], dev["schedulers"] = parse_scheduler(text)
            elif key == "write_cache":
                dev[key] = text
            else:
                dev[key] = int(text) if text is not None and re.fullmatch(r"-?\d+", text) else None
        dev["rotational"] = bool(dev["rotational"]) if dev["rotational"] is not None else None
        dev["queue_depth"] = self.read_int(f"{base}/device/queue_depth")
        sectors = self.read_int(f"{base}/size")
        dev["size_bytes"] = sectors * 512 if sectors is not None else None
        dev["model"] = (self.read(f"{base}/device/model") or "").strip()
        dev["virtual"] = not (self.root / base.lstrip("/") / "device").exists()
        try:
            dev["slaves"] = sorted(p.name for p in (self.root / base.lstrip("/") / "slaves").iterdir())
        except OSError:
            dev["slaves"] = []
        return dev

    def mounts(self) -> list[dict[str, Any]]:
        text = self.read("/proc/self/mounts") or self.read("/proc/mounts") or ""
        out = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 4:
                device, path, fstype, options = (unescape_mount(p) for p in parts[:4])
                out.append({"device": device, "path": path, "fstype": fstype, "options": options,
                            "block_device": self._disk_of(device)})
        return out

    def _disk_of(self, device: str) -> str | None:
        """The /sys/block name of a mount's device (partitions map to their disk)."""
        if not device.startswith("/dev/"):
            return None
        name = os.path.basename(os.path.realpath(self.root / device.lstrip("/")))
        cls = self.root / "sys/class/block" / name
        if not cls.exists():
            return None
        if (cls / "partition").exists():
            return os.path.basename(os.path.dirname(os.path.realpath(cls)))
        return name

    def lustre(self, dirs: list[str], mounts: list[dict[str, Any]]) -> dict[str, Any]:
        lctl, lfs = self.which("lctl"), self.which("lfs")
        out: dict[str, Any] = {"lctl": lctl, "lfs": lfs, "params": {}, "lfs_df": [], "layouts": {}}
        if lctl is None:
            self.notes.append("lctl not found: no Lustre client or server parameters")
        else:
            for pattern in LCTL_PARAMS:
                text = self.run([lctl, "get_param", pattern])
                if text:
                    out["params"].update(parse_get_param(text))
        lustre_mounts = [m["path"] for m in mounts if m["fstype"] == "lustre"]
        if lfs is None:
            self.notes.append("lfs not found: no per-OST usage and no directory layouts")
        elif lustre_mounts:
            text = self.run([lfs, "df"])
            out["lfs_df"] = [_usage_dict(fs) for fs in parse_lfs_df(text or "")]
        for directory in dirs:
            out["layouts"][directory] = self._layout(lfs, directory, mounts)
        return out

    def _layout(self, lfs: str | None, directory: str, mounts: list[dict[str, Any]]) -> dict[str, Any]:
        path = os.path.abspath(directory)
        fstype = fstype_of(path, mounts)
        entry: dict[str, Any] = {"path": path, "fstype": fstype, "components": [], "note": ""}
        if not os.path.isdir(path):
            entry["note"] = "not a directory"
        elif fstype != "lustre":
            entry["note"] = f"not on a Lustre mount ({fstype or 'unknown type'}): no layout"
        elif lfs is None:
            entry["note"] = "lfs not found"
        else:
            layouts = parse_getstripe(self.run([lfs, "getstripe", "-d", path]) or "")
            if layouts:
                entry["components"] = [_component_dict(c) for c in layouts[0].components]
                entry["composite"] = layouts[0].composite
            else:
                entry["note"] = "lfs getstripe -d printed no layout"
        return entry

    def collect(self, dirs: list[str] | None = None) -> dict[str, Any]:
        """The whole snapshot document."""
        mounts = self.mounts()
        doc = {
            "schema": SCHEMA_ID,
            "tool": {"name": "ioadvisor", "version": __version__},
            "collected_at": time.time(),
            "host": self.host(),
            "cpu": self.cpu(),
            "numa": self.numa(),
            "memory": self.memory(),
            "block_devices": self.block_devices(),
            "mounts": mounts,
        }
        doc["lustre"] = self.lustre(list(dirs or []), mounts)
        doc["commands"] = self.commands
        doc["notes"] = self.notes
        return doc


def collect(dirs: list[str] | None = None, root: str = "/") -> dict[str, Any]:
    """Snapshot this node (see :class:`Collector`)."""
    return Collector(root).collect(dirs)


# ---- small helpers shared with the snapshot facts ------------------------------------

def storage_devices(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The block devices of a snapshot that are storage (not loop, zram or other virtual devices):
    the ones `collect` counts and `show` and the HTML report list."""
    return [d for d in doc.get("block_devices") or [] if isinstance(d, dict) and not d.get("virtual")]


def expand_cpulist(text: str) -> list[int]:
    """``0-3,8,10-11`` -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            if lo.isdigit() and hi.isdigit():
                cpus.extend(range(int(lo), int(hi) + 1))
        elif part.isdigit():
            cpus.append(int(part))
    return cpus


def parse_scheduler(text: str | None) -> tuple[str | None, list[str]]:
    """(active, available) of ``none [mq-deadline] kyber``."""
    if not text:
        return None, []
    names = text.replace("[", " ").replace("]", " ").split()
    m = re.search(r"\[([^\]]+)\]", text)
    return (m.group(1) if m else (names[0] if len(names) == 1 else None)), names


def unescape_mount(field: str) -> str:
    """/proc/mounts escapes space, tab, newline and backslash as octal."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def fstype_of(path: str, mounts: list[dict[str, Any]]) -> str:
    """File system type of `path`: the longest mount point that contains it."""
    best, fstype = -1, ""
    for m in mounts:
        mount = m["path"].rstrip("/") or "/"
        if (path == mount or path.startswith(mount.rstrip("/") + "/")) and len(mount) > best:
            best, fstype = len(mount), m["fstype"]
    return fstype


def _component_dict(c) -> dict[str, Any]:
    return {"extent_start": c.extent_start, "extent_end": c.extent_end, "stripe_count": c.stripe_count,
            "stripe_size": c.stripe_size, "stripe_offset": c.stripe_offset, "pattern": c.pattern,
            "pool": c.pool}


def _usage_dict(fs) -> dict[str, Any]:
    return {"mount": fs.mount, "total_bytes": fs.total_bytes, "used_bytes": fs.used_bytes,
            "avail_bytes": fs.avail_bytes, "osts": len(fs.osts), "mdts": len(fs.mdts),
            "inactive": fs.inactive,
            "targets": [{"uuid": t.uuid, "kind": t.kind, "index": t.index, "total_bytes": t.total_bytes,
                         "used_bytes": t.used_bytes, "use_pct": t.use_pct} for t in fs.targets]}
