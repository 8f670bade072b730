"""Screenshot a report page with a real Chromium (Playwright), for docs and `make demo`.

    python -m advisor.report.screenshot REPORT.html OUT.png [--width 1200] [--height 2400] [--dark]

Uses the system Chromium (``/usr/bin/chromium``, or ``$CHROMIUM``); never downloads a
browser. Exits 0 with a message when Playwright or Chromium is missing (the demo
goes on without a picture).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LAUNCH_TIMEOUT_MS = 120_000  # Playwright's 30 s default is too short on a loaded 2-core machine


def chromium_path() -> str | None:
    """The system Chromium, or None."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def launch(playwright):
    """A headless Chromium from the system, launched the way the tests launch it."""
    path = chromium_path()
    if path is None:
        raise FileNotFoundError("chromium not found (apt-get install chromium, or set CHROMIUM)")
    return playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, timeout=LAUNCH_TIMEOUT_MS)


def screenshot(page_path: Path, out: Path, *, width: int = 1200, height: int = 2400, dark: bool = False) -> None:
    """Render `page_path` offline and save the top `height` pixels as PNG."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        try:
            context = browser.new_context(viewport={"width": width, "height": height},
                                          color_scheme="dark" if dark else "light",
                                          offline=True)
            page = context.new_page()
            page.goto(Path(page_path).resolve().as_uri())
            page.screenshot(path=str(out), full_page=False)
        finally:
            browser.close()
    shrink(out)


def shrink(png: Path, width: int | None = None) -> None:
    """Re-save with a 256-colour palette (a page of flat colours loses nothing visible; ~3x smaller),
    scaled down to `width` pixels if given (the docs' full-page pictures)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(png) as image:
        picture = image.convert("RGB")
    if width and picture.size[0] > width:
        picture = picture.resize((width, round(picture.size[1] * width / picture.size[0])), Image.Resampling.LANCZOS)
    picture.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(png, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--width", type=int, default=1200)
    parser.add_argument("--height", type=int, default=2400)
    parser.add_argument("--dark", action="store_true")
    args = parser.parse_args(argv)
    if not args.page.is_file():
        print(f"screenshot: {args.page}: no such report", file=sys.stderr)
        return 2
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("screenshot: skipped (playwright is not installed: pip install '.[test]')", file=sys.stderr)
        return 0
    if chromium_path() is None:
        print("screenshot: skipped (no chromium: apt-get install chromium)", file=sys.stderr)
        return 0
    screenshot(args.page, args.out, width=args.width, height=args.height, dark=args.dark)
    print(f"screenshot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
