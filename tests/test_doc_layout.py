"""The docs' layout: the CSS that stops clipping, and doc/check_layout.py's overflow test."""

import importlib.util
import re
import shutil
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "doc"


def _load_checker():
    spec = importlib.util.spec_from_file_location("check_layout", DOC / "check_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rules(css: str) -> dict[str, str]:
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    return {sel.strip(): body for sels, body in re.findall(r"([^{}]+)\{([^}]*)\}", css)
            for sel in sels.split(",")}  # fmt: skip


def test_css_wraps_tables_code_and_contents():
    # Weak: checks that the rules exist, not how a browser lays the pages out (the
    # browser test below and doc/check_layout.py in CI do that where Chromium exists).
    rules = _rules((DOC / "_static" / "custom.css").read_text())
    assert "overflow-wrap: anywhere" in rules[".bd-article table td"]
    assert "max-width: 100%" in rules[".bd-article table"]
    assert "white-space: pre-wrap" in rules[".bd-article pre"]
    assert "overflow-wrap: anywhere" in rules[".bd-sidebar-secondary"]


def _browser():
    pytest.importorskip("playwright")
    checker = _load_checker()
    browser = checker.find_browser(None)
    if browser is None:
        pytest.skip("no Chromium on PATH")
    return checker, browser


def test_checker_flags_a_clipped_code_block_and_passes_a_wrapped_one(tmp_path):
    checker, browser = _browser()
    line = "x = " + "1 + " * 200
    (tmp_path / "bad.html").write_text(f"<pre style='width:300px;overflow:hidden'>{line}</pre>")
    (tmp_path / "good.html").write_text(
        f"<pre style='width:300px;white-space:pre-wrap;overflow-wrap:anywhere'>{line}</pre>"
    )
    shots = tmp_path / "shots"
    bad = checker.check(tmp_path, shots, browser, pages=("bad.html",))
    good = checker.check(tmp_path, shots, browser, pages=("good.html",))
    assert any("pre" in problem for problem in bad)
    assert good == []
    assert (shots / "bad.png").exists()


def test_checker_without_playwright_is_skipped_not_failed(monkeypatch, capsys):
    checker = _load_checker()
    monkeypatch.setitem(__import__("sys").modules, "playwright", None)
    assert checker.main([str(DOC)]) == 2
    assert "skipped" in capsys.readouterr().out


def test_shutil_finds_browser_names():
    checker = _load_checker()
    assert checker.find_browser("/some/chrome") == "/some/chrome"
    found = checker.find_browser(None)
    assert found is None or shutil.which(Path(found).name)
