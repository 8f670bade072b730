"""Output files are written whole or not at all, and devices are never replaced."""

from __future__ import annotations

import os
import stat

import pytest

from advisor.errors import InputError
from advisor.fileio import write_atomic


def test_writes_whole_file_with_umask_permissions(tmp_path):
    target = tmp_path / "out.json"
    write_atomic(target, "{}\n")
    assert target.read_text() == "{}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary left


def test_a_fifo_is_written_in_place_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_atomic(fifo, b"data")
        assert os.read(reader, 16) == b"data"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_dev_null_stays_a_device(tmp_path):
    write_atomic("/dev/null", "discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_cli_json_to_dev_null_keeps_the_device():
    from click.testing import CliRunner

    from advisor.cli import cli
    from tests.conftest import REPO

    log = REPO / "traces" / "ior-good-fpp-1m.darshan"
    result = CliRunner().invoke(cli, ["show", str(log), "--json", "/dev/null"])
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_unwritable_directory_is_one_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot write"):
        write_atomic(tmp_path / "missing-dir" / "out.json", "x")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
