"""Layout wishes without a striped file system: the stripe transform, what each file system's
layout text means, how a wish is made valid, and what the replay says when it cannot be."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.api import load
from advisor.replay_plan import build_plan
from replay import transforms
from replay.layout import can_set_layout
from replay.layout.model import Layout, Unsupported
from replay.layout import wishes
from replay.layout.cephfs import CephFS, parse
from replay.layout.lustre import Lustre, parse_plain
from replay.plan import LAYOUT_DIR, LAYOUT_FILE, Plan

LUSTRE = Path(__file__).resolve().parent / "data" / "lustre"
MiB = 1 << 20


@pytest.fixture(scope="module")
def fpp() -> Plan:
    return build_plan(load(Path(__file__).resolve().parents[1] / "traces" / "ior-good-fpp-1m.darshan"),
                      source="dxt", scale=1.0)


def test_stripe_wish_on_files_or_on_their_directory(fpp):
    plan = transforms.apply_fix(fpp, {"transform": "stripe", "count": 4})
    assert (plan.files["stripe_count"] == 4).all() and (plan.files["stripe_size"] == 0).all()
    assert (plan.files["layout_scope"] == LAYOUT_FILE).all()
    assert wishes.wished(plan).tolist() == list(range(plan.nfiles))
    inherit = transforms.apply_fix(fpp, {"transform": "stripe", "count": 5, "size": 4 * MiB, "scope": "dir"})
    assert (inherit.files["layout_scope"] == LAYOUT_DIR).all()
    assert inherit.meta["transforms"][-1] == {"transform": "stripe", "count": 5, "size": 4 * MiB, "scope": "dir"}
    assert not len(wishes.wished(fpp))


@pytest.mark.parametrize("fix", [{"transform": "stripe", "count": 0}, {"transform": "stripe", "count": -2},
                                 {"transform": "stripe", "count": 2, "scope": "tree"}])
def test_malformed_stripe_fixes_are_refused(fpp, fix):
    with pytest.raises(ValueError, match="stripe"):
        transforms.apply_fix(fpp, fix)


def test_saved_plan_keeps_layout_wishes(fpp, tmp_path):
    plan = transforms.apply_fix(fpp, {"transform": "stripe", "count": 2, "object_size": 8 * MiB, "scope": "dir"})
    back = Plan.load(plan.save(tmp_path / "p"))
    for column in ("stripe_count", "object_size", "layout_scope"):
        assert np.array_equal(back.files[column], plan.files[column])


def test_no_layout_control_off_lustre_and_cephfs(fpp, tmp_path):
    assert can_set_layout("lustre") and can_set_layout("fuse.ceph-fuse") and can_set_layout("ceph")
    assert not can_set_layout("ext4") and not can_set_layout("fuse.glusterfs")
    assert wishes.prepare(fpp, tmp_path) is fpp  # nothing wished: nothing to check
    with pytest.raises(Unsupported, match=r"^no stripe layout control on \S+"):
        wishes.prepare(transforms.apply_fix(fpp, {"transform": "stripe", "count": 4}), tmp_path)


def test_cephfs_layout_text():
    got = parse("stripe_unit=1048576 stripe_count=4 object_size=4194304 pool=cephfs_osd2 pool_namespace=")
    assert got == Layout(stripe_count=4, stripe_size=MiB, object_size=4 * MiB, pool="cephfs_osd2")


def test_cephfs_wish_made_valid_over_the_directory_default():
    fs = CephFS(Path("/nowhere"), "fuse.ceph-fuse")  # resolving a wish asks nothing of the cluster
    base = Layout(stripe_count=1, stripe_size=4 * MiB, object_size=4 * MiB, pool="cephfs_data")
    assert fs.resolve(Layout(stripe_count=4), base) == Layout(4, 4 * MiB, 4 * MiB, "cephfs_data")
    assert fs.resolve(Layout(stripe_count=2, stripe_size=MiB), base) == Layout(2, MiB, 4 * MiB, "cephfs_data")
    assert fs.resolve(Layout(stripe_count=2, stripe_size=8 * MiB), base).object_size == 8 * MiB
    assert fs.resolve(Layout(stripe_count=2, stripe_size=3 * MiB), base).object_size == 6 * MiB
    with pytest.raises(Unsupported, match="multiple of 64 KiB"):
        fs.resolve(Layout(stripe_count=2, stripe_size=100_000), base)
    with pytest.raises(Unsupported, match="not a multiple of the stripe unit"):
        fs.resolve(Layout(stripe_size=3 * MiB, object_size=4 * MiB), base)


@pytest.mark.parametrize("name, expected", [
    ("getstripe_plain_4stripes.txt", Layout(4, MiB, targets=(65, 18, 61, 11))),
    ("getstripe_pfl_file.txt", Layout(1, MiB, targets=(0,))),  # the first component of a PFL file
    ("getstripe_dir_plain.txt", Layout(1, MiB)),  # a directory's one-line default
])
def test_lustre_getstripe_text(name, expected):
    assert parse_plain((LUSTRE / name).read_text()) == expected


def test_shortfall_names_the_first_file_that_missed_its_layout():
    readback = {"wished": 4, "matched": 3, "absent": 0, "layouts": [],
                "mismatched": [{"file": 2, "asked": {"stripe_count": 4}, "got": {"stripe_count": 1}}]}
    assert wishes.shortfall(readback) == ("1 of 4 files did not get the layout asked (file 2: asked "
                                          "{'stripe_count': 4}, got {'stripe_count': 1})")
    assert wishes.shortfall(dict(readback, matched=4, mismatched=[])) == ""
    assert "removed every file" in wishes.shortfall(dict(readback, absent=4))
    assert wishes.shortfall(None) == "" and wishes.shortfall(dict(readback, wished=0)) == ""


def test_avoid_targets_marks_the_data_files_and_names_the_targets(fpp):
    plan = transforms.apply_fix(fpp, {"transform": "avoid-targets", "targets": [3, 1, 3]})
    assert (plan.files["avoid"] == 1).all() and plan.meta["avoid_targets"] == [1, 3]
    assert plan.meta["transforms"][-1] == {"transform": "avoid-targets", "targets": [1, 3]}
    assert transforms.target_list("2, 5") == (2, 5) and transforms.target_list(4) == (4,)
    with pytest.raises(ValueError, match="no storage targets named"):
        transforms.apply_fix(fpp, {"transform": "avoid-targets"})
    with pytest.raises(ValueError, match="targets must be a list of storage target indices"):
        transforms.check_fix({"transform": "avoid-targets", "targets": ["osd.3"]})


def test_lustre_files_kept_off_osts_rotate_over_the_healthy_ones():
    fs = Lustre(Path("/nowhere"), "lustre")
    placement = {"targets": [0, 1, 3, 4]}  # OST 2 avoided
    got = [fs.placed(Layout(stripe_count=2), placement, fid).targets for fid in range(3)]
    assert got == [(0, 1), (3, 4), (0, 1)]
    assert fs.placed(Layout(), placement, 0) == Layout(stripe_count=1, targets=(0,))
    assert fs.placed(Layout(stripe_count=-1), placement, 5).targets == (0, 1, 3, 4)
    assert fs.respects(Layout(targets=(3, 4)), placement) and not fs.respects(Layout(targets=(2,)), placement)
