"""The `[hook]` section of the site config: where Darshan logs are, limits, destination.

Registered with :func:`advisor.config.section`, so an unknown key or a wrong type is a
ConfigError naming the key; :func:`validate` adds what types cannot say (choices,
required paths, ranges). Paths in templates may use ``{jobid}``, ``{user}``,
``{uid}`` and ``{workdir}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from advisor.config import SiteConfig, load_config, section
from advisor.errors import ConfigError

LAYOUTS = ("darshan", "glob", "fixed")
DESTINATIONS = ("workdir", "user-dir", "site-dir")
MIN_SEVERITIES = ("none", "info", "warn", "high")
FORMATS = ("html", "json")
TEMPLATE_KEYS = ("jobid", "user", "uid", "workdir")


@section("hook")
@dataclass
class HookConfig:
    """What the post-job hook does for every job (defaults suit a Darshan site)."""

    log_layout: str = "darshan"  # darshan | glob | fixed
    log_dir: str = ""  # darshan: the DARSHAN_LOG_DIR_PATH root (<log_dir>/<Y>/<M>/<D>/)
    log_glob: str = ""  # glob: e.g. "/darshan/{user}/*_id{jobid}_*.darshan"
    log_file: str = ""  # fixed (DARSHAN_LOGFILE-style): e.g. "{workdir}/darshan-{jobid}.darshan"
    search_days: int = 1  # darshan: also search this many days before today
    max_logs: int = 8  # logs of one job diagnosed at most (one per job step)
    wait_s: float = 10.0  # longest wait for a log still being written
    time_limit_s: float = 60.0  # hard wall-time limit of the diagnosis child (reports included)
    memory_limit_mb: int = 4096  # RLIMIT_AS of the diagnosis child
    destination: str = "workdir"  # workdir | user-dir | site-dir
    user_dir: str = ""  # user-dir: e.g. "/scratch/{user}/ioadvisor"
    site_dir: str = ""  # site-dir: root-owned; reports go to <site_dir>/<user>/
    site_log: str = ""  # one JSON line per job; empty: no site log
    min_severity: str = "warn"  # write reports only with a finding this severe (none: always)
    formats: list[str] = field(default_factory=lambda: list(FORMATS))
    opt_out_marker: str = ".ioadvisor-off"  # in the work dir (one job) or home dir (every job)
    opt_out_users: list[str] = field(default_factory=list)  # site-wide exclusions
    syslog: bool = True  # errors also go to syslog (LOG_USER)
    report_mode: str = ""  # e.g. "0640" for every report; empty: as readable as its directory

    def file_mode(self) -> int | None:
        """`report_mode` as a number, or None (the writer follows the destination directory)."""
        return int(self.report_mode, 8) if self.report_mode else None

    def log_source(self) -> str:
        """The configured log location in words (for `hook check`)."""
        return {"darshan": f"Darshan layout under {self.log_dir}",
                "glob": f"glob {self.log_glob}", "fixed": f"fixed name {self.log_file}"}[self.log_layout]


def validate(cfg: HookConfig, source: str) -> None:
    """Reject values a wrong type does not catch: unknown choices, missing paths, bad ranges."""
    def bad(key: str, why: str) -> ConfigError:
        return ConfigError(f"{source}: hook.{key}: {why}")

    for key, allowed in (("log_layout", LAYOUTS), ("destination", DESTINATIONS),
                         ("min_severity", MIN_SEVERITIES)):
        if getattr(cfg, key) not in allowed:
            raise bad(key, f"{getattr(cfg, key)!r} is not one of {', '.join(allowed)}")
    for fmt in cfg.formats:
        if fmt not in FORMATS:
            raise bad("formats", f"{fmt!r} is not one of {', '.join(FORMATS)}")
    needed = {"darshan": "log_dir", "glob": "log_glob", "fixed": "log_file"}[cfg.log_layout]
    if not getattr(cfg, needed):
        raise bad(needed, f"required when log_layout = {cfg.log_layout!r}")
    if cfg.destination == "user-dir" and not cfg.user_dir:
        raise bad("user_dir", "required when destination = 'user-dir'")
    if cfg.destination == "site-dir" and not cfg.site_dir:
        raise bad("site_dir", "required when destination = 'site-dir'")
    for key in ("log_dir", "log_glob", "log_file", "user_dir", "site_dir", "site_log"):
        value = getattr(cfg, key)
        if value and not value.startswith(("/", "{workdir}")):
            raise bad(key, f"{value!r} must be an absolute path (the hook runs without a cwd of its own)")
        _check_template(value, key, bad)
    for key in ("log_dir", "site_dir", "site_log"):  # root writes or lists these: no user part
        if "{" in getattr(cfg, key):
            raise bad(key, "placeholders are not allowed here (root uses this path)")
    for key, low, high in (("search_days", 0, 31), ("max_logs", 1, 1000), ("wait_s", 0, 3600),
                           ("time_limit_s", 0.1, 86400), ("memory_limit_mb", 64, 1 << 22)):
        if not low <= getattr(cfg, key) <= high:
            raise bad(key, f"{getattr(cfg, key)} is outside [{low}, {high}]")
    if cfg.report_mode and not (set(cfg.report_mode) <= set("01234567") and int(cfg.report_mode, 8) <= 0o666
                                and int(cfg.report_mode, 8) & 0o600 == 0o600):
        raise bad("report_mode", f"{cfg.report_mode!r} is not an octal file mode from 0600 to 0666 "
                                 "(the user must be able to read and replace the report)")
    if "/" in cfg.opt_out_marker or not cfg.opt_out_marker.strip("."):
        raise bad("opt_out_marker", "must be a plain file name")


def _check_template(value: str, key: str, bad) -> None:
    try:
        value.format_map({k: "x" for k in TEMPLATE_KEYS})
    except (KeyError, ValueError, IndexError) as exc:
        raise bad(key, f"bad placeholder in {value!r} ({exc}); use {{jobid}} {{user}} {{uid}} {{workdir}}") from None


def load_settings(path: str | Path | None) -> tuple[HookConfig, SiteConfig]:
    """The validated `[hook]` section, and the whole site config (the rules' thresholds)."""
    if path is None:
        raise ConfigError("no site config: pass --config FILE (or set IOADVISOR_CONFIG) "
                          "with a [hook] section")
    site = load_config(path)
    cfg = site.section("hook")
    validate(cfg, str(path))
    return cfg, site
