"""The model code's small parts: the mount a model learned, what a model expects of one job,
and the checks before a model is fitted (tests/test_models_pipeline.py runs them end to end)."""

from __future__ import annotations

import math
import socket

import pytest

from advisor import api
from advisor.errors import InputError
from advisor.models import mount
from advisor.models.build import build_model, identity_of
from advisor.models.expect import expectation, measured, mount_differences
from advisor.models.predict import load
from advisor.models.rows import Collected
from advisor.units import MiB
from tests.conftest import CORPUS
from tests.profiles import job, module

GEN = CORPUS / "generated"
IOR_TEXT = CORPUS / "ior-versions" / "ior_text_4.0.0.txt"


def test_the_identity_of_a_directory_is_the_mount_holding_it(tmp_path):
    here = mount.identity(tmp_path)
    assert here["fstype"] and here["host"] == socket.gethostname() and here["target"] == str(tmp_path.resolve())
    assert str(tmp_path.resolve()).startswith(here["mount_point"])
    assert mount.differences(here, mount.identity(tmp_path / ".")) == []


def test_a_network_file_system_is_the_same_from_any_host_a_local_one_is_not():
    lustre = {"fstype": "lustre", "source": "10.0.0.1@o2ib:/fs", "mount_point": "/lus", "host": "n1"}
    assert mount.differences(lustre, {**lustre, "host": "n2"}) == []
    ext4 = {"fstype": "ext4", "source": "/dev/sda1", "mount_point": "/tmp", "host": "n1"}
    assert mount.differences(ext4, {**ext4, "host": "n2"}) == ["host 'n1' vs 'n2' (a local file system)"]
    assert mount.differences(ext4, {**ext4, "fstype": "xfs"}) == ["fstype 'ext4' vs 'xfs'"]


def test_calibrations_of_two_mounts_are_not_one_model():
    a = {"fstype": "lustre", "source": "a@tcp:/fs", "mount_point": "/lus"}
    with pytest.raises(InputError, match="calibrations of different mounts .*train one model per mount"):
        identity_of(Collected(identities=[a, {**a, "source": "b@tcp:/fs"}]))
    assert identity_of(Collected(identities=[a, dict(a)])) == a
    assert identity_of(Collected(fstypes={"ext4": 3, "lustre": 5})) == {"fstype": "lustre"}  # logs: the most
    assert identity_of(Collected()) == {}


def test_too_few_rows_is_an_error_before_any_fit():
    with pytest.raises(InputError, match="2 usable rows; at least 20 are needed"):
        build_model([str(GEN / "b_small_io_shared_4k" / "case.darshan")])


def test_the_measured_side_of_a_darshan_log_and_of_an_ior_run():
    parts, seconds = measured(api.load(GEN / "b_small_io_shared_4k" / "case.darshan"))
    assert len(parts) == 2 and seconds > 0 and sum(p.bytes for p in parts) >= MiB  # its writes and reads
    ior_parts, ior_seconds = measured(api.load(IOR_TEXT))
    assert {p.label for p in ior_parts} <= {"write", "read"} and ior_seconds > 0


def test_the_default_model_compares_a_job_with_its_expectation(tmp_path):
    model = load("default")
    exp = expectation(model, api.load(GEN / "o_small_io_odirect_4k" / "case.darshan"))
    assert not exp.reason and exp.measured_s > 0 and exp.expected_fast_s <= exp.expected_s <= exp.expected_slow_s
    assert exp.shortfall == pytest.approx(exp.measured_s / exp.expected_s)
    tiny = expectation(model, job(module("POSIX", [(1, 0, {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 100,
                                                          "POSIX_F_WRITE_TIME": 0.01})]), nprocs=1))
    assert "too little data, or too quickly" in tiny.reason and math.isnan(tiny.expected_s)
    assert isinstance(mount_differences(model, tmp_path), list)
