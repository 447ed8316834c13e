"""
Fairness by group with fairlearn's MetricFrame
==============================================

Fit :class:`~skfairdp.DPFermiClassifier` in a private pipeline from the raw
UCI Adult frame, with and without its fairness penalty (ε = 1 for the classifier
and 0.1 for the scaler, record-level DP), then compare accuracy,
selection rate and true-positive rate per sex on the held-out 25 % with
fairlearn's :class:`~fairlearn.metrics.MetricFrame`, and plot them by group.

Predicting needs no sensitive features: ``sex`` is used at ``fit`` time only,
and for evaluation.
"""

# %%
# Data: the raw Adult frame, 45,222 rows of numeric and categorical columns;
# ``sex`` is kept apart from the features. The preprocessing is part of each
# private pipeline below: a :class:`~skfairdp.preprocessing.DPStandardScaler` on
# declared bounds (noisy, clipped means and variances: ε = 0.1) and a
# :class:`~skfairdp.preprocessing.DPOneHotEncoder` over the categories the data's
# documentation lists (public: free). ``load_adult(preprocess=True)`` would
# z-score with statistics of the whole table, outside any privacy guarantee.
import matplotlib.pyplot as plt
import pandas as pd
import sklearn
from fairlearn.metrics import (
    MetricFrame,
    demographic_parity_difference,
    selection_rate,
    true_positive_rate,
)
from sklearn.compose import make_column_transformer
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from skfairdp import DPFermiClassifier
from skfairdp.datasets import load_adult
from skfairdp.metrics import demographic_parity_violation
from skfairdp.preprocessing import DPOneHotEncoder, DPStandardScaler
from skfairdp.privacy import spent

sklearn.set_config(enable_metadata_routing=True)  # sensitive_features reach the fit

adult = load_adult()  # the raw frame: no statistic of the rows is computed for us
X, y = adult.data, adult.target.to_numpy()  # 1 = income > 50K
sex = adult.sensitive_features  # a pandas Series named "sex": MetricFrame uses the name
X_train, X_test, y_train, y_test, sex_train, sex_test = train_test_split(
    X, y, sex, test_size=0.25, stratify=y, random_state=0
)

# Public facts, declared without looking at the rows: the range of each numeric
# column (domain knowledge) and the values of each categorical one (adult.names).
numeric = {
    "age": (17, 90), "fnlwgt": (0, 1.5e6), "education-num": (1, 16),
    "capital-gain": (0, 1e5), "capital-loss": (0, 5e3), "hours-per-week": (1, 99),
}  # fmt: skip
categorical = [c for c in X.columns if c not in numeric]
lower, upper = zip(*numeric.values())


def private_pipeline(classifier):
    """Private scaling (ε = 0.1) and public one-hot encoding, then the classifier."""
    preprocess = make_column_transformer(
        (DPStandardScaler(bounds=(lower, upper), epsilon=0.1, random_state=0), list(numeric)),
        (DPOneHotEncoder(categories=[list(X[c].cat.categories) for c in categorical]), categorical),
    )
    return make_pipeline(preprocess, classifier)


# %%
# Two private pipelines: no penalty (λ = 0) and λ = 16. Ten epochs keep the
# example fast; the defaults train longer. Each pipeline is a separate release
# from the same people: together they cost more than one (see the example on
# composing privacy costs).
metrics = {
    "accuracy": accuracy_score,
    "selection_rate": selection_rate,
    "true_positive_rate": true_positive_rate,
}
frames = {}
for fairness_weight in (0.0, 16.0):
    clf = private_pipeline(
        DPFermiClassifier(
            fairness_weight=fairness_weight,
            epsilon=1.0,  # delta="auto": 0.1 / n, as the scaler's
            max_epochs=10,
            random_state=0,  # seeded noise: fine for an experiment, not for deployment
        )
    )
    clf.fit(X_train, y_train, sensitive_features=sex_train)  # groups: training only
    y_pred = clf.predict(X_test)  # predicting needs no sensitive features
    frame = MetricFrame(metrics=metrics, y_true=y_test, y_pred=y_pred, sensitive_features=sex_test)
    frames[f"λ = {fairness_weight:g}"] = frame
    eps, delta = spent(clf)  # the scaler's and the classifier's releases, composed
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
