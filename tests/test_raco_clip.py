"""RaCO-DP's clip on a large table with a small group (issue 34: HI, the zoo's clip probe).

One seeded fit (deterministic): the HI zoo table, split 0 (16,575 training rows, Black 5.6 %),
demographic parity, tolerance 0.02, epsilon = 1, the run alone (``enforce_tolerance=False``).
With the former clip rule (``n * epsilon / 5,000``: C = 3.3) the run ended at a training gap
of 0.047 with 43 % positives against a base rate of 34 %: the minority rows' large weights
were clipped, and the majority's unclipped push raised everyone's rate. With the rule's
slope at 6e-4 (C = 9.9), 0.021 at the base rate.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

from skfairdp import RaCODPClassifier
from skfairdp.fairness.metrics import demographic_parity_violation

sys.path.insert(0, str(Path(__file__).parents[1] / "experiments"))


def test_hi_private_run_meets_a_small_tolerance_at_the_base_rate():
    zoo = pytest.importorskip("zoo")
    Xtr, _, ytr, _, s_tr, _ = zoo.split("hi", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = RaCODPClassifier(
            "demographic_parity", 0.02, epsilon=1.0, random_state=0, enforce_tolerance=False
        ).fit(Xtr, ytr, sensitive_features=s_tr)
    assert est.max_grad_norm_ == pytest.approx(len(ytr) * 6e-4)
    pred = est.predict(Xtr)
    assert demographic_parity_violation(ytr, pred, sensitive_features=s_tr) <= 0.03
    assert abs(pred.mean() - ytr.mean()) <= 0.03
