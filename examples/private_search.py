"""Tune a private fair pipeline inside one budget with PrivateSearchCV.

From the raw Adult frame to a chosen model, everything that reads the training
rows is inside one stated (epsilon, delta) = (1, 1e-5):

- the private ``DPStandardScaler`` (noisy clipped moments) and the public
  ``DPOneHotEncoder`` (categories from the UCI documentation) of every run;
- every run's DP-FERMI fit, at the inner budget the search calibrates;
- every run's noisy validation counts (accuracy and demographic parity);
- the choice of the run (Papernot & Steinke's random stopping: the number of runs
  is random and secret, only the best run is released).

The search keeps the most accurate run whose noisy DP violation is at most 0.05
(or, if no run meets it, the run with the smallest noisy violation).

Run:  python examples/private_search.py   (about two minutes on 2 CPU cores)
"""

import numpy as np
import torch
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from skfairdp import DPFermiClassifier
from skfairdp.datasets import load_adult
from skfairdp.metrics import demographic_parity_violation
from skfairdp.model_selection import PrivateSearchCV
from skfairdp.preprocessing import DPOneHotEncoder, DPStandardScaler
from skfairdp.privacy import spent

torch.set_num_threads(1)

adult = load_adult()  # the raw frame
X, y, sex = adult.data, adult.target.to_numpy(), adult.sensitive_features.to_numpy()
X_train, X_test, y_train, y_test, sex_train, sex_test = train_test_split(
    X, y, sex, test_size=0.25, stratify=y, random_state=0
)
numeric = {
    "age": (17, 90), "fnlwgt": (0, 1.5e6), "education-num": (1, 16),
    "capital-gain": (0, 1e5), "capital-loss": (0, 5e3), "hours-per-week": (1, 99),
}  # fmt: skip
categorical = [c for c in X.columns if c not in numeric]
lower, upper = zip(*numeric.values())
preprocess = ColumnTransformer(
    [
        ("num", DPStandardScaler(bounds=(lower, upper), epsilon=0.05), list(numeric)),
        ("cat", DPOneHotEncoder(categories=[list(X[c].cat.categories) for c in categorical]),
         categorical),
    ]
)  # fmt: skip
pipeline = make_pipeline(preprocess, DPFermiClassifier(max_epochs=10))

search = PrivateSearchCV(
    pipeline,
    {"dpfermiclassifier__fairness_weight": [2.0, 4.0, 8.0], "dpfermiclassifier__lr": [0.1, 0.3]},
    fairness="demographic_parity",
    max_violation=0.05,
    epsilon=1.0,
    delta=1e-5,
    n_candidates_mean=3,
    random_state=0,
)
search.fit(X_train, y_train, sensitive_features=sex_train)

met = search.cv_results_["meets_bound"][0]
print(f"chosen: {search.best_params_} ({'meets' if met else 'no run met'} the noisy bound)")
print(
    f"released noisy validation accuracy {search.best_score_:.4f}, "
    f"noisy DP violation {search.best_violation_:.4f}"
)
print(f"each run's classifier got epsilon={search.inner_epsilon_:.3f}")
print(f"the whole search: {search.privacy_spent_} (== spent(search): {spent(search)})")
y_pred = search.predict(X_test)
print(
    f"test accuracy {np.mean(y_pred == y_test):.4f}, test DP violation "
    f"{demographic_parity_violation(y_test, y_pred, sensitive_features=sex_test):.4f}"
)
