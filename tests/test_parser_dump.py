"""Unit tests of the darshan-parser / darshan-dxt-parser dump reader on real dumps."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from advisor.errors import InputError
from advisor.ingest import detect, load_profile
from advisor.ingest.parser_dump import load_dump
from advisor.profile import DXT_READ, DXT_WRITE

DUMPS = Path(__file__).resolve().parent / "data" / "dumps"
A_PARSER = DUMPS / "a_good_fpp_posix_1m.parser.txt"
A_DXT = DUMPS / "a_good_fpp_posix_1m.dxt.txt"
D_PARSER = DUMPS / "d_mpiio_independent_256k.parser.txt.gz"
D_DXT = DUMPS / "d_mpiio_independent_256k.dxt.txt.gz"


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_profile(path)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message
    return info.value.reason


# -- formats are recognised ------------------------------------------------------------
@pytest.mark.parametrize("path, name", [
    (A_PARSER, "darshan-parser"), (D_PARSER, "darshan-parser"),
    (A_DXT, "darshan-dxt-parser"), (D_DXT, "darshan-dxt-parser"),
    (DUMPS / "g2_no_dxt.dxt.txt", "darshan-dxt-parser"),
    (DUMPS / "g2_partial_refused.parser.txt", "darshan-parser"),
])
def test_detects_dump_kind(path, name):
    assert detect(path).name == name


# -- job header, modules, records ---------------------------------------------------------
def test_job_header_and_mounts():
    p = load_dump(A_PARSER)
    assert p.source.format == "darshan-parser" and p.source.log_version == "3.41"
    assert p.job.jobid == "12937" and p.job.uid == 0 and p.job.nprocs == 4
    assert p.job.start_time == 1795287158 and p.job.end_time == 1795287158
    assert p.job.runtime_s == pytest.approx(0.0842)
    assert p.job.exe.startswith("ior -a POSIX -F -t 1m")
    assert p.job.metadata == {"lib_ver": "3.5.0", "h": "cb_nodes=1"}
    assert p.job.library_version == "3.5.0"
    assert [(m.path, m.fstype) for m in p.mounts][-1] == ("/", "ext4")
    assert p.fstype_of("/scratch/a_good_fpp_posix_1m/testfile.00000000") == "ext4"


def test_posix_records_are_columns_with_darshan_names():
    p = load_dump(A_PARSER)
    posix = p.records["POSIX"]
    assert len(posix) == 4 and p.modules["POSIX"].records == 4 and p.modules["POSIX"].version == 4
    assert sorted(posix.ranks.tolist()) == [0, 1, 2, 3]
    assert posix.ids.dtype == np.uint64 and int(posix.ids[0]) == 12337332596145450994
    assert posix.counters["POSIX_BYTES_WRITTEN"].dtype == np.int64
    assert posix.counters["POSIX_BYTES_WRITTEN"].sum() == 268435456
    assert posix.counters["POSIX_SIZE_WRITE_100K_1M"].tolist() == [64] * 4
    assert posix.counters["POSIX_MMAPS"].tolist() == [-1] * 4  # "not monitored" stays -1
    assert posix.fcounters["POSIX_F_READ_TIME"].dtype == np.float64
    assert "POSIX_F_READ_TIME" not in posix.counters and "POSIX_OPENS" not in posix.fcounters
    assert p.name_of(posix.ids[0]) == "/scratch/a_good_fpp_posix_1m/testfile.00000000"


def test_shared_records_and_mpiio_from_gzip():
    p = load_dump(D_PARSER)
    mpiio = p.records["MPI-IO"]
    assert mpiio.ranks.tolist() == [-1]
    assert int(mpiio.counters["MPIIO_INDEP_WRITES"][0]) == 1024  # 4 ranks x 256 writes
    assert p.name_of(mpiio.ids[0]) == "/scratch/d_mpiio_independent_256k/testfile"
    heat = p.records["HEATMAP"]
    assert "HEATMAP_F_BIN_WIDTH_SECONDS" in heat.fcounters
    assert any(k.startswith("HEATMAP_WRITE_BIN_") for k in heat.counters)


def test_parser_dump_says_dxt_is_elsewhere():
    p = load_dump(A_PARSER)
    trace = p.dxt["DXT_POSIX"]
    assert len(trace) == 0 and not trace.readable and "darshan-dxt-parser" in trace.note


def test_non_mpi_dump():
    p = load_dump(DUMPS / "k_fio_nonmpi.parser.txt")
    assert p.job.nprocs == 1 and p.job.exe.startswith("fio ")
    assert set(p.records) == {"POSIX", "STDIO", "HEATMAP"}


# -- DXT -------------------------------------------------------------------------------
def test_dxt_segments_as_arrays():
    p = load_dump(A_DXT)
    assert p.source.format == "darshan-dxt-parser" and not p.records
    t = p.dxt["DXT_POSIX"]
    assert len(t) == 512 and t.readable
    assert t.rank.dtype == np.int32 and t.record_id.dtype == np.uint64 and t.op.dtype == np.int8
    assert (t.op == DXT_WRITE).sum() == 256 and (t.op == DXT_READ).sum() == 256
    assert set(t.length.tolist()) == {1048576}
    assert np.all(np.diff(t.rank) >= 0)
    for r in range(4):
        assert np.all(np.diff(t.start[t.rank == r]) >= 0)  # sorted by rank, then start
    first = t.rank == 0
    assert t.offset[first][0] == 0 and t.start[first][0] == pytest.approx(0.0118)
    assert t.hostnames == {0: "vm", 1: "vm", 2: "vm", 3: "vm"}
    assert p.modules["DXT_POSIX"].records == 4 and "POSIX" not in p.modules


def test_dxt_mpiio_offsets_and_both_modules():
    p = load_dump(D_DXT)
    assert set(p.dxt) == {"DXT_POSIX", "DXT_MPIIO"}
    mpiio = p.dxt["DXT_MPIIO"]
    assert len(mpiio) == 2048 and set(mpiio.length.tolist()) == {262144}
    assert set(np.unique(mpiio.rank).tolist()) == {0, 1, 2, 3}


def test_dxt_v2_devel_dump_with_thread_column():
    p = load_dump(DUMPS / "x_dxt_v2_devel.dxt.txt")
    t = p.dxt["DXT_POSIX"]
    assert len(t) == 512 and t.readable
    assert set(t.length.tolist()) == {1048576} and t.offset.max() == 63 * 1048576


def test_dxt_dump_of_log_without_dxt():
    p = load_dump(DUMPS / "g2_no_dxt.dxt.txt")
    assert not p.dxt and any("no DXT" in n for n in p.source.notes)
    assert p.job.jobid == "13446"


def test_concatenated_parser_and_dxt_dumps(tmp_path):
    both = _write(tmp_path, "both.txt", A_PARSER.read_bytes() + A_DXT.read_bytes())
    p = load_profile(both)
    assert p.source.format == "darshan-parser+dxt"
    assert len(p.records["POSIX"]) == 4 and len(p.dxt["DXT_POSIX"]) == 512
    assert p.dxt["DXT_POSIX"].readable


def test_concatenated_dumps_of_different_jobs(tmp_path):
    mixed = _write(tmp_path, "mixed.txt", gzip.decompress(D_PARSER.read_bytes())
                   + (DUMPS / "x_dxt_v2_devel.dxt.txt").read_bytes())
    assert "different jobs" in _error(mixed)


# -- bad input ---------------------------------------------------------------------------
def test_partial_module_refused_by_darshan_parser():
    reason = _error(DUMPS / "g2_partial_refused.parser.txt")
    assert "POSIX" in reason and "--show-incomplete" in reason


def test_partial_dxt_refused_by_darshan_dxt_parser():
    reason = _error(DUMPS / "r_stonewall_partial_refused.dxt.txt")
    assert "DXT_POSIX" in reason and "--show-incomplete" in reason


@pytest.mark.parametrize("fraction", [0.35, 0.6, 0.97])
def test_truncated_parser_dump(tmp_path, fraction):
    text = A_PARSER.read_bytes()
    reason = _error(_write(tmp_path, "cut.txt", text[:int(len(text) * fraction)]))
    assert "truncated" in reason


def test_truncated_dump_cut_at_a_line_end(tmp_path):
    text = A_PARSER.read_bytes()
    cut = text.rfind(b"\n", 0, len(text) // 2) + 1
    assert "truncated" in _error(_write(tmp_path, "cut.txt", text[:cut]))


@pytest.mark.parametrize("fraction", [0.3, 0.75])
def test_truncated_dxt_dump(tmp_path, fraction):
    text = A_DXT.read_bytes()
    cut = text.rfind(b"\n", 0, int(len(text) * fraction)) + 1
    reason = _error(_write(tmp_path, "cut.txt", text[:cut]))
    assert "segments" in reason and ("ends" in reason or "truncated" in reason)


def test_truncated_gzip(tmp_path):
    data = D_DXT.read_bytes()
    reason = _error(_write(tmp_path, "cut.txt.gz", data[: len(data) // 2]))
    assert "gzip" in reason or "truncated" in reason


def test_text_that_is_not_a_dump(tmp_path):
    path = _write(tmp_path, "notes.txt", "# darshan notes\nthis is not a darshan-parser dump\n")
    with pytest.raises(InputError, match="not a recognised input"):
        load_profile(path)


def test_garbage_after_header(tmp_path):
    head = A_PARSER.read_text().split("# description of columns")[0]
    path = _write(tmp_path, "bad.txt", head + "# description of columns:\n" + "POSIX\t0\tnot-a-number\n")
    assert "not-a-number" in _error(path)


def test_silently_empty_log(tmp_path):
    head = A_PARSER.read_text().split("# log file regions")[0].replace("# nprocs: 4", "# nprocs: 0")
    path = _write(tmp_path, "empty.txt", head + "# log file regions\n# -----\n# header: 1328 bytes (uncompressed)\n"
                  "\n# mounted file systems (mount point and fs type)\n# ---\n\n# description of columns:\n"
                  "\n# no module data available.\n")
    reason = _error(path)
    assert "silently empty" in reason and "0 processes" in reason


def test_hostile_file_names_are_kept_verbatim(tmp_path):
    text = A_PARSER.read_text()
    bad = "/scratch/<script>alert(1)</script>/../../etc/pass wd\u00e9\x1b[31m"
    text = text.replace("/scratch/a_good_fpp_posix_1m/testfile.00000000", bad)
    p = load_profile(_write(tmp_path, "hostile.txt", text))
    assert bad in p.names.values()
    assert len(p.records["POSIX"]) == 4


def test_names_with_tabs(tmp_path):
    text = A_PARSER.read_text().replace("testfile.00000001", "test\tfile")
    p = load_profile(_write(tmp_path, "tabs.txt", text))
    assert "/scratch/a_good_fpp_posix_1m/test\tfile" in p.names.values()


def test_invalid_utf8_in_names(tmp_path):
    data = A_PARSER.read_bytes().replace(b"testfile.00000002", b"test\xff\xfefile")
    p = load_profile(_write(tmp_path, "bytes.txt", data))
    assert "/scratch/a_good_fpp_posix_1m/test\\xff\\xfefile" in p.names.values()  # as the log reader shows it


def test_crlf_dump(tmp_path):
    p = load_profile(_write(tmp_path, "crlf.txt", A_DXT.read_bytes().replace(b"\n", b"\r\n")))
    assert len(p.dxt["DXT_POSIX"]) == 512


def test_reordered_dxt_segments_are_rejected(tmp_path):
    lines = A_DXT.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith(" X_POSIX"))
    lines[first], lines[first + 70] = lines[first + 70], lines[first]  # a read among the writes
    reason = _error(_write(tmp_path, "swapped.txt", "".join(lines)))
    assert "order" in reason


# -- LUSTRE and the --total/--file/--perf sections ------------------------------------------
LUSTRE_ALL = DUMPS / "release_3.5.0_lustre.all.parser.txt"


def test_lustre_component_form():
    p = load_dump(LUSTRE_ALL)
    (rid, layout), = p.lustre.items()
    assert p.name_of(rid) == "/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat"
    assert p.fstype_of(p.name_of(rid)) == "lustre"
    comp, = layout.components
    assert (comp.stripe_size, comp.stripe_count, comp.pattern, comp.pool) == (1048576, 1, "raid0", "")
    assert comp.ost_ids == [1] and comp.extent_end == -1
    cols = p.records["LUSTRE"].counters
    assert cols["LUSTRE_COMP1_STRIPE_PATTERN"].tolist() == [0]  # printed as "raid0"
    assert cols["LUSTRE_NUM_STRIPES"].tolist() == [1]
    assert not any("OST_ID" in k or "POOL" in k for k in cols)  # those live in the layout


def _old_form(text: str) -> str:
    """The same record as darshan-util before 3.4.6 printed it (old LUSTRE module, v1)."""
    keep, out = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("LUSTRE\t"):
            keep.append(line.split("\t"))
        else:
            if keep:
                head, tail = keep[0][:3], keep[0][5:]
                for name, value in (("LUSTRE_OSTS", "64"), ("LUSTRE_MDTS", "2"), ("LUSTRE_STRIPE_OFFSET", "1"),
                                    ("LUSTRE_STRIPE_SIZE", "4194304"), ("LUSTRE_STRIPE_WIDTH", "2"),
                                    ("LUSTRE_OST_ID_0", "1"), ("LUSTRE_OST_ID_1", "7")):
                    out.append("\t".join(head + [name, value] + tail))
                keep = []
            out.append(line)
    return "".join(out)


def test_lustre_old_form(tmp_path):
    p = load_profile(_write(tmp_path, "old.txt", _old_form(LUSTRE_ALL.read_text())))
    layout, = p.lustre.values()
    comp, = layout.components
    assert (comp.stripe_size, comp.stripe_count, comp.ost_ids, comp.stripe_offset) == (4194304, 2, [1, 7], 1)
    assert (layout.osts, layout.mdts) == (64, 2)  # only the old form records these
    cols = p.records["LUSTRE"].counters
    assert cols["LUSTRE_COMP1_STRIPE_COUNT"].tolist() == [2] and cols["LUSTRE_NUM_COMPONENTS"].tolist() == [1]
    assert cols["LUSTRE_COMP1_STRIPE_PATTERN"].tolist() == [-1]  # not recorded, as libdarshan-util says


def test_lustre_flags_words(tmp_path):
    text = LUSTRE_ALL.read_text().replace("LUSTRE_COMP1_FLAGS\t0\t", "LUSTRE_COMP1_FLAGS\tprefwr,init\t")
    p = load_profile(_write(tmp_path, "flags.txt", text))
    assert p.records["LUSTRE"].counters["LUSTRE_COMP1_FLAGS"].tolist() == [0x4 | 0x10]


def test_total_file_and_perf_sections_agree_with_records():
    p = load_dump(LUSTRE_ALL)
    sections = p.extras["parser_sections"]
    assert set(sections) == {"POSIX", "MPI-IO", "STDIO"}
    for module, sec in sections.items():
        recs = p.records[module]
        prefix = "MPIIO" if module == "MPI-IO" else module
        for name in (f"{prefix}_BYTES_READ", f"{prefix}_BYTES_WRITTEN"):
            assert sec.totals[name] == int(recs.counters[name].sum()), name
        moved = int(recs.counters[f"{prefix}_BYTES_READ"].sum() + recs.counters[f"{prefix}_BYTES_WRITTEN"].sum())
        assert sec.perf["total_bytes"] == moved and sec.file_counts["total"].bytes == moved
        assert sec.file_counts["total"].files == len(set(recs.ids.tolist()))
    assert sections["POSIX"].perf["agg_perf_by_slowest"] == pytest.approx(3122.286459)
    assert sections["POSIX"].perf["shared_files_time_by_slowest"] == pytest.approx(0.040996)


def test_darshan_2x_dump_is_refused(tmp_path):
    # the first lines darshan-parser 2.x printed (darshan-util 2.x darshan-parser.c)
    head = ("# darshan log version: 2.06\n# size of file statistics: 1328 bytes\n"
            "# size of job statistics: 1080 bytes\n# exe: ./mpi-io-test\n# uid: 1000\n# jobid: 178062\n"
            "\n# description of columns:\n#   <rank>: MPI rank.\n"
            "0\t2149513546596342153\tCP_POSIX_READS\t0\t...pi-io-test.tmp.dat\t/\text4\n")
    reason = _error(_write(tmp_path, "old.txt", head))
    assert "2.06" in reason and "3.x" in reason


def test_endless_line(tmp_path):
    path = _write(tmp_path, "long.txt", A_PARSER.read_bytes() + b"POSIX\t0\t1\tPOSIX_OPENS\t" + b"9" * (20 << 20))
    assert "longer than" in _error(path)


def _lustre_dxt(text: str) -> str:
    """A DXT block as darshan-dxt-parser prints it for a Lustre file (stripe lines, [OST] columns)."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("# DXT, mnt_pt:"):
            line = line.replace("fs_type: ext4", "fs_type: lustre")
            line += "# DXT, Lustre stripe_size: 1048576, Lustre stripe_count: 2\n# DXT, Lustre OST obdidx: 12 5\n"
        elif line.startswith("# Module"):
            line = line.rstrip("\n") + "  [OST]\n"
        elif line.startswith(" X_POSIX"):
            line = line.rstrip("\n") + "  [ 12]  [  5]\n"
        out.append(line)
    return "".join(out)


def test_dxt_lustre_ost_columns(tmp_path):
    p = load_profile(_write(tmp_path, "lustre-dxt.txt", _lustre_dxt(A_DXT.read_text())))
    assert len(p.dxt["DXT_POSIX"]) == 512
    hints = p.extras["dxt_lustre"]
    assert len(hints) == 4 and all(h.stripe_count == 2 and h.ost_ids == [12, 5] for h in hints.values())
