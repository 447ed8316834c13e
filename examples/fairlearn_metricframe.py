"""Evaluate a DPFermiClassifier with fairlearn's MetricFrame.

Fits a model with and without the fairness regulariser on the bundled UCI
Adult data (epsilon = 1, record-level DP) and compares accuracy, selection
rate and true-positive rate per sex on the held-out 25%.

Run:  python examples/fairlearn_metricframe.py   (about 15 s on 2 CPU cores)
"""

import numpy as np
import torch
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

torch.set_num_threads(1)  # a logistic regression on 102 features gains nothing from more

adult = load_adult(preprocess=True)  # 45,222 rows x 102 features; `sex` is kept apart
X = adult.data.to_numpy(dtype=np.float32)
y = adult.target.to_numpy()  # 1 = income > 50K
sex = adult.sensitive_features  # pandas Series named "sex": MetricFrame uses the name
X_train, X_test, y_train, y_test, sex_train, sex_test = train_test_split(
    X, y, sex, test_size=0.25, stratify=y, random_state=0
)

metrics = {
    "accuracy": accuracy_score,
    "selection_rate": selection_rate,
    "true_positive_rate": true_positive_rate,
}
for fairness_weight in (0.0, 3.0):
    clf = DPFermiClassifier(
        fairness_weight=fairness_weight,
        epsilon=1.0,
        delta=1e-5,
        random_state=0,  # seeded noise: fine for an experiment, not for deployment
    )
    clf.fit(X_train, y_train, sensitive_features=sex_train)  # sex is not a model input
    y_pred = clf.predict(X_test)  # predicting needs no sensitive features

    frame = MetricFrame(metrics=metrics, y_true=y_test, y_pred=y_pred, sensitive_features=sex_test)
    eps, delta = clf.privacy_spent_
    print(f"=== fairness_weight={fairness_weight:g}  (spent epsilon={eps:.3f}, delta={delta:g})")
    print(frame.by_group.round(4).to_string())
    print(f"overall:     {frame.overall.round(4).to_dict()}")
    print(f"difference:  {frame.difference().round(4).to_dict()}")
    dpd = demographic_parity_difference(y_test, y_pred, sensitive_features=sex_test)
    ours = demographic_parity_violation(y_test, y_pred, sensitive_features=sex_test)
    print(f"fairlearn demographic_parity_difference = {dpd:.4f}")
    print(f"skfairdp demographic_parity_violation   = {ours:.4f}  (the same for binary labels)")
    print()

print(
    "Demographic parity equalises selection rates, not true-positive rates; to constrain\n"
    "the TPR gap as well, fit with fairness='equal_opportunity' or 'equalized_odds'."
)
