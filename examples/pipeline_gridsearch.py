"""Tune DPFermiClassifier in a Pipeline with GridSearchCV, and count what the search costs.

scikit-learn's metadata routing carries ``sensitive_features`` to the
classifier's ``fit`` (it requests them by default) and to the fairness scorer
of each validation fold. The search keeps the most accurate candidate whose
demographic-parity violation stays below 0.1.

Privacy: every fit in a grid search is a separate release from the same people,
and each one spends its own (epsilon, delta). Below, every fit's ``dp_event_``
is recorded and the events are composed with dp-accounting to get the privacy
cost of the whole search (an upper bound: it counts every person in every fit).

Run:  python examples/pipeline_gridsearch.py   (about 25 s on 2 CPU cores)
"""

import dp_accounting
import numpy as np
import sklearn
import torch
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfairdp import DPFermiClassifier
from skfairdp.datasets import load_adult
from skfairdp.metrics import demographic_parity_scorer, demographic_parity_violation
from skfairdp.privacy import epsilon_spent

sklearn.set_config(enable_metadata_routing=True)
torch.set_num_threads(1)  # a logistic regression on 102 features gains nothing from more


class RecordingDPFermiClassifier(DPFermiClassifier):
    """DPFermiClassifier that keeps the ``dp_event_`` of every fit (in a class attribute).

    GridSearchCV clones the estimator for each fit and keeps only the refitted
    best one, so the events are collected here to be composed afterwards.
    """

    events: list = []

    def fit(self, X, y, *, sensitive_features=None):
        super().fit(X, y, sensitive_features=sensitive_features)
        type(self).events.append(self.dp_event_)
        return self


adult = load_adult(preprocess=True)
X = adult.data.to_numpy(dtype=np.float32)
y = adult.target.to_numpy()
sex = adult.sensitive_features.to_numpy()
X_train, X_test, y_train, y_test, sex_train, sex_test = train_test_split(
    X, y, sex, test_size=0.25, stratify=y, random_state=0
)

# NB: StandardScaler is fitted on the (private) training rows and its means and
# scales are NOT accounted for by the classifier's privacy guarantee. Fit it on
# public data, or use bounds known in advance, when that matters.
pipeline = make_pipeline(
    StandardScaler(),
    RecordingDPFermiClassifier(epsilon=1.0, delta=1e-5, max_epochs=10, random_state=0),
)


def most_accurate_fair_enough(cv_results, max_violation=0.1):
    """Refit rule: best accuracy among candidates with DP violation <= max_violation."""
    accuracy = np.asarray(cv_results["mean_test_accuracy"])
    violation = -np.asarray(cv_results["mean_test_dp"])  # the scorer returns -violation
    ok = violation <= max_violation
    return int(np.flatnonzero(ok)[np.argmax(accuracy[ok])] if ok.any() else np.argmin(violation))


search = GridSearchCV(
    pipeline,
    param_grid={"recordingdpfermiclassifier__fairness_weight": [0.0, 2.0, 4.0]},
    scoring={"accuracy": "accuracy", "dp": demographic_parity_scorer},
    refit=most_accurate_fair_enough,
    cv=3,
)
search.fit(X_train, y_train, sensitive_features=sex_train)  # routed to fit and to "dp"

results = search.cv_results_
for i, weight in enumerate(results["param_recordingdpfermiclassifier__fairness_weight"]):
    print(
        f"fairness_weight={weight:g}: cv accuracy {results['mean_test_accuracy'][i]:.4f}, "
        f"cv DP violation {-results['mean_test_dp'][i]:.4f}"
    )
print(f"chosen (most accurate with cv DP violation <= 0.1): {search.best_params_}")
y_pred = search.predict(X_test)
print(
    f"test accuracy {np.mean(y_pred == y_test):.4f}, test DP violation "
    f"{demographic_parity_violation(y_test, y_pred, sensitive_features=sex_test):.4f}"
)

# --- what the whole search spent --------------------------------------------------
best = search.best_estimator_[-1]
events = RecordingDPFermiClassifier.events  # 3 candidates x 3 folds + 1 refit = 10 fits
total = epsilon_spent(dp_accounting.ComposedDpEvent(events), 1e-5, privacy_unit="record")
print(f"one fit: epsilon={best.privacy_spent_.epsilon:.3f} at delta=1e-5")
print(f"all {len(events)} fits of the search composed: epsilon={total.epsilon:.3f} at delta=1e-5")
