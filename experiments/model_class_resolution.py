"""Why a binned logistic regression trails a GAM on Adult (issue 37): bin resolution.

Raw Adult, the split and declared bounds of ``skfairdp.benchmarks.pipelines`` (75/25
stratified by sex and label), categorical columns one-hot on their declared levels, seeds
given on the command line. For each encoding of the six numeric columns:

- ``uniform20``: 20 uniform bins of the declared bounds (today's pipeline);
- ``gain<g>x<l>``: 20 uniform bins, but ``g`` for capital-gain and ``l`` for capital-loss
  (public: the bins still read no row);
- ``mincount<m>``: 20 uniform bins, but capital-gain and capital-loss on a fine grid
  (width 100 and 20) merged left to right until each bin holds ``m`` training rows: edges
  read from the rows, **not private** (an upper bound on what a private histogram's edges
  could give);

it fits non-private ``LogisticRegression`` + fairlearn ``ThresholdOptimizer`` (DP) and the
private base ``DPSGDClassifier(epsilon=0.8, batch_size=2048, max_epochs=30, lr=4 or 8)``
alone (hard test predictions). ``--ebm`` adds InterpretML's
``ExplainableBoostingClassifier(interactions=0)`` + ``ThresholdOptimizer`` (about 4 min
per seed on 2 cores; needs ``interpret-core``).

    python experiments/model_class_resolution.py --seeds 0 1 [--ebm]
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from skfairdp import DPSGDClassifier
from skfairdp.benchmarks import pipelines
from skfairdp.metrics import demographic_parity_violation

OUT = Path(__file__).parent / "results" / "model_class_resolution.csv"
ENCODINGS = ["uniform20", "gain100x45", "gain500x90", "mincount20", "mincount200"]
FINE = {"capital-gain": 1000, "capital-loss": 225}  # fine grid: widths 100 and 20


class Bins:
    """One-hot bins per numeric column: uniform counts, or min-count merges of a fine grid."""

    def __init__(self, counts: dict, min_count: int | None = None):
        self.counts, self.min_count = counts, min_count

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=float)
        self.edges_ = []
        for j, (column, (lo, hi)) in enumerate(pipelines.BOUNDS.items()):
            if self.min_count is None or column not in FINE:
                self.edges_.append(np.linspace(lo, hi, self.counts.get(column, 20) + 1))
                continue
            grid = np.linspace(lo, hi, FINE[column] + 1)
            cells = np.histogram(np.clip(X[:, j], lo, hi), grid)[0]
            edges, mass = [lo], 0
            for i, count in enumerate(cells[:-1]):
                mass += count
                if mass >= self.min_count:
                    edges.append(grid[i + 1])
                    mass = 0
            self.edges_.append(np.array([*edges, hi]))
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=float)
        blocks = []
        for j, edges in enumerate(self.edges_):
            k = len(edges) - 1
            index = np.clip(np.searchsorted(edges, X[:, j], side="right") - 1, 0, k - 1)
            blocks.append(np.eye(k, dtype=np.float32)[index])
        return np.hstack(blocks)

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)

    def get_params(self, deep=True):
        return {"counts": self.counts, "min_count": self.min_count}

    def set_params(self, **params):
        for key, value in params.items():
            setattr(self, key, value)
        return self


def encoder(name: str):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    if name.startswith("gain"):
        gain, loss = map(int, name.removeprefix("gain").split("x"))
        numeric = Bins({"capital-gain": gain, "capital-loss": loss})
    elif name.startswith("mincount"):
        numeric = Bins({}, min_count=int(name.removeprefix("mincount")))
    else:
        numeric = Bins({})
    levels = pipelines._adult()[3]
    categorical = OneHotEncoder(
        categories=[levels[c] for c in levels], handle_unknown="ignore", sparse_output=False
    )
    return ColumnTransformer(
        [("num", numeric, list(pipelines.BOUNDS)), ("cat", categorical, list(levels))]
    )


def post_process(model, F_train, y_train, s_train, F_test, y_test, s_test, seed):
    from fairlearn.postprocessing import ThresholdOptimizer

    optimizer = ThresholdOptimizer(
        estimator=model, constraints="demographic_parity", predict_method="predict_proba",
        prefit=True,
    ).fit(F_train, y_train, sensitive_features=s_train)  # fmt: skip
    pred = optimizer.predict(F_test, sensitive_features=s_test, random_state=seed)
    return float(np.mean(pred != y_test)), demographic_parity_violation(
        y_test, pred, sensitive_features=s_test
    )


def rows_for(seed: int, ebm: bool):
    from sklearn.linear_model import LogisticRegression

    task = type("Task", (), {"seed": seed, "n_samples": None})()
    X_train, X_test, y_train, y_test, s_train, s_test = pipelines._split(task)
    for name in ENCODINGS:
        features = encoder(name).fit(X_train, y_train)
        F_train = features.transform(X_train).astype(np.float32)
        F_test = features.transform(X_test).astype(np.float32)
        # float64 for fairlearn: its ThresholdOptimizer.predict fails on float32 features
        F64_train, F64_test = F_train.astype(np.float64), F_test.astype(np.float64)
        lr = LogisticRegression(max_iter=3000).fit(F64_train, y_train)
        error, dp = post_process(lr, F64_train, y_train, s_train, F64_test, y_test, s_test, seed)
        yield dict(
            encoding=name, model="LR + ThresholdOptimizer (non-private)", seed=seed,
            columns=F_train.shape[1], base_error=float(np.mean(lr.predict(F64_test) != y_test)),
            error=error, dp_violation=dp,
        )  # fmt: skip
        for step in (4.0, 8.0):
            base = DPSGDClassifier(
                epsilon=0.8, delta=1e-5, batch_size=2048, max_epochs=30, lr=step,
                random_state=seed,
            ).fit(F_train, y_train)  # fmt: skip
            yield dict(
                encoding=name, model=f"DPSGDClassifier eps 0.8, lr {step:g} (base only)",
                seed=seed, columns=F_train.shape[1],
                base_error=float(np.mean(base.predict(F_test) != y_test)),
                error=float("nan"), dp_violation=float("nan"),
            )  # fmt: skip
    if ebm:
        from interpret.glassbox import ExplainableBoostingClassifier

        model = ExplainableBoostingClassifier(interactions=0, random_state=seed, n_jobs=2)
        model.fit(X_train, y_train)
        error, dp = post_process(model, X_train, y_train, s_train, X_test, y_test, s_test, seed)
        yield dict(
            encoding="EBM's own bins", model="EBM main effects + ThresholdOptimizer (non-private)",
            seed=seed, columns=len(model.term_names_),
            base_error=float(np.mean(model.predict(X_test) != y_test)), error=error,
            dp_violation=dp,
        )  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--ebm", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    start, rows = time.perf_counter(), []
    for seed in args.seeds:
        for row in rows_for(seed, args.ebm):
            rows.append(row)
            print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()})
    args.out.parent.mkdir(exist_ok=True)
    with args.out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
