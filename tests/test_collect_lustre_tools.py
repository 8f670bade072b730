"""lfs/lctl parsers on real output samples (tests/data/lustre, see SOURCES.md there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.lustre_tools import (
    client_oscs, parse_get_param, parse_getstripe, parse_lfs_df, select,
)

LUSTRE = Path(__file__).parent / "data" / "lustre"


def _read(name: str) -> str:
    return (LUSTRE / name).read_text()


def test_plain_layout_with_obdidx_table():
    (layout,) = parse_getstripe(_read("getstripe_plain_4stripes.txt"))
    assert layout.path == "striped/ILSVRC2012_img_val.tar"
    assert not layout.composite and not layout.inline
    assert (layout.stripe_count, layout.stripe_size) == (4, 1 << 20)
    assert layout.ost_ids == [65, 18, 61, 11]
    assert layout.components[0].stripe_offset == 65


def test_plain_verbose_layout():
    (layout,) = parse_getstripe(_read("getstripe_v_plain.txt"))
    assert layout.path == "/mnt/lustre/ldiskfs/hello"
    assert (layout.stripe_count, layout.stripe_size, layout.ost_ids) == (1, 4 << 20, [1])


def test_pfl_file_components_extents_and_objects():
    (layout,) = parse_getstripe(_read("getstripe_pfl_file.txt"))
    assert layout.composite
    comps = layout.components
    assert [(c.extent_start, c.extent_end) for c in comps] == [
        (0, 4 << 20), (4 << 20, 64 << 20), (64 << 20, -1)]
    assert [c.stripe_count for c in comps] == [1, 4, 8]
    assert comps[1].ost_ids == [1, 2, 3, 4]
    assert comps[2].ost_ids == [4, 5, 6, 7, 0, 1, 2, 3]
    assert {c.pattern for c in comps} == {"raid0"}  # printed as "1"


def test_verbose_composite_form():
    (layout,) = parse_getstripe(_read("getstripe_v_composite.txt"))
    assert layout.composite
    assert [(c.extent_start, c.extent_end, c.stripe_count) for c in layout.components] == [
        (0, 1 << 20, 1), (1 << 20, -1, 2)]
    assert layout.components[1].ost_ids == [1, 0]


def test_directory_default_pfl_layout():
    (layout,) = parse_getstripe(_read("getstripe_pfl_dir.txt"))
    assert layout.path == "/mnt/testfs/pfldir" and layout.composite and layout.inline
    assert [(c.stripe_count, c.stripe_size, c.extent_end) for c in layout.components] == [
        (1, 1 << 20, 256 << 20), (4, 1 << 20, 16 << 30), (-1, 4 << 20, -1)]


@pytest.mark.parametrize("name, count, pattern", [
    ("getstripe_dir_plain.txt", 1, "raid0"),  # "pattern: 0"
    ("getstripe_dir_raid0.txt", 4, "raid0"),
])
def test_directory_one_line_form(name, count, pattern):
    (layout,) = parse_getstripe(_read(name))
    assert layout.inline and not layout.composite
    assert (layout.stripe_count, layout.stripe_size) == (count, 1 << 20)
    assert layout.components[0].pattern == pattern
    assert layout.components[0].stripe_offset == -1


def test_getstripe_d_with_a_file_below():
    directory, file = parse_getstripe(_read("getstripe_d_manual.txt"))
    assert directory.path == "/mnt/testfs/pfldir" and directory.inline
    assert file.path.endswith("commonfile") and file.ost_ids == [2]


def test_lfs_df_human_sizes_and_elisions():
    (fs,) = parse_lfs_df(_read("lfs_df_h.txt"))
    assert fs.mount == "/expanse/lustre/scratch"
    assert len(fs.mdts) == 4 and [t.index for t in fs.osts] == [0, 1, 2, 70, 71]
    assert fs.osts[0].total_bytes == int(143.5 * (1 << 40))
    assert fs.osts[0].use_pct == 23
    assert fs.total_bytes == int(9.8 * (1 << 50))


def test_lfs_df_kilobytes():
    (fs,) = parse_lfs_df(_read("lfs_df_kb.txt"))
    assert len(fs.osts) == 24 and len(fs.mdts) == 1
    assert fs.osts[10].uuid == "exacloud-OST000a_UUID" and fs.osts[10].index == 10
    assert fs.osts[0].total_bytes == 529449792 * 1024
    assert fs.total_bytes == 12706795008 * 1024


def test_get_param_values_and_client_oscs():
    params = parse_get_param(_read("lctl_max_rpcs.txt"))
    assert len(params) == 8
    clients = client_oscs(params, "osc.*.max_rpcs_in_flight")
    assert len(clients) == 4 and all("MDT0000" not in k for k in clients)
    assert set(clients.values()) == {"8"}


def test_get_param_manual_forms():
    params = parse_get_param(_read("lctl_manual.txt"))
    assert params["ost.OSS.ost_io.threads_started"] == "128"
    assert sorted(select(params, "ost.OSS.ost_io.threads_*").values()) == ["128", "512"]
    assert params["obdfilter.lol-OST0001.sync_on_lock_cancel"] == "never"
    assert params["debug"] == "ioctl neterror warning error emerg ha config console"
    assert set(select(params, "osc.*.uuid")) == {
        "osc.testfs-OST0000-osc-ffff881071d5cc00.uuid", "osc.testfs-OST0001-osc-ffff881071d5cc00.uuid"}


def test_garbage_gives_nothing():
    assert parse_getstripe("error: getstripe failed for ../.\n") == []
    assert parse_lfs_df("lfs df: not a Lustre file system\n") == []
    assert parse_get_param("error: get_param: param_path 'osc/*/x': No such file or directory") == {}
