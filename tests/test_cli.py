"""The ``skfairdp`` command: ``demo`` end to end (tiny) and ``--help``."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import pytest
import torch

import skfairdp
from skfairdp.cli import PLOT_NAME, TABLE_NAME, build_parser, main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = ["fairness_weight", "test_accuracy", "dp_violation", "epsilon_spent", "delta"]


def test_public_exports():
    assert skfairdp.DPFermiClassifier.__name__ == "DPFermiClassifier"
    assert isinstance(skfairdp.__version__, str) and skfairdp.__version__
    assert set(skfairdp.__all__) >= {"DPFermiClassifier", "__version__"}


def test_demo_prints_table_and_writes_png(tmp_path, capsys):
    threads = torch.get_num_threads()
    out = tmp_path / "demo"
    code = main(
        ["demo", "--max-epochs", "1", "--weights", "0", "2", "--output", out, "--no-progress"]
    )
    assert code == 0
    assert torch.get_num_threads() == threads  # --threads is restored afterwards
    stdout = capsys.readouterr().out
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:5] == HEADER)
    rows = [line.split() for line in lines[header + 1 : header + 3]]
    assert [float(r[0]) for r in rows] == [0.0, 2.0]
    for _weight, accuracy, violation, eps, delta, seconds in rows:
        assert 0.5 < float(accuracy) <= 1.0
        assert 0.0 <= float(violation) <= 1.0
        assert 0.0 < float(eps) <= 1.0 + 1e-6  # never more than the target epsilon
        assert float(delta) == pytest.approx(1e-5)
        assert float(seconds) > 0
    png = out / PLOT_NAME
    assert f"plot:  {png}" in stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / TABLE_NAME, newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [float(r["fairness_weight"]) for r in table] == [0.0, 2.0]


def test_demo_non_private(tmp_path, capsys):
    code = main(
        [
            "demo",
            "--epsilon",
            "inf",
            "--max-epochs",
            "1",
            "--weights",
            "0",
            "--output",
            tmp_path,
            "--no-progress",
        ]
    )
    assert code == 0
    row = capsys.readouterr().out.split("fit_seconds\n", 1)[1].splitlines()[0].split()
    assert row[3] == "inf" and row[4] == "0"
    assert (tmp_path / PLOT_NAME).exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--weights", "-1"],
        ["demo", "--epsilon", "0"],
        ["demo", "--max-epochs", "0"],
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
    assert "demo" in capsys.readouterr().out


def test_parser_defaults():
    args = build_parser().parse_args(["demo"])
    assert args.epsilon == 1.0 and args.delta == 1e-5 and args.seed == 0
    assert args.max_epochs == skfairdp.DPFermiClassifier().max_epochs
    assert args.weights == [0.0, 1.0, 2.0, 4.0, 8.0]


@pytest.mark.parametrize("argv", [["--help"], ["demo", "--help"]])
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
    assert "demo" in result.stdout
