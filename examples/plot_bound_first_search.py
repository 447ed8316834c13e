"""
State the bound, get a certified model: bound-first search from a raw frame
===========================================================================

A user has a bound (demographic-parity difference at most 0.05 on the people the
model will decide about), a privacy budget (ε = 1 in total) and a raw frame with
missing values. They do not want to choose between DP-FERMI, RaCO-DP and CGOO, or
tune λ or γ. Everything that reads the training rows is private and accounted in
one budget:

* :class:`~skfairdp.preprocessing.DPSimpleImputer` fills missing numeric values
  with a noisy clipped mean (declared bounds) and missing categories with a noisy
  most frequent value (declared categories);
* :class:`~skfairdp.preprocessing.DPStandardScaler` and
  :class:`~skfairdp.preprocessing.DPOneHotEncoder` as in the other examples;
* :class:`~skfairdp.model_selection.FairModelSearch` draws candidates (estimator
  and knob) at random, fits each privately, selects on noisy validation counts and
  certifies the selected model on rows the selection never saw
  (``certificate_``).
"""

# %%
import numpy as np
import sklearn
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

import skfairdp
import skfairdp.privacy
from skfairdp.datasets import load_adult
from skfairdp.metrics import demographic_parity_violation
from skfairdp.model_selection import FairModelSearch
from skfairdp.preprocessing import DPOneHotEncoder, DPSimpleImputer, DPStandardScaler

sklearn.set_config(enable_metadata_routing=True)  # sensitive_features reach the search

adult = load_adult()  # the raw frame (on a few thousand rows the search keeps the majority class)
X, y, sex = adult.data.copy(), adult.target.to_numpy(), adult.sensitive_features.to_numpy()
rng = np.random.default_rng(0)
for column in ("age", "hours-per-week", "workclass"):  # 5 % of these values go missing
    X.loc[rng.random(len(X)) < 0.05, column] = np.nan
print(X.isna().mean().round(3)[lambda s: s > 0])
X_train, X_test, y_train, y_test, sex_train, sex_test = train_test_split(
    X, y, sex, test_size=0.25, stratify=y, random_state=0
)

# %%
# Public facts, declared without looking at the rows: numeric ranges and the
# categories of each categorical column (the UCI documentation).
numeric = {
    "age": (17, 90), "fnlwgt": (0, 1.5e6), "education-num": (1, 16),
    "capital-gain": (0, 1e5), "capital-loss": (0, 5e3), "hours-per-week": (1, 99),
}  # fmt: skip
categorical = [c for c in X.columns if c not in numeric]
categories = [list(X[c].cat.categories) for c in categorical]
bounds = tuple(zip(*numeric.values()))
preprocess = ColumnTransformer(
    [
        ("num", make_pipeline(
            DPSimpleImputer(strategy="mean", bounds=bounds, epsilon=0.03, random_state=0),
            DPStandardScaler(bounds=bounds, epsilon=0.03, random_state=0),
        ), list(numeric)),
        ("cat", make_pipeline(
            DPSimpleImputer(strategy="most_frequent", categories=categories, epsilon=0.03,
                            random_state=0),
            DPOneHotEncoder(categories=categories),
        ), categorical),
    ]
)  # fmt: skip

# %%
# The search gets what is left of ε = 1; its default candidates are DP-FERMI,
# RaCO-DP and CGOO at the knob values that win on the zoo of tables.
search = FairModelSearch("demographic_parity", 0.05, epsilon=0.9, random_state=0)
model = make_pipeline(preprocess, search)
model.fit(X_train, y_train, sensitive_features=sex_train)

# ``strategy_``: "search" where the validation rows can show the bound, "self_bounded"
# where they cannot (small groups) and the runs drew only RaCO-DP and CGOO.
print("selected:", search.best_params_, "qualified on validation:", search.qualified_,
      "space:", search.strategy_)  # fmt: skip
print(search.certificate_)
print("total privacy spent:", skfairdp.privacy.spent(model))

# %%
# On the held-out test rows (never seen by the search), the certificate's
# interval should cover the violation (at its confidence, 0.95).
y_pred = model.predict(X_test)
print(f"test error {np.mean(y_pred != y_test):.4f}")
violation = demographic_parity_violation(y_test, y_pred, sensitive_features=sex_test)
lower, upper = search.certificate_.violation_interval
print(f"test DP violation {violation:.4f}, certified interval [{lower:.4f}, {upper:.4f}]")
