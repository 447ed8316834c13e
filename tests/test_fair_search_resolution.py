"""FairModelSearch(strategy="auto"): when the validation rows cannot show the bound for
any model, the runs draw only self-bounded candidates; the decision is read from a
release, and the search's event and price are the same either way."""

from __future__ import annotations

import dp_accounting
import numpy as np
import pytest
from dp_accounting.dp_event import RepeatAndSelectDpEvent

from skfairdp.evaluation.violations import violation_interval
from skfairdp.model_selection import FairCandidate, FairModelSearch, default_space
from skfairdp.model_selection.resolution import (
    best_case_cells,
    best_case_upper,
    self_bounded_space,
)
from skfairdp.model_selection.validation import validation_frame

pytestmark = pytest.mark.filterwarnings(
    "ignore::skfairdp.model_selection.NoQualifyingCandidateWarning"
)


def _data(n, minority, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    s = (rng.random(n) < minority).astype(int)
    y = (X[:, 0] + 0.8 * s + rng.normal(size=n) > 0.5).astype(int)
    return X, y, s


def _upper(counts, fairness="demographic_parity", share=0.25):
    return best_case_upper(
        np.asarray(counts, dtype=float), share, fairness, noise_multiplier=20.0, delta=1e-5,
        confidence=0.95, encoder=None, seed=0, secure_mode=False,
    )  # fmt: skip


# -- the pieces ------------------------------------------------------------------------
def test_self_bounded_space_keeps_raco_and_cgoo_within_their_share_of_the_bound():
    assert self_bounded_space(default_space(0.05, False), 0.05) == [
        {"family": ["raco"], "knob": [0.03]}, {"family": ["cgoo"], "knob": [0.03]},
    ]  # fmt: skip
    assert self_bounded_space([{"family": ["dpfermi"], "knob": [1.0, 4.0]}], 0.05) is None
    # knobs over 0.6 of the bound do not enforce enough: not self-bounded
    assert self_bounded_space([{"family": ["raco"], "knob": [0.04, 0.05]}], 0.05) is None
    mixed = [{"family": ["cgoo", "dpfermi"], "knob": [0.01, 0.03, 0.1]}]
    assert self_bounded_space(mixed, 0.05) == [{"family": ["cgoo"], "knob": [0.01, 0.03]}]


@pytest.mark.parametrize("fairness", ["demographic_parity", "equalized_odds"])
def test_best_case_cells_are_a_fair_model_on_the_validation_share(fairness):
    counts = np.array([[800.0, 400.0], [90.0, 30.0], [-3.0, 12.0]])
    cells = best_case_cells(counts, 0.25, fairness)
    assert cells.shape == (3, 2, 2)
    np.testing.assert_allclose(cells.sum(axis=2), np.maximum(counts, 0) * 0.25)
    if fairness == "demographic_parity":
        rates = cells[:, :, 1].sum(axis=1) / cells.sum(axis=(1, 2))
    else:  # each label's positive rate
        rates = cells[:, :, 1] / np.where(cells.sum(axis=2) > 0, cells.sum(axis=2), 1)
        rates = rates[cells.sum(axis=2).min(axis=1) > 0]
    np.testing.assert_allclose(rates, np.broadcast_to(rates[0], rates.shape))  # violation 0


def test_best_case_upper_is_the_interval_of_those_cells():
    counts = np.array([[4000.0, 2000.0], [300.0, 100.0]])
    cells = best_case_cells(counts, 0.25, "demographic_parity")
    frame = validation_frame(cells, None, 20.0, 1e-5, 0, False)
    expected = violation_interval(frame, "demographic_parity", 0.95).upper
    assert _upper(counts) == pytest.approx(expected)


@pytest.mark.parametrize("fairness", ["demographic_parity", "equalized_odds"])
def test_small_groups_cannot_resolve_a_bound_large_ones_can(fairness):
    """A derived scale, not the code's: with noise std 20 a cell, the small group has 250
    validation rows (1,000 counted, a quarter validates), 125 of each label. Its selection
    rate (two noisy cells over 250) has noise sd at least 20 sqrt(2) / 250 = 0.113, a
    true-positive rate (one cell over 125) 20 / 125 = 0.16; the one-sided 95 % upper end of
    a zero gap is at least 1.6 sd. With 10,000 rows a group it is about 0.01."""
    small = _upper([[20_000.0, 20_000.0], [500.0, 500.0]], fairness)
    large = _upper([[20_000.0, 20_000.0], [20_000.0, 20_000.0]], fairness)
    sd = 20 * np.sqrt(2) / 250 if fairness == "demographic_parity" else 20 / 125
    assert 3 * sd > small > 1.6 * sd > 0.05
    assert large < 0.03


# -- the search ------------------------------------------------------------------------
def test_a_small_group_draws_only_self_bounded_runs_at_the_same_price(monkeypatch):
    X, y, s = _data(1500, 0.08)
    drawn = []
    fit = FairCandidate.fit

    def spy(self, *args, **kwargs):
        drawn.append((self.family, self.knob))
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(FairCandidate, "fit", spy)
    common = dict(epsilon=1.0, n_candidates_mean=4, random_state=0)
    auto = FairModelSearch("demographic_parity", 0.05, **common).fit(X, y, sensitive_features=s)
    assert auto.strategy_ == "self_bounded"
    assert drawn and set(drawn) <= {("raco", 0.03), ("cgoo", 0.03)}
    assert auto.best_params_["family"] in {"raco", "cgoo", "majority"}
    drawn.clear()
    search = FairModelSearch("demographic_parity", 0.05, strategy="search", **common).fit(
        X, y, sensitive_features=s
    )
    assert search.strategy_ == "search"
    # one event and one price for both: the restricted runs are covered by the plan
    assert auto.dp_event_ == search.dp_event_
    assert auto.inner_epsilon_ == search.inner_epsilon_
    assert auto.privacy_spent_.epsilon <= 1.0 + 1e-9
    search_event, *releases = auto.dp_event_.events
    assert isinstance(search_event, RepeatAndSelectDpEvent)
    assert releases == [dp_accounting.GaussianDpEvent(auto.score_noise_multiplier_)] * 2


def test_the_decision_is_read_from_the_release_not_the_rows(monkeypatch):
    """Large released groups say "resolvable" even where the rows are few, and the
    whole space is searched: the branch is post-processing of the released counts."""
    X, y, s = _data(1500, 0.08)
    monkeypatch.setattr(
        FairModelSearch, "_group_label_counts",
        lambda self, *a: np.array([[1e6, 1e6], [1e6, 1e6]]),
    )  # fmt: skip
    fitted = FairModelSearch("demographic_parity", 0.05, random_state=0).fit(
        X, y, sensitive_features=s
    )
    assert fitted.strategy_ == "search"
    monkeypatch.setattr(
        FairModelSearch, "_group_label_counts", lambda self, *a: np.array([[900, 900], [9, 9]])
    )
    fitted = FairModelSearch("demographic_parity", 0.05, random_state=0).fit(
        X, y, sensitive_features=s
    )
    assert fitted.strategy_ == "self_bounded"


def test_a_large_table_is_searched_whole():
    X, y, s = _data(40_000, 0.5)
    fitted = FairModelSearch(
        "demographic_parity", 0.05, candidates=[{"family": ["raco"], "knob": [0.02]}],
        n_candidates_mean=1, random_state=0,
    ).fit(X, y, sensitive_features=s)  # fmt: skip
    assert fitted.strategy_ == "search"
    assert fitted.group_label_counts_.shape == (2, 2)
    assert abs(fitted.group_label_counts_.sum() - 0.8 * 40_000) < 300  # noise std ~36


def test_without_a_self_bounded_candidate_the_whole_space_is_searched():
    X, y, s = _data(800, 0.08)
    fitted = FairModelSearch(
        "demographic_parity", 0.05, candidates=[{"family": ["dpfermi"], "knob": [4.0]}],
        n_candidates_mean=2, random_state=0,
    ).fit(X, y, sensitive_features=s)  # fmt: skip
    assert fitted.strategy_ == "search"


def test_bad_strategy():
    X, y, s = _data(300, 0.3)
    with pytest.raises(ValueError, match="strategy"):
        FairModelSearch(strategy="single").fit(X, y, sensitive_features=s)
