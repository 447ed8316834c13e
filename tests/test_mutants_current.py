"""Every privacy mutant still applies to today's code (tools/mutation_score.py refuses a stale one).

A mutant whose ``old`` text no longer occurs exactly once in its file stops the mutation
score at that mutant (``f466430`` changed ``_signs(int(size))`` in discrete.py and left
``discrete-geometric-no-sign`` stale until a full run hit it): this catches that in the
suite, and that each mutant changes its file and names a test file that exists.
"""

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = runpy.run_path(str(ROOT / "tests" / "mutants" / "privacy_mutants.py"))["MUTANTS"]


def test_mutant_names_are_unique():
    names = [mutant["name"] for mutant in MUTANTS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("mutant", MUTANTS, ids=[mutant["name"] for mutant in MUTANTS])
def test_mutant_applies_once(mutant):
    text = (ROOT / mutant["file"]).read_text()
    assert text.count(mutant["old"]) == 1, f"stale mutant {mutant['name']}: update it"
    assert mutant["old"] != mutant["new"]
    assert (ROOT / mutant["focus"]).is_file()
