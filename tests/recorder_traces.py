"""The shared Recorder traces (../shared/corpus/recorder), FLASH unpacked once per session."""

from __future__ import annotations

import gzip
import tarfile
from pathlib import Path

import pytest

R_TRACES = ("R1_posix_small_shared", "R1_posix_small_shared_interprocess", "R3_posix_fpp_good",
            "R4_mdtest")
FLASH_RANKS = range(4)


def recorder_dir(corpus: Path) -> Path:
    return corpus / "recorder"


def reference_text(corpus: Path, trace: str, rank: int) -> list[str]:
    """recorder2text's lines for one rank of a shared trace."""
    base = recorder_dir(corpus)
    if trace == "flash":
        with gzip.open(base / "flash_sedov3d_hdf5-text" / f"{rank:04d}.txt.gz", "rt") as f:
            return f.read().splitlines()
    return (base / trace / "text" / f"{rank}.txt").read_text().splitlines()


@pytest.fixture(scope="session")
def flash_trace(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FLASH's trace folder: all 1,024 ranks (145 MB), unpacked from the corpus archive."""
    out = tmp_path_factory.mktemp("flash")
    with tarfile.open(recorder_dir(corpus) / "flash_sedov3d_hdf5.tar.xz") as tar:
        tar.extractall(out, filter="data")
    return out / "flash_sedov3d_hdf5"
