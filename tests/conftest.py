"""Fixtures shared by every test module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import require

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared real corpus (../shared/corpus); present in CI."""
    require(CORPUS.is_dir(), f"shared corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def data() -> Path:
    return DATA
