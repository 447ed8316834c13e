"""The ``skfairdp`` command: ``demo`` and ``benchmark`` end to end (tiny), ``--help``."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
import torch

import skfairdp
from skfairdp.benchmarks import BENCHMARKS
from skfairdp.cli import DEMO_ESTIMATORS, PLOT_NAME, TABLE_NAME, build_parser, main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = ["estimator", "setting", "test_error", "dp_violation", "dp_95%_interval", "epsilon_spent"]
HEAVY = ("torch", "sklearn", "numpy", "pandas", "matplotlib", "scipy", "skorch", "fairlearn")


def test_public_exports():
    assert skfairdp.DPFermiClassifier.__name__ == "DPFermiClassifier"
    assert isinstance(skfairdp.__version__, str) and skfairdp.__version__
    assert set(skfairdp.__all__) >= {"DPFermiClassifier", "__version__"}
    for name in skfairdp.__all__:
        assert getattr(skfairdp, name) is not None
    assert set(skfairdp.__all__) <= set(dir(skfairdp))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        skfairdp.nope  # noqa: B018


def _table_rows(stdout: str) -> list[list[str]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[: len(HEADER)] == HEADER)
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_demo_prints_table_and_writes_png(tmp_path, capsys):
    threads = torch.get_num_threads()
    out = tmp_path / "demo"
    argv = ["demo", "--estimators", "dpfermi", "dpsgd", "--max-epochs", "1"]
    code = main([*argv, "--weights", "0", "4", "--output", out, "--no-progress"])
    assert code == 0
    assert torch.get_num_threads() == threads  # --threads is restored afterwards
    stdout = capsys.readouterr().out
    rows = _table_rows(stdout)
    assert [r[:2] for r in rows] == [
        ["DPFermiClassifier", "λ=0"],
        ["DPFermiClassifier", "λ=4"],
        ["DPSGDClassifier", "defaults"],
    ]
    for _name, _setting, error, violation, interval, eps, delta, seconds in rows:
        assert 0.0 <= float(error) < 0.5
        assert 0.0 <= float(violation) <= 1.0
        # the test split's 95 % sampling interval (exact PrivateMetricFrame), around the value
        lower, upper = (float(v) for v in interval.strip("[]").split(","))
        assert 0.0 <= lower <= float(violation) <= upper <= 1.0 and upper - lower < 0.1
        assert 0.0 < float(eps) <= 1.0 + 1e-6  # never more than the target epsilon
        assert float(delta) == pytest.approx(1e-5)
        assert float(seconds) >= 0  # a one-epoch fit can print as 0.0 (one decimal)
    png = out / PLOT_NAME
    assert f"plot:  {png}" in stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / TABLE_NAME, newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [r["setting"] for r in table] == ["λ=0", "λ=4", "defaults"]
    for r in table:
        assert float(r["dp_violation_lower"]) <= float(r["dp_violation"])
        assert float(r["dp_violation"]) <= float(r["dp_violation_upper"])
    assert "dp_95%_interval: the 95 % sampling interval of the test violation" in stdout


def test_demo_non_private(tmp_path, capsys):
    argv = ["demo", "--epsilon", "inf", "--estimators", "dpfermi", "--max-epochs", "1"]
    code = main([*argv, "--weights", "0", "--output", tmp_path, "--no-progress"])
    assert code == 0
    row = _table_rows(capsys.readouterr().out)[0]
    assert row[5] == "inf" and row[6] == "0"
    assert (tmp_path / PLOT_NAME).exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--weights", "-1"],
        ["demo", "--epsilon", "0"],
        ["demo", "--max-epochs", "0"],
        ["demo", "--tolerances", "1.5"],
        ["demo", "--estimators", "nonsense"],
        ["benchmark", "nonsense"],
        ["benchmark", "dpfermi", "--seeds", "-1"],
        ["nonsense"],
    ],
)
def test_bad_arguments_exit_with_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage: skfairdp" in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    assert "demo" in out and "benchmark" in out


def test_parser_defaults():
    args = build_parser().parse_args(["demo"])
    assert args.epsilon == 1.0 and args.delta == 1e-5 and args.seed == 0
    assert args.max_epochs is None  # each estimator's own default
    assert args.weights == [0.0, 1.0, 4.0, 16.0, 64.0]  # DP-FERMI's documented range 0-64
    assert args.estimators == ["dpfermi", "raco", "cgoo", "global-scaling", "dpsgd"]
    assert set(DEMO_ESTIMATORS) >= set(args.estimators)
    args = build_parser().parse_args(["benchmark", "all"])
    assert args.quick is False and args.seeds is None
    assert args.output == "skfairdp-benchmarks"
    assert set(BENCHMARKS) == {
        "dpfermi",
        "raco",
        "global-scaling",
        "cgoo",
        "federated",
        "pipelines",
    }


def test_demo_covers_every_exported_classifier():
    exported = {n for n in skfairdp.__all__ if n.endswith("Classifier") or n == "CGOOReduction"}
    exported -= {"FederatedDPFermiClassifier"}  # silos: `skfairdp benchmark federated`
    assert {cls for cls, _ in DEMO_ESTIMATORS.values()} == exported


@pytest.mark.parametrize("argv", [["--help"], ["demo", "--help"], ["benchmark", "--help"]])
def test_help_imports_no_heavy_module(argv):
    """``--help`` parses without importing torch, scikit-learn, numpy, ... (lazy imports)."""
    code = (
        "import json, sys\n"
        "from skfairdp.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "usage: skfairdp" in result.stdout
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("argv", [["--help"], ["benchmark", "--help"]])
def test_python_m_skfairdp_help(argv):
    result = subprocess.run(
        [sys.executable, "-m", "skfairdp", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "usage: skfairdp" in result.stdout
    assert "demo" in result.stdout or "dpfermi" in result.stdout
