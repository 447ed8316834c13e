"""Mutation score of the privacy tests: apply each privacy mutant, run the tests, count.

Usage (from the repository root)::

    python tools/mutation_score.py                 # every mutant, report to experiments/results
    python tools/mutation_score.py --only scaler   # mutants whose name contains "scaler"
    python tools/mutation_score.py --only a,b      # ... "a" or "b"

Each mutant of ``tests/mutants/privacy_mutants.py`` is applied to a fresh copy of
``skfairdp/`` and ``tests/`` in a temporary directory; the privacy test subset
(``TEST_FILES``, plus any statistical conformance tests ``tests/test_*conformance*.py``)
runs there with ``pytest -x -q``, the mutant's ``focus`` file first. A mutant is
*caught* when a test fails. The unmutated subset must pass first. Golden seeded-model
tests (``test_release_apply.py``) are left out on purpose: they flag any change of the
noise, so a mutant they alone catch is not caught by a test about privacy. The whole
suite is not run per mutant (too slow on two cores).

Run it before resolving an issue that touches a release, and note the score.
"""

from __future__ import annotations

import argparse
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_FILES = [
    "tests/test_drawn_scale.py",
    "tests/test_exact_use.py",
    "tests/test_secure_mode.py",
    "tests/test_privacy.py",
    "tests/test_privacy_mutants.py",
    "tests/test_bug_classes.py",
    "tests/test_interval_honesty.py",
    "tests/test_interval_at_zero.py",
    "tests/test_interval_upper_end.py",
    "tests/test_discrete_noise.py",
    "tests/test_cdt_noise.py",
    "tests/test_constant_check.py",
    "tests/test_search_seeds.py",
]
EXTRA_PATTERNS = ["tests/test_*conformance*.py", "tests/test_*neighbo*.py"]
REPORT = ROOT / "experiments" / "results" / "mutation_score.md"
TIMEOUT_S = 900


def test_files() -> list[str]:
    extra = sorted(
        str(p.relative_to(ROOT)) for pattern in EXTRA_PATTERNS for p in ROOT.glob(pattern)
    )
    return TEST_FILES + [f for f in extra if f not in TEST_FILES]


def copy_repository(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for folder in ("skfairdp", "tests"):
        shutil.copytree(ROOT / folder, target / folder, ignore=ignore)


def apply(mutant: dict, target: Path) -> None:
    path = target / mutant["file"]
    text = path.read_text()
    count = text.count(mutant["old"])
    if count != 1:
        raise ValueError(
            f"mutant {mutant['name']}: {mutant['old']!r} occurs {count} times in "
            f"{mutant['file']} (expected once): update the mutant"
        )
    path.write_text(text.replace(mutant["old"], mutant["new"]))


def run_tests(target: Path, files: list[str]) -> tuple[bool, str]:
    """``(passed, first failure)`` of ``pytest -x -q files`` in ``target``."""
    env = {**os.environ, "PYTHONPATH": str(target), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               "-m", "not flower", *files]  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=target, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return False, "timeout"
    if done.returncode == 0:
        return True, ""
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return False, failed[0] if failed else done.stdout.strip().splitlines()[-1]


def score(mutants: list[dict], files: list[str]) -> list[dict]:
    rows = []
    for mutant in mutants:
        with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
            target = Path(tmp)
            copy_repository(target)
            apply(mutant, target)
            order = [mutant["focus"]] + [f for f in files if f != mutant["focus"]]
            start = time.perf_counter()
            passed, failure = run_tests(target, order)
            seconds = time.perf_counter() - start
        row = {**mutant, "caught": not passed, "by": failure, "seconds": seconds}
        print(f"{'caught  ' if row['caught'] else 'SURVIVED'} {mutant['name']}: {failure}")
        rows.append(row)
    return rows


def report(rows: list[dict], files: list[str], baseline_s: float) -> str:
    caught = sum(r["caught"] for r in rows)
    lines = [
        "# Mutation score of the privacy tests",
        "",
        f"`python tools/mutation_score.py`: **{caught} of {len(rows)} mutants caught**. "
        "Mutants: `tests/mutants/privacy_mutants.py` (class 1: noise for a smaller "
        "sensitivity than the release has; 2: noise drawn and recorded, the exact statistic "
        "used; 3: `secure_mode=True` falling back to a seeded generator; 4: a bug class a "
        "peer DP library shipped; 5: an interval more optimistic than the release; "
        "issue 35; 6: private rows left readable on disk; 7: a fitted object that keeps a "
        "seed of its noise, or a split a neighbouring row shifts; 8: a search that shows "
        "what its accounting keeps secret).",
        "",
        f"Tests run per mutant (`pytest -x`, the mutant's focus file first): "
        f"{', '.join(f'`{f}`' for f in files)}; the unmutated subset passes in "
        f"{baseline_s:.0f} s. Golden seeded-model tests are not in the subset.",
        "",
        "| mutant | class | what it breaks | caught | first failing test |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        by = r["by"].replace("|", "\\|")
        lines.append(
            f"| `{r['name']}` | {r['klass']} | {r['description']} | "
            f"{'yes' if r['caught'] else '**no**'} | {by} |"
        )
    for klass in sorted({r["klass"] for r in rows}):
        of = [r for r in rows if r["klass"] == klass]
        lines.append("")
        lines.append(f"Class {klass}: {sum(r['caught'] for r in of)} of {len(of)} caught.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default="", help="run the mutants whose name contains this (comma: any of)"
    )
    parser.add_argument("--no-report", action="store_true", help="print only")
    args = parser.parse_args(argv)
    mutants = runpy.run_path(str(ROOT / "tests" / "mutants" / "privacy_mutants.py"))["MUTANTS"]
    wanted = args.only.split(",")
    mutants = [m for m in mutants if any(part in m["name"] for part in wanted)]
    files = test_files()
    with tempfile.TemporaryDirectory(prefix="unmutated-") as tmp:
        copy_repository(Path(tmp))
        start = time.perf_counter()
        passed, failure = run_tests(Path(tmp), files)
        baseline_s = time.perf_counter() - start
    if not passed:
        print(f"the unmutated tests fail ({failure}): fix them first", file=sys.stderr)
        return 2
    rows = score(mutants, files)
    if not args.no_report and not args.only:
        REPORT.write_text(report(rows, files, baseline_s))
        print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0 if all(r["caught"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
