"""Issue 37 probe: do 20 uniform bins help DPThresholdOptimizer on small zoo tables?

DPThresholdOptimizer (demographic parity, total epsilon 1) on ``DPSGDClassifier`` (batch
and epochs ``auto``), 75/25 splits stratified by (group, label), seeds 0-2. Arms: the zoo's
encoded features (``linear``), or its non-binary columns (z-scores) cut into 20 uniform
bins of [-3, 3] (``bins20``, lr 1 or 4). Prints tab-separated lines: table, arm, seed,
epsilon spent, test error, DP violation, seconds (stored in results/model_class_zoo.tsv).

    python experiments/model_class_zoo.py german bank-marketing communities-crime
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import torch
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from zoo_tables import load_zoo_table

from skfairdp import DPSGDClassifier
from skfairdp.metrics import demographic_parity_violation
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.preprocessing import DPKBinsDiscretizer
from skfairdp.privacy import spent


def main(names: list[str]) -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    for name in names:
        table = load_zoo_table(name)
        X, y = np.asarray(table.data, float), np.asarray(table.target)
        s = np.asarray(table.sensitive_features).astype(str)
        cont = [j for j in range(X.shape[1]) if len(np.unique(X[:, j])) > 2]
        other = [j for j in range(X.shape[1]) if j not in cont]
        for seed in (0, 1, 2):
            Xtr, Xte, ytr, yte, s_tr, s_te = train_test_split(
                X, y, s, test_size=0.25, stratify=np.char.add(s, y.astype(str)),
                random_state=seed,
            )  # fmt: skip
            for arm, lr in (("linear", 1.0), ("bins20", 1.0), ("bins20", 4.0)):
                prep = "passthrough"
                if arm == "bins20":
                    bins = DPKBinsDiscretizer(bounds=(-3.0, 3.0), n_bins=20)
                    prep = ColumnTransformer([("num", bins, cont), ("rest", "passthrough", other)])
                base = DPSGDClassifier(lr=lr, random_state=seed)
                model = make_pipeline(
                    prep, DPThresholdOptimizer(base, epsilon=1.0, random_state=seed)
                )
                tic = time.perf_counter()
                model.fit(Xtr, ytr, dpthresholdoptimizer__sensitive_features=s_tr)
                pred = model.predict(Xte, sensitive_features=s_te)
                dp = demographic_parity_violation(yte, pred, sensitive_features=s_te)
                print(
                    f"{name}\t{arm} lr{lr:g}\t{seed}\t{spent(model).epsilon:.3f}\t"
                    f"{np.mean(pred != yte):.4f}\t{dp:.4f}\t{time.perf_counter() - tic:.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv[1:])
