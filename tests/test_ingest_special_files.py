"""Inputs that are not regular files are refused by their type, at once, never opened blocking."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from advisor.errors import InputError
from advisor.ingest import detect


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "log.darshan"
    os.mkfifo(fifo)
    # in a child with a deadline: a blocking open() of a FIFO would wait for a writer forever
    out = subprocess.run([sys.executable, "-m", "advisor", "diagnose", str(fifo)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip() == f"ioadvisor: error: {fifo}: is a FIFO (named pipe), not a log file"


@pytest.mark.parametrize("make, kind", [
    (lambda p: "/dev/null", "character device"),
    (lambda p: str(p), "directory"),
    (lambda p: _socket(p / "sock"), "socket"),
])
def test_special_files_are_named_by_their_type(tmp_path, make, kind):
    path = make(tmp_path)
    with pytest.raises(InputError, match=f"is a {kind}, not a log file"):
        detect(path)


def test_missing_and_unreadable_inputs_say_so(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        detect(tmp_path / "missing")
    if os.geteuid() != 0:  # root reads through permission bits
        secret = tmp_path / "secret.darshan"
        secret.write_bytes(b"x")
        secret.chmod(0)
        with pytest.raises(InputError, match="cannot read: Permission denied"):
            detect(secret)


def _socket(path) -> str:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    return str(path)
