"""FairModelSearch: the bound-first search, its accounting (a data-independent choice of
family), its split, its selection order and its certificate."""

from __future__ import annotations

import dp_accounting
import numpy as np
import pytest
from dp_accounting.dp_event import RepeatAndSelectDpEvent
from dp_accounting.rdp import RdpAccountant

from skfairdp.model_selection import FairCandidate, FairModelSearch, default_space
from skfairdp.model_selection.accounting import choice_cover, dominates
from skfairdp.model_selection.fair_search import selection_tier, self_bounded
from skfairdp.privacy import epsilon_spent
from skfairdp.privacy.accountant import _rdp_of
from skfairdp.privacy.choice import ChoiceDpEvent
from skfairdp.privacy.events import compose

FERMI = [{"family": ["dpfermi"], "knob": [4.0]}]
pytestmark = pytest.mark.filterwarnings(
    "ignore::skfairdp.model_selection.NoQualifyingCandidateWarning"
)


def _data(n=900, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    s = rng.integers(0, 2, size=n)
    y = (X[:, 0] + 0.8 * s + rng.normal(size=n) > 0.5).astype(int)
    return X, y, s


def _sampled(q, sigma, steps):
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps
    )


# -- accounting ----------------------------------------------------------------------
def test_repeat_and_select_curve_matches_dp_accounting():
    run = compose([_sampled(0.01, 1.1, 500), dp_accounting.GaussianDpEvent(18.0)])
    for event in (
        RepeatAndSelectDpEvent(run, 5.0, 0.5),
        compose([RepeatAndSelectDpEvent(run, 8.0, 1.0), dp_accounting.GaussianDpEvent(20.0)]),
    ):
        accountant = RdpAccountant()
        accountant.compose(event)
        ours = epsilon_spent(event, 1e-5, accountant="rdp").epsilon
        assert ours == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-12)


def test_choice_is_the_pointwise_max_and_cheaper_than_composition():
    a = _sampled(0.01, 1.1, 500)  # many small steps: large at high orders
    b = compose([dp_accounting.GaussianDpEvent(3.0), _sampled(0.2, 4.0, 20)])
    assert not dominates(a, b) and not dominates(b, a)  # the curves cross
    choice = ChoiceDpEvent([a, b])
    np.testing.assert_allclose(_rdp_of(choice), np.maximum(_rdp_of(a), _rdp_of(b)))
    assert dominates(choice, a) and dominates(choice, b)
    searched = [RepeatAndSelectDpEvent(e, 5.0, 0.5) for e in (a, b, choice, compose([a, b]))]
    eps = [epsilon_spent(e, 1e-5, accountant="rdp").epsilon for e in searched]
    assert max(eps[0], eps[1]) <= eps[2] < eps[3]
    event, exact = choice_cover([a, b, a])
    assert exact and isinstance(event, ChoiceDpEvent) and event.events == [a, b]
    assert choice_cover([a, a]) == (a, True)


def test_choice_event_is_rdp_only():
    event = ChoiceDpEvent([_sampled(0.01, 1.1, 10), dp_accounting.GaussianDpEvent(2.0)])
    with pytest.raises(dp_accounting.UnsupportedEventError):
        epsilon_spent(event, 1e-5, accountant="pld")
    inner = ChoiceDpEvent([dp_accounting.NonPrivateDpEvent(), dp_accounting.GaussianDpEvent(2.0)])
    assert epsilon_spent(inner, 1e-5, accountant="rdp").epsilon == np.inf


# -- selection -----------------------------------------------------------------------
def test_selection_tiers():
    bound = 0.05
    certified = selection_tier({"score": 0.70, "violation": 0.01}, 0.04, bound)
    point_only = selection_tier({"score": 0.90, "violation": 0.03}, 0.20, bound)
    neither = selection_tier({"score": 0.95, "violation": 0.30}, 0.40, bound)
    fairer = selection_tier({"score": 0.60, "violation": 0.10}, 0.30, bound)
    assert certified > point_only > fairer > neither
    assert selection_tier({"score": 0.8, "violation": 0.0}, 0.04, bound) > certified
    # a candidate enforcing a tighter bound on its training rows, not contradicted
    # by the validation interval, beats a point-only run but not a qualified one
    bounded = selection_tier(
        {"score": 0.80, "violation": 0.08}, 0.30, bound, lower=0.0, bounded=True
    )
    assert certified > bounded > point_only
    contradicted = selection_tier(
        {"score": 0.80, "violation": 0.20}, 0.35, bound, lower=0.06, bounded=True
    )
    assert contradicted < point_only


def test_self_bounded_candidates():
    assert self_bounded({"family": "raco", "knob": 0.02}, 0.05)
    assert self_bounded({"family": "cgoo", "knob": 0.025}, 0.05)
    assert self_bounded({"family": "cgoo", "knob": 0.03}, 0.05)
    assert not self_bounded({"family": "raco", "knob": 0.031}, 0.05)
    assert not self_bounded({"family": "raco", "knob": 0.05}, 0.05)
    assert not self_bounded({"family": "dpfermi", "knob": 0.01}, 0.05)
    assert not self_bounded({"family": "dpto", "knob": None}, 0.05)
    # DPThresholdOptimizer's tol bounds the noisy histogram's rates, not a checked release
    assert not self_bounded({"family": "dpto", "knob": 0.01}, 0.05)


def test_each_family_receives_its_knob():
    """A knob is never silently dropped: DPThresholdOptimizer's is its ``tol``."""
    expected = {"dpfermi": "fairness_weight", "raco": "tolerance",
                "cgoo": "difference_bound", "dpto": "tol"}  # fmt: skip
    for family, name in expected.items():
        built = FairCandidate(family=family, knob=0.03).build()
        assert built.get_params()[name] == 0.03
    assert FairCandidate(family="dpto").build().tol is None


def test_default_space():
    assert {s["family"][0] for s in default_space(0.05, False)} == {"dpfermi", "raco", "cgoo"}
    spaces = default_space(0.04, True)
    assert {s["family"][0] for s in spaces} == {"dpfermi", "raco", "cgoo", "dpto"}
    raco = next(s for s in spaces if s["family"] == ["raco"])
    assert raco["knob"] == [0.024]
    cgoo = next(s for s in spaces if s["family"] == ["cgoo"])
    assert cgoo["knob"] == [0.024]
    assert sum(len(s["knob"]) for s in default_space(0.05, False)) == 4


# -- the search end to end -------------------------------------------------------------
def test_fit_spends_within_budget_and_certifies_on_unseen_rows(monkeypatch):
    X, y, s = _data()
    ids = np.arange(len(y), dtype=np.float32)
    X = np.column_stack([X, ids / 1e4])  # a row id the spies can read back
    seen = {"fit": set(), "predict": []}
    fit, predict = FairCandidate.fit, FairCandidate.predict

    def spy_fit(self, X, y, **kw):
        seen["fit"].update(np.rint(X[:, -1] * 1e4).astype(int).tolist())
        return fit(self, X, y, **kw)

    def spy_predict(self, X, **kw):
        seen["predict"].append(set(np.rint(X[:, -1] * 1e4).astype(int).tolist()))
        return predict(self, X, **kw)

    monkeypatch.setattr(FairCandidate, "fit", spy_fit)
    monkeypatch.setattr(FairCandidate, "predict", spy_predict)
    search = FairModelSearch(
        "demographic_parity", 0.2, epsilon=2.0, candidates=FERMI, n_candidates_mean=2,
        random_state=0,
    ).fit(X, y, sensitive_features=s)  # fmt: skip
    assert search.privacy_spent_.epsilon <= 2.0 + 1e-9
    assert isinstance(search.dp_event_, dp_accounting.ComposedDpEvent)
    certified = seen["predict"][-1]  # the certificate's predictions come last
    validation = seen["predict"][0]
    assert len(certified) == search.n_certification_  # Binomial(n, 0.2): the split's coins
    assert abs(len(certified) - 0.2 * len(y)) < 6 * np.sqrt(0.16 * len(y))
    assert len(validation) == search.n_validation_ and len(seen["fit"]) == search.n_train_
    assert not certified & seen["fit"] and not certified & validation
    assert not validation & seen["fit"]
    cert = search.certificate_
    lo, hi = cert.violation_interval
    assert 0.0 <= lo <= hi and cert.confidence == 0.95 and cert.n_rows == len(certified)
    assert cert.meets_bound == (hi <= 0.2)
    assert search.predict(X[:7]).shape == (7,)


def test_mixed_families_are_accounted_as_a_choice():
    X, y, s = _data(700)
    search = FairModelSearch(
        "demographic_parity", 0.2, epsilon=3.0, n_candidates_mean=2, random_state=1,
        candidates=[{"family": ["dpfermi"], "knob": [4.0]},
                    {"family": ["raco"], "knob": [0.1]}], strategy="search",
    ).fit(X, y, sensitive_features=s)  # fmt: skip
    search_event = search.dp_event_.events[0]
    assert isinstance(search_event, RepeatAndSelectDpEvent)
    fit_cover = search_event.event.events[0]
    assert isinstance(fit_cover, ChoiceDpEvent) and len(fit_cover.events) == 2
    assert search.privacy_spent_.epsilon <= 3.0 + 1e-9
    assert search.best_params_["family"] in {"dpfermi", "raco"}


@pytest.mark.parametrize(
    "kwargs, fit_kwargs, match",
    [
        ({}, {"sensitive_features": None}, "sensitive_features"),
        ({"candidates": [{"family": ["dpto"]}]}, {}, "group_at_predict"),
        ({"candidates": [{"family": ["svm"]}]}, {}, "family must be one of"),
        ({"candidates": [{"lr": [0.1]}]}, {}, "'family' and 'knob' only"),
        ({"certification_size": 0.5, "validation_size": 0.5}, {}, "training rows"),
        ({"epsilon": 0.0}, {}, "epsilon"),
        ({"max_violation": -0.1}, {}, "max_violation"),
    ],
)
def test_bad_input(kwargs, fit_kwargs, match):
    X, y, s = _data(200)
    fit_kwargs = {"sensitive_features": s, **fit_kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        FairModelSearch(**{"candidates": FERMI, **kwargs}).fit(X, y, **fit_kwargs)


def test_multiclass_labels_rejected():
    X, y, s = _data(200)
    with pytest.raises(ValueError, match="binary"):
        FairModelSearch(candidates=FERMI).fit(X, y + (X[:, 1] > 1), sensitive_features=s)


def test_majority_class_replaces_a_model_outside_the_bound():
    """A run whose model misses the bound becomes the majority class (violation 0): the
    search is never worse than predicting one class, and the certificate says 0 exactly."""
    X, y, s = _data(900, seed=3)
    with pytest.warns(UserWarning, match="majority class"):
        search = FairModelSearch(
            "demographic_parity", 1e-6, epsilon=2.0, candidates=FERMI, n_candidates_mean=2,
            random_state=0,
        ).fit(X, y, sensitive_features=s)  # fmt: skip
    assert search.best_params_ == {"family": "majority", "knob": None}
    assert np.unique(search.predict(X)).size == 1
    cert = search.certificate_
    assert cert.violation == 0.0 and cert.violation_interval == (0.0, 0.0) and cert.meets_bound
    assert search.privacy_spent_.epsilon <= 2.0 + 1e-9


def test_majority_fallback_predicts_the_released_majority_label(monkeypatch):
    X, y, s = _data(700)
    z_seen = []
    original = FairModelSearch._group_label_counts

    def spy(self, y_seen, g_seen, n_groups, z, random):
        z_seen.append((len(y_seen), z))
        return original(self, y_seen, g_seen, n_groups, z, random)

    monkeypatch.setattr(FairModelSearch, "_group_label_counts", spy)
    # seed 1: every run falls outside the bound (with seed 0's coins one run's noisy
    # violation point lands within 1e-4, and that run is kept: point_within)
    search = FairModelSearch(
        "demographic_parity", 1e-4, epsilon=2.0, candidates=FERMI, random_state=1
    ).fit(X, y, sensitive_features=s)
    # the training and validation parts' labels, released once with the score noise
    assert z_seen == [(700 - search.n_certification_, search.score_noise_multiplier_)]
    assert search.majority_label_ == np.bincount(y).argmax()  # 57 / 43: the noise cannot flip it
    *_, label_release = search.dp_event_.events
    assert label_release == dp_accounting.GaussianDpEvent(search.score_noise_multiplier_)
    assert search.best_params_["family"] == "majority"
    assert (search.predict(X[:20]) == search.majority_label_).all()
    # the fallback predicts whatever that release says, not a run's own counts
    # (labels 90 / 10: a run's own noisy validation counts would say 0)
    y_rare = (X[:, 0] > 1.3).astype(int)
    assert 0.05 < y_rare.mean() < 0.15
    monkeypatch.setattr(
        FairModelSearch, "_group_label_counts", lambda self, *a: np.array([[0.0, 1.0]] * 2)
    )
    flipped = FairModelSearch(
        "demographic_parity", 1e-4, epsilon=2.0, candidates=FERMI, random_state=0
    ).fit(X, y_rare, sensitive_features=s)
    assert flipped.best_params_["family"] == "majority"
    assert (flipped.predict(X[:20]) == 1).all()


# -- what the runs show (audit: K and the unselected runs stay secret) ------------------
def test_only_the_selected_runs_warnings_are_shown(monkeypatch):
    """Repeat-and-select keeps K and every unselected run secret: a run's warnings are
    outputs of that run, so only the selected run's are shown, and never one computed on
    exact rows (DegenerateModelWarning)."""
    import warnings

    from skfairdp._fit.degenerate import DegenerateModelWarning

    X, y, s = _data(n=1500)
    fit = FairCandidate.fit
    runs = []

    def noisy_fit(self, X, y, **kw):
        out = fit(self, X, y, **kw)
        self.run_id = len(runs)
        runs.append(self)
        warnings.warn(f"run {self.run_id}", UserWarning, stacklevel=2)
        warnings.warn("exact rows", DegenerateModelWarning, stacklevel=2)
        return out

    monkeypatch.setattr(FairCandidate, "fit", noisy_fit)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        search = FairModelSearch(
            "demographic_parity", 0.5, epsilon=4.0, candidates=FERMI, n_candidates_mean=6,
            random_state=0,
        ).fit(X, y, sensitive_features=s)  # fmt: skip
    assert len(runs) >= 3  # the test's power: several runs, one selected
    texts = [str(w.message) for w in shown if str(w.message).startswith("run ")]
    assert not [w for w in shown if issubclass(w.category, DegenerateModelWarning)]
    if search.best_params_["family"] == "majority":
        assert texts == []
    else:
        assert texts == [f"run {search.best_estimator_.run_id}"]


def test_every_run_is_given_the_search_domain(monkeypatch):
    """A group's presence in a run's training part depends on its private count: each run
    is told the domain of all rows (or the declared one) and keeps a group its part lacks;
    before, CGOO raised on the empty cell and the others learned their groups from the part."""
    X, y, s = _data(n=1200, seed=1)
    s = np.where(s == 1, "b", "a").astype(object)
    s[:2] = "c"  # two rows: absent from a 60 % training part with probability 0.16
    seen = []
    fit = FairCandidate.fit

    def spy(self, X, y, *, sensitive_features=None):
        seen.append((self.sensitive_values, set(sensitive_features)))
        return fit(self, X, y, sensitive_features=sensitive_features)

    monkeypatch.setattr(FairCandidate, "fit", spy)
    lacking = 0
    for seed in range(8):
        seen.clear()
        FairModelSearch(
            "equalized_odds", 0.3, epsilon=2.0, n_candidates_mean=1, random_state=seed,
            candidates=[{"family": ["cgoo", "dpfermi", "raco"], "knob": [0.1]}],
        ).fit(X, y, sensitive_features=s)  # fmt: skip
        assert all(list(values) == ["a", "b", "c"] for values, _ in seen)
        lacking += sum("c" not in present for _, present in seen)
    assert lacking >= 1  # the test's power: some run's part had no row of "c"


def test_declared_domain_is_checked_like_a_single_fits():
    """The search's own input is the user's: a declared group with no row in it, or a
    value outside the declaration, is the clear error a single fit gives."""
    X, y, s = _data(n=900)
    search = FairModelSearch(
        "demographic_parity", 0.3, epsilon=2.0, candidates=FERMI, n_candidates_mean=1,
        sensitive_values=[1, 0], random_state=0,
    ).fit(X, y, sensitive_features=s)  # fmt: skip
    assert search.group_label_counts_.shape == (2, 2)
    with pytest.raises(ValueError, match="not in the declared sensitive_values"):
        search.set_params(sensitive_values=[0, 2]).fit(X, y, sensitive_features=s)
    with pytest.raises(ValueError, match="no rows for 1 of the 3 group"):
        search.set_params(sensitive_values=[0, 1, 2]).fit(X, y, sensitive_features=s)


def test_a_declared_empty_group_still_raises_outside_a_search():
    """The clear error for bad input stays for a single fit; only a search's runs, whose
    parts are random, keep an empty declared group."""
    from skfairdp import CGOOReduction
    from skfairdp._fit.search_run import search_run

    X, y, s = _data(n=600)
    est = CGOOReduction(constraints="demographic_parity", sensitive_values=[0, 1, 2],
                        random_state=0)  # fmt: skip
    with pytest.raises(ValueError, match="no rows for 1 of the 3 group"):
        est.fit(X, y, sensitive_features=s)
    with search_run():
        assert est.fit(X, y, sensitive_features=s).group_encoder_.n_groups_ == 3


def test_a_run_that_fell_back_to_a_constant_is_certified_as_one(monkeypatch):
    """A selected run whose own check returned its constant predicts one class for every
    row: its certificate states violation 0 exactly, as the majority class's (fresh-table
    probe 3: a RaCO-DP run at 100 % constant was certified [0, 0.93], meets_bound False)."""
    from types import SimpleNamespace

    from skfairdp.model_selection import certificate as module
    from skfairdp.model_selection.families import MajorityClass
    from skfairdp.reductions.atoms import ConstantAtom

    def fitted(**attributes):
        candidate = FairCandidate("raco", 0.03)
        candidate.estimator_ = SimpleNamespace(**attributes)
        return candidate

    assert fitted(fallback_class_=0).is_constant()  # DP-FERMI, DPThresholdOptimizer
    assert fitted(fallback_class_=None, tolerance_mixing_=1.0).is_constant()  # RaCO-DP
    assert not fitted(fallback_class_=None, tolerance_mixing_=0.999).is_constant()
    assert fitted(predictors_=[ConstantAtom(1), ConstantAtom(1)]).is_constant()  # CGOO
    assert not fitted(predictors_=[ConstantAtom(0), ConstantAtom(1)]).is_constant()
    assert not fitted(predictors_=[ConstantAtom(0), object()]).is_constant()
    assert MajorityClass(np.array([0, 1]), 0, 2).is_constant()

    X, y, s = _data()
    search = FairModelSearch("demographic_parity", 0.05, epsilon=1.0, random_state=0)
    seen = []
    original = module.certify

    def spy(model, *args, **kwargs):
        model.is_constant = lambda: True  # as a run that fell back
        certificate, frame = original(model, *args, **kwargs)
        seen.append(certificate)
        return certificate, frame

    monkeypatch.setattr("skfairdp.model_selection.fair_search.certify", spy)
    with pytest.warns(UserWarning):
        search.fit(X, y, sensitive_features=s)
    (certificate,) = seen
    assert certificate.violation == 0.0 and certificate.violation_interval == (0.0, 0.0)
    assert certificate.meets_bound
