"""
A private pipeline in GridSearchCV, and what the whole search costs
===================================================================

Tune :class:`~skfairdp.DPFermiClassifier` in a private ``Pipeline`` with
scikit-learn's ``GridSearchCV``, and count what it all costs.

The pipeline starts from the raw Adult frame: a ``ColumnTransformer`` scales the
numeric columns with :class:`~skfairdp.preprocessing.DPStandardScaler` (noisy,
clipped moments: a private release with its own epsilon, inside the guarantee)
and one-hot encodes the categorical ones with
:class:`~skfairdp.preprocessing.DPOneHotEncoder` over the categories the UCI
documentation lists (public: costs nothing). A scikit-learn ``StandardScaler``
here would read the private rows without noise, and ``spent`` would say so
(epsilon = inf).

scikit-learn's metadata routing carries ``sensitive_features`` to the
classifier's ``fit`` (it requests them by default) and to the fairness scorer
of each validation fold. The search keeps the most accurate candidate whose
demographic-parity violation stays below 0.1.

Privacy: every fit in a grid search is a separate release from the same people.
:func:`skfairdp.privacy.spent` composes them all (every candidate on every fold,
the refit, the preprocessing steps of each) with dp-accounting. The search
itself selects on exact validation scores, which no accounting covers: for a
search inside one budget, see :class:`skfairdp.model_selection.PrivateSearchCV`
(the example on a private pipeline tuned inside one budget).

Run:  python examples/plot_pipeline_gridsearch.py   (about a minute on 2 CPU cores)
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import sklearn
import torch
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline

from skfairdp import DPFermiClassifier
from skfairdp.datasets import load_adult
from skfairdp.metrics import demographic_parity_scorer, demographic_parity_violation
from skfairdp.preprocessing import DPOneHotEncoder, DPStandardScaler
from skfairdp.privacy import spent

sklearn.set_config(enable_metadata_routing=True)
torch.set_num_threads(1)  # a logistic regression on ~100 features gains nothing from more

adult = load_adult()  # the raw frame: no statistic of the data is computed for us
X, y, sex = adult.data, adult.target.to_numpy(), adult.sensitive_features.to_numpy()
X_train, X_test, y_train, y_test, sex_train, sex_test = train_test_split(
    X, y, sex, test_size=0.25, stratify=y, random_state=0
)

# %%
# Public facts, declared without looking at the rows: the range of each numeric
# column (domain knowledge) and the values of each categorical one (adult.names).
numeric = {
    "age": (17, 90), "fnlwgt": (0, 1.5e6), "education-num": (1, 16),
    "capital-gain": (0, 1e5), "capital-loss": (0, 5e3), "hours-per-week": (1, 99),
}  # fmt: skip
categorical = [c for c in X.columns if c not in numeric]
categories = [list(X[c].cat.categories) for c in categorical]  # = the documented values
lower, upper = zip(*numeric.values())

scaler = DPStandardScaler(bounds=(lower, upper), epsilon=0.1, random_state=0)  # private
encoder = DPOneHotEncoder(categories=categories)  # public: costs nothing
preprocess = ColumnTransformer([("num", scaler, list(numeric)), ("cat", encoder, categorical)])
pipeline = make_pipeline(
    preprocess, DPFermiClassifier(epsilon=1.0, delta=1e-5, max_epochs=10, random_state=0)
)


# %%
# The search: three fairness weights, three folds, and a refit rule that keeps the
# most accurate candidate whose cross-validated DP violation is at most 0.1.


def most_accurate_fair_enough(cv_results, max_violation=0.1):
    """Refit rule: best accuracy among candidates with DP violation <= max_violation."""
    accuracy = np.asarray(cv_results["mean_test_accuracy"])
    violation = -np.asarray(cv_results["mean_test_dp"])  # the scorer returns -violation
    ok = violation <= max_violation
    return int(np.flatnonzero(ok)[np.argmax(accuracy[ok])] if ok.any() else np.argmin(violation))


search = GridSearchCV(
    pipeline,
    param_grid={"dpfermiclassifier__fairness_weight": [0.0, 2.0, 4.0]},
    scoring={"accuracy": "accuracy", "dp": demographic_parity_scorer},
    refit=most_accurate_fair_enough,
    cv=3,
)
search.fit(X_train, y_train, sensitive_features=sex_train)  # routed to fit and to "dp"

results = search.cv_results_
for i, weight in enumerate(results["param_dpfermiclassifier__fairness_weight"]):
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

# %%
# Each candidate's cross-validated accuracy against its DP violation: the refit rule
# keeps the most accurate one left of the dashed line.
fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
violations = -np.asarray(results["mean_test_dp"])
accuracies = np.asarray(results["mean_test_accuracy"])
ax.plot(violations, accuracies, "o-", color="tab:blue")
for weight, v, a in zip(
    results["param_dpfermiclassifier__fairness_weight"], violations, accuracies
):
    ax.annotate(f"fairness_weight={weight:g}", (v, a), textcoords="offset points", xytext=(6, 4))
chosen = search.best_index_
ax.plot(violations[chosen], accuracies[chosen], "*", color="tab:red", markersize=14, label="chosen")
ax.axvline(0.1, color="gray", linestyle="--", label="max violation 0.1")
ax.set_xlabel("cv demographic-parity violation")
ax.set_ylabel("cv accuracy")
ax.set_title("GridSearchCV over a private pipeline (epsilon = 1 per fit)")
ax.legend(loc="lower right")
plt.show()

# %%
# What the whole search spent.
best = search.best_estimator_
print(f"the refitted pipeline alone (scaler + classifier): {spent(best)}")
# 3 candidates x 3 folds + 1 refit = 10 pipelines; the fold fits are charged their planned
# events, so spent needs the data the search was fitted on (to size the folds)
print(f"the whole search (10 pipelines): {spent(search, X=X_train, y=y_train)}")
