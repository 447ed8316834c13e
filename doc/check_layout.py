"""Check the built documentation's layout in a real headless browser.

Opens the main pages of a built site at 1,400 px wide, saves a full-page screenshot of
each, and fails (exit 1) on horizontal overflow: the page scrolls sideways
(``document.documentElement.scrollWidth > innerWidth``), or a table, code block or
sidebar hides content sideways (its content is wider than its box or its container).

Usage::

    python doc/check_layout.py doc/_build/html --screenshots /tmp/layout

Needs the ``playwright`` Python package and a Chromium binary: Playwright's own
(``playwright install chromium``) or the system's (Debian: ``apt-get install chromium``,
found as ``chromium``/``chromium-browser``, or named by ``--browser``). Exit 2 when
neither is available, so CI can skip the check.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

WIDTH, HEIGHT = 1400, 900
PAGES = (
    "index.html",
    "choosing.html",
    "_autogen/api.html",
    "auto_examples/plot_fairlearn_metricframe.html",
)

# A table, code block or sidebar whose content is wider than its box (clipped, or behind a
# sideways scrollbar: both hide text at first sight), wider than its container, or ending
# past the window is reported.
OVERFLOW_JS = """
() => {
  const problems = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > window.innerWidth + 1) {
    problems.push(`page scrolls sideways: ${doc.scrollWidth}px > ${window.innerWidth}px`);
  }
  const sel = ("table, pre, div.highlight, .bd-sidebar-secondary, .bd-toc, " +
               ".sphx-glr-script-out, .table-wrapper, .pst-scrollable-table-container");
  for (const el of document.querySelectorAll(sel)) {
    if (el.offsetParent === null) continue;
    if (el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${el.tagName.toLowerCase()}.${el.className} hides ` +
                    `${el.scrollWidth - el.clientWidth}px of its content sideways`);
    }
    const box = el.parentElement;
    if (box && el.offsetWidth > box.clientWidth + 1) {
      problems.push(`${el.tagName.toLowerCase()}.${el.className} is ${el.offsetWidth}px ` +
                    `wide in a ${box.clientWidth}px container`);
    }
    const rect = el.getBoundingClientRect();
    if (rect.right > window.innerWidth + 1) {
      problems.push(`${el.tagName.toLowerCase()}.${el.className} ends at ` +
                    `${Math.round(rect.right)}px, past the ${window.innerWidth}px window`);
    }
  }
  return problems;
}
"""


def find_browser(explicit: str | None) -> str | None:
    """A Chromium executable: ``explicit``, else the system's, else None (Playwright's own)."""
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def check(
    site: Path, screenshots: Path, browser: str | None, pages: tuple[str, ...] = PAGES
) -> list[str]:
    """Every overflow problem found, as ``"page: problem"`` lines (empty: the layout is fine)."""
    from playwright.sync_api import sync_playwright

    screenshots.mkdir(parents=True, exist_ok=True)
    problems = []
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser, args=["--no-sandbox"])
        page = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        for name in pages:
            path = site / name
            if not path.exists():
                problems.append(f"{name}: not built")
                continue
            page.goto(path.resolve().as_uri())
            page.wait_for_load_state("load")
            shot = screenshots / (name.replace("/", "_").removesuffix(".html") + ".png")
            page.screenshot(path=str(shot), full_page=True)
            problems += [f"{name}: {p}" for p in page.evaluate(OVERFLOW_JS)]
        chromium.close()
    return problems


def main(argv: list[str] | None = None) -> int:
    """Run the check; 0: no overflow, 1: overflow found, 2: no browser available."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the built HTML directory")
    parser.add_argument("--screenshots", type=Path, default=Path("doc/_build/layout"))
    parser.add_argument("--browser", help="a Chromium executable (default: found on PATH)")
    args = parser.parse_args(argv)
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("check_layout: playwright is not installed; skipped")
        return 2
    browser = find_browser(args.browser)
    try:
        problems = check(args.site, args.screenshots, browser)
    except Exception as error:  # no usable browser binary
        if "Executable doesn't exist" in str(error) or "executable" in str(error).lower():
            print(f"check_layout: no headless browser ({error}); skipped")
            return 2
        raise
    for problem in problems:
        print(f"check_layout: {problem}")
    print(f"check_layout: screenshots of {len(PAGES)} pages at {WIDTH}px in {args.screenshots}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
