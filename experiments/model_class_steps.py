"""Issue 37 probe: the DP-SGD step for 20 uniform bins on Adult (total epsilon 1).

The arms of ``model_class_adult.py`` (``uniform20``), DPThresholdOptimizer (demographic
parity) on DPSGDClassifier with other steps, batches, epochs, optimizer and budget split
(``estimator_share``), seeds 0-2. Prints tab-separated lines: setting, seed, epsilon
spent, test error, DP violation, seconds (stored in results/model_class_steps.tsv).

    python experiments/model_class_steps.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch
from model_class_adult import BOUNDS, features, numeric, violation
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from skfairdp import DPSGDClassifier
from skfairdp.datasets import load_adult
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.privacy import spent

#: (label, DPSGDClassifier settings, estimator_share of DPThresholdOptimizer)
CONFIGS = [
    ("u20 b2048 e30 lr1 sh.8", dict(batch_size=2048, max_epochs=30, lr=1.0), 0.8),
    ("u20 b2048 e30 lr2 sh.8", dict(batch_size=2048, max_epochs=30, lr=2.0), 0.8),
    ("u20 b2048 e30 lr4 sh.8", dict(batch_size=2048, max_epochs=30, lr=4.0), 0.8),
    ("u20 b4096 e30 lr4 sh.8", dict(batch_size=4096, max_epochs=30, lr=4.0), 0.8),
    ("u20 b2048 e60 lr2 sh.8", dict(batch_size=2048, max_epochs=60, lr=2.0), 0.8),
    ("u20 b2048 e30 lr2 sh.9", dict(batch_size=2048, max_epochs=30, lr=2.0), 0.9),
    ("u20 Adam b2048 e30 lr.05",
     dict(batch_size=2048, max_epochs=30, lr=0.05, optimizer=torch.optim.Adam), 0.8),
]  # fmt: skip


def main() -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    data = load_adult()
    frame = data.data.dropna()
    y = data.target.loc[frame.index].to_numpy()
    s = np.asarray(data.sensitive_features.loc[frame.index]).astype(str)
    cats = {c: list(frame[c].cat.categories) for c in frame.columns if c not in BOUNDS}
    for seed in (0, 1, 2):
        Xtr, Xte, ytr, yte, s_tr, s_te = train_test_split(
            frame, y, s, test_size=0.25, stratify=np.char.add(s, y.astype(str)),
            random_state=seed,
        )  # fmt: skip
        for label, base, share in CONFIGS:
            tic = time.perf_counter()
            post = DPThresholdOptimizer(
                DPSGDClassifier(random_state=seed, **base), constraints="demographic_parity",
                epsilon=1.0, estimator_share=share, random_state=seed,
            )  # fmt: skip
            model = make_pipeline(features(numeric("uniform20", seed), cats), post)
            model.fit(Xtr, ytr, dpthresholdoptimizer__sensitive_features=s_tr)
            pred = model.predict(Xte, sensitive_features=s_te)
            print(
                f"{label}\t{seed}\t{spent(model).epsilon:.3f}\t{np.mean(pred != yte):.4f}\t"
                f"{violation(pred, s_te):.4f}\t{time.perf_counter() - tic:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
