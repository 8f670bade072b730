"""The readers behind each input format, called directly: the binary log's records and DXT
segments against pydarshan's own reader of the same log, darshan-parser dump lines, LUSTRE
records in both printed forms, DXT dump blocks, JSON documents, and IOR output in text, CSV
and JSON (tests/test_ingest_darshan.py, test_parser_dump.py and test_ior_parse.py load whole
inputs through the same readers)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advisor.errors import InputError
from advisor.ingest import jsondoc
from advisor.ingest.darshan_dxt import read_dxt
from advisor.ingest.darshan_lib import counter_names, open_log
from advisor.ingest.darshan_records import lustre_component, read_generic
from advisor.ingest.dump_counters import CounterTables
from advisor.ingest.dump_lustre import lustre_records
from advisor.ingest.dxt_dump import DxtAccumulator
from advisor.ingest.ior.csv import parse_csv
from advisor.ingest.ior.json import parse_json
from advisor.ingest.ior.text import parse_text
from advisor.ingest.ior.model import ior_data
from advisor.ingest.ior.view import ior_tables
from tests.conftest import CORPUS

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "traces" / "ior-small-shared-4k.darshan"
IOR = CORPUS / "ior-versions"


@pytest.fixture(scope="module")
def reference():
    """pydarshan's reading of the demo log (its own record and DXT readers)."""
    import darshan

    return darshan.DarshanReport(str(DEMO), read_all=True)


# -- binary logs (libdarshan-util) -------------------------------------------------------------
def test_the_log_handle_reads_header_modules_and_names():
    with open_log(str(DEMO)) as log:
        job, runtime = log.job()
        modules, names = log.modules(), log.names()
        assert log.format_version.startswith("3.") and job.nprocs == 4 and runtime > 0
        assert {"POSIX", "DXT_POSIX"} <= set(modules) and not modules["POSIX"]["partial"]
        assert "/scratch/b_small_io_shared_4k/testfile" in names.values()
    assert counter_names("POSIX", False)[0] == "POSIX_OPENS" and "POSIX_F_READ_TIME" in counter_names("POSIX", True)


def test_a_file_that_is_not_a_log_is_one_reason(tmp_path):
    bad = tmp_path / "x.darshan"
    bad.write_bytes(b"\0" * 100)
    with pytest.raises(InputError, match="cannot be opened as a Darshan 3.x log"), open_log(str(bad)):
        pass


def test_posix_records_are_pydarshans(reference):
    theirs = reference.records["POSIX"].to_df()
    with open_log(str(DEMO)) as log:
        ours = read_generic(log, "POSIX", log.modules()["POSIX"]["idx"])
    assert ours.ids.tolist() == theirs["counters"]["id"].tolist()
    for name in ("POSIX_WRITES", "POSIX_BYTES_WRITTEN", "POSIX_SIZE_WRITE_1K_10K", "POSIX_ACCESS1_ACCESS"):
        assert ours.counters[name].tolist() == theirs["counters"][name].tolist(), name
    for name in ("POSIX_F_WRITE_TIME", "POSIX_F_CLOSE_END_TIMESTAMP"):
        assert ours.fcounters[name].tolist() == theirs["fcounters"][name].tolist(), name


def test_dxt_segments_are_pydarshans(reference):
    theirs = reference.records["DXT_POSIX"]
    with open_log(str(DEMO)) as log:
        trace, nrec = read_dxt(log, "DXT_POSIX", log.modules()["DXT_POSIX"]["idx"], partial=False)
    assert nrec == len(theirs) and trace.readable and not trace.note
    for rec in theirs:
        mine = (trace.rank == rec["rank"]) & (trace.record_id == np.uint64(rec["id"]))
        writes = [(s["offset"], s["length"]) for s in rec["write_segments"]]
        assert sorted(zip(trace.offset[mine & (trace.op == 1)].tolist(),
                          trace.length[mine & (trace.op == 1)].tolist())) == sorted(writes)
        assert int((mine & (trace.op == 0)).sum()) == len(rec["read_segments"])
        assert trace.hostnames[rec["rank"]] == rec["hostname"]


def test_a_lustre_component_from_its_counters():
    c = lustre_component({"STRIPE_PATTERN": 0, "EXT_START": -1, "EXT_END": -1, "STRIPE_SIZE": 1 << 20,
                          "STRIPE_COUNT": 4}, [7, 8, 9, 10], "flash")
    assert (c.extent_start, c.stripe_count, c.stripe_offset, c.pool, c.pattern) == (0, 4, 7, "flash", "raid0")


def test_preloading_reads_every_counter_name_list_before_any_fork():
    from advisor.ingest import darshan_preload

    before = counter_names.cache_info()
    for prefix in ("POSIX", "MPIIO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "DFS", "DAOS"):
        counter_names(prefix, False)
        counter_names(prefix, True)
    assert counter_names.cache_info().misses == before.misses  # every list was already read
    assert darshan_preload.bindings() is darshan_preload.bindings()


# -- darshan-parser dumps -------------------------------------------------------------------------
def _tables(lines: list[str]) -> CounterTables:
    table = CounterTables()
    table.add("\n".join(lines) + "\n")
    table.check_complete()
    return table


def test_counter_lines_become_one_record_per_rank_and_id():
    lines = [f"POSIX\t{rank}\t{rid}\t{name}\t{value}\t/scratch/f{rid}\t/scratch\tlustre"
             for rank, rid in ((0, 11), (-1, 12))
             for name, value in (("POSIX_OPENS", 2), ("POSIX_BYTES_READ", 4096), ("POSIX_F_READ_TIME", "0.250000"))]
    (rec,) = _tables(lines).records().values()
    assert rec.ids.tolist() == [11, 12] and rec.ranks.tolist() == [0, -1]
    assert rec.counters["POSIX_BYTES_READ"].tolist() == [4096, 4096]
    assert rec.fcounters["POSIX_F_READ_TIME"].tolist() == [0.25, 0.25]


def test_lustre_records_in_the_old_and_the_new_printed_form():
    old = {"LUSTRE_OSTS": "16", "LUSTRE_MDTS": "1", "LUSTRE_STRIPE_OFFSET": "3", "LUSTRE_STRIPE_SIZE": "1048576",
           "LUSTRE_STRIPE_WIDTH": "2", "LUSTRE_OST_ID_0": "3", "LUSTRE_OST_ID_1": "4"}
    new = {"LUSTRE_NUM_COMPONENTS": "1", "LUSTRE_NUM_STRIPES": "2", "LUSTRE_COMP1_STRIPE_SIZE": "1048576",
           "LUSTRE_COMP1_STRIPE_COUNT": "2", "LUSTRE_COMP1_STRIPE_PATTERN": "raid0", "LUSTRE_COMP1_FLAGS": "0",
           "LUSTRE_COMP1_EXT_START": "0", "LUSTRE_COMP1_EXT_END": "-1", "LUSTRE_COMP1_MIRROR_ID": "0",
           "LUSTRE_COMP1_POOL_NAME": "", "LUSTRE_COMP1_OST_ID_0": "3", "LUSTRE_COMP1_OST_ID_1": "4"}
    layouts = {}
    for name, form in (("old", old), ("new", new)):
        table = _tables([f"LUSTRE\t0\t42\t{k}\t{v}\t/lus/f\t/lus\tlustre" for k, v in form.items()])
        records, layouts[name] = lustre_records(table.tables["LUSTRE"])
        layout = layouts[name][42]
        assert [(c.stripe_count, c.stripe_size, c.ost_ids) for c in layout.components] == [(2, 1 << 20, [3, 4])]
        assert records.counters["LUSTRE_NUM_STRIPES"].tolist() == [2]
    assert (layouts["old"][42].osts, layouts["new"][42].osts) == (16, None)  # only the old form prints it


def test_dxt_dump_blocks_become_segments():
    acc = DxtAccumulator()
    acc.begin_module("DXT_POSIX")
    for line in ("# DXT, file_id: 99, file_name: /scratch/f", "# DXT, rank: 1, hostname: n7",
                 "# DXT, write_count: 2, read_count: 1", "# DXT, mnt_pt: /scratch, fs_type: lustre",
                 "# Module    Rank  Wt/Rd  Segment          Offset       Length    Start(s)      End(s)"):
        assert acc.header_line(line)
    acc.add_run(b" X_POSIX       1  write        0               0         4096      0.0100      0.0110\n"
                b" X_POSIX       1  write        1            4096         4096      0.0110      0.0120\n"
                b" X_POSIX       1   read        0               0         8192      0.0200      0.0210\n")
    acc.end_block(at_eof=True)
    trace = acc.traces()["DXT_POSIX"]
    assert trace.rank.tolist() == [1, 1, 1] and trace.record_id.tolist() == [99] * 3
    assert trace.op.tolist() == [1, 1, 0] and trace.length.tolist() == [4096, 4096, 8192]
    assert trace.hostnames == {1: "n7"} and acc.names == {99: "/scratch/f"}
    acc.begin_module("DXT_POSIX")
    acc.header_line("# DXT, file_id: 5, file_name: /scratch/g")
    acc.header_line("# DXT, rank: 0, hostname: n1")
    acc.header_line("# DXT, write_count: 3, read_count: 0")
    acc.header_line("# Module    Rank  Wt/Rd  Segment          Offset       Length    Start(s)      End(s)")
    acc.add_run(b" X_POSIX       0  write        0               0         4096      0.0100      0.0110\n")
    with pytest.raises(ValueError, match="the dump ends after 1 of the 3 segments announced for record 5"):
        acc.end_block(at_eof=True)


# -- JSON documents ---------------------------------------------------------------------------------
def test_json_documents_too_deep_or_with_absurd_numbers_are_one_line():
    with pytest.raises(InputError, match="nested too deeply"):
        jsondoc.decode("[" * 100_000 + "]" * 100_000, "x.json", "IOR summary")
    with pytest.raises(InputError, match="implausible number"):
        jsondoc.decode("9" * 5000, "x.json", "IOR summary")
    with pytest.raises(InputError, match="invalid snapshot at document: 'tool' is a required property"):
        jsondoc.validate({"schema": "ioadvisor/snapshot/v1"}, "snapshot-v1", "x.json", "snapshot")


# -- IOR outputs ------------------------------------------------------------------------------------
def test_ior_text_csv_and_json_read_the_same_parameters_and_their_own_bandwidths():
    runs = {"text": parse_text((IOR / "ior_text_4.0.0.txt").read_text()),
            "csv": parse_csv((IOR / "ior_csv_4.0.0.txt").read_text()),
            "json": parse_json((IOR / "ior_4.0.0_summary.json").read_text())}
    for name, run in runs.items():
        (test,) = run.tests
        assert run.tasks == 2 and test.operations() == ["write", "read"], name
        assert test.params.transfer_size == 1 << 20 and test.params.block_size == 16 << 20, name
    # three separate runs: each reads its own best write (the text's "write" summary line, the CSV's rows)
    assert runs["text"].tests[0].bandwidth("write") == pytest.approx(1644.27)
    assert runs["csv"].tests[0].bandwidth("write") == pytest.approx(1993.8311)
    title, headers, rows = ior_tables(ior_data(runs["text"]))[0]  # the table drawn from the data
    assert title == "IOR 4.0.0 tests" and headers[1] == "op" and headers[10] == "max MiB/s"
    assert rows[0][:2] == ["0", "write"] and rows[0][10] == "1,644.27"


def test_ior_json_with_verbose_lines_inside_is_recovered_or_refused_in_one_line():
    try:
        run = parse_json((IOR / "ior_json_stdout-v.txt").read_text(), "v.txt")
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert run.tests and run.tests[0].bandwidth("write")
    with pytest.raises((InputError, json.JSONDecodeError)):
        parse_json("{", "broken.json")


def test_a_summary_row_of_ior_text_output_sets_exact_sizes_and_bandwidths():
    from advisor.ingest.ior.blocks import apply_option, apply_summary_row, summary_columns, summary_row
    from advisor.ingest.ior.model import IorParams

    lines = (IOR / "ior_text_4.0.0.txt").read_text().splitlines()
    header = next(line for line in lines if line.startswith("Operation") and "Max(MiB)" in line)
    columns = summary_columns(header)
    assert "StdDev(OPs)" in columns and columns.count("StdDev") == 1  # the two StdDev columns told apart
    row = next(line for line in lines if line.startswith("write ") and len(line.split()) == len(columns))
    summary, raw = summary_row(columns, row.split())
    assert (summary.operation, summary.max_mib, summary.min_mib, summary.repetitions) == ("write", 1644.27, 505.04, 2)
    params = IorParams()
    apply_summary_row(params, raw)
    assert (params.tasks, params.segments, params.block_size, params.transfer_size) == (2, 2, 16 << 20, 1 << 20)
    apply_option(params, "  api ", "MPIIO")
    apply_option(params, "made-up key", " 3 ")
    assert params.api == "MPIIO" and params.other == {"made-up key": "3"}
