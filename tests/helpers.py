"""Shared test helpers."""

from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip when a component is missing; under CI=true a missing component fails the test."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"missing component under CI=true: {reason}")
    pytest.skip(reason)


def require_command(name: str, how: str) -> str:
    """Path of the command `name`, or skip/fail saying `how` to install it."""
    path = shutil.which(name) or next(
        (p for d in ("/usr/sbin", "/sbin", "/usr/bin") if os.access(p := f"{d}/{name}", os.X_OK)), None)
    require(path is not None, f"'{name}' not found: {how}")
    return path


def require_root(what: str) -> None:
    require(os.geteuid() == 0, f"{what} needs root: run the tests as root (sudo make test)")
