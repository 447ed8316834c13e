"""``skfairdp benchmark``: one quick benchmark end to end, the reports, a missing module."""

from __future__ import annotations

import csv
import math
import sys

import numpy as np
import pytest

from skfairdp.benchmarks import BENCHMARKS, BenchmarkUnavailable, run_benchmark
from skfairdp.benchmarks._published import DPFERMI_CURVES, best_error_below, published
from skfairdp.benchmarks._tradeoff import report
from skfairdp.cli import main


def test_quick_dpfermi_writes_csv_markdown_png(tmp_path, capsys):
    out = tmp_path / "bench"
    assert main(["benchmark", "dpfermi", "--quick", "--output", out, "--no-progress"]) == 0
    stdout = capsys.readouterr().out
    assert "PASS: privacy accounting: every private fit spends ε ≤ its target" in stdout
    assert stdout.rstrip().endswith("== summary (quick run): 1 PASS, 0 FAIL")
    with open(out / "dpfermi_quick.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["setting"], r["seed"]) for r in rows] == [("λ=0", "0"), ("λ=16", "0")]
    for r in rows:
        assert 0 < float(r["epsilon_spent"]) <= float(r["epsilon"]) == 1.0
        assert 0.0 <= float(r["error"]) < 0.5 and 0.0 <= float(r["dp_violation"]) <= 1.0
        # the test violation's sampling interval (exact PrivateMetricFrame) holds the value
        for notion in ("dp", "eo"):
            low, high = (float(r[f"{notion}_violation_{end}"]) for end in ("lower", "upper"))
            assert 0.0 <= low <= float(r[f"{notion}_violation"]) <= high <= 1.0
    # the fairness weight does its job even on the quick subsample (one seed, margin 0.05)
    assert float(rows[1]["dp_violation"]) < float(rows[0]["dp_violation"]) - 0.05
    md = (out / "dpfermi_quick.md").read_text(encoding="utf-8")
    assert md.startswith("# DP-FERMI on Adult: test error vs demographic-parity violation (quick")
    assert "Reproduce: `skfairdp benchmark dpfermi --quick`" in md
    assert "DP-FERMI, ε = 1 (error / violation): λ=0: 0.1585 / 0.2017" in md  # published
    assert "**Quick run**" in md
    assert (out / "dpfermi_quick.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "dpfermi.csv").exists()


def test_federated_reports_missing_module(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "skfairdp.federated", None)  # import now fails
    out = tmp_path / "fed"
    assert main(["benchmark", "federated", "--quick", "--output", out, "--no-progress"]) == 1
    assert "needs skfairdp.federated" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(BenchmarkUnavailable):
        run_benchmark("federated", quick=True, output=out, progress=False)


def test_unknown_benchmark():
    with pytest.raises(ValueError, match="unknown benchmark"):
        run_benchmark("nope")
    assert "all" not in BENCHMARKS


def _row(method, eps, setting, seed, error, dp, spent):
    return dict(
        method=method, dataset="adult", n_train=100, setting=setting, value=0.0,
        epsilon=eps, seed=seed, epsilon_spent=spent, delta_spent=1e-5, seconds=1.0,
        error=error, dp_violation=dp, eo_violation=dp, dp_violation_lower=dp - 0.02,
        dp_violation_upper=dp + 0.03, eo_violation_lower=0.0, eo_violation_upper=dp + 0.04,
    )  # fmt: skip


def test_tradeoff_report_means_published_and_accounting(tmp_path):
    rows = [
        _row("M", 1.0, "a", 0, 0.10, 0.10, 0.99),
        _row("M", 1.0, "a", 1, 0.20, 0.06, 0.99),
        _row("M", 1.0, "b", 0, 0.30, 0.01, 1.01),  # over budget: must FAIL
        _row("M", 1.0, "b", 1, 0.30, 0.03, 0.99),
    ]
    paths = report(
        rows, output=tmp_path, stem="t", title="T", name="dpfermi", quick=False,
        seeds=(0, 1), protocol="p", notion="dp",
        published={1.0: [("DP-FERMI", published("DP-FERMI", "dp", "adult", 1.0))]},
    )  # fmt: skip
    assert [p.name for p in paths] == ["t.csv", "t.md", "t.png"]
    md = paths[1].read_text(encoding="utf-8")
    # violations: seed mean ± sd, then the seed means of the sampling interval's bounds
    assert (
        "| M | 1 | a | 2 | 0.1500 ± 0.0707 | 0.0800 ± 0.0283 [0.0600, 0.1100] | "
        "0.0800 ± 0.0283 [0.0000, 0.1200] |"
    ) in md
    assert "the 95 % sampling interval of one test split's violation" in md
    assert "- FAIL: privacy accounting: 1 of 4 private fits spend more than their target ε" in md
    assert "ε_spent / ε = 1.010000 > 1" in md and "ε ≤ its target" not in md
    # lowest mean error at mean violation <= 0.1: a (0.15); <= 0.05 and <= 0.02: b (0.30)
    assert "| M | 1 | 0.1500 (a) | 0.3000 (b) | 0.3000 (b) |" in md
    assert "| DP-FERMI (published) | 1 | 0.1663 (λ=0.5) | 0.1763 (λ=0.75) | 0.1869 (λ=1) |" in md


def test_published_numbers():
    assert best_error_below([("x", 0.2, 0.1), ("y", 0.3, 0.01)], 0.05) == (0.3, "y")
    assert best_error_below([("x", 0.2, 0.1)], 0.05) is None
    for points in DPFERMI_CURVES.values():
        for _label, error, violation in points:
            assert 0 < error < 0.5 and 0 <= violation < 0.3
    assert published("DP-FERMI", "dp", "adult", math.inf)[0] == ("λ=0", 0.1555, 0.1980)


def test_global_scaling_accuracy_drops():
    from skfairdp.benchmarks.global_scaling import _add_gaps

    rows = [
        dict(method="non-private", seed=0, acc_male=80.0, acc_female=92.0),
        dict(method="DPSGD", seed=0, acc_male=70.0, acc_female=89.0),
    ]
    _add_gaps(rows)
    assert rows[1]["pi_male"] == 10.0 and rows[1]["pi_female"] == 3.0
    assert rows[1]["pi_mf"] == 7.0 and "pi_mf" not in rows[0]


def test_target_line_states_the_inequality_that_holds():
    from skfairdp.benchmarks._common import target_line

    target = "target ≤ γ + 0.02"
    assert target_line("violation", 0.1217, 0.1 + 0.02, target) == (
        "- FAIL: violation 0.1217 > 0.12 (target ≤ γ + 0.02)"
    )
    assert target_line("violation", 0.0188, 0.04, target) == (
        "- PASS: violation 0.0188 ≤ 0.04 (target ≤ γ + 0.02)"
    )
    assert (
        target_line("π", 0.74, 4.65, "below", strict=True, digits=2)
        == "- PASS: π 0.74 < 4.65 (below)"
    )
    assert (
        target_line("π", 4.65, 4.65, "below", strict=True, digits=2)
        == "- FAIL: π 4.65 ≥ 4.65 (below)"
    )


def test_quick_report_is_marked_in_title_and_plot(tmp_path, monkeypatch):
    import skfairdp.benchmarks._common as common

    titles = []
    monkeypatch.setattr(common, "tradeoff_plot", lambda path, curves, **kw: titles.append(kw))
    rows = [_row("M", 1.0, "a", 0, 0.1, 0.1, 0.99)]
    paths = report(
        rows, output=tmp_path, stem=common.quick_stem("t", True), title="T", name="dpfermi",
        quick=True, seeds=(0,), protocol="p", notion="dp", published={},
    )  # fmt: skip
    assert [p.name for p in paths] == ["t_quick.csv", "t_quick.md", "t_quick.png"]
    assert paths[1].read_text(encoding="utf-8").startswith("# T (quick run)\n")
    assert titles[0]["title"] == "T (quick run)"


def _fake_benchmarks(monkeypatch, tmp_path, checks):
    """`skfairdp benchmark` on fake benchmarks whose markdown holds the given check lines."""
    import skfairdp.cli.benchmark as command

    def fake_run(name, *, quick, seeds, output, progress):
        md = tmp_path / f"{name}.md"
        md.write_text("# fake\n\n" + "\n".join(checks.get(name, [])) + "\n", encoding="utf-8")
        return [tmp_path / f"{name}.csv", md, tmp_path / f"{name}.png"]

    fake = {"one": "a fake benchmark", "two": "another"}
    monkeypatch.setattr(command, "run_benchmark", fake_run)
    monkeypatch.setattr(command, "BENCHMARKS", fake)
    import skfairdp.cli as cli

    monkeypatch.setattr(cli, "BENCHMARKS", fake)


ACCOUNTING_PASS = "- PASS: privacy accounting: every private fit spends ε ≤ its target (...)."
MISSED = "- FAIL: ε = 1, γ = 0.1: mean test DP violation 0.1217 > 0.12 (target ≤ γ + 0.02)"


@pytest.mark.parametrize(
    "checks, argv, code, summary",
    [
        ({"one": [ACCOUNTING_PASS], "two": [ACCOUNTING_PASS]}, [], 0, "2 PASS, 0 FAIL"),
        ({"one": [ACCOUNTING_PASS], "two": [ACCOUNTING_PASS, MISSED]}, [], 1, "2 PASS, 1 FAIL"),
        (
            {"one": [ACCOUNTING_PASS], "two": [ACCOUNTING_PASS, MISSED]},
            ["--explore"],
            0,
            "2 PASS, 1 FAIL",
        ),
        (
            {"one": ["- FAIL: privacy accounting: 1 of 2 private fits spend more than..."]},
            ["--explore"],
            1,
            "0 PASS, 1 FAIL",
        ),
    ],
)
def test_summary_and_exit_code(tmp_path, monkeypatch, capsys, checks, argv, code, summary):
    _fake_benchmarks(monkeypatch, tmp_path, checks)
    assert main(["benchmark", "all", "--quick", "--output", tmp_path, *argv]) == code
    out = capsys.readouterr().out
    assert f"== summary (quick run): {summary}" in out
    failed = [line for lines in checks.values() for line in lines if line.startswith("- FAIL")]
    for line in failed:  # repeated under the summary, with its benchmark
        assert out.count(line[2:]) == 2
    assert ("--explore: the failed targets do not change the exit code" in out) == (
        code == 0 and bool(failed)
    )


def test_sampling_intervals_of_test_violations():
    """Exact PrivateMetricFrame intervals: a fair classifier's reach 0, a biased one's do not."""
    from skfairdp.benchmarks._common import sampling_intervals
    from skfairdp.metrics import demographic_parity_violation, equalized_odds_violation

    rng = np.random.default_rng(0)
    n = 4000
    s, y = rng.choice(["a", "b"], n), rng.integers(0, 2, n)
    fair = np.where(rng.random(n) < 0.8, y, 1 - y)  # errors independent of the group
    out = sampling_intervals(y, fair, s)
    assert out["dp_violation_lower"] == 0.0 < out["dp_violation_upper"] < 0.06
    assert out["eo_violation_lower"] == 0.0 < out["eo_violation_upper"] < 0.08
    biased = np.where(s == "a", fair, 1)
    out = sampling_intervals(y, biased, s)
    dp = demographic_parity_violation(y, biased, sensitive_features=s)
    eo = equalized_odds_violation(y, biased, sensitive_features=s)
    assert 0.3 < out["dp_violation_lower"] < dp < out["dp_violation_upper"]
    assert 0.5 < out["eo_violation_lower"] < eo < out["eo_violation_upper"]


def test_global_scaling_group_accuracy_intervals():
    from skfairdp.benchmarks.global_scaling import _evaluate

    rng = np.random.default_rng(1)
    n = 2000
    s, y = rng.choice(["Male", "Female"], n), rng.integers(0, 2, n)
    y_pred = np.where((s == "Male") & (rng.random(n) < 0.2), 1 - y, y)

    class Fixed:
        def predict(self, X):
            return y_pred

    out = _evaluate(Fixed(), None, (None, np.zeros((n, 1)), None, y, None, s))
    assert out["acc_female"] == 100.0 and 99.0 < out["acc_female_lower"] < 100.0
    assert out["acc_female_upper"] == pytest.approx(100.0, abs=0.01)
    assert out["acc_male_lower"] < out["acc_male"] < out["acc_male_upper"]
    assert out["acc_male_upper"] - out["acc_male_lower"] < 6.0  # Wald: 4.96 points at 1,000 rows
