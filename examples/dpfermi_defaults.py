"""
DPFermiClassifier's defaults against nearby values
==================================================

How :class:`~skfairdp.DPFermiClassifier`'s defaults compare with nearby values, on
Adult at epsilon = 1. Changes one training parameter at a time (learning rate, batch
size, epochs, clipping norm, W step size lr_dual) and reports test accuracy and
demographic-parity violation for fairness_weight 0, 4 and 8, averaged over two seeds
(split and noise), at epsilon = 1, delta = 1e-5, privacy_unit = "record". This produces
the table in :doc:`/dpfermi` (section "How the defaults were chosen"); the documentation
build does not run it.

Run:  python examples/dpfermi_defaults.py   (about 8 minutes on 2 CPU cores)
"""

# The gallery shows the "auto" schedule this example checks (doc/dpfermi.md's table):
# sphinx_gallery_thumbnail_path = "_static/thumbnails/dpfermi_defaults.png"

import time

import numpy as np
import torch
from sklearn.model_selection import train_test_split

from skfairdp import DPFermiClassifier
from skfairdp.datasets import load_adult
from skfairdp.metrics import demographic_parity_violation

torch.set_num_threads(1)

SEEDS = (0, 1)
WEIGHTS = (0.0, 4.0, 8.0)
VARIANTS = [
    {},
    {"lr": 0.02},
    {"lr": 0.5},
    {"batch_size": 64},
    {"batch_size": 1024},
    {"max_epochs": 20},
    {"max_epochs": 80},
    {"max_grad_norm": 0.3},
    {"max_grad_norm": 3.0},
    {"lr_dual": 0.2},  # the former fixed default: unstable once lr_dual * fairness_weight > 1
]

adult = load_adult(preprocess=True)
X = adult.data.to_numpy(dtype=np.float32)
y = adult.target.to_numpy()
s = adult.sensitive_features.to_numpy()
splits = {
    seed: train_test_split(X, y, s, test_size=0.25, stratify=y, random_state=seed) for seed in SEEDS
}

print("| change from the defaults | " + " | ".join(
    f"λ={w:g} accuracy | λ={w:g} DP violation" for w in WEIGHTS
) + " | seconds per fit |")  # fmt: skip
print("|---|" + "---:|" * (2 * len(WEIGHTS) + 1))
for variant in VARIANTS:
    cells, seconds = [], []
    for weight in WEIGHTS:
        accuracy, violation = [], []
        for seed in SEEDS:
            X_train, X_test, y_train, y_test, s_train, s_test = splits[seed]
            params = {"epsilon": 1.0, "delta": 1e-5, "random_state": seed, **variant}
            clf = DPFermiClassifier(fairness_weight=weight, **params)
            tic = time.perf_counter()
            clf.fit(X_train, y_train, sensitive_features=s_train)
            seconds.append(time.perf_counter() - tic)
            y_pred = clf.predict(X_test)
            accuracy.append(np.mean(y_pred == y_test))
            violation.append(
                demographic_parity_violation(y_test, y_pred, sensitive_features=s_test)
            )
        cells += [f"{np.mean(accuracy):.4f}", f"{np.mean(violation):.4f}"]
    name = ", ".join(f"{k}={v}" for k, v in variant.items()) or "(defaults)"
    print(f"| {name} | " + " | ".join(cells) + f" | {np.mean(seconds):.1f} |", flush=True)
