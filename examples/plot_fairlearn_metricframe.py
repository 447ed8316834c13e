"""
Fairness by group with fairlearn's MetricFrame
==============================================

Fit :class:`~skfairdp.DPFermiClassifier` on the bundled UCI Adult data with and
without its fairness penalty (ε = 1, record-level DP), then compare accuracy,
selection rate and true-positive rate per sex on the held-out 25 % with
fairlearn's :class:`~fairlearn.metrics.MetricFrame`, and plot them by group.

Predicting needs no sensitive features: ``sex`` is used at ``fit`` time only,
and for evaluation.
"""

# %%
# Data: 45,222 rows × 102 features; ``sex`` is kept apart from the features.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from fairlearn.metrics import (
    MetricFrame,
    demographic_parity_difference,
    selection_rate,
    true_positive_rate,
)
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split

from skfairdp import DPFermiClassifier
from skfairdp.datasets import load_adult
from skfairdp.metrics import demographic_parity_violation

adult = load_adult(preprocess=True)  # z-scoring outside the guarantee: see the privacy page
X = adult.data.to_numpy(dtype=np.float32)
y = adult.target.to_numpy()  # 1 = income > 50K
sex = adult.sensitive_features  # a pandas Series named "sex": MetricFrame uses the name
X_train, X_test, y_train, y_test, sex_train, sex_test = train_test_split(
    X, y, sex, test_size=0.25, stratify=y, random_state=0
)

# %%
# Two private fits: no penalty (λ = 0) and λ = 16. Ten epochs keep the example
# fast; the defaults train longer.
metrics = {
    "accuracy": accuracy_score,
    "selection_rate": selection_rate,
    "true_positive_rate": true_positive_rate,
}
frames = {}
for fairness_weight in (0.0, 16.0):
    clf = DPFermiClassifier(
        fairness_weight=fairness_weight,
        epsilon=1.0,
        delta=1e-5,
        max_epochs=10,
        random_state=0,  # seeded noise: fine for an experiment, not for deployment
    )
    clf.fit(X_train, y_train, sensitive_features=sex_train)
    y_pred = clf.predict(X_test)
    frame = MetricFrame(metrics=metrics, y_true=y_test, y_pred=y_pred, sensitive_features=sex_test)
    frames[f"λ = {fairness_weight:g}"] = frame
    eps, delta = clf.privacy_spent_
    print(f"=== fairness_weight={fairness_weight:g}  (spent epsilon={eps:.3f}, delta={delta:g})")
    print(frame.by_group.round(4).to_string())
    print(f"difference:  {frame.difference().round(4).to_dict()}")
    dpd = demographic_parity_difference(y_test, y_pred, sensitive_features=sex_test)
    ours = demographic_parity_violation(y_test, y_pred, sensitive_features=sex_test)
    print(f"fairlearn demographic_parity_difference = {dpd:.4f}; skfairdp's = {ours:.4f}")

# %%
# The metrics by group, side by side. Demographic parity equalises selection
# rates, not true-positive rates: to constrain the TPR gap as well, fit with
# ``fairness="equal_opportunity"`` or ``"equalized_odds"``.
by_group = pd.concat({name: f.by_group for name, f in frames.items()}, names=["model"])
fig, axes = plt.subplots(1, 3, figsize=(10, 3.2), layout="constrained")
for ax, metric in zip(axes, metrics):
    by_group[metric].unstack("sex").plot.bar(ax=ax, rot=0, legend=ax is axes[0])
    ax.set_title(metric.replace("_", " "))
    ax.set_xlabel("")
fig.suptitle("DPFermiClassifier on Adult at ε = 1, by sex (test split)")
plt.show()
