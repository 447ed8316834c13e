"""The noise each release *draws* has the std its recorded event and its true sensitivity imply.

Deterministic (no sampling): the draw under :meth:`RandomSource.normal` is recorded
(``ForcedNoise`` of ``test_exact_use``, noise zero), and its std must be the recorded
multiplier times a worst-case sensitivity derived here from the declared bounds, the
number of columns or candidates and the unit, not read from the code under test. A
multi-column release noised for one column, or a stacked release noised for one of its
parts, draws too little noise and fails. (The statistical conformance of the noise
actually returned is tested elsewhere.)
"""

import math

import dp_accounting
import numpy as np
import pytest
from conftest import make_biased_data
from test_exact_use import ForcedNoise

from skfairdp import FederatedDPFermiClassifier, RaCODPClassifier
from skfairdp.federated import Silo
from skfairdp.fermi import DPFermiClassifier
from skfairdp.preprocessing import DPOneHotEncoder, DPSimpleImputer, DPStandardScaler

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture
def forced(monkeypatch):
    return ForcedNoise(monkeypatch)


def _gaussian_multipliers(event) -> list[float]:
    """The Gaussian multipliers of ``event``, in order (composed, sampled, repeated)."""
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return [event.noise_multiplier]
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return [z for e in event.events for z in _gaussian_multipliers(e)]
    if isinstance(event, dp_accounting.SelfComposedDpEvent | dp_accounting.PoissonSampledDpEvent):
        return _gaussian_multipliers(event.event)
    return []


def _only_std(forced) -> float:
    (call,) = forced.calls
    return call[3]


@pytest.mark.parametrize("d", [1, 3])
def test_scaler_noise_covers_every_column(forced, d):
    X = np.random.default_rng(0).uniform(-1, 1, size=(50, d))
    est = DPStandardScaler(bounds=(-1, 1), epsilon=1.0, random_state=0).fit(X)
    # a row adds u_j in [-1, 1] and u_j^2 in [0, 1] for each of d columns
    sensitivity = math.sqrt(d * 1.0**2 + d * 1.0**2)
    (z,) = _gaussian_multipliers(est.dp_event_)
    assert _only_std(forced) == pytest.approx(z * sensitivity, rel=1e-6)


@pytest.mark.parametrize("d", [1, 3])
def test_encoder_noise_covers_every_column(forced, d):
    X = np.random.default_rng(0).integers(0, 3, size=(50, d))
    est = DPOneHotEncoder([[0, 1, 2]] * d, epsilon=1.0, random_state=0).fit(X)
    sensitivity = math.sqrt(d)  # a row adds 1 to one category count per column
    (z,) = _gaussian_multipliers(est.dp_event_)
    assert _only_std(forced) == pytest.approx(z * sensitivity, rel=1e-6)


@pytest.mark.parametrize("strategy", ["mean", "median", "most_frequent"])
def test_imputer_noise_covers_every_column(forced, strategy):
    d = 3
    X = np.random.default_rng(0).integers(0, 3, size=(50, d)).astype(float)
    X[::5, 0] = np.nan
    kw = {"categories": [[0.0, 1.0, 2.0]] * d} if strategy == "most_frequent" else {}
    bounds = None if strategy == "most_frequent" else (0, 2)
    est = DPSimpleImputer(strategy=strategy, bounds=bounds, epsilon=1.0, random_state=0, **kw)
    est.fit(X)
    # mean: a row adds u_j in [-1, 1] and a presence count 1 per column; else one count
    sensitivity = math.sqrt(2 * d) if strategy == "mean" else math.sqrt(d)
    (z,) = _gaussian_multipliers(est.dp_event_)
    assert _only_std(forced) == pytest.approx(z * sensitivity, rel=1e-6)


def test_fermi_record_unit_group_histogram(forced):
    X, y, s = make_biased_data(n=120, seed=3)
    est = DPFermiClassifier(epsilon=2.0, max_epochs=1, batch_size=60, random_state=0)
    est.fit(X, y, sensitive_features=s)
    # record unit: adding or removing a row moves one group count by 1 (L2 sensitivity 1)
    z_prior = _gaussian_multipliers(est.dp_event_)[0]
    assert forced.calls[0][2] == (2,)
    assert forced.calls[0][3] == pytest.approx(z_prior * 1.0, rel=1e-6)


def test_raco_best_selection_covers_every_candidate(forced):
    X, y, s = make_biased_data(n=120, seed=3)
    est = RaCODPClassifier(epsilon=2.0, max_epochs=2, batch_size=60, solution="best",
                           random_state=0, enforce_tolerance=False)  # fmt: skip
    est.fit(X, y, sensitive_features=s)
    *_, (_, _, shape, std) = forced.calls
    n_candidates = shape[0]
    assert n_candidates >= 2
    # a row moves one count in each candidate's histogram: L2 sensitivity sqrt(K)
    z_selection = _gaussian_multipliers(est.dp_event_)[-1]
    assert std == pytest.approx(z_selection * math.sqrt(n_candidates), rel=1e-6)


def test_federated_dual_release_noise_matches_its_clip(forced, monkeypatch):
    X, y, s = make_biased_data(n=120, seed=3)
    clips = []
    begin = Silo.begin_round

    def recording_begin(self, broadcast):
        batch = begin(self, broadcast)
        clips.append(batch.dual_clip)
        return batch

    monkeypatch.setattr(Silo, "begin_round", recording_begin)
    est = FederatedDPFermiClassifier(n_silos=2, epsilon=2.0, max_epochs=1, batch_size=30,
                                     random_state=0)  # fmt: skip
    est.fit(X, y, sensitive_features=s)
    w_size = est.W_.size
    dual_stds = [std for k, i, shape, std in forced.calls if i > 0 and shape == (w_size,)]
    assert dual_stds and len(set(clips)) == 1
    # a row's W-row is clipped at the batch's dual_clip: that is the release's sensitivity
    z_dual = est.silo_dual_noise_multiplier_[0]
    assert set(est.silo_dual_noise_multiplier_) == {z_dual}
    np.testing.assert_allclose(dual_stds, z_dual * clips[0], rtol=1e-6)
