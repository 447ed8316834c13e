"""scikit-learn estimator checks for RaCODPClassifier."""

import numpy as np
import pytest
from sklearn.utils import check_array
from sklearn.utils.estimator_checks import parametrize_with_checks

from skfairdp.raco import RaCODPClassifier


class FirstColumnGroupsRaCO(RaCODPClassifier):
    """TEST-ONLY: groups are the lower/upper half of X's first column when none are given.

    scikit-learn's checks never pass ``sensitive_features``; this lets them
    exercise the constrained path (histogram, weights, dual). Invalid X passes
    through untouched so that ``fit`` raises the validation error the checks expect.
    """

    def fit(self, X, y, *, sensitive_features=None):
        if sensitive_features is None:
            try:
                column = check_array(X, dtype=np.float64, accept_sparse="csc")[:, [0]]
                column = np.asarray(column.todense() if hasattr(column, "todense") else column)
                column = column.ravel()
            except Exception:
                column = None
            if column is not None:
                rank = np.argsort(np.argsort(column, kind="stable"), kind="stable")
                sensitive_features = (rank >= len(column) // 2).astype(int)
        return super().fit(X, y, sensitive_features=sensitive_features)


EXPECTED_FAILED_CHECKS = {
    # As for DPFermiClassifier (tests/test_sklearn_integration.py): **kwargs only
    # routes module__*/optimizer__* parameters, so the literal `kwargs=` name the
    # check passes is rejected like any unknown keyword.
    "check_do_not_raise_errors_in_init_or_set_params": (
        "**kwargs only routes module__*/optimizer__* parameters; a literal `kwargs=` "
        "argument is not a parameter and is rejected like any unknown keyword"
    ),
}

# The unconstrained instance (a FNR bound of 1 never binds) needs no groups. Private
# instances use batch_size >= n (sampling rate 1: closed-form accounting, fast);
# test_raco.py covers Poisson sampling.
CHECKED = [
    RaCODPClassifier(
        constraints="false_negative_rate", tolerance=1.0, epsilon=np.inf, lr=0.5,
        max_epochs=10, random_state=0,
    ),
    FirstColumnGroupsRaCO(tolerance=0.5, epsilon=np.inf, lr=0.5, max_epochs=10, random_state=0),
    FirstColumnGroupsRaCO(
        tolerance=0.5, epsilon=8, lr=0.5, max_epochs=10, batch_size=1024, random_state=0
    ),
]  # fmt: skip


@parametrize_with_checks(CHECKED, expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_expected_failure_still_fails():
    from sklearn.utils.estimator_checks import check_do_not_raise_errors_in_init_or_set_params

    with pytest.raises(TypeError, match="kwargs"):
        check_do_not_raise_errors_in_init_or_set_params("RaCODPClassifier", RaCODPClassifier())
