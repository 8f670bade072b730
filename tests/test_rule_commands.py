"""The shell commands a finding suggests: paths from traces and snapshots are quoted (users paste
these), stripe sizes are ones `lfs setstripe -S` accepts, and a command that does not apply is left out."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from advisor import api
from advisor.config import SiteConfig
from advisor.facts import FactContext
from advisor.engine import diagnose, render
from advisor.engine.rules import load_catalogue
from advisor.formatting import size_arg
from tests.conftest import CORPUS, REPO

HOSTILE = "/lus/scratch/run 1; rm -rf ~ $(touch pwned) `id` 'q\"\n"
E3SM = CORPUS / "darshan-logs/darshan_logs/e3sm_io_heatmaps_and_dxt/e3sm_io_heatmap_only.darshan"
IMBALANCED = CORPUS / "darshan-logs/darshan_logs/imbalanced_io/imbalanced-io.darshan"


def _shell_words(command: str) -> list[str]:
    """The words bash sees when a user pastes `command`, `;` ending each `lfs` command (a name
    with control characters is written as bash's $'...', which Python's shlex does not read)."""
    shown = subprocess.run(["bash", "-c", "lfs() { printf '%s\\0' lfs \"$@\" ';'; }\n" + command],
                           capture_output=True, check=True).stdout
    words = [os.fsdecode(w) for w in shown.split(b"\0")[:-1]]
    return words[:-1] if words[-1:] == [";"] else words


def _commands(code: str, values: dict) -> list[str]:
    return [render.render(c, values) for c in load_catalogue().get(code).recommendation["commands"]]


@pytest.mark.parametrize("code", ["LUS001", "LUS002"])
def test_a_hostile_directory_stays_one_shell_word(code):
    (command, *_) = _commands(code, {"suggested_stripe_count": 8, "suggested_stripe_size": 4 << 20,
                                     "lustre_dir": HOSTILE})
    assert _shell_words(command) == ["lfs", "setstripe", "-c", "8", "-S", "4M", HOSTILE]
    assert command.isprintable()  # on one line, nothing a terminal interprets


def test_hostile_file_and_directory_names_from_a_snapshot_stay_quoted():
    lus004 = _commands("LUS004", {"single_stripe_dir": HOSTILE, "single_stripe_dir_stripe_count": 8})
    assert [_shell_words(c) for c in lus004] == [["lfs", "getstripe", "-d", HOSTILE],
                                                 ["lfs", "setstripe", "-c", "8", HOSTILE]]
    values = {"layout_mismatch_paths": [HOSTILE, "/lus/b"], "layout_mismatch_dirs": [
        {"path": HOSTILE, "want_count": 4, "want_size": 4 << 20},
        {"path": "/lus/b", "want_count": 2, "want_size": 1 << 20}]}
    get, put = _commands("CLI004", values)[:2]
    assert _shell_words(get) == ["lfs", "getstripe", "-d", HOSTILE, "/lus/b"]
    assert _shell_words(put) == ["lfs", "setstripe", "-c", "4", "-S", "4M", HOSTILE, ";",
                                "lfs", "setstripe", "-c", "2", "-S", "1M", "/lus/b"]


@pytest.mark.parametrize("n, lfs, ior", [(1 << 20, "1M", "1m"), (4 << 20, "4M", "4m"), (192 << 10, "192K", "192k"),
                                         (1 << 30, "1G", "1g"), (3 << 29, "1536M", "1536m"),
                                         (1000000, "1000000", "1000000"), (47008, "47008", "47008")])
def test_size_arguments_are_exact(n, lfs, ior):
    assert render.render("{{ n | lfs_size }}", {"n": n}) == lfs and size_arg(n) == ior


def test_the_file_system_root_is_never_the_directory_to_restripe():
    """imbalanced-io.darshan's big file sits directly in /lus/theta-fs0, the mount point."""
    found = {f.code: f for f in diagnose(api.load(IMBALANCED), SiteConfig()).findings}
    command = found["LUS002"].recommendation.commands[0]
    assert found["LUS002"].evidence["lustre_dir"] == "DIR"
    assert command.startswith("lfs setstripe -c 55 -S 4M DIR  # ") and "/lus/theta-fs0" not in command


def test_a_request_no_stripe_size_fits_gets_no_setstripe():
    """E3SM-IO's 782.2 KiB requests on 1 MiB stripes: only changing the request size helps."""
    (f,) = [f for f in diagnose(api.load(E3SM), SiteConfig()).findings if f.code == "LUS005"]
    assert f.evidence["fitting_request_size"] == 1 << 20 and f.evidence["fitting_stripe_size"] == 0
    assert f.recommendation.commands == []
    assert "1 MiB instead of 782.2 KiB" in f.recommendation.text and "has to change" in f.recommendation.text
    # IO020, when it fires, proposes no setstripe either (E3SM's 782 KiB requests off the 4 KiB block touch one
    # block of ~196 more: 0.18 s per process, under 0.1 % of the run, so it no longer fires here)
    misaligned = [g for g in diagnose(api.load(E3SM), SiteConfig()).findings if g.code == "IO020"]
    assert not any("setstripe" in c for g in misaligned for c in g.recommendation.commands)


@pytest.mark.parametrize("request_size, stripe, fitting_request, fitting_stripe, command", [
    (3 << 20, 2 << 20, 4 << 20, 1 << 20, "lfs setstripe -S 1M DIR  # new files in DIR"),
    (6 << 20, 4 << 20, 8 << 20, 2 << 20, "lfs setstripe -S 2M DIR  # new files in DIR"),
    (192 << 10, 1 << 20, 1 << 20, 0, None),  # a 64 KiB stripe would fit but splits 1 MiB RPCs
])
def test_lus005_stripe_suggestions(request_size, stripe, fitting_request, fitting_stripe, command):
    from types import SimpleNamespace

    from advisor.facts.lustre import fitting_request_size, fitting_stripe_size

    ctx = SimpleNamespace(get={"common_access_size": request_size, "straddle_stripe_size": stripe}.__getitem__)
    assert (fitting_stripe_size(ctx), fitting_request_size(ctx)) == (fitting_stripe, fitting_request)
    commands = [c for c in _commands("LUS005", {"fitting_stripe_size": fitting_stripe}) if c.strip()]
    assert commands == ([command] if command else [])


def test_an_ior_test_label_cannot_break_out_of_a_shell_comment():
    from advisor.facts.ior import label
    from advisor.ingest.ior.model import IorParams, IorTest

    test = IorTest(test_id=0, params=IorParams(api="POSIX\nrm -rf ~", access="shared"))
    assert label(test) == "test 0 (shared file, POSIX rm -rf ~)"
    (command,) = _commands("BEN001", {"ior_cache_tests": [{"test": label(test), "suggest_block": "8g"},
                                                          {"test": "test 1", "suggest_block": "8g"}]})[:1]
    assert [shlex.split(line, comments=True) for line in command.splitlines()] == [
        ["ior", "...", "-b", "8g", "-e", "-C"]] * 2


def test_small_shared_writes_say_what_they_cost_on_the_file_system_they_hit():
    """IO003 blames Lustre extent locks only where they exist: Lustre, ranks on several nodes."""
    demo_log = api.load(REPO / "traces" / "ior-small-shared-4k.darshan")
    demo = {f.code: f for f in diagnose(demo_log, SiteConfig()).findings}
    assert demo["IO003"].evidence["small_shared_write_fstype"] == "ext4"
    assert "request of its own to ext4" in demo["IO003"].message and "extent locks" not in demo["IO003"].message
    # E3SM-IO wrote /projects/..., a symbolic link into Lustre: the LUSTRE records say so, not the mount
    # table (its "small" writes average 970 KiB, too near the RPC size to cost anything: the fact is checked)
    assert FactContext(api.load(E3SM), SiteConfig()).get("small_shared_write_fstype") == "lustre"
    rule = load_catalogue().get("IO003")
    values = {name: 1 for name in rule.evidence} | {"small_shared_write_fstype": "lustre", "compute_nodes": 2}
    assert "ranks on different nodes contend for the same Lustre extent locks" in render.render(rule.message, values)
    values["compute_nodes"] = 1
    assert "share one Lustre client's locks" in render.render(rule.message, values)
