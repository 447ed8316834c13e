"""Hardening: nothing unreleased in the fitted model, quiet accounting, threads,
degenerate-model warnings, small budgets that fit and infeasible ones that say why."""

from __future__ import annotations

import logging
import pickle
import re

import dp_accounting
import numpy as np
import pytest
import torch
from conftest import make_biased_data
from sklearn.utils._param_validation import InvalidParameterError

from skfairdp import (
    DPFermiClassifier,
    DPSGDFClassifier,
    FairLensClassifier,
    GlobalScalingDPClassifier,
    RaCODPClassifier,
)
from skfairdp._fit.base import PrivateDiagnosticsWarning
from skfairdp._fit.degenerate import DegenerateModelWarning, warn_if_degenerate
from skfairdp._fit.threads import resolve_n_jobs, torch_threads
from skfairdp.privacy import epsilon_spent
from skfairdp.privacy.accountant import quiet_accounting
from skfairdp.privacy.analytic import gaussian_delta, gaussian_noise_multiplier

ESTIMATORS = {
    "fermi": lambda: DPFermiClassifier(fairness_weight=1.0),
    "fermi-sensitive": lambda: DPFermiClassifier(fairness_weight=1.0, privacy_unit="sensitive"),
    "raco": lambda: RaCODPClassifier(),
    "global-scaling": lambda: GlobalScalingDPClassifier(),
    "dpsgdf": lambda: DPSGDFClassifier(),
    "fairlens": lambda: FairLensClassifier(),
}
RAW_DIAGNOSTICS = {"loss", "psi"}


def _fit(est, X, y, s):
    kwargs = {} if isinstance(est, GlobalScalingDPClassifier) else {"sensitive_features": s}
    with pytest.warns() if isinstance(est, FairLensClassifier) else _nullcontext():
        return est.fit(X, y, **kwargs)


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# -- nothing unnoised in the fitted model -------------------------------------------


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_history_holds_no_raw_training_diagnostics_by_default(name):
    X, y, s = make_biased_data(n=200, seed=1)
    est = ESTIMATORS[name]().set_params(epsilon=2.0, max_epochs=2, batch_size=50, random_state=0)
    est = _fit(est, X, y, s)
    keys = set().union(*(set(row) for row in est.history_))
    assert not keys & RAW_DIAGNOSTICS, keys
    assert {"epoch", "steps", "epsilon"} <= keys
    shipped = pickle.loads(pickle.dumps(est))  # what a user publishes
    assert not set().union(*(set(row) for row in shipped.history_)) & RAW_DIAGNOSTICS


@pytest.mark.parametrize("name", ["fermi", "raco", "global-scaling"])
def test_private_diagnostics_are_opt_in_and_warn(name):
    X, y, s = make_biased_data(n=200, seed=1)
    est = ESTIMATORS[name]().set_params(
        epsilon=2.0, max_epochs=2, batch_size=50, random_state=0, record_private_diagnostics=True
    )
    with pytest.warns(PrivateDiagnosticsWarning, match="NOT covered by privacy_spent_"):
        _fit(est, X, y, s)
    assert all(np.isfinite(row["loss"]) for row in est.history_)


# -- dp-accounting's absl warnings stay off stderr ------------------------------------


def test_accounting_warnings_are_silenced_but_errors_are_not(caplog):
    absl = logging.getLogger("absl")
    before = absl.level
    absl.setLevel(logging.WARNING)  # as outside the test suite
    try:
        # an event whose RDP orders fail to converge (dp-accounting's own test case)
        event = dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.0))
        with caplog.at_level(logging.WARNING, logger="absl"):
            epsilon_spent(dp_accounting.SelfComposedDpEvent(event, 7), 1e-5)
            with quiet_accounting():
                absl.error("a real error")
        assert [r.levelno for r in caplog.records] == [logging.ERROR]
        assert absl.level == logging.WARNING  # restored
    finally:
        absl.setLevel(before)


# -- threads ---------------------------------------------------------------------------


class _ThreadProbe:
    def __init__(self):
        self.seen = []

    def on_epoch_begin(self, net, **kwargs):
        self.seen.append(torch.get_num_threads())


@pytest.mark.parametrize("n_jobs,expected", [(None, 1), (2, 2), (1, 1)])
def test_n_jobs_sets_torch_threads_for_the_fit_and_restores_them(n_jobs, expected):
    X, y, s = make_biased_data(n=120, seed=2)
    probe = _ThreadProbe()
    before = torch.get_num_threads()
    DPFermiClassifier(
        epsilon=np.inf, max_epochs=2, n_jobs=n_jobs, callbacks=[probe], random_state=0
    ).fit(X, y, sensitive_features=s)
    assert probe.seen == [expected, expected]
    assert torch.get_num_threads() == before


def test_n_jobs_rules_and_validation():
    assert resolve_n_jobs(None) == 1 and resolve_n_jobs(3) == 3
    assert resolve_n_jobs(-1) >= 1 and resolve_n_jobs(0) is None
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), torch_threads(2):
        assert torch.get_num_threads() == 2
        raise RuntimeError
    assert torch.get_num_threads() == before
    X, y, s = make_biased_data(n=60, seed=2)
    for bad in (0, 1.5, "all"):
        with pytest.raises(InvalidParameterError, match="n_jobs"):
            DPFermiClassifier(n_jobs=bad).fit(X, y, sensitive_features=s)


# -- degenerate models warn --------------------------------------------------------------


def test_huge_fairness_weight_warns_of_a_model_worse_than_the_majority_rate():
    X, y, s = make_biased_data(n=400)
    with pytest.warns(
        DegenerateModelWarning, match="(below the majority-class rate|single class).*fairness"
    ) as caught:
        # lr_dual=0.025: W ascends; the best-response W of lr_dual="auto" balances the
        # penalty on this data, and the test is about the warning, not about W
        DPFermiClassifier(
            fairness_weight=1e4,
            epsilon=np.inf,
            max_epochs=5,
            lr_dual=0.025,
            random_state=0,
            fallback_to_constant=False,  # the model as trained, not the check's constant
        ).fit(X, y, sensitive_features=s)
    # no unnoised statistic of the training data in a line that may reach logs
    messages = [str(w.message) for w in caught if w.category is DegenerateModelWarning]
    assert not any(re.search(r"\d\.\d", m) for m in messages)


def test_a_good_fit_does_not_warn(recwarn):
    X, y, s = make_biased_data(n=400)
    DPFermiClassifier(fairness_weight=0.0, epsilon=np.inf, max_epochs=5, random_state=0).fit(X, y)
    assert not [w for w in recwarn if issubclass(w.category, DegenerateModelWarning)]


class _Constant:
    module_ = object()
    fairness_weight = 0.0
    epsilon = 1.0

    def predict(self, X):
        return np.zeros(len(X), dtype=int)


def test_single_class_predictions_warn_with_the_cause():
    y = np.array([0, 0, 0, 1, 1])  # majority rate 0.6: a constant 0 reaches it, still warns
    with pytest.warns(DegenerateModelWarning, match="single class 0.*noise"):
        warn_if_degenerate(_Constant(), np.zeros((5, 2)), y)


# -- small budgets fit; infeasible ones say which release and what to change ---------------


def test_analytic_gaussian_golden_values():
    # Balle & Wang (2018): sigma = 3.73 for (1, 1e-5) at sensitivity 1 (PLD agrees to 1e-6)
    z = gaussian_noise_multiplier(1.0, 1e-5)
    assert z == pytest.approx(3.7306, abs=2e-4)
    assert gaussian_delta(1.0, z) <= 1e-5 < gaussian_delta(1.0, z * (1 - 1e-4))
    assert gaussian_noise_multiplier(1.0, 1e-5, sensitivity=2.0) == pytest.approx(2 * z, rel=1e-5)
    # reaches budgets far below the RDP conversion's floor (~0.0064)
    tiny = gaussian_noise_multiplier(0.0025, 5e-8)
    assert 1000 < tiny < 2000 and gaussian_delta(0.0025, tiny) <= 5e-8


@pytest.mark.parametrize("unit", ["record", "sensitive"])
@pytest.mark.parametrize("fairness", ["demographic_parity", "equalized_odds"])
def test_dpfermi_fits_at_epsilon_0_05(unit, fairness, recwarn):
    X, y, s = make_biased_data(n=20000, seed=4)
    est = DPFermiClassifier(
        fairness=fairness, epsilon=0.05, privacy_unit=unit, max_epochs=1, random_state=0
    ).fit(X, y, sensitive_features=s)
    assert 0.049 < est.privacy_spent_.epsilon <= 0.05 + 1e-9


@pytest.mark.parametrize(
    "make",
    [lambda: RaCODPClassifier(), lambda: GlobalScalingDPClassifier(), lambda: DPSGDFClassifier()],
    ids=["raco", "global-scaling", "dpsgdf"],
)
def test_other_estimators_fit_at_epsilon_0_05(make):
    X, y, s = make_biased_data(n=20000, seed=4)
    est = _fit(make().set_params(epsilon=0.05, max_epochs=1, random_state=0), X, y, s)
    assert est.privacy_spent_.epsilon <= 0.05 + 1e-9


# at epsilon 1e-8 the noisy group priors (released before the error) are noise: they may
# fall below rho, which warns; the error is the subject (1e-5 and 1e-6 became feasible with
# the per-event PLD grid of issue 35)
@pytest.mark.filterwarnings("ignore:.*below the minimum group fraction rho:UserWarning")
def test_truly_infeasible_budget_names_the_release_and_the_fix():
    X, y, s = make_biased_data(n=2000, seed=4)
    with pytest.raises(ValueError, match=r"per-step gradient releases.*group histogram.*PLD"):
        DPFermiClassifier(epsilon=1e-8, delta=1e-9, accountant="pld", max_epochs=1).fit(
            X, y, sensitive_features=s
        )
