"""A real Chromium for tests (Debian's /usr/bin/chromium driven by Playwright), one per module.

Installed by tests/system/install-components.sh; never `playwright install`. Tests using it
carry ``pytest.mark.xdist_group("chromium")`` so that one worker drives the browsers.
"""

from __future__ import annotations

import pytest

from advisor.report.screenshot import chromium_path
from tests.helpers import require


@pytest.fixture(scope="module")
def browser():
    require(chromium_path() is not None, "chromium not installed (run tests/system/install-components.sh as root)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(False, "playwright not installed (pip install -e '.[test]')")
    from advisor.report.screenshot import launch

    with sync_playwright() as p:
        chromium = launch(p)
        yield chromium
        chromium.close()
