"""DP-FERMI's prior warning on a tiny table (issue 38 item 9).

On 50 rows the noisy group histogram's standard deviation (about 45 counts at
epsilon=1) is as large as the table: a group holding half the rows can read as
fraction 0. The warning must say that this is noise, not advise merging the group.
"""

import warnings

import numpy as np
import pytest

from skfairdp.fermi.priors import _normalised, check_min_group_fraction


def test_noisy_fraction_below_rho_says_it_is_noise():
    with pytest.raises(ValueError) as info:
        check_min_group_fraction([1.0, 0.0], 0.05, ["a", "b"], noise_std=0.9)
    message = str(info.value)
    assert "b (estimated fraction 0 +- 0.9 noise std)" in message
    assert "say nothing about the groups' sizes" in message
    assert "Merge or drop" not in message


def test_exact_fraction_below_rho_keeps_the_merge_advice():
    with pytest.raises(ValueError, match=r"b \(fraction 0\.02\)\. Merge or drop small groups"):
        check_min_group_fraction([0.98, 0.02], 0.05, ["a", "b"])


def test_small_noise_keeps_the_merge_advice():
    with pytest.raises(ValueError, match=r"\+- 0\.001 noise std\)\. Merge or drop"):
        check_min_group_fraction([0.98, 0.02], 0.05, ["a", "b"], noise_std=0.001)


def test_histogram_clipped_to_zero_gives_uniform_priors():
    # both noisy counts clipped at 0: no information, not "every group has fraction 0"
    np.testing.assert_array_equal(_normalised(np.zeros((1, 2))), [[0.5, 0.5]])
    np.testing.assert_allclose(_normalised(np.array([[3.0, 1.0]])), [[0.75, 0.25]])


def test_fifty_rows_half_and_half_warning_names_the_noise():
    from skfairdp import DPFermiClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = (X[:, 0] > 0).astype(int)
    s = np.repeat([0, 1], 25)  # each group holds exactly half the rows
    messages = []
    for seed in range(6):  # a low estimate for one group is likely at some seed
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            DPFermiClassifier(epsilon=1.0, max_epochs=1, random_state=seed).fit(
                X, y, sensitive_features=s
            )
        messages += [str(w.message) for w in caught if "minimum group fraction" in str(w.message)]
    assert messages, "no seed of six gave a prior warning"
    for message in messages:
        assert "noise std)" in message and "say nothing about the groups' sizes" in message
        assert "Merge or drop" not in message
