"""The layer account (advisor/facts/layers.py) on real logs: each layer's time per process, its time
above the layer below on the same files, the amplification, and the same figures in every reporter."""

from __future__ import annotations

import io
import json
from functools import cache
from pathlib import Path

import jsonschema
import pytest

from advisor import api
from advisor.config import SiteConfig
from advisor.engine import diagnose
from advisor.facts import FactContext
from advisor.facts.layers import account
from advisor.findings import Diagnosis, diagnoses_json
from advisor.formatting import fmt_secs
from advisor.ingest.darshan_log import load
from advisor.metrics import summarize
from advisor.report.figures import figure_data
from advisor.report.html import render_html
from advisor.report.layers import layer_lines
from advisor.report.show import Sections, show_entry
from advisor.report.terminal import console, print_report
from tests.conftest import CORPUS, DATA
from tests.helpers import require

LOGS = "darshan-logs/darshan_logs"
E3SM = f"{LOGS}/e3sm_io_heatmaps_and_dxt/e3sm_io_heatmap_only.darshan"
IOR_HDF5 = f"{LOGS}/ior_pnetcdf_hdf5/shane_ior-HDF5_id438090-438090_11-9-41522-17417065676046418211_1.darshan"
IOR_PNETCDF = f"{LOGS}/ior_pnetcdf_hdf5/shane_ior-PNETCDF_id438100-438100_11-9-41525-10280033558448664385_1.darshan"
HDF5_SEC2 = f"{LOGS}/hdf5_diagonal_write_only/hdf5_diagonal_write_1_byte_dxt.darshan"
MACSIO = ("darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/"
          "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan")
SCHEMA = json.loads((Path(api.__file__).parent / "schemas" / "diagnosis-v1.json").read_text())


@cache
def _profile(path: str):
    full = Path(path) if Path(path).is_absolute() else CORPUS / path
    require(full.exists(), f"log {full} not found")
    return load(full)


def _account(path: str):
    return account(FactContext(_profile(path)))


def test_e3sm_minutes_per_process_are_mpiio_above_posix(corpus):
    a = _account(E3SM)
    assert [r.layer for r in a.rows] == ["PnetCDF", "MPI-IO", "POSIX", "STDIO"]
    pnetcdf, mpiio, posix, stdio = a.rows
    # this Darshan (3.3.1) keeps PnetCDF's opens and timestamps only: its time counters hold -1
    assert pnetcdf.time_s is None and pnetcdf.below == "MPI-IO" and "not timed" in pnetcdf.notes[0]
    assert fmt_secs(mpiio.time_s) == "11.4 min" and fmt_secs(posix.time_s) == "28.5 s"
    assert mpiio.below == "POSIX" and mpiio.below_time_s == pytest.approx(posix.time_s)  # the same 3 files
    assert mpiio.own_time_s == pytest.approx(mpiio.time_s - posix.time_s) and fmt_secs(mpiio.own_time_s) == "11.0 min"
    s = summarize(_profile(E3SM)).modules
    assert mpiio.byte_amplification == pytest.approx(s["POSIX"].bytes / s["MPI-IO"].bytes)  # 3.93x
    assert round(mpiio.byte_amplification, 2) == 3.93
    assert stdio.below == "" and stdio.own_time_s is None  # beside POSIX, not above it
    # the summary's figure is the account's, and names its layer
    assert a.io_time.layer == "MPI-IO + STDIO"
    assert a.io_time.total == pytest.approx(mpiio.time_s + stdio.time_s, abs=1e-6)
    assert a.base_time.layer == "POSIX + STDIO" and a.base_time.total == pytest.approx(posix.time_s + stdio.time_s)
    top = a.files[0]
    assert top.path.endswith("can_I_out_h0.nc") and [c.layer for c in top.layers] == ["PnetCDF", "MPI-IO", "POSIX"]


def test_e3sm_every_reporter_says_where_the_minutes_went(corpus, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    profile = _profile(E3SM)
    d = diagnose(profile, SiteConfig())
    section = d.summary["layers"]
    jsonschema.validate(json.loads(diagnoses_json([d])), SCHEMA)
    assert d.summary["io_time_s"] == section["io_time"]["total"] and d.summary["io_layer"] == "MPI-IO + STDIO"
    # the summary's times each name their layer
    assert d.summary["read_time_s"] == section["base_time"]["read"] and d.summary["base_layer"] == "POSIX + STDIO"
    line = next(x for x in layer_lines(section) if x.startswith("MPI-IO"))
    assert line.startswith("MPI-IO: 11.4 min per process (94.4% of the run), 11.0 min of it above POSIX (")
    assert "POSIX moved 3.93x its bytes in 5.60x its operations" in line
    buffer = io.StringIO()
    print_report(d, console(buffer))
    page = render_html([d])
    entry = show_entry(profile)
    shown = Sections.of(entry).plain(300)
    assert entry["layers"] == json.loads(json.dumps(section))
    for text in (buffer.getvalue(), page.replace("&#39;", "'"), shown):
        assert line in " ".join(text.split())
        assert "11.4 min per process in MPI-IO + STDIO" in " ".join(text.split())
    assert 'id="io-layers"' in page  # the picture of where the time went


def test_hdf5_over_mpiio_and_pnetcdf_over_mpiio(corpus):
    hdf5, mpiio, posix, _stdio = _account(IOR_HDF5).rows
    assert (hdf5.layer, hdf5.modules, hdf5.below, mpiio.below) == ("HDF5", ["H5F", "H5D"], "MPI-IO", "POSIX")
    # H5Dwrite's time includes the MPI-IO calls it made: HDF5's own time is what is left
    assert hdf5.time_s > mpiio.time_s > posix.time_s > 0
    assert hdf5.own_time_s == pytest.approx(hdf5.time_s - mpiio.time_s)
    assert hdf5.bytes == 8 << 20 and hdf5.byte_amplification == pytest.approx(mpiio.bytes / hdf5.bytes)
    pnetcdf = _account(IOR_PNETCDF).row("PnetCDF")
    # the file record counts the header with the variables' bytes: the layer's bytes are its
    assert pnetcdf.modules == ["PNETCDF_FILE", "PNETCDF_VAR"] and pnetcdf.bytes == 4456448 + 4194476
    assert pnetcdf.below == "MPI-IO" and pnetcdf.byte_amplification == pytest.approx(1.0)



def test_the_io_time_is_the_time_the_application_spent_in_its_library_calls(corpus):
    """One I/O time per job, as its processes spent it: an HDF5 job's H5Dwrite calls enclose the MPI-IO
    calls they make, so the headline time is never below the HDF5 layer's (it was the MPI-IO time,
    4.2 ms beside HDF5's 6.9 ms here). A library whose counters time less than the layer below
    (PnetCDF's 3.5 ms beside MPI-IO's 4.5 ms: no own time) leaves the MPI-IO time as it is."""
    a = _account(IOR_HDF5)
    hdf5, mpiio, _posix, stdio = a.rows
    assert a.io_time.layer == "HDF5 + MPI-IO + STDIO"
    assert a.io_time.total == pytest.approx(mpiio.time_s + stdio.time_s + hdf5.own_time_s, abs=1e-6)
    assert a.io_time.total >= hdf5.time_s
    d = diagnose(_profile(IOR_HDF5), SiteConfig())
    assert d.summary["io_time_s"] == pytest.approx(a.io_time.total, abs=1e-6)
    assert d.summary["io_layer"] == a.io_time.layer
    p = _account(IOR_PNETCDF)
    assert p.row("PnetCDF").own_time_s == 0 and p.io_time.layer == "MPI-IO + STDIO"
    assert p.io_time.total == pytest.approx(p.row("MPI-IO").time_s + p.row("STDIO").time_s, abs=1e-6)

def test_hdf5_straight_on_posix_amplifies_one_byte_writes(corpus):
    hdf5 = _account(HDF5_SEC2).row("HDF5")
    assert hdf5.below == "POSIX"  # no MPI-IO: the sec2 driver calls POSIX itself
    assert hdf5.bytes_written == 10 and hdf5.byte_amplification > 100  # metadata around each byte


def test_records_naming_no_file_are_compared_as_a_whole(corpus):
    hdf5 = _account(MACSIO).row("HDF5")  # its H5D records carry FILE_REC_ID 0
    assert hdf5.files == 1 and any("name no file" in n for n in hdf5.notes)
    assert hdf5.own_time_s == pytest.approx(hdf5.time_s - hdf5.below_time_s)
    assert all(f.path != "<record 0x0>" for f in _account(MACSIO).files)


def test_posix_only_log_has_its_bounded_time_and_nothing_above(corpus):
    a = _account(str(DATA / "traps" / "T04.darshan"))  # 8 threads: 6.9 s of calls in a 0.9 s run
    (posix,) = [r for r in a.rows if r.layer == "POSIX"]
    assert posix.below == "" and posix.own_time_s is None and posix.byte_amplification is None
    assert posix.time_s <= a.runtime_s < posix.summed_s
    assert a.io_time.layer == a.base_time.layer == "POSIX + STDIO"
    page = render_html([diagnose(_profile(str(DATA / "traps" / "T04.darshan")), SiteConfig())])
    # one layer over nothing: the lines say it, no picture repeats the plot of I/O time by module
    assert f"POSIX: {fmt_secs(posix.time_s)} per process" in page and 'id="io-layers"' not in page


def test_dfs_above_daos(corpus):
    a = _account(str(DATA / "ior-dfs.darshan"))
    dfs = a.row("DFS")
    assert dfs.below == "DAOS" and dfs.own_time_s == pytest.approx(dfs.time_s - dfs.below_time_s)
    assert dfs.byte_amplification == pytest.approx(1.0)


def test_a_saved_diagnosis_draws_the_same_lines_and_survives_a_broken_section(corpus):
    d = diagnose(_profile(IOR_HDF5), SiteConfig())
    again = Diagnosis.from_dict(json.loads(diagnoses_json([d])))
    assert layer_lines(again.summary["layers"]) == layer_lines(d.summary["layers"])
    again.summary["layers"] = {"runtime_s": 1.0, "rows": [{"layer": "HDF5", "time_s": "soon", "below": "MPI-IO"}]}
    page = render_html([again])
    assert "layers: not drawn, malformed summary data (ValueError)" in page
    assert "layers: not shown, malformed summary data (ValueError)" in page
    buffer = io.StringIO()
    print_report(again, console(buffer))
    assert "layers: not shown, malformed summary data" in buffer.getvalue()


def test_independent_mpiio_time_above_posix_is_not_said_to_be_collective_buffering(corpus):
    """LANL's mpi-io-test on NFS (Open MPI's OMPIO, 32 ranks, independent 16 MiB writes and reads,
    MPIIO_COLL_* 0): 5.4 s per process of MPI-IO time above POSIX, which no collective buffering made.
    A collective job's own time stays the collective exchange's."""
    mpiio = _account(f"{LOGS}/mpi_io_test_with_dxt/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1"
                     ".darshan").row("MPI-IO")
    assert mpiio.own_time_s > 5 and mpiio.own.startswith("independent calls, no collective exchange")
    assert "collective buffering" not in mpiio.own and "NFS" in mpiio.own
    assert _account("generated/e_mpiio_collective_256k/case.darshan").row("MPI-IO").own.startswith(
        "collective buffering's data exchange")


def test_the_time_above_names_only_what_the_jobs_calls_and_file_systems_can_have(corpus):
    """review11: mpi-io-test on ext4 (independent calls) was told of the locks ROMIO takes on NFS, and h5py
    with the sec2 driver (no MPI-IO) of waits in collective calls; a collective HDF5 job keeps its waits."""
    mpiio = _account(f"{LOGS}/release_logs/mpi-io-test-x86_64-3.1.3.darshan").row("MPI-IO")
    assert mpiio.own.startswith("independent calls, no collective exchange") and "NFS" not in mpiio.own
    sec2 = _account(HDF5_SEC2).row("HDF5")
    assert sec2.below == "POSIX" and "collective" not in sec2.own
    assert "waits in collective calls" in _account("generated/f2_hdf5_collective_256k/case.darshan").row("HDF5").own


def test_time_above_and_the_layers_figures_per_file_are_the_accounts() -> None:
    """The account's own time of E3SM's MPI-IO row is layer_above.time_above's total, and its per-file
    figures (layer_views.layer_files) are the rows' bytes: one definition of each, read by both."""
    from advisor.facts.layer_above import time_above
    from advisor.facts.layer_views import layer_files

    ctx = FactContext(_profile(E3SM), SiteConfig())
    (row,) = [r for r in account(ctx).rows if r.layer == "MPI-IO"]
    above = time_above(ctx, "MPI-IO")
    assert above.below == "POSIX" and row.own_time_s == pytest.approx(above.total) and above.total > 600
    files = layer_files(ctx)["MPI-IO"]
    assert int(files.bytes.sum()) == row.bytes_read + row.bytes_written


def test_the_per_rank_figure_names_its_layer_beside_the_jobs_io_time(corpus):
    """mpi-io-test on NFS (review10): the header's I/O time is MPI-IO's (572.8 ms per process); the
    per-rank bars are POSIX + STDIO's (~297 ms). Unnamed, the page gave the job a second I/O time."""
    profile = _profile(f"{LOGS}/release_logs/mpi-io-test-ppc64-3.1.8.darshan")
    d = diagnose(profile, SiteConfig())
    d.figures = figure_data(profile)
    assert d.summary["io_layer"] == "MPI-IO + STDIO"
    assert d.figures["ranks"]["layer"] == "POSIX + STDIO"
    page = render_html([d])
    assert "Bytes and POSIX + STDIO time per rank" in page and "Bytes and I/O time per rank" not in page
    assert "of POSIX + STDIO time, median" in page
    # the top files' seconds (1.2 s summed: POSIX's, MPI-IO's are 2.3 s) say where they were timed
    assert "summed over ranks, at the lowest layer that saw the file" in page
    # the module chart's MPI-IO total is the layer account's (572.0 ms), not its three rounded parts' (572.1)
    rows = _account(f"{LOGS}/release_logs/mpi-io-test-ppc64-3.1.8.darshan").rows
    mpiio = next(r for r in rows if r.layer == "MPI-IO")
    chart = d.figures["io_time"]
    assert fmt_secs(chart["total"][chart["modules"].index("MPI-IO")]) == fmt_secs(mpiio.time_s) == "572.0 ms"
