"""Issue 37 probe: does a GAM's model class (binned numeric features) help the private base?

Adult (raw columns: ``load_adult()``), group sex, demographic parity, 75/25 split
stratified by group and label, hard test predictions. Every arm is a ``Pipeline``
whose numeric columns go through one preprocessing step (declared bounds, public or
private) and whose categorical columns are one-hot encoded on their declared levels
(public), then DPThresholdOptimizer on a DPSGDClassifier (logistic regression, 2,048-row
batches, 30 epochs, lr 1) inside the rest of the budget. ``epsilon`` is
``skfairdp.privacy.spent`` of the whole pipeline.

Arms: ``linear`` (z-scores from the declared bounds: today's model class),
``uniform<k>`` (``DPKBinsDiscretizer`` with ``k`` uniform bins of the bounds: free),
``quantile<k>`` (``k`` private quantile bins at epsilon 0.05, the rest to the model).
Non-private references: fairlearn ThresholdOptimizer on LogisticRegression over the
same ``linear`` and ``uniform20`` features.

    python experiments/model_class_adult.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from skfairdp import DPSGDClassifier
from skfairdp.datasets import load_adult
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.preprocessing import DPKBinsDiscretizer, DPStandardScaler
from skfairdp.privacy import spent

#: Declared bounds of the numeric columns (domain knowledge, not read from the rows).
BOUNDS = {
    "age": (17, 90), "fnlwgt": (10_000, 1_500_000), "education-num": (1, 16),
    "capital-gain": (0, 100_000), "capital-loss": (0, 4_500), "hours-per-week": (1, 99),
}  # fmt: skip
BASE = {"batch_size": 2048, "max_epochs": 30, "lr": 1.0}


def features(numeric_step, categories):
    return ColumnTransformer(
        [
            ("num", numeric_step, list(BOUNDS)),
            (
                "cat",
                OneHotEncoder(
                    categories=[categories[c] for c in categories],
                    handle_unknown="ignore",
                    sparse_output=False,
                ),
                list(categories),
            ),
        ]  # fmt: skip
    )


def numeric(arm: str, seed: int):
    if arm == "linear":
        return DPStandardScaler(bounds=BOUNDS)
    k = int(arm.removeprefix("uniform").removeprefix("quantile"))
    if arm.startswith("uniform"):
        return DPKBinsDiscretizer(bounds=BOUNDS, n_bins=k)
    return DPKBinsDiscretizer(bounds=BOUNDS, n_bins=k, strategy="quantile", epsilon=0.05,
                              random_state=seed)  # fmt: skip


def violation(pred, s):
    rates = [pred[s == g].mean() for g in np.unique(s)]
    return max(rates) - min(rates)


def run(seeds, arms, out: Path) -> pd.DataFrame:
    data = load_adult()
    frame = data.data.dropna()
    y = data.target.loc[frame.index].to_numpy()
    s = np.asarray(data.sensitive_features.loc[frame.index]).astype(str)
    categories = {c: list(frame[c].cat.categories) for c in frame.columns if c not in BOUNDS}
    rows = []
    for seed in seeds:
        Xtr, Xte, ytr, yte, str_, ste = train_test_split(
            frame, y, s, test_size=0.25, stratify=np.char.add(s, y.astype(str)),
            random_state=seed,
        )  # fmt: skip
        for arm in arms:
            t = time.perf_counter()
            prep = features(numeric(arm, seed), categories)
            post_eps = 1.0 - (0.05 if arm.startswith("quantile") else 0.0)
            model = make_pipeline(
                prep,
                DPThresholdOptimizer(DPSGDClassifier(random_state=seed, **BASE),
                                     constraints="demographic_parity", epsilon=post_eps,
                                     random_state=seed),
            )  # fmt: skip
            model.fit(Xtr, ytr, dpthresholdoptimizer__sensitive_features=str_)
            pred = model.predict(Xte, sensitive_features=ste)
            rows.append(dict(arm=arm, seed=seed, epsilon=spent(model).epsilon,
                             error=float((pred != yte).mean()), dp_violation=violation(pred, ste),
                             seconds=time.perf_counter() - t))  # fmt: skip
            print(rows[-1], flush=True)
        for arm in ("linear", "uniform20"):
            prep = features(numeric(arm, seed), categories).fit(Xtr)
            to = ThresholdOptimizer(estimator=LogisticRegression(max_iter=2000),
                                    constraints="demographic_parity",
                                    predict_method="predict_proba")  # fmt: skip
            to.fit(prep.transform(Xtr), ytr, sensitive_features=str_)
            pred = to.predict(prep.transform(Xte), sensitive_features=ste, random_state=seed)
            rows.append(dict(arm=f"nonprivate LR+TO {arm}", seed=seed, epsilon=np.inf,
                             error=float((pred != yte).mean()), dp_violation=violation(pred, ste),
                             seconds=np.nan))  # fmt: skip
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "model_class_adult.csv", index=False)
    summary = table.groupby("arm").agg(
        seeds=("seed", "size"), epsilon=("epsilon", "max"), error=("error", "mean"),
        error_sd=("error", "std"), dp_violation=("dp_violation", "mean"),
        dp_violation_sd=("dp_violation", "std"), seconds=("seconds", "mean"),
    )  # fmt: skip
    (out / "model_class_adult.md").write_text(
        "# Binned numeric features on Adult (issue 37 probe)\n\n"
        "Generated by `python experiments/model_class_adult.py`; DPThresholdOptimizer "
        "(demographic parity) on DP-SGD logistic regression, total epsilon = 1 "
        "(`spent` of the pipeline), hard test predictions, 75/25 stratified splits.\n\n"
        + summary.to_markdown(floatfmt=".4f")
        + "\n"
    )
    print(summary.to_string())
    return table


def main() -> None:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+",
                        default=["linear", "uniform10", "uniform20", "quantile10"])  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    run(args.seeds, args.arms, args.out)


if __name__ == "__main__":
    main()
