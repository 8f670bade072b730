"""Fixtures shared by every test module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cephfs import cephfs  # noqa: F401  (session fixture: one CephFS cluster per xdist worker)
from tests.chromium import browser  # noqa: F401  (module fixture: a real Chromium)
from tests.helpers import require

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
DATA = Path(__file__).resolve().parent / "data"


UNGROUPED = pytest.StashKey[str]()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fail the grouped tests when ``--dist loadgroup`` does not group (after xdist's own hook).

    Tests sharing one daemon (munged, glusterd) or one costly build rely on their
    ``xdist_group`` running on one worker. pytest 9.2 with pytest-xdist 3.8 ignores the mark
    silently (pytest-dev/pytest-xdist#1386): two workers then started munged at once.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
            item.stash[UNGROUPED] = (
                f"--dist loadgroup did not group this test: pytest {pytest.__version__} with this "
                "pytest-xdist ignores xdist_group; install the versions setup.cfg's [test] extra allows")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if UNGROUPED in item.stash:
        pytest.fail(item.stash[UNGROUPED], pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def replay_history(tmp_path_factory: pytest.TempPathFactory):
    """Verifications keep their target's history under $XDG_STATE_HOME: the tests' own, so that
    no test reads the user's (or another session's) runs and none is left behind."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        yield


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared real corpus (../shared/corpus); present in CI."""
    require(CORPUS.is_dir(), f"shared corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def data() -> Path:
    return DATA


@pytest.fixture(autouse=True, scope="session")
def _site_model_data(tmp_path_factory: pytest.TempPathFactory):
    """Every `--verify` of the tests appends its measured fixes to a model-data directory of the
    session ([model] learn_from_verify is on by default), never to the user's own."""
    import os

    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    yield
    if before is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = before
