"""
Evaluating fairness privately, with honest intervals
====================================================

The held-out rows a model is evaluated on are private too: exact group rates
on them can reveal a person's group (Hamman, Chen and Dutta, 2022). This
example trains :class:`~skfairdp.DPFermiClassifier` on the bundled Adult data
at ε = 0.8, evaluates it with :class:`~skfairdp.metrics.PrivateMetricFrame` at
ε = 0.2 (one noisy count table, every metric from it), and asks
:func:`skfairdp.privacy.spent` for the one total budget of training and
evaluation. The intervals cover the *population* value: the test split's
sampling error and the evaluation's noise together. Beside them, what
fairlearn's exact ``MetricFrame`` would have said (and released).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from fairlearn.metrics import MetricFrame, selection_rate, true_positive_rate
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split

from skfairdp import DPFermiClassifier
from skfairdp.datasets import load_dataset
from skfairdp.metrics import PrivateMetricFrame
from skfairdp.privacy import spent

X, y, s = load_dataset("adult", return_X_y_s=True)
X = np.asarray(X, dtype=np.float32)
X_train, X_test, y_train, y_test, s_train, s_test = train_test_split(
    X, y, s, test_size=0.25, stratify=s, random_state=0
)
model = DPFermiClassifier(fairness_weight=8.0, epsilon=0.8, max_epochs=5, random_state=0)
model.fit(X_train, y_train, sensitive_features=s_train)
y_pred = model.predict(X_test)

# %%
# One release of the (sex × label × prediction) table at ε = 0.2; the three
# metrics, their gaps and every interval are post-processing of it.
metrics = {
    "accuracy": accuracy_score,
    "selection_rate": selection_rate,
    "true_positive_rate": true_positive_rate,
}
frame = PrivateMetricFrame(
    metrics=metrics, y_true=y_test, y_pred=y_pred, sensitive_features=s_test,
    epsilon=0.2, random_state=0,
)  # fmt: skip
exact = MetricFrame(metrics=metrics, y_true=y_test, y_pred=y_pred, sensitive_features=s_test)
low, high = frame.interval("by_group")
print("private, by group:\n", frame.by_group.round(3).to_string())
print("95 % intervals:\n", pd.concat({"lower": low, "upper": high}, axis=1).round(3).to_string())
print("noise-dominated:\n", frame.noise_dominated.to_string())
d_low, d_high = frame.interval("difference")
print(
    pd.DataFrame({"private": frame.difference(), "lower": d_low, "upper": d_high,
                  "exact (fairlearn)": exact.difference()}).round(3).to_string()
)  # fmt: skip

# %%
# One budget for training and evaluating: the two Gaussian releases composed by
# dp-accounting (the model's ε = 0.8 and the evaluation's ε = 0.2).
total = spent([model, frame])
print(f"model: ε = {model.privacy_spent_.epsilon:.3f}; evaluation: ε = "
      f"{frame.privacy_spent_.epsilon:.3f}; together: ε = {total.epsilon:.3f} "
      f"at δ = {total.delta:g}")  # fmt: skip

# %%
# The private values with their intervals, beside fairlearn's exact values
# (black dots): the intervals hold them, and say how far the test split lets
# one read a gap between groups.
fig, axes = plt.subplots(1, 3, figsize=(10, 3.4), layout="constrained")
for ax, name in zip(axes, metrics):
    frame.by_group_plot(name, ax=ax, rot=0, color="tab:blue", alpha=0.7, title=name)
    ax.plot(range(len(exact.by_group)), exact.by_group[name], "ko", label="exact (fairlearn)")
    ax.set_xlabel("")
axes[0].legend(loc="lower right")
fig.suptitle(f"DP-FERMI on Adult (ε = 0.8), evaluated at ε = 0.2: total ε = {total.epsilon:.2f}")
plt.show()
