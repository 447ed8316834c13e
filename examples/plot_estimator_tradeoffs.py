"""
Each estimator's accuracy–fairness trade-off
============================================

Every fair estimator of skfairdp on the same data and the same privacy budget
(ε = 1, δ = 1e-5, record-level DP), each swept over its own fairness knob:

* :class:`~skfairdp.DPFermiClassifier`: the penalty weight λ (0–64);
* :class:`~skfairdp.RaCODPClassifier`: the tolerance γ of the constraint;
* :class:`~skfairdp.CGOOReduction`: the difference bound;

beside :class:`~skfairdp.DPSGDClassifier` and
:class:`~skfairdp.GlobalScalingDPClassifier`, which target no fairness notion.

To keep the example to a minute on 2 CPU cores it uses a 5,000-row subsample of
Adult, one seed and short training, so the curves are noisy: the benchmarks
(``skfairdp benchmark dpfermi``, ``raco``, ``cgoo``) measure them properly.
"""

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from skfairdp import (
    CGOOReduction,
    DPFermiClassifier,
    DPSGDClassifier,
    GlobalScalingDPClassifier,
    RaCODPClassifier,
)
from skfairdp.datasets import load_dataset, stratified_subsample
from skfairdp.metrics import demographic_parity_violation

X, y, s = load_dataset("adult", return_X_y_s=True)
rows = stratified_subsample(np.char.add(s.astype(str), y.astype(str)), 5000, seed=0)
X_train, X_test, y_train, y_test, s_train, s_test = train_test_split(
    X[rows], y[rows], s[rows], test_size=0.25, stratify=s[rows], random_state=0
)
common = dict(epsilon=1.0, delta=1e-5, random_state=0)

# %%
# The sweeps. Each fit spends ε = 1 on the same rows: together they cost more
# (see the example on composing privacy costs).
sweeps = {
    "DPFermiClassifier (λ)": [
        (f"{lam:g}", DPFermiClassifier(fairness_weight=lam, max_epochs=20, **common))
        for lam in (0, 4, 16, 64)
    ],
    "RaCODPClassifier (γ)": [
        (f"{g:g}", RaCODPClassifier(tolerance=g, max_epochs=20, **common)) for g in (0.02, 0.1)
    ],
    "CGOOReduction (bound)": [
        (f"{b:g}", CGOOReduction(difference_bound=b, max_iter=10, **common)) for b in (0.02, 0.1)
    ],
    "DPSGDClassifier": [("", DPSGDClassifier(max_epochs=20, **common))],
    "GlobalScalingDPClassifier": [
        ("", GlobalScalingDPClassifier(hidden_layer_sizes=(), max_epochs=20, **common))
    ],
}
results = {}
for name, fits in sweeps.items():
    points = []
    for label, clf in fits:
        tic = time.perf_counter()
        if name.startswith(("DPSGD", "GlobalScaling")):
            clf.fit(X_train, y_train)  # no group labels needed
        else:
            clf.fit(X_train, y_train, sensitive_features=s_train)
        y_pred = clf.predict(X_test)
        error = float(np.mean(y_pred != y_test))
        violation = demographic_parity_violation(y_test, y_pred, sensitive_features=s_test)
        points.append((label, error, violation))
        print(
            f"{name:28s} {label:>5s}: error {error:.3f}, DP violation {violation:.3f}, "
            f"ε spent {clf.privacy_spent_.epsilon:.3f}, {time.perf_counter() - tic:.1f} s"
        )
    results[name] = points

# %%
# Lower left is better. The fair estimators trade a little accuracy for a much
# smaller gap in positive rates; DP-SGD and Global-Adapt sit where the
# unconstrained model is.
fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
for (name, points), marker in zip(results.items(), "os^Dv"):
    labels, errors, violations = zip(*points)
    ax.plot(errors, violations, marker + "-", label=name)
    for label, e, v in points:
        if label:
            ax.annotate(label, (e, v), textcoords="offset points", xytext=(4, 3), fontsize=8)
ax.set_xlabel("test error")
ax.set_ylabel("demographic-parity violation (test)")
ax.set_title("Adult (5,000-row subsample), ε = 1, one seed")
ax.set_ylim(bottom=0)
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
plt.show()
