"""Errors that reach the user as one line naming the input and the reason."""

from __future__ import annotations


class AdvisorError(Exception):
    """An error the CLI reports in one line, without a traceback."""


class InputError(AdvisorError):
    """An input (log, dump, snapshot, config) that cannot be used, and why."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class ConfigError(AdvisorError):
    """A site config or rule file that is wrong: names the file, line or key."""
