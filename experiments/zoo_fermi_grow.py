"""The zoo's protocol for DP-FERMI under the probe clip rule ``grow`` (issue 34; not a default).

``grow`` keeps the loss's share of the split clip at the auto ``C`` where the table affords
it: ``C = max(C_auto, min(C_auto / (1 - share), n epsilon 5e-4))``, ``share`` the penalty's
share of the clip at the fit's lambda (``penalty_clip_share``). Everything else is
``zoo.py``: the same tables, splits, seeds and report. The rows go to their own CSV; judge
them with ``zoo.py compare experiments/results/zoo.csv <csv with the dpfermi rows replaced>``.

    python experiments/zoo_fermi_grow.py run --methods dpfermi --jobs 2 \\
        --csv experiments/results/zoo_dpfermi_grow.csv
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import zoo  # noqa: E402

import skfairdp._fit.schedules as schedules  # noqa: E402
from skfairdp import DPFermiClassifier  # noqa: E402
from skfairdp.fermi.problem import penalty_clip_share  # noqa: E402

_fit = DPFermiClassifier.fit


def grow_clip(n_samples: int, epsilon: float, fairness_weight: float) -> float:
    """The ``grow`` rule's ``max_grad_norm`` for ``n_samples`` training rows."""
    auto = schedules.fermi_max_grad_norm(n_samples, epsilon, "record")
    share = penalty_clip_share(fairness_weight)
    return max(auto, min(auto / (1.0 - share), n_samples * epsilon * 5e-4))


def _fit_grow(self, X, y, sensitive_features=None, **kwargs):
    self.max_grad_norm = grow_clip(len(y), self.epsilon, self.fairness_weight)
    return _fit(self, X, y, sensitive_features=sensitive_features, **kwargs)


if __name__ == "__main__":
    DPFermiClassifier.fit = _fit_grow  # worker processes are forked with it
    zoo.main(sys.argv[1:])
