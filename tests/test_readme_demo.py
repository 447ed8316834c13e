"""The README's ``skfairdp demo`` table is what the demo prints (issue 38 item 6).

Runs the demo once with the README's arguments (none: every default) and compares the
header lines and every cell but ``fit_seconds`` (wall time) with the README's table;
a mismatch fails with a diff. About 100 s of CPU, so it carries the ``slow`` marker: it runs
with ``pytest -m slow`` (a step of .ci/run), not in the 10-minute suite.
"""

import contextlib
import difflib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
TIMED = "fit_seconds"


def _block(text: str) -> list[str]:
    """The demo's printout in the README: the text block that starts with 'UCI Adult'."""
    match = re.search(r"```text\n(UCI Adult.*?)```", text, flags=re.S)
    assert match, "README.md has no ```text block of the demo's output"
    return match.group(1).splitlines()


def _comparable(lines: list[str]) -> list[str]:
    """The lines to compare: the table's cells without the timing column, and the header.

    The closing '11 fits in ... s' line carries the wall time, so only its count is kept.
    """
    out, columns = [], None
    for line in lines:
        cells = line.split()
        if cells[:2] == ["estimator", "setting"]:
            columns = cells
        if columns and len(cells) == len(columns):
            out.append("  ".join(c for c, name in zip(cells, columns) if name != TIMED))
        elif re.match(r"\d+ fits? in [\d.]+ s\.", line):
            out.append(line.split(" in ")[0])
        elif line.strip():
            out.append(line)
    return out


@pytest.mark.slow
def test_readme_demo_table_matches_the_demo(tmp_path):
    from skfairdp.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["demo", "--no-progress", "--output", str(tmp_path)]) == 0
    ran = [ln for ln in printed.getvalue().splitlines() if not ln.startswith(("table:", "plot:"))]
    expected, got = _comparable(_block(README.read_text())), _comparable(ran)
    diff = "\n".join(difflib.unified_diff(expected, got, "README.md", "skfairdp demo", lineterm=""))
    assert expected == got, f"README's demo table is stale; update it:\n{diff}"


def test_comparable_drops_the_timing_column_only():
    lines = [
        "estimator  setting  test_error  fit_seconds",
        "DPSGDClassifier  defaults  0.1561  3.3",
        "",
        "11 fits in 171.3 s. Each fit spends its own budget.",
    ]
    assert _comparable(lines) == [
        "estimator  setting  test_error",
        "DPSGDClassifier  defaults  0.1561",
        "11 fits",
    ]
