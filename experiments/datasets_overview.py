"""What each bundled benchmark dataset looks like: sizes, groups and two reference predictors.

For every name in :data:`skfairdp.datasets.BENCHMARK_DATASETS` this prints a
markdown table with rows, features, group sizes, the positive rate per
group, and the test error, demographic-parity (DP) and equalized-odds (EO)
violations of the hard predictions of scikit-learn's
``LogisticRegression`` (non-private, no fairness constraint) and of the
majority-class predictor, over 75/25 splits stratified by group (seeds 0-4,
mean ± sd).  It takes about two minutes on one core::

    OMP_NUM_THREADS=1 python experiments/datasets_overview.py

The output is the table in ``doc/datasets.md``.
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skfairdp.datasets import BENCHMARK_DATASETS, load_dataset
from skfairdp.metrics import demographic_parity_violation, equalized_odds_violation


def _scores(y_true: np.ndarray, y_pred: np.ndarray, s: np.ndarray) -> tuple[float, float, float]:
    return (
        float(np.mean(y_true != y_pred)),
        demographic_parity_violation(y_true, y_pred, sensitive_features=s),
        equalized_odds_violation(y_true, y_pred, sensitive_features=s),
    )


def describe(name: str, seeds: list[int]) -> str:
    """One markdown row for dataset ``name``."""
    bunch = load_dataset(name)
    X, y, s = bunch.data, bunch.target, bunch.sensitive_features
    groups = sorted(set(s), key=lambda g: -np.sum(s == g))
    sizes = " / ".join(f"{g}: {np.sum(s == g):,}" for g in groups)
    rates = " / ".join(f"{y[s == g].mean():.3f}" for g in groups)

    lr, majority = [], []
    for seed in seeds:
        Xtr, Xte, ytr, yte, _, ste = train_test_split(
            X, y, s, test_size=0.25, random_state=seed, stratify=s
        )
        model = LogisticRegression(max_iter=2_000).fit(Xtr, ytr)
        lr.append(_scores(yte, model.predict(Xte), ste))
        constant = np.full_like(yte, np.bincount(ytr).argmax())
        majority.append(_scores(yte, constant, ste))

    def fmt(rows: list[tuple[float, float, float]], column: int) -> str:
        values = np.array([row[column] for row in rows])
        if len(values) == 1:
            return f"{values[0]:.3f}"
        return f"{values.mean():.3f} ± {values.std(ddof=1):.3f}"

    return (
        f"| `{name}` | {len(y):,} | {X.shape[1]} | {sizes} | {rates} "
        f"| {fmt(lr, 0)} | {fmt(lr, 1)} | {fmt(lr, 2)} | {fmt(majority, 0)} |"
    )


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(BENCHMARK_DATASETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    args = parser.parse_args(argv)
    print(
        "| name | rows | features | groups (largest first) | positive rate per group "
        "| LR error | LR DP | LR EO | majority error |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        print(describe(name, args.seeds), flush=True)


if __name__ == "__main__":
    main()
