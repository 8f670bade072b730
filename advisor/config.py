"""The site config: what logs cannot tell (the file system's OSTs, default layout, RPC size)
and the thresholds a site wants different from the rule catalogue's defaults.

A TOML file (read with :mod:`tomllib`), one section per concern::

    [system]
    osts = 48
    default_stripe_count = 1
    default_stripe_size = 1048576

    [thresholds]
    high_share = 0.10          # global: every rule/fact parameter of that name

    [thresholds.IO001]         # one rule only
    min_share = 0.2

Every section is a dataclass registered in :data:`SECTIONS`; unknown keys and wrong
types are rejected with a :class:`ConfigError` naming the file and the key. Another
part of the tool adds its own section with :func:`section`::

    @section("hook")
    @dataclass
    class HookConfig:
        enabled: bool = True

Those sections live with their part (``advisor/hooks/settings.py``, ``advisor/fleet/settings.py``)
and import only this module; the program (``advisor.cli``) and the library (``advisor.api``)
import them, so every command accepts the whole site file and this module imports nothing above it.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import ConfigError
from advisor.units import quantity

ENV_VAR = "IOADVISOR_CONFIG"


SECTIONS: dict[str, type] = {}
"""TOML section name -> dataclass type; filled by :func:`section`."""


def section(name: str):
    """Register a dataclass as the config section ``[name]`` (a small additive edit per part)."""

    def register(cls: type) -> type:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"config section {name!r} must be a dataclass")
        SECTIONS[name] = cls
        return cls

    return register


@section("system")
@dataclass
class SystemConfig:
    """Facts about the file system that a Darshan log does not record."""

    osts: int | None = None  # OSTs in the file system (LUSTRE_OSTS when the log has it)
    mdts: int | None = None
    default_stripe_count: int | None = None  # the file system's default layout
    default_stripe_size: int | None = None
    rpc_size: int | None = None  # Lustre's bulk RPC size (max_pages_per_rpc x page size); unset: 1 MiB, assumed
    request_latency_s: float | None = None  # fixed cost of one request (an RPC round trip); unset: 100 us, assumed
    stream_mib_s: float | None = None  # what one process moves per second in large requests; unset: 2,048, assumed
    lustre_version: str = ""
    pfl_default: bool | None = None  # a progressive file layout is the default
    peak_write_mib_s: float | None = None  # sustainable aggregate peaks of the file system
    peak_read_mib_s: float | None = None
    ost_peak_mib_s: float | None = None  # what one OST sustains
    osses: int | None = None  # object storage servers (for the per-OSS peak)
    oss_peak_mib_s: float | None = None  # what one OSS sustains (its network or its storage)
    client_peak_mib_s: float | None = None  # what one client's network link sustains
    client_memory_bytes: int | None = None  # RAM of one client node (page-cache checks of benchmarks)


@section("targets")
@dataclass
class TargetsConfig:
    """Server and client settings the site wants, checked against node snapshots (ior)."""

    storage_devices: list[str] = field(default_factory=list)  # /sys/block globs of OST/MDT disks
    server: bool | None = None  # None: a node with Lustre targets or named storage devices is one
    read_ahead_kb: int = 4096  # block read-ahead on storage devices
    max_sectors_kb: int = 1024  # a 1 MiB RPC must reach the disk as one request
    queue_depth: int = 256  # device/queue_depth (SAS/RAID controllers)
    nr_requests: int = 256  # block-layer queue
    hyperthreading: bool = False  # SMT wanted on storage servers
    max_rpcs_in_flight: int = 16  # client osc RPCs in flight per OST
    max_dirty_mb: int = 64  # client dirty cache per OST


@section("model")
@dataclass
class ModelConfig:
    """The learned model every `ioadvisor diagnose` applies (models; see docs/models.md)."""

    path: str = ""  # a model file (`ioadvisor train`), "default" for the one shipped, "" for none
    # every --verify appends its measured fixes to the site's model data (`ioadvisor train` folds them in)
    learn_from_verify: bool = True
    data: str = ""  # that directory ("": $XDG_DATA_HOME/ioadvisor/model-data, ~/.local/share/... without it)


@section("replay")
@dataclass
class ReplayConfig:
    """How ``--verify`` and ``ioadvisor replay`` measure a fix (docs/replay.md, "Measurement")."""

    min_sample_s: float = 1.0  # a sample's timed passes add up to at least this (auto-ranging)
    margin: float = 0.05  # speedups within +-5 % are "equivalent"
    reproducibility: float = 0.05  # sd of ln(speedup) between runs here (bench/verify_stability.py measures it)
    precision: float = 0.25  # a decided fix is measured on until its interval is within x/÷1.25
    min_pairs: int = 5  # the sequential test's first look
    max_pairs: int = 40  # ... and its last
    budget_s: float = 300.0  # wall time of one job's measurement (all its fixes)
    budget_gib: float = 256.0  # bytes it may write (the page cache included); time is the usual bound
    allow_mount_root: bool = False  # replay into the root directory of a mounted file system
    drop_caches: bool = True  # as root, drop the whole node's page cache before every sample (else evict)
    history: bool = True  # keep each target's verification history (the run-to-run spread, replay.drift)
    history_dir: str = ""  # where ("": $XDG_STATE_HOME/ioadvisor/replay-history)

    def __post_init__(self) -> None:
        for key in ("margin", "precision"):
            if not 0 < getattr(self, key) < 1:
                raise ValueError(f"key '{key}' must lie between 0 and 1, not {getattr(self, key)!r}")
        if not 2 <= self.min_pairs <= self.max_pairs:
            raise ValueError(f"keys 'min_pairs' ({self.min_pairs}) and 'max_pairs' ({self.max_pairs}) "
                             "need 2 <= min_pairs <= max_pairs")
        if not 0 <= self.reproducibility < 1:
            raise ValueError(f"key 'reproducibility' must lie in [0, 1), not {self.reproducibility!r}")
        for key in ("min_sample_s", "budget_s", "budget_gib"):
            if getattr(self, key) < 0:
                raise ValueError(f"key '{key}' must not be negative")


@dataclass
class SiteConfig:
    """The whole site config. ``thresholds`` maps a global name or a rule code to overrides."""

    system: SystemConfig = field(default_factory=SystemConfig)
    thresholds: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)  # every other registered section
    path: str = ""  # where it was read from ("" for the built-in defaults)

    def section(self, name: str) -> Any:
        """The dataclass instance of section `name` (defaults when the file has none)."""
        if name == "system":
            return self.system
        if name not in self.sections:
            self.sections[name] = SECTIONS[name]()
        return self.sections[name]

    def threshold(self, name: str, default: Any, rule: str | None = None) -> Any:
        """`name` for `rule`: the rule's own override, else the global one, else `default`."""
        if rule is not None:
            per_rule = self.thresholds.get(rule)
            if isinstance(per_rule, dict) and name in per_rule:
                return per_rule[name]
        value = self.thresholds.get(name, default)
        return default if isinstance(value, dict) else value


def load_config(path: str | Path | None = None) -> SiteConfig:
    """Read the site config at `path` (or ``$IOADVISOR_CONFIG``); defaults when neither is set."""
    if path is None:
        path = os.environ.get(ENV_VAR) or None
    if path is None:
        return SiteConfig()
    path = Path(path)
    import tomllib  # here: most runs have no site config file (0.01-0.02 s of CPU for nothing)

    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return from_dict(doc, str(path))


def from_dict(doc: dict[str, Any], where: str = "<config>") -> SiteConfig:
    """Validate a parsed TOML document into a :class:`SiteConfig`."""
    config = SiteConfig(path=where)
    for name, value in doc.items():
        if name == "thresholds":
            config.thresholds = _thresholds(value, where)
        elif name in SECTIONS:
            built = _build(SECTIONS[name], value, f"{where}: [{name}]")
            if name == "system":
                config.system = built
            else:
                config.sections[name] = built
        else:
            known = ", ".join(sorted([*SECTIONS, "thresholds"]))
            raise ConfigError(f"{where}: unknown section [{name}] (known: {known})")
    return config


def _build(cls: type, table: Any, where: str) -> Any:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key, value in table.items():
        if key not in fields:
            raise ConfigError(f"{where}: unknown key '{key}' (known: {', '.join(sorted(fields))})")
        if not _type_ok(value, hints[key]):
            raise ConfigError(f"{where}: key '{key}' must be {_type_name(hints[key])}, "
                              f"not {type(value).__name__} {value!r}")
        values[key] = value
    try:
        return cls(**values)
    except ValueError as exc:  # a section's own range checks
        raise ConfigError(f"{where}: {exc}") from None


def _type_ok(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, tuple):
        (item,) = typing.get_args(hint)[:1] or (Any,)
        return isinstance(value, list) and all(_type_ok(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if hint is Any:
        return True
    return isinstance(value, hint)


def _type_name(hint: Any) -> str:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args:
        return " or ".join(_type_name(a) for a in args)
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}.get(
        hint, getattr(hint, "__name__", str(hint)))


def _thresholds(table: Any, where: str) -> dict[str, Any]:
    """Shape check only; names are checked against the rule catalogue by the engine."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [thresholds] must be a table")
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out[key] = {name: _threshold_value(inner, f"{where}: [thresholds.{key}] key '{name}'")
                        for name, inner in value.items()}
        else:
            out[key] = _threshold_value(value, f"{where}: [thresholds] key '{key}'")
    return out


def _threshold_value(value: Any, where: str) -> Any:
    try:
        return quantity(value)
    except ValueError:
        raise ConfigError(f"{where} must be a number (units allowed: '10%', '4MiB'), "
                          f"not {value!r}") from None

