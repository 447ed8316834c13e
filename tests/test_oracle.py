"""The oracle contract (skfairdp/oracle.py, doc/design.md): a weighted private estimator
inside a small hand-written outer loop.

T = 3 oracle fits with reweighted samples (rows the last model got wrong weigh 2) and
spawned random streams: the loop spends exactly the composition of the events the fits
recorded, each fit within its own budget, with independent noise; a scikit-learn
``LogisticRegression`` follows the same call shape at epsilon = inf.
"""

import dp_accounting
import numpy as np
import pytest
import torch
from conftest import make_biased_data
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from skfairdp import DPFermiClassifier, GlobalScalingDPClassifier
from skfairdp.oracle import PrivateOracle, composed_event, executed_event, spawn_oracle
from skfairdp.privacy import RandomSource, epsilon_spent

G, PS = dp_accounting.GaussianDpEvent, dp_accounting.PoissonSampledDpEvent
SC = dp_accounting.SelfComposedDpEvent
T = 3


def outer_loop(oracle, X, y, seed, rounds=T):
    """A minimal boosting-like meta-fit: reweight the rows the last model got wrong."""
    source = RandomSource(seed)
    weights = np.ones(len(y))
    fits, used = [], []
    for _ in range(rounds):
        fit = spawn_oracle(oracle, source).fit(X, y, sample_weight=weights)
        fits.append(fit)
        used.append(weights)
        weights = np.where(fit.predict(X) != y, 2.0, 1.0)  # a function of row i and the model
    return fits, used


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_biased_data(n=400, seed=1)
    return X, y


@pytest.fixture
def first_draws(monkeypatch):
    """The first Gaussian draw of every RandomSource (one per fit: its first noise)."""
    draws = []
    original = RandomSource.normal

    def normal(self, shape, std, dtype=torch.float32):
        out = original(self, shape, std, dtype)
        # marked on the source itself: an id() could be reused once a fit's source is freed
        if not getattr(self, "_first_draw_seen", False):
            self._first_draw_seen = True
            draws.append(out.clone())
        return out

    monkeypatch.setattr(RandomSource, "normal", normal)
    return draws


ORACLES = {
    # noise calibrated to each fit's budget
    "global-scaling": GlobalScalingDPClassifier(
        variant="clip", hidden_layer_sizes=(), epsilon=1.0, max_sample_weight=2.0,
        batch_size=50, max_epochs=2, lr=0.5,
    ),
    # a fixed noise multiplier, steps capped to the budget
    "fermi-fixed-noise": DPFermiClassifier(
        fairness_weight=0, noise_multiplier=2.5, epsilon=1.0, max_sample_weight=2.0,
        batch_size=50, max_epochs=20, lr=0.5, fallback_to_constant=False,  # steps alone
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(ORACLES))
def test_weighted_oracle_loop_spends_exactly_the_composition_of_recorded_events(
    name, data, first_draws
):
    X, y = data
    oracle = ORACLES[name]
    assert isinstance(oracle, PrivateOracle)
    fits, used = outer_loop(oracle, X, y, seed=0)
    assert any((w == 2.0).any() for w in used[1:])  # the later fits were reweighted
    q = 50 / len(y)
    delta = fits[0].privacy_spent_.delta
    for fit in fits:
        # each fit recorded what it executed: n_steps_ Poisson steps of its multiplier
        assert fit.dp_event_ == SC(PS(q, G(fit.effective_noise_multiplier_)), fit.n_steps_)
        assert fit.privacy_spent_.epsilon <= oracle.epsilon * (1 + 1e-9)
        assert executed_event(fit) is fit.dp_event_
    if name == "fermi-fixed-noise":
        assert {fit.noise_multiplier_ for fit in fits} == {2.5}
        assert fits[0].n_steps_ < 20 * 8  # capped by the budget, not by max_epochs
    # the meta-fit's cost: the composition of the recorded events, nothing else
    total = composed_event(fits)
    assert total == dp_accounting.ComposedDpEvent([fit.dp_event_ for fit in fits])
    spent = epsilon_spent(total, delta).epsilon
    # identical recorded steps: the composition is T * n_steps_ of them, exactly
    step = fits[0].dp_event_.event
    assert all(fit.dp_event_.event == step for fit in fits)
    everything = SC(step, sum(fit.n_steps_ for fit in fits))
    assert spent == pytest.approx(epsilon_spent(everything, delta).epsilon, rel=1e-9)
    single = fits[0].privacy_spent_.epsilon
    assert single < spent < T * single  # composed by the accountant, tighter than a sum
    # independent streams: each fit seeded from its own child, different first noise
    assert len({fit.random_state for fit in fits}) == T
    noise = list(first_draws)
    assert len(noise) == T
    assert all(not torch.equal(noise[i], noise[j]) for i in range(T) for j in range(i))
    # ... and the whole meta-fit reproduces from its one seed
    again, _ = outer_loop(oracle, X, y, seed=0)
    for a, b in zip(fits, again):
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_clones_would_repeat_the_same_noise(data, first_draws):
    """Why spawn: clone keeps random_state, so T clones draw the same noise T times."""
    X, y = data
    oracle = clone(ORACLES["global-scaling"]).set_params(random_state=0)
    for _ in range(2):
        clone(oracle).fit(X, y, sample_weight=np.ones(len(y)))
    first, second = first_draws
    assert torch.equal(first, second)


def test_sklearn_estimator_follows_the_same_call_shape_at_epsilon_inf(data):
    X, y = data
    fits, used = outer_loop(LogisticRegression(), X, y, seed=0)
    assert len(fits) == T and any((w == 2.0).any() for w in used[1:])
    assert not isinstance(LogisticRegression(), PrivateOracle)  # no budget, no event
    total = composed_event(fits)
    assert all(isinstance(e, dp_accounting.NonPrivateDpEvent) for e in total.events)
    assert epsilon_spent(total, 1e-5).epsilon == np.inf
    # the private oracle at epsilon=inf is non-private the same way
    private, _ = outer_loop(clone(ORACLES["global-scaling"]).set_params(epsilon=np.inf), X, y, 0)
    assert epsilon_spent(composed_event(private), 1e-5).epsilon == np.inf


def test_spawn_oracle_sets_only_parameters_the_estimator_has():
    source = RandomSource(5)
    private = spawn_oracle(ORACLES["global-scaling"], source)
    assert private.random_state == RandomSource(5).spawn().seed and not private.secure_mode
    assert ORACLES["global-scaling"].random_state is None  # the template is untouched
    plain = spawn_oracle(LogisticRegression(), source)
    assert isinstance(plain.random_state, int)
    secure = spawn_oracle(ORACLES["global-scaling"], RandomSource(secure_mode=True))
    assert secure.secure_mode and secure.random_state is None


@pytest.mark.parametrize("cls", [DPFermiClassifier, GlobalScalingDPClassifier])
def test_a_fixed_noise_multiplier_needs_a_finite_budget(cls, data):
    X, y = data
    with pytest.raises(ValueError, match="noise_multiplier is set but epsilon=inf"):
        cls(noise_multiplier=2.0, epsilon=np.inf).fit(X, y, sample_weight=np.ones(len(y)))


def test_fermi_fixed_noise_excludes_paper_calibration(data):
    X, y = data
    est = DPFermiClassifier(fairness_weight=0, noise_multiplier=2.0, calibration="paper")
    with pytest.raises(ValueError, match="calibration='paper'"):
        est.fit(X, y)
