"""Every published line that installs skfairdp installs torch's CPU build first (issue 38).

A bare ``pip install .`` resolves torch through the package's ``torch>=2.2`` and pulls the
CUDA build (GBs); ``skfairdp[parquet]`` from PyPI does not exist (skfairdp is installed from
a checkout). Checked on README.md and every page under doc/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "doc").glob("*.md"))]
#: a pip command that installs this package: `.`, `".[extra]"`, `-e .`, `skfairdp[...]`
INSTALLS_US = re.compile(
    r"""pip install[^&;`\n]*?(?:\s|")(?:-e\s+)?"?(?:\.(?:\[|\s|"|$)|skfairdp\[)"""
)


def _install_commands(text: str):
    for line_no, line in enumerate(text.splitlines(), 1):
        for match in INSTALLS_US.finditer(line):
            yield line_no, line, match.start()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_installs_pin_torch_first(page):
    bad = [
        f"{page.name}:{no}: {line.strip()}"
        for no, line, start in _install_commands(page.read_text())
        if "torch==2.13.0" not in line[:start]
    ]
    assert not bad, "install lines without `pip install torch==2.13.0 &&` first:\n" + "\n".join(bad)


def test_the_check_sees_a_bare_install():
    lines = list(
        _install_commands('pip install ".[parquet]"\npip install torch==2.13.0 && pip install .')
    )
    assert [no for no, line, start in lines if "torch==2.13.0" not in line[:start]] == [1]
    assert list(_install_commands('pip install "skfairdp[parquet]"'))
