"""Advice is asked of the library the application calls: MPI005's overlap on real HDF5, PnetCDF
and plain MPI-IO logs (the IOR HDF5/PnetCDF pair, MACSio and mpi-io-test 3.5.0)."""

import pytest

from advisor import api

IOR = "darshan-logs/darshan_logs/ior_pnetcdf_hdf5"
CASES = {
    f"{IOR}/shane_ior-HDF5_id438090-438090_11-9-41522-17417065676046418211_1.darshan": ("H5Dwrite_async", "HDF5"),
    f"{IOR}/shane_ior-PNETCDF_id438100-438100_11-9-41525-10280033558448664385_1.darshan": ("nc_burst_buf", "PnetCDF"),
    "darshan-logs/darshan_logs/release_logs/mpi-io-test-x86_64-3.5.0.darshan": ("MPI_File_iwrite_at_all", "MPI-IO"),
    # MACSio's H5D records name no file (Darshan 3.2): its HDF5 is known from the layers present
    "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/"
    "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan": ("H5Dwrite_async", "HDF5"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_overlap_is_asked_of_the_application_library(corpus, case):
    call, layer = CASES[case]
    diagnosis = api.diagnose_path(corpus / case)
    finding = next(f for f in diagnosis.findings if f.code == "MPI005")
    advice = finding.recommendation.text + " ".join(finding.recommendation.commands)
    assert finding.evidence["app_library"] == layer
    assert call in advice
    others = {"H5Dwrite_async", "nc_burst_buf", "MPI_File_iwrite_at_all"} - {call}
    assert not any(o in advice for o in others), advice
    assert len(finding.recommendation.commands) == 1
