"""scikit-learn's estimator checks for PrivateSearchCV, GroupEncoder and DPOneHotEncoder.

Issue 38 item 12. Every expected failure is declared with its reason
(``expected_failed_checks``); a check that starts passing fails the test (strict xfail).
"""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from skfairdp import DPSGDClassifier
from skfairdp.fairness import GroupEncoder
from skfairdp.model_selection import PrivateSearchCV
from skfairdp.preprocessing import DPOneHotEncoder

pytestmark = pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")

# As tests/test_common.py's private instances: full batches (closed-form accounting),
# max_sample_weight=10 for the weight checks, lr=0.5 for check_classifiers_train's bar.
SEARCH = PrivateSearchCV(
    DPSGDClassifier(max_sample_weight=10, max_epochs=10, batch_size=1024),
    {"lr": [0.5]}, epsilon=8.0, n_candidates_mean=1.0, random_state=0,
)  # fmt: skip
SEARCH_EXPECTED = {
    "check_classifiers_one_label_sample_weights": (
        "10 rows, 8 of them trained on, 4 of weight 1 and 4 of weight 0, against noise "
        "calibrated for max_sample_weight=10 at the search's inner epsilon: whether every "
        "prediction is the one weighted class depends on the noise draw (1 of 4 seeds)"
    ),
}

_PRODUCT = (
    "the checks fit on continuous float columns: every distinct value is a category and "
    "the groups are the product of the columns' categories, so nearly every joint group "
    "is empty, which GroupEncoder refuses (allow_empty_groups=False), or a domain too "
    "large to hold"
)
GROUP_EXPECTED = {
    **dict.fromkeys(
        [
            "check_dict_unchanged",
            "check_dont_overwrite_parameters",
            "check_dtype_object",
            "check_estimators_dtypes",
            "check_estimators_fit_returns_self",
            "check_estimators_nan_inf",
            "check_estimators_overwrite_params",
            "check_estimators_pickle",
            "check_f_contiguous_array_estimator",
            "check_fit2d_predict1d",
            "check_fit_check_is_fitted",
            "check_fit_idempotent",
            "check_fit_score_takes_y",
            "check_methods_sample_order_invariance",
            "check_methods_subset_invariance",
            "check_n_features_in",
            "check_n_features_in_after_fitting",
            "check_pipeline_consistency",
            "check_positive_only_tag_during_fit",
            "check_readonly_memmap_input",
            "check_transformer_data_not_an_array",
            "check_transformer_general",
            "check_transformer_preserve_dtypes",
        ],
        _PRODUCT,
    ),  # fmt: skip
    "check_fit1d": "a 1-D array is one sensitive attribute (fairlearn's format), by design",
    "check_fit2d_1sample": "one row is one group: the error says 'single group'",
    "check_complex_data": "complex numbers are hashable category labels; none is computed on",
    "check_estimators_empty_data_messages": (
        "a (12, 0) input is refused as 'expected >= 1 attribute column', not in sklearn's words"
    ),
    **dict.fromkeys(
        [
            "check_estimator_sparse_array",
            "check_estimator_sparse_matrix",
            "check_estimator_sparse_tag",
        ],
        "sensitive features are columns of labels; a sparse matrix is refused with an "
        "error that does not use the word 'sparse'",
    ),  # fmt: skip
}

ONE_HOT_EXPECTED = dict.fromkeys(
    [
        "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object",
        "check_estimators_dtypes", "check_estimators_fit_returns_self",
        "check_estimators_overwrite_params", "check_estimators_pickle",
        "check_f_contiguous_array_estimator", "check_fit2d_1sample", "check_fit2d_predict1d",
        "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y",
        "check_methods_sample_order_invariance", "check_methods_subset_invariance",
        "check_n_features_in", "check_n_features_in_after_fitting",
        "check_pipeline_consistency", "check_positive_only_tag_during_fit",
        "check_readonly_memmap_input", "check_transformer_data_not_an_array",
        "check_transformer_general", "check_transformer_preserve_dtypes",
    ],
    "categories declares the public domain of each column (here one column, [0, 1, 2]); "
    "the checks fit on 2 to 10 continuous columns, which the declaration refuses: learning "
    "the width or the values from X would read the private rows",
)  # fmt: skip

EXPECTED = {
    "PrivateSearchCV": SEARCH_EXPECTED,
    "GroupEncoder": GROUP_EXPECTED,
    "DPOneHotEncoder": ONE_HOT_EXPECTED,
}


@parametrize_with_checks(
    [SEARCH, GroupEncoder(), DPOneHotEncoder(categories=[[0, 1, 2]])],
    expected_failed_checks=lambda est: EXPECTED[type(est).__name__],
)
def test_sklearn_checks(estimator, check):
    check(estimator)


def test_search_refuses_infinite_epsilon_with_the_reason():
    # documented (the epsilon parameter, doc/model_selection.md): a non-private search
    # is scikit-learn's GridSearchCV on the estimator at epsilon=np.inf
    with pytest.raises(ValueError, match=r"'epsilon' parameter of PrivateSearchCV.*Got inf"):
        PrivateSearchCV(DPSGDClassifier(), {"lr": [0.1]}, epsilon=np.inf).fit(
            np.zeros((10, 2)), np.arange(10) % 2
        )
