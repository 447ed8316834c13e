"""Exact-use tests: what each algorithm consumes is the *noised* value of its release.

Every Gaussian release draws its noise through :meth:`RandomSource.normal` (the one
choke point under :func:`~skfairdp.privacy.gaussian_sum`, hence ``noisy_count`` and
``noisy_histogram``). Here that draw is replaced by a chosen value (``ForcedNoise``:
zeros, or a large known offset on one release) and the consumer must move by it: a
fitted attribute, a selected candidate, a threshold, a table. A release whose noise is
drawn and recorded while the exact statistic goes on downstream leaves the consumer
where it was, and fails here. The other draws are forced to zero, so two fits differ
only by the offset.
"""

import numpy as np
import pytest
import torch
from conftest import make_biased_data
from sklearn.base import clone

from skfairdp import (
    CGOOReduction,
    DPFermiClassifier,
    DPSGDClassifier,
    FederatedDPFermiClassifier,
    RaCODPClassifier,
)
from skfairdp.evaluation import PrivateMetricFrame
from skfairdp.model_selection import PrivateSearchCV
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.preprocessing import DPOneHotEncoder, DPSimpleImputer, DPStandardScaler
from skfairdp.privacy import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore")

BIG = 1e6


class ForcedNoise:
    """``RandomSource.normal`` returns ``rule(k, i, shape, std)`` (``None``: zeros).

    ``k`` is the creation index of the source in this test, ``i`` the index of the
    call on that source; ``calls`` records ``(k, i, shape, std)`` of every draw.
    """

    def __init__(self, monkeypatch):
        self.sources, self.calls = [], []
        self.rule = lambda k, i, shape, std: None
        init, forced = RandomSource.__init__, self

        def patched_init(source, *args, **kwargs):
            init(source, *args, **kwargs)
            forced.sources.append(source)

        def normal(source, shape, std, dtype=torch.float32):
            shape = tuple(shape) if not isinstance(shape, int) else (shape,)
            k = next(j for j, s in enumerate(forced.sources) if s is source)
            i = sum(1 for call in forced.calls if call[0] == k)
            forced.calls.append((k, i, shape, float(std)))
            value = forced.rule(k, i, shape, float(std))
            value = np.zeros(shape) if value is None else np.broadcast_to(value, shape)
            return torch.as_tensor(np.array(value), dtype=dtype).to(source.device)

        monkeypatch.setattr(RandomSource, "__init__", patched_init)
        monkeypatch.setattr(RandomSource, "normal", normal)

    def reset(self, rule=None):
        self.sources.clear()
        self.calls.clear()
        self.rule = rule or (lambda k, i, shape, std: None)


@pytest.fixture
def forced(monkeypatch):
    return ForcedNoise(monkeypatch)


@pytest.fixture(scope="module")
def data():
    return make_biased_data(n=120, seed=3)


def _fit_twice(forced, fit, rule):
    """``fit()`` with every draw zero, then with ``rule``; both results."""
    forced.reset()
    zero = fit()
    forced.reset(rule)
    return zero, fit()


# -- preprocessing ------------------------------------------------------------------
def test_scaler_uses_the_noisy_moments(forced, data):
    X = data[0][:, :2].astype(np.float64)
    n, d, half = X.shape[0], 2, 4.0
    delta = np.array([0.1 * n, -0.05 * n, 0.2 * n, 0.3 * n])  # sums of u, then of u^2

    def fit():
        return DPStandardScaler(bounds=(-4, 4), epsilon=1.0, random_state=0).fit(X)

    zero, moved = _fit_twice(forced, fit, lambda k, i, shape, std: delta)
    np.testing.assert_allclose(moved.mean_ - zero.mean_, half * delta[:d] / n, rtol=1e-9)
    m1_zero, m1 = (zero.mean_ / half), (moved.mean_ / half)
    expected_var = half**2 * (zero.var_ / half**2 + m1_zero**2 + delta[d:] / n - m1**2)
    np.testing.assert_allclose(moved.var_, expected_var, rtol=1e-9)


def test_encoder_keeps_by_the_noisy_counts(forced, data):
    _, y, s = data
    cats = np.column_stack([s, y])
    exact = np.concatenate([np.bincount(s, minlength=2), np.bincount(y, minlength=2)])
    delta = np.array([-BIG, 0.0, 0.0, 0.5 * BIG])

    def fit():
        return DPOneHotEncoder([[0, 1], [0, 1]], epsilon=1.0, random_state=0).fit(cats)

    zero, moved = _fit_twice(forced, fit, lambda k, i, shape, std: delta)
    np.testing.assert_allclose(np.concatenate(moved.noisy_counts_), exact + delta)
    assert list(zero.categories_[0]) == [0, 1]
    assert list(moved.categories_[0]) == [1]


@pytest.mark.parametrize("strategy", ["mean", "median", "most_frequent"])
def test_imputer_uses_the_noisy_statistics(forced, strategy):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, size=(100, 1)).round()
    X[::9] = np.nan
    n_present = int((~np.isnan(X)).sum())
    kw = {"categories": [np.arange(11.0)]} if strategy == "most_frequent" else {}
    if strategy == "mean":  # sums of u in [-1, 1], then the counts
        delta = np.array([0.5 * n_present, 0.0])
    elif strategy == "median":  # all the mass into the last bin
        delta = np.zeros(1)  # replaced below: the bins' shape is known at the call
    else:  # a huge count for category 3
        delta = np.eye(11)[3] * BIG

    def rule(k, i, shape, std):
        if strategy == "median":
            value = np.zeros(shape)
            value[..., -1] = BIG
            return value
        return delta

    def fit():
        bounds = None if strategy == "most_frequent" else (0, 10)
        return DPSimpleImputer(strategy=strategy, bounds=bounds, epsilon=1.0, random_state=0,
                               **kw).fit(X)  # fmt: skip

    zero, moved = _fit_twice(forced, fit, rule)
    if strategy == "mean":
        np.testing.assert_allclose(moved.statistics_ - zero.statistics_, 5.0 * 0.5, rtol=1e-9)
    elif strategy == "median":
        assert moved.statistics_[0] > 9.5 > zero.statistics_[0]
    else:
        assert moved.statistics_[0] == 3.0 != zero.statistics_[0]


# -- DP-FERMI and its federated form ------------------------------------------------
FERMI = dict(epsilon=2.0, max_epochs=1, batch_size=60, random_state=0)


def test_fermi_uses_the_noisy_group_histogram_and_w_releases(forced, data):
    X, y, s = data
    est = DPFermiClassifier(**FERMI)
    fit = lambda: clone(est).fit(X, y, sensitive_features=s)  # noqa: E731
    zero, moved = _fit_twice(forced, fit, lambda k, i, shape, std: [BIG, 0.0] if i == 0 else None)
    assert forced.calls[0][2] == (2,)  # the group histogram comes first
    np.testing.assert_allclose(moved.group_priors_.ravel(), [1.0, 0.0], atol=1e-4)
    assert abs(zero.group_priors_.ravel()[0] - np.mean(s == 0)) < 1e-9
    # the W releases: the dual draws of every step (the W-gradient's shape)
    w_size = zero.W_.size
    zero, moved = _fit_twice(
        forced, fit, lambda k, i, shape, std: 5.0 if i > 0 and shape == (w_size,) else None
    )
    assert np.abs(moved.W_ - zero.W_).max() > 1e-3


def test_federated_uses_the_noisy_silo_releases(forced, data):
    X, y, s = data
    est = FederatedDPFermiClassifier(n_silos=2, epsilon=2.0, max_epochs=1, batch_size=30,
                                     random_state=0)  # fmt: skip
    fit = lambda: clone(est).fit(X, y, sensitive_features=s)  # noqa: E731
    # round 0: each silo's first draw is its group histogram
    zero, moved = _fit_twice(
        forced, fit, lambda k, i, shape, std: [BIG, 0.0] if i == 0 and shape == (2,) else None
    )
    np.testing.assert_allclose(moved.group_priors_.ravel(), [1.0, 0.0], atol=1e-4)
    w_size = zero.W_.size
    zero, moved = _fit_twice(
        forced, fit, lambda k, i, shape, std: 5.0 if i > 0 and shape == (w_size,) else None
    )
    assert np.abs(moved.W_ - zero.W_).max() > 1e-3


# -- RaCO-DP ------------------------------------------------------------------------
RACO = dict(epsilon=2.0, max_epochs=2, batch_size=60, random_state=0, enforce_tolerance=False)


def test_raco_dual_ascent_uses_the_noisy_step_histograms(forced, data):
    X, y, s = data
    est = RaCODPClassifier(**RACO)
    fit = lambda: clone(est).fit(X, y, sensitive_features=s)  # noqa: E731
    zero, moved = _fit_twice(
        forced, fit, lambda k, i, shape, std: 20.0 * np.eye(2)[1] if len(shape) == 2 else None
    )
    assert np.abs(moved.lambda_ - zero.lambda_).max() > 1e-3


def test_raco_tolerance_margin_reads_the_noisy_set_counts(forced, data):
    """The margin's set sizes come from the released histograms: noise that adds a
    large count to every cell shrinks the margin to almost 0 (many rows)."""
    X, y, s = data
    est = RaCODPClassifier(**RACO, tolerance=0.2)
    fit = lambda: clone(est).fit(X, y, sensitive_features=s)  # noqa: E731
    zero, moved = _fit_twice(forced, fit, lambda k, i, shape, std: BIG if len(shape) == 2 else None)
    assert zero.tolerance_margins_.min() > 0.05  # 120 rows: a large sampling error
    assert moved.tolerance_margins_.max() < 1e-3


@pytest.mark.parametrize("target", [0, -1])
def test_raco_best_selects_on_the_noisy_counts(forced, data, target):
    """The candidate whose released counts say 'no error, no violation' is selected."""
    X, y, s = data
    est = RaCODPClassifier(**RACO, solution="best")

    def rule(k, i, shape, std):
        if len(shape) != 3:  # (K, cells, classes): the selection release
            return None
        cells = np.arange(shape[1])
        value = np.zeros(shape)  # a cell is (group, true label): label = cell % 2
        value[:, cells, 1 - cells % 2] = BIG  # every candidate all wrong...
        value[target] = 0.0
        value[target, cells, cells % 2] = BIG  # ...but the target: all right, in every group
        return value

    forced.reset(rule)
    fitted = clone(est).fit(X, y, sensitive_features=s)
    n_candidates = forced.calls[-1][2][0]
    assert fitted.selected_iterate_ == range(n_candidates)[target]
    assert fitted.selection_statistics_["error"][target] < 1e-3


# -- CGOO ---------------------------------------------------------------------------
CGOO = dict(epsilon=2.0, max_iter=3, fully_corrective=False, random_state=0)
ORACLE = DPSGDClassifier(lr=1.0, batch_size=200, max_epochs=1)


def test_cgoo_uses_the_noisy_cell_counts_and_atom_statistics(forced, data):
    X, y, s = data
    est = CGOOReduction(ORACLE, **CGOO)
    fit = lambda: clone(est).fit(X, y, sensitive_features=s)  # noqa: E731
    # the reduction's own source is the first; its first draw is the cell counts
    zero, moved = _fit_twice(
        forced,
        fit,
        lambda k, i, shape, std: np.eye(shape[0])[0] * BIG if (k, i) == (0, 0) else None,
    )
    assert moved.cell_frequencies_[0] > 0.99 > zero.cell_frequencies_[0]
    # its later draws are the atoms' statistics: a huge negative offset clips them to 0
    zero, moved = _fit_twice(
        forced, fit, lambda k, i, shape, std: -BIG if k == 0 and i > 0 else None
    )
    oracle_atoms = [j for j, p in enumerate(moved.predictors_) if isinstance(p, DPSGDClassifier)]
    assert oracle_atoms
    assert np.all(moved.stats_[oracle_atoms] == 0.0)
    assert np.any(zero.stats_[oracle_atoms] > 0.0)


# -- the search, the post-processing, the evaluation --------------------------------
def test_search_selects_on_the_noisy_scores(forced, data, monkeypatch):
    X, y, s = data
    tried = []
    run = PrivateSearchCV._run

    def recording_run(self, params, *args):
        tried.append(params)
        return run(self, params, *args)

    monkeypatch.setattr(PrivateSearchCV, "_run", recording_run)
    search = PrivateSearchCV(
        DPSGDClassifier(max_epochs=1, batch_size=200),
        {"lr": [0.001, 0.01, 0.1, 1.0, 3.0]},
        epsilon=2.0,
        distribution="poisson",
        n_candidates_mean=6.0,
        random_state=0,
    )
    for target in (0, -1):
        tried.clear()
        forced.reset()
        clone(search).fit(X, y)
        score_calls = [(k, i) for k, i, shape, _ in forced.calls if shape == (1,)]
        assert len(score_calls) == len(tried) >= 2
        chosen = score_calls[target]
        forced.reset(
            lambda k, i, shape, std, c=chosen: (
                (BIG if (k, i) == c else -BIG) if shape == (1,) else None
            )
        )
        tried.clear()
        fitted = clone(search).fit(X, y)
        assert fitted.best_params_ == tried[target]
        assert fitted.best_score_ == 1.0


def test_threshold_optimizer_uses_the_noisy_histogram(forced, data):
    X, y, s = data
    est = DPThresholdOptimizer(DPSGDClassifier(max_epochs=1, batch_size=200), epsilon=2.0,
                               random_state=0)  # fmt: skip
    fit = lambda: clone(est).fit(X, y, sensitive_features=s)  # noqa: E731

    def rule(k, i, shape, std):
        if len(shape) != 3:  # (group, label, score bin): the histogram
            return None
        value = np.zeros(shape)
        value[:, 1, 0] = BIG  # every positive in the lowest score bin
        return value

    zero, moved = _fit_twice(forced, fit, rule)
    np.testing.assert_allclose(
        moved.histogram_ - zero.histogram_, rule(0, 0, zero.histogram_.shape, 1)
    )
    assert not np.array_equal(_flat(zero.thresholds_), _flat(moved.thresholds_))


def _flat(rule) -> np.ndarray:
    """Every number of a fitted ``ThresholdRule``."""
    fields = ("p0", "k0", "p1", "k1", "p_ignore", "constant")
    return np.concatenate([np.ravel(np.asarray(getattr(rule, f), dtype=float)) for f in fields])


def test_metric_frame_reports_the_noisy_table(forced, data):
    _, y, s = data
    y_pred = y.copy()

    def frame():
        return PrivateMetricFrame(metrics="accuracy_score", y_true=y, y_pred=y_pred,
                                  sensitive_features=s, epsilon=1.0, random_state=0)  # fmt: skip

    def rule(k, i, shape, std):
        value = np.zeros(shape)  # (group, cell): group 0's rows all counted wrong
        value[0] = [0.0, BIG, BIG, 0.0]
        return value

    zero, moved = _fit_twice(forced, frame, rule)
    assert np.allclose(zero.by_group.to_numpy(), 1.0)
    assert moved.by_group.to_numpy()[0] < 1e-3
    assert moved.by_group.to_numpy()[1] == 1.0
