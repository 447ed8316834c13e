"""
Composing privacy costs
=======================

Every private fit is a release about the same people, and each one spends its
own ``(epsilon, delta)``. This example fits a few models on the same rows and
asks :func:`skfairdp.privacy.spent` what the whole workflow cost:

* two fits (say, one per fairness weight) composed;
* a ``GridSearchCV``: **every candidate on every fold, plus the refit**;
* a ``Pipeline`` whose ``StandardScaler`` read the private rows without noise:
  its cost is infinite, which is the honest answer.

Composition is done by dp-accounting on the fits' ``dp_event_`` (an RDP or PLD
accountant), which is tighter than adding the epsilons.
"""

# %%
import matplotlib.pyplot as plt
import sklearn
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfairdp import DPFermiClassifier
from skfairdp.datasets import load_dataset
from skfairdp.metrics import demographic_parity_scorer
from skfairdp.privacy import spent

sklearn.set_config(enable_metadata_routing=True)  # routes sensitive_features

X, y, s = load_dataset("adult-2k", return_X_y_s=True)
X_train, X_test, y_train, y_test, s_train, s_test = train_test_split(
    X, y, s, test_size=0.25, stratify=s, random_state=0
)
params = dict(epsilon=1.0, delta=1e-5, max_epochs=5, random_state=0)

# %%
# Two fits on the same rows.
fits = [
    DPFermiClassifier(fairness_weight=lam, **params).fit(
        X_train, y_train, sensitive_features=s_train
    )
    for lam in (0.0, 16.0)
]
for clf in fits:
    print(f"λ={clf.fairness_weight:g}: ε = {clf.privacy_spent_.epsilon:.3f}")
both = spent(fits)
naive = sum(c.privacy_spent_.epsilon for c in fits)
print(f"both fits, composed: ε = {both.epsilon:.3f}  (naive sum of epsilons: {naive:.3f})")

# %%
# A grid search over three weights with 3-fold cross-validation: 3 × 3 fold fits
# and the refit, 10 releases. ``spent`` needs the data the search saw, to size
# the folds; it charges each fold fit its planned event.
search = GridSearchCV(
    DPFermiClassifier(**params),
    param_grid={"fairness_weight": [0.0, 4.0, 16.0]},
    scoring={"accuracy": "accuracy", "dp": demographic_parity_scorer},
    refit="accuracy",
    cv=3,
)
search.fit(X_train, y_train, sensitive_features=s_train)
whole = spent(search, X=X_train, y=y_train)
refit = search.best_estimator_.privacy_spent_.epsilon
print(f"best: {search.best_params_}; the refit alone: ε = {refit:.3f}")
print(f"the whole search (9 fold fits + refit): ε = {whole.epsilon:.3f}")

# %%
# A pipeline whose scaler was fitted on the private rows is not covered: its
# cost is infinite. Use public bounds or the private scalers of
# ``skfairdp.preprocessing`` instead.
leaky = make_pipeline(StandardScaler(), DPFermiClassifier(**params))
leaky.fit(X_train, y_train, sensitive_features=s_train)
print(f"StandardScaler + DPFermiClassifier: ε = {spent(leaky).epsilon}")

# %%
# What each workflow spent, at δ = 1e-5.
labels = [
    "one fit",
    "two fits",
    f"grid search\n({len(search.cv_results_['params'])}×3 folds + refit)",
]
values = [fits[0].privacy_spent_.epsilon, both.epsilon, whole.epsilon]
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
ax.bar(labels, values, color=["tab:blue", "tab:orange", "tab:red"])
for i, v in enumerate(values):
    ax.text(i, v, f"ε = {v:.2f}", ha="center", va="bottom")
ax.set_ylabel("ε spent (δ = 1e-5)")
ax.set_title("The cost of a workflow is the composition of its fits")
plt.show()
