"""Noise-scale conformance of every closed-form release (issue 28, item 1a).

For each release: on fixed data, the noise of the value the release *returns* (what
its consumer reads: a fitted attribute, or the output of the release function on
the path the estimator takes) is compared with the scale implied by

- the multiplier of the **recorded** dp-accounting event (``dp_event_``, or the
  event the release function returned), and
- a worst-case sensitivity **derived here**, from the declared bounds, clip and
  weights and the privacy unit, by the worst neighbouring pair, never read from
  the code: add/remove one row (``"record"``), the largest L2 norm of one row's
  contribution; replace one row's ``s`` (``"sensitive"``), half the largest L2
  distance between the two outputs (dp-accounting's replace-one Gaussian is
  priced for a shift of twice the sensitivity).

The exact statistic is recomputed here too (not taken from the code), so the
noise is ``returned - exact``.

**The test.** ``n`` noise values, i.i.d. ``N(0, s^2)`` under the claim:
``sum x^2 / s^2 ~ chi2(n)`` exactly (Laplace: ``sum |x| / b ~ Gamma(n)``); the
claim is rejected outside the central ``1 - ALPHA`` interval, ``ALPHA = 1e-6``, so
a correct release fails a check with probability 1e-6 whatever the seed (the
tests are seeded, hence deterministic; the bound is what holds in secure mode and
for any seed). No test makes more than 4 checks: false alarm < 4e-6 < 1e-4 per test.
Power is asserted in the checker for every check: with the same ``n``, a scale
20% too small or too large is accepted with probability < 1e-4 (exact, from the
same distributions). For the Gaussian that needs n >= ~1200 values (n = 1500:
<= 2e-7); for the Laplace n >= ~3000. The numbers per check are in each test.

Where fits are slow to calibrate, the calibration (a pure function of public
values) is memoised for the test; the releases, their recorders and consumers
run unchanged.
"""

from __future__ import annotations

import functools
import math
import warnings

import dp_accounting
import numpy as np
import pytest
import torch
from conftest import make_biased_data
from scipy import stats
from test_privacy_mutants import _event_leaves

import skfairdp.engine.step as engine_step
import skfairdp.evaluation.table as evaluation_table
import skfairdp.federated.silo as silo_module
import skfairdp.fermi.linear_step as linear_step
import skfairdp.fermi.priors as fermi_priors
import skfairdp.model_selection.search as search_module
import skfairdp.preprocessing._step as step_module
import skfairdp.preprocessing.imputer as imputer_module
import skfairdp.raco.solutions as raco_solutions
import skfairdp.reductions.releases as cgoo_releases
from skfairdp import CGOOReduction, DPFermiClassifier, RaCODPClassifier
from skfairdp.engine.iterates import load_flat_parameters
from skfairdp.federated.silo import Silo, SiloConfig
from skfairdp.metrics import PrivateMetricFrame
from skfairdp.model_selection import PrivateSearchCV
from skfairdp.postprocessing import DPThresholdOptimizer
from skfairdp.preprocessing import DPOneHotEncoder, DPSimpleImputer, DPStandardScaler
from skfairdp.preprocessing._step import PrivateStep
from skfairdp.privacy import (
    EventRecorder,
    RandomSource,
    gaussian_sum,
    joint_noise_multiplier,
    noisy_count,
    noisy_histogram,
)
from skfairdp.reductions.atoms import CellPositives
from skfairdp.reductions.exponential import exponential_mechanism, selection_event

pytestmark = [
    pytest.mark.filterwarnings(r"ignore:\w+Classifier. the fitted model:UserWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

ALPHA = 1e-6  # per check, two-sided
MISS = 1e-4  # largest acceptance probability of a scale 20% off (asserted per check)


# ---------------------------------------------------------------------------
# the generic checker
# ---------------------------------------------------------------------------
def check_scale(noise, scale: float, what: str, kind: str = "gaussian") -> None:
    """Exact test at level ALPHA that ``noise`` is i.i.d. N(0, scale^2) (or Laplace(0, scale)).

    Asserts its own power first: the same test accepts a scale 20% below or above
    ``scale`` with probability < MISS.
    """
    x = np.asarray(noise, dtype=np.float64).ravel()
    n = x.size
    assert np.all(np.isfinite(x)) and scale > 0
    if kind == "gaussian":
        statistic, dist, power = float(np.sum(x**2)) / scale**2, stats.chi2(n), 2
    else:
        statistic, dist, power = float(np.sum(np.abs(x))) / scale, stats.gamma(n), 1
    lo, hi = dist.ppf(ALPHA / 2), dist.isf(ALPHA / 2)
    for ratio in (0.8, 1.2):  # statistic of a scale off by `ratio` is ratio**power times ours
        accepted = dist.cdf(hi / ratio**power) - dist.cdf(lo / ratio**power)
        assert accepted < MISS, f"{what}: {n} values cannot tell a {ratio}x scale ({accepted:.2g})"
    observed = (statistic / dist.mean()) ** (1 / power)
    assert lo <= statistic <= hi, (
        f"{what}: empirical noise scale / scale implied by the event and the derived "
        f"sensitivity = {observed:.3f} over {n} values (accepted band "
        f"[{(lo / dist.mean()) ** (1 / power):.3f}, {(hi / dist.mean()) ** (1 / power):.3f}])"
    )


def releases(event) -> list[tuple[float, float, int]]:
    """``(multiplier, sampling rate, count)`` of each Gaussian release of ``event``, in the
    order recorded (a step on a Poisson batch of rate q < 1 is a PoissonSampledDpEvent;
    at q = 1 a bare Gaussian)."""
    out = []

    def walk(e, count):
        if isinstance(e, dp_accounting.ComposedDpEvent):
            for part in e.events:
                walk(part, count)
        elif isinstance(e, dp_accounting.SelfComposedDpEvent):
            walk(e.event, count * e.count)
        elif isinstance(e, dp_accounting.PoissonSampledDpEvent):
            (leaf,) = _event_leaves(e.event)
            out.append((float(leaf.noise_multiplier), float(e.sampling_probability), count))
        elif isinstance(e, dp_accounting.GaussianDpEvent):
            out.append((float(e.noise_multiplier), 1.0, count))

    walk(event, 1)
    return out


def single_release(event) -> float:
    """The multiplier of an event that is exactly one Gaussian release."""
    ((z, q, count),) = releases(event)
    assert q == 1.0 and count == 1
    return z


def implied_std(z: float, worst_change: float, unit: str) -> float:
    """Noise std a ``GaussianDpEvent(z)`` promises for a release whose worst neighbouring
    pair moves it by ``worst_change`` in L2: add/remove (record) ``z * change``;
    replace-one (sensitive) ``z * change / 2``."""
    return z * worst_change / (2.0 if unit == "sensitive" else 1.0)


def capture(monkeypatch, module, name: str, calls: list | None = None) -> list:
    """Wrap ``module.name``; every call's ``(args, kwargs, result)`` is appended (to
    ``calls`` when given: several modules' copies of one function in one list)."""
    calls, original = [] if calls is None else calls, getattr(module, name)

    def wrapper(*args, **kwargs):
        result = original(*args, **kwargs)
        calls.append((args, kwargs, result))
        return result

    monkeypatch.setattr(module, name, wrapper)
    return calls


def memoise_step_calibration(monkeypatch) -> None:
    """The preprocessing steps' multiplier and price, cached (the same values)."""
    original = PrivateStep._noise_multiplier

    @functools.cache
    def cached(epsilon, delta):
        probe = DPStandardScaler(bounds=(0, 1), epsilon=epsilon)
        return original(probe, delta)

    monkeypatch.setattr(
        PrivateStep, "_noise_multiplier", lambda self, delta: cached(float(self.epsilon), delta)
    )
    price = functools.cache(step_module.epsilon_spent)  # the price of the same event, once
    monkeypatch.setattr(step_module, "epsilon_spent", lambda e, d, **kw: price(e, d, **kw))


def released_noise(calls) -> list[np.ndarray]:
    """``returned - input`` of captured ``noisy_histogram``/``noisy_count`` calls."""
    return [(result[0].double() - args[0].double()).numpy().ravel() for args, _, result in calls]


# ---------------------------------------------------------------------------
# privacy/: the mechanisms themselves
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("secure_mode", [False, True], ids=["seeded", "secure"])
def test_mechanisms_add_noise_of_the_recorded_scale(secure_mode):
    """gaussian_sum, noisy_count, noisy_histogram (Gaussian and Laplace): 3000 values each
    (Gaussian band on the scale +-10%, Laplace +-9%), against the event each returns."""
    random = RandomSource(3, secure_mode=secure_mode)
    total = torch.linspace(-5, 5, 3000, dtype=torch.float64)
    recorder = EventRecorder()
    out, event = gaussian_sum(total, 2.5, 1.7, random, recorder)
    check_scale(out - total, event.noise_multiplier * 2.5, "gaussian_sum")
    out, event = noisy_count(total.reshape(30, 100), 0.9, random, sensitivity=3.0)
    check_scale(out.reshape(-1) - total, event.noise_multiplier * 3.0, "noisy_count")
    out, event = noisy_histogram(total, random, noise_multiplier=1.3, sensitivity=0.5)
    check_scale(out - total, event.noise_multiplier * 0.5, "noisy_histogram (Gaussian)")
    out, event = noisy_histogram(total, random, laplace_scale=0.8, sensitivity=2.0)
    assert isinstance(event, dp_accounting.LaplaceDpEvent)
    check_scale(out - total, event.noise_multiplier * 2.0, "noisy_histogram (Laplace)", "laplace")
    assert recorder.build() == dp_accounting.GaussianDpEvent(1.7)


# ---------------------------------------------------------------------------
# preprocessing
# ---------------------------------------------------------------------------
def _worst_unit_row(lower, upper, centre, half, powers) -> float:
    """Largest L2 norm of one row's contribution ``((x - centre) / half) ** p`` for each
    power ``p`` and column, over a fine grid of each column's declared range (columns
    are independent, so the worst row is the worst value of each column)."""
    total = 0.0
    for lo, up, c, h in zip(lower, upper, centre, half):
        grid = np.linspace(lo, up, 2001)
        u = (grid - c) / h
        total += float(np.max(sum(u ** (2 * p) for p in powers)))
    return math.sqrt(total)


def test_scaler_moments(monkeypatch):
    """DPStandardScaler, d = 40 columns of different declared ranges: 20 fits x 80 released
    numbers = 1600 values, recovered from the fitted mean_ and var_."""
    memoise_step_calibration(monkeypatch)
    rng = np.random.default_rng(0)
    d, n = 40, 2000
    lower = rng.uniform(-50, 0, d)
    upper = lower + rng.uniform(1, 100, d)
    middle, half = (lower + upper) / 2, (upper - lower) / 2
    # inside the bounds, some rows beyond them (clipped), all well away from the floors
    X = middle + half * rng.uniform(-0.9, 0.9, (n, d))
    X[:20] = upper + 10.0
    u = (np.clip(X, lower, upper) - middle) / half
    s1, s2 = u.sum(axis=0), (u**2).sum(axis=0)
    # one row adds (u_j, u_j^2) for every column: worst |u_j| = 1 in each
    sensitivity = _worst_unit_row(lower, upper, middle, half, powers=(1, 2))
    noise = []
    for seed in range(20):
        sc = DPStandardScaler(bounds=list(zip(lower, upper)), epsilon=1.0, random_state=seed)
        sc.fit(X)
        z = single_release(sc.dp_event_)
        m1 = (sc.mean_ - middle) / half
        assert np.all(np.abs(m1) < 1) and np.all(sc.var_ > (1e-3 * half) ** 2)  # no clamp
        noise += [n * m1 - s1, n * (sc.var_ / half**2 + m1**2) - s2]
    check_scale(np.concatenate(noise), implied_std(z, sensitivity, "record"), "scaler moments")


def test_encoder_counts(monkeypatch):
    """DPOneHotEncoder, 50 columns of 4 declared categories (values outside them too):
    8 fits x 200 counts = 1600 values, from noisy_counts_."""
    memoise_step_calibration(monkeypatch)
    rng = np.random.default_rng(1)
    d, n = 50, 300
    declared = [[f"c{j}_{k}" for k in range(4)] for j in range(d)]
    X = np.array(
        [[f"c{j}_{k}" for j, k in enumerate(row)] for row in rng.integers(0, 5, (n, d))],
        dtype=object,
    )  # k = 4 is undeclared: counted nowhere
    exact = np.concatenate([[np.sum(X[:, j] == v) for v in declared[j]] for j in range(d)]).astype(
        float
    )
    # a row adds 1 to at most one declared count of each column
    sensitivity = math.sqrt(d * 1.0**2)
    noise = []
    for seed in range(8):
        enc = DPOneHotEncoder(categories=declared, epsilon=2.0, random_state=seed).fit(X)
        z = single_release(enc.dp_event_)
        noise.append(np.concatenate(enc.noisy_counts_) - exact)
    check_scale(np.concatenate(noise), implied_std(z, sensitivity, "record"), "encoder counts")


@pytest.mark.parametrize("strategy", ["mean", "median", "most_frequent"])
def test_imputer_statistics(monkeypatch, strategy):
    """DPSimpleImputer: mean (40 columns: 80 values a fit, 20 fits), median (10 columns x
    32 bins, 5 fits), most_frequent (40 columns x 5 categories, 8 fits): the released
    vector, 1600 values each."""
    memoise_step_calibration(monkeypatch)
    calls = capture(monkeypatch, imputer_module, "noisy_histogram")
    rng = np.random.default_rng(2)
    d, n, n_bins = {"mean": 40, "median": 10, "most_frequent": 40}[strategy], 400, 32
    lower, upper = rng.uniform(-10, 0, d), rng.uniform(1, 10, d)
    if strategy == "most_frequent":
        values = np.arange(5.0)
        X = rng.integers(0, 6, (n, d)).astype(float)  # 5 is undeclared
        params = {"categories": [list(values)] * d}
    else:
        X = rng.uniform(lower - 2, upper + 2, (n, d))  # some beyond the bounds
        params = {"bounds": list(zip(lower, upper)), "n_bins": n_bins}
    missing = rng.uniform(size=(n, d)) < 0.1
    X[missing] = np.nan
    present = ~missing
    if strategy == "mean":
        middle, half = (upper + lower) / 2, (upper - lower) / 2
        u = np.where(present, (np.clip(X, lower, upper) - middle) / half, 0.0)
        exact = np.concatenate([u.sum(axis=0), present.sum(axis=0)])
        # a row adds u_j in [-1, 1] and 1 (its entry is present) for each column
        sensitivity = math.sqrt(sum(1.0**2 + 1.0**2 for _ in range(d)))
    elif strategy == "median":
        edges = [np.linspace(lo, up, n_bins + 1) for lo, up in zip(lower, upper)]
        exact = np.stack(
            [
                np.histogram(np.clip(X[present[:, j], j], lower[j], upper[j]), edges[j])[0]
                for j in range(d)
            ]
        ).ravel()
        sensitivity = math.sqrt(d)  # one bin of each column
    else:
        exact = np.concatenate([[np.sum(X[:, j] == v) for v in values] for j in range(d)])
        sensitivity = math.sqrt(d)  # one declared value of each column
    fits = {"mean": 20, "median": 5, "most_frequent": 8}[strategy]
    for seed in range(fits):
        imp = DPSimpleImputer(strategy, epsilon=1.0, random_state=seed, **params).fit(X)
        z = single_release(imp.dp_event_)
    assert len(calls) == fits
    noise = [result[0].numpy().ravel() - exact for _, _, result in calls]
    check_scale(np.concatenate(noise), implied_std(z, sensitivity, "record"), f"imputer {strategy}")


# ---------------------------------------------------------------------------
# evaluation and post-processing
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True], ids=["counts", "weighted"])
def test_private_metric_frame_table(monkeypatch, weighted):
    """PrivateMetricFrame.table_, 20 groups x 4 cells: 20 frames = 1600 values."""
    monkeypatch.setattr(
        evaluation_table,
        "table_noise_multiplier",
        functools.lru_cache(maxsize=None)(evaluation_table.table_noise_multiplier),
    )
    rng = np.random.default_rng(3)
    n, W = 500, 2.5
    y_true, y_pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    s = rng.integers(0, 20, n)
    w = rng.uniform(0, W, n) if weighted else None
    weights = np.ones(n) if w is None else w
    exact = np.array(
        [
            [
                weights[(s == g) & (y_true == t) & (y_pred == p)].sum()
                for t in (0, 1)
                for p in (0, 1)
            ]
            for g in range(20)
        ]
    )  # tn, fp, fn, tp
    extra = {"sample_weight": w, "max_sample_weight": W} if weighted else {}
    noise = []
    for seed in range(20):
        frame = PrivateMetricFrame(
            metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=s,
            epsilon=1.0, random_state=seed, n_draws=100, **extra,
        )  # fmt: skip
        z = single_release(frame.dp_event_)
        noise.append(frame.table_.to_numpy() - exact)
    # one row adds its weight (<= W, or 1) to one cell
    worst = W if weighted else 1.0
    check_scale(np.concatenate(noise), implied_std(z, worst, "record"), "metric frame table")


def test_threshold_optimizer_histogram(monkeypatch):
    """DPThresholdOptimizer.histogram_ (prefit): 3 groups x 2 labels x 50 bins = 300
    values a fit, 6 fits = 1800, with weights up to 2."""
    from test_postprocessing import ScoreColumn, synthetic

    cache = {}
    original = DPThresholdOptimizer._multiplier

    def multiplier(self, event, delta):
        key = (repr(event), delta, self.epsilon)
        if key not in cache:
            cache[key] = original(self, event, delta)
        return cache[key]

    monkeypatch.setattr(DPThresholdOptimizer, "_multiplier", multiplier)
    X, y, g = synthetic(n=900, n_bins=50, n_groups=3, seed=4)
    w = np.random.default_rng(4).uniform(0, 2, len(y))
    score_bin = np.floor(X[:, 0] * 50).astype(int)  # scores at bin centres in [0, 1]
    exact = np.zeros((3, 2, 50))
    np.add.at(exact, (g, y, score_bin), w)
    noise = []
    for seed in range(6):
        est = DPThresholdOptimizer(
            ScoreColumn().fit(None), prefit=True, epsilon=1.0, n_bins=50,
            max_sample_weight=2.0, random_state=seed,
        ).fit(X, y, sensitive_features=g, sample_weight=w)  # fmt: skip
        assert np.allclose(est.score_range_, (0.0, 1.0))
        z = single_release(est.dp_event_)
        noise.append(est.histogram_ - exact)
    # a row of weight <= 2 adds its weight to one (group, label, bin) cell
    check_scale(np.concatenate(noise), implied_std(z, 2.0, "record"), "threshold histogram")


# ---------------------------------------------------------------------------
# DP-FERMI: the group histogram and W's per-step releases
# ---------------------------------------------------------------------------
def _three_groups(n=600, seed=5):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    X[:, 0] += s
    y = (X[:, 0] + rng.normal(size=n) > 1).astype(np.int64)
    return X, y, s


@pytest.mark.parametrize("unit", ["record", "sensitive"])
def test_dpfermi_group_histogram(monkeypatch, unit):
    """The (label, group) histogram of equalized odds, weights up to 2: one fit, then 300
    more releases of the same group_frequencies on the fit's context (6 cells each):
    1806 values."""
    calls = capture(monkeypatch, fermi_priors, "noisy_histogram")
    contexts = capture(monkeypatch, fermi_priors, "group_frequencies")
    X, y, s = _three_groups()
    w = np.random.default_rng(5).uniform(0, 2, len(y))
    W = 2.0
    est = DPFermiClassifier(
        fairness="equalized_odds", epsilon=2.0, max_sample_weight=W, privacy_unit=unit,
        batch_size=len(y), max_epochs=1, random_state=0,
    ).fit(X, y, sensitive_features=s, sample_weight=w)  # fmt: skip
    z, q, count = releases(est.dp_event_)[0]  # before training, once
    assert (q, count) == (1.0, 1) and len(calls) == 1
    (ctx,), kwargs, _ = contexts[0]
    for _ in range(300):
        fermi_priors.group_frequencies(ctx, **kwargs)
    exact = np.zeros((2, 3))
    np.add.at(exact, (y, s), w)
    noise = [result[0].numpy().ravel() - exact.ravel() for _, _, result in calls]
    # record: a row adds its weight (<= W) to one cell; sensitive: its s changes, its
    # weight moves from one cell to another: L2 distance sqrt(2) W
    worst = W if unit == "record" else math.sqrt(2.0) * W
    check_scale(np.concatenate(noise), implied_std(z, worst, unit), f"DP-FERMI histogram ({unit})")


@pytest.mark.parametrize(
    "unit, lr_dual", [("record", "auto"), ("record", 0.05), ("sensitive", 0.05)],
    ids=["record-best-response", "record-ascent", "sensitive-ascent"],
)  # fmt: skip
def test_dpfermi_step_releases(monkeypatch, unit, lr_dual):
    """Every step's theta and W releases against the per-step event: 16 groups of public
    priors 1/16, 30 features; 50 full-batch steps (q = 1: quick to calibrate) x (62
    theta, 32 W) values = 3100 and 1600 values."""
    calls = capture(monkeypatch, engine_step, "gaussian_sum")
    capture(monkeypatch, linear_step, "gaussian_sum", calls)  # the linear step's releases
    rng = np.random.default_rng(6)
    n, k = 400, 16
    s = np.arange(n) % k
    X = rng.normal(size=(n, 30)).astype(np.float32)
    y = (X[:, 0] + 0.1 * s + rng.normal(size=n) > 0.8).astype(np.int64)
    lam, C = 1.0, 0.7
    est = DPFermiClassifier(
        fairness_weight=lam, epsilon=4.0, privacy_unit=unit, lr_dual=lr_dual, max_grad_norm=C,
        batch_size=n, max_epochs=50, group_priors={g: 1 / k for g in range(k)},
        random_state=0, fallback_to_constant=False,  # the steps alone (the check: its own tests)
    ).fit(X, y, sensitive_features=s)  # fmt: skip
    ((z_step, _, steps),) = releases(est.dp_event_)
    assert steps == est.n_steps_ == 50
    z_theta, z_w = est.noise_multiplier_, est.dual_noise_multiplier_
    assert joint_noise_multiplier(z_theta, z_w) == pytest.approx(z_step, rel=1e-9)
    assert len(calls) == 2 * steps
    theta = [r[0] - a[0] for a, _, r in calls[0::2]]
    dual = [r[0] - a[0] for a, _, r in calls[1::2]]
    assert {t.numel() for t in theta} == {62} and {t.numel() for t in dual} == {2 * k}
    # theta: one row's clipped gradient has norm <= C. W: best response, a row adds its
    # prediction's one-hot vector (norm 1) to one cell row; ascent, a row's W-gradient
    # 2 lambda (pinv_s e_s 1^T - W_b) diag(F) is clipped at 2 lambda max(pinv), the bound of
    # its s-dependent part. Replace-one (sensitive) moves a clipped sum by twice the clip.
    pinv_max = 1.0 / math.sqrt(1 / k)
    w_row = 1.0 if lr_dual == "auto" else 2.0 * lam * pinv_max
    scale = 2.0 if unit == "sensitive" else 1.0
    check_scale(torch.cat(theta).numpy(), implied_std(z_theta, scale * C, unit), "theta steps")
    check_scale(torch.cat(dual).numpy(), implied_std(z_w, scale * w_row, unit), "W steps")


# ---------------------------------------------------------------------------
# RaCO-DP: the stacked candidate histograms of solution="best"
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True], ids=["counts", "weighted"])
def test_raco_best_candidate_histograms(monkeypatch, weighted):
    """K candidates x (2 groups x 2 labels x 2 predictions): the fit's release and 40 more
    of select_best on the fit's context: 41 x 64 = 2624 values."""
    calls = capture(monkeypatch, raco_solutions, "noisy_histogram")
    selections = capture(monkeypatch, raco_solutions, "select_best")
    X, y, s = make_biased_data(n=300, seed=7)
    W = 3.0
    w = np.random.default_rng(7).uniform(0, W, len(y)) if weighted else None
    est = RaCODPClassifier(
        epsilon=2.0, solution="best", batch_size=len(y), max_epochs=20, random_state=0,
        enforce_tolerance=False, max_sample_weight=W if weighted else 1.0,
    ).fit(X, y, sensitive_features=s, sample_weight=w)  # fmt: skip
    z, q, count = releases(est.dp_event_)[-1]  # after training, once
    assert (q, count) == (1.0, 1)
    (module, candidates, ctx, program, epsilon), _, _ = selections[0]
    for _ in range(40):
        raco_solutions.select_best(module, candidates, ctx, program, epsilon)
    K = len(candidates)
    weights = np.ones(len(y)) if w is None else w
    exact = np.zeros((K, 2, 2, 2))  # candidate, group, label, prediction
    probe = torch.as_tensor(X)
    for k in range(K):
        load_flat_parameters(module, torch.as_tensor(candidates[k]))
        with torch.no_grad():
            pred = module(probe).argmax(dim=1).numpy()
        np.add.at(exact[k], (s, y, pred), weights)
    noise = [result[0].numpy().ravel() - exact.ravel() for _, _, result in calls]
    # a row is in one cell of each of the K histograms, with its weight
    worst = math.sqrt(K) * (W if weighted else 1.0)
    check_scale(np.concatenate(noise), implied_std(z, worst, "record"), "RaCO best histograms")


# ---------------------------------------------------------------------------
# CGOO: cell counts, atom statistics, exponential mechanism
# ---------------------------------------------------------------------------
def test_cgoo_cells_and_statistics(monkeypatch):
    """Cell counts (4) and each oracle atom's per-cell positive counts (4), weights up to 2,
    an exact oracle (a threshold stump on the test-only contract); one fit, then 450 more
    releases through release_cells and release_sums with the fit's statistics: 1804 cell
    values and 1800+ statistic values."""
    from test_cgoo import ExactStump, make_proxy_data

    calls = capture(monkeypatch, cgoo_releases, "noisy_histogram")
    atoms = capture(monkeypatch, CellPositives, "sums")
    X, y, s = make_proxy_data(600, seed=8)
    W = 2.0
    w = np.random.default_rng(8).uniform(0, W, len(y))
    est = CGOOReduction(
        ExactStump(max_sample_weight=W),
        epsilon=2.0,
        max_iter=3,
        max_sample_weight=W,
        fully_corrective=False,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y, sensitive_features=s, sample_weight=w)
    z_event = {z for z, _, _ in releases(est.dp_event_)}
    cells = 2 * s + y
    exact_cells = np.bincount(cells, weights=w, minlength=4)
    statistics = atoms[0][0][0]
    exact_atoms = [
        np.bincount(cells, weights=w * (atom.predict(Xa) == 1), minlength=4)
        for (_, atom, Xa), _, _ in atoms
    ]
    z_cells = calls[0][1]["noise_multiplier"]
    z_stats = {c[1]["noise_multiplier"] for c in calls[1:]}
    assert {z_cells} | z_stats <= z_event and len(calls) == 1 + len(atoms)
    (z_stats,) = z_stats
    for seed in range(450):
        random = RandomSource(seed)
        cgoo_releases.release_cells(
            statistics, random, EventRecorder(), 0.0, noise_multiplier=z_cells
        )
        cgoo_releases.release_sums(exact_atoms[0], statistics, z_stats, random, EventRecorder())
    ours = [exact_cells] + exact_atoms + [exact_cells, exact_atoms[0]] * 450
    noise = [r[0].numpy() - e for (_, _, r), e in zip(calls, ours)]
    first_atom = 1 + len(atoms)
    cell_noise = np.concatenate([noise[0]] + noise[first_atom::2])
    atom_noise = np.concatenate(noise[1:first_atom] + noise[first_atom + 1 :: 2])
    # a row adds its weight (<= W) to one cell, and to at most one cell of an atom's counts
    check_scale(cell_noise, implied_std(z_cells, W, "record"), "CGOO cell counts")
    check_scale(atom_noise, implied_std(z_stats, W, "record"), "CGOO atom statistics")


def test_exponential_mechanism_frequencies():
    """20000 draws of exponential_mechanism: chi-square goodness of fit to
    exp(-eps h / (2 Delta)) with eps read from the event it records; the same test
    rejects an epsilon 20% off with probability > 1 - 1e-4 (asserted, noncentral chi2)."""
    scores = np.array([0.0, 0.05, 0.1, 0.2, 0.3, 0.5])
    sensitivity, epsilon, draws = 0.1, 2.0, 20000
    random, recorder = RandomSource(9), EventRecorder()
    picks = [
        exponential_mechanism(scores, sensitivity, epsilon, random, recorder) for _ in range(draws)
    ]
    event = recorder.build()
    assert event == dp_accounting.SelfComposedDpEvent(selection_event(epsilon), draws)
    eps_event = 1.0 / event.event.noise_multiplier  # the recorded pure epsilon

    def probabilities(eps):
        logits = -eps * scores / (2 * sensitivity)
        return np.exp(logits - np.logaddexp.reduce(logits))

    expected = draws * probabilities(eps_event)
    observed = np.bincount(picks, minlength=len(scores))
    critical = stats.chi2(len(scores) - 1).isf(ALPHA)
    for ratio in (0.8, 1.2):
        shifted = probabilities(ratio * eps_event)
        noncentrality = draws * np.sum((shifted - expected / draws) ** 2 / (expected / draws))
        assert stats.ncx2(len(scores) - 1, noncentrality).cdf(critical) < MISS
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    assert statistic < critical, (statistic, critical, observed, expected.round())


# ---------------------------------------------------------------------------
# PrivateSearchCV's scores
# ---------------------------------------------------------------------------
def test_search_scores(monkeypatch):
    """Each run's noisy (group, true, predicted) cells: the search's runs, then 220 more
    releases of the same _score on the selected run (8 cells each): >= 1760 values."""
    calls = capture(monkeypatch, search_module, "noisy_count")
    scores = capture(monkeypatch, PrivateSearchCV, "_score")
    from test_model_selection import ToyPrivateClassifier

    X, y, s = make_biased_data(n=600, seed=10)
    search = PrivateSearchCV(
        ToyPrivateClassifier(),
        {"threshold": [0.0, 0.5, 1.0]},
        fairness="demographic_parity",
        epsilon=4.0,
        n_candidates_mean=2,
        random_state=0,
    ).fit(X, y, sensitive_features=s)
    # one run = its fit's event, then the score's Gaussian; repeated and selected
    run = search.dp_event_.event
    assert isinstance(run, dp_accounting.ComposedDpEvent)
    z = run.events[-1].noise_multiplier
    args, _, _ = scores[-1]
    self_, est, X_val, y_val, groups, n_groups, z_call, random, recorder = args
    for _ in range(220):
        PrivateSearchCV._score(self_, est, X_val, y_val, groups, n_groups, z_call, random, recorder)
    noise = []
    for (args_score, _, _), (_, _, result) in zip(scores, calls):
        _, est_k, Xk, yk, gk, ng = args_score[:6]
        pred = np.asarray(est_k.predict(Xk))
        exact = np.zeros((ng, 2, 2))
        np.add.at(exact, (gk, yk, pred), 1.0)
        noise.append(result[0].numpy().ravel() - exact.ravel())
    assert len(calls) == len(scores) >= 221
    # a validation row is in exactly one (group, true, predicted) cell
    check_scale(np.concatenate(noise), implied_std(z, 1.0, "record"), "search scores")


# ---------------------------------------------------------------------------
# federated: the silos' round-0 histogram and their per-round updates
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("unit", ["record", "sensitive"])
def test_federated_histogram(monkeypatch, unit):
    """A silo's round-0 (label, group) histogram: 400 silos x 4 cells = 1600 values."""
    monkeypatch.setattr(
        silo_module,
        "reserved_noise_multiplier",
        functools.lru_cache(maxsize=None)(silo_module.reserved_noise_multiplier),
    )
    X, y, s = make_biased_data(n=120, seed=11)
    exact = np.zeros((2, 2))
    np.add.at(exact, (y, s), 1.0)
    config = SiloConfig(epsilon=1.0, privacy_unit=unit, batch_size=20, rounds=5)
    noise = []
    for seed in range(400):
        silo = Silo(X, y, s, config, seed=seed)
        counts = silo.histogram("labels_groups")["counts"]
        z = single_release(silo.recorder.build())
        noise.append(counts - exact.ravel())
    # record: one row, one cell; sensitive: the row's count moves between two cells
    worst = 1.0 if unit == "record" else math.sqrt(2.0)
    check_scale(np.concatenate(noise), implied_std(z, worst, unit), f"silo histogram ({unit})")


@pytest.mark.parametrize("unit", ["record", "sensitive"])
def test_federated_silo_updates(unit):
    """A silo's replies (theta and W, dual release included) on all-zero clipped sums, so
    the reply is noise / m: 40 full-batch rounds x (80 theta, 40 W) = 3200 and 1600 values
    (the silo noises whatever sums it is handed; their length is free here)."""
    X, y, s = make_biased_data(n=200, seed=12)
    lam, C = 2.0, 0.8
    config = SiloConfig(
        epsilon=4.0, privacy_unit=unit, batch_size=200, rounds=40, histogram=False,
        fairness_weight=lam, max_grad_norm=C,
    )  # fmt: skip
    silo = Silo(X, y, s, config, seed=0)
    pinv = np.array([[1 / math.sqrt(0.3), 1 / math.sqrt(0.7)]], np.float32)
    broadcast = {
        "round": 0, "theta": np.zeros(8, np.float32), "W": np.zeros((1, 2, 2), np.float32),
        "pinv": pinv, "label_weights": np.ones(2),
    }  # fmt: skip
    theta, dual = [], []
    for r in range(40):
        silo.begin_round({**broadcast, "round": r})
        reply = silo.finish_round(torch.zeros(80), torch.zeros(40))
        theta.append(reply["theta"] * silo.expected_batch_size)
        dual.append(reply["W"] * silo.expected_batch_size)
    ((z_step, _, rounds),) = releases(silo.recorder.build())
    assert rounds == 40
    z_theta, z_w = silo.noise["primal"], silo.noise["dual"]
    assert joint_noise_multiplier(z_theta, z_w) == pytest.approx(z_step, rel=1e-9)
    # theta: a row's clipped gradient, norm <= C; W: a row's gradient
    # 2 lambda (pinv_s e_s 1^T - W_b) diag(F), clipped at 2 lambda max(pinv) (its
    # s-dependent part's bound). Replace-one moves a clipped sum by twice the clip.
    scale = 2.0 if unit == "sensitive" else 1.0
    w_row = 2.0 * lam * float(pinv.max())
    check_scale(np.concatenate(theta), implied_std(z_theta, scale * C, unit), "silo theta")
    check_scale(np.concatenate(dual), implied_std(z_w, scale * w_row, unit), "silo W (dual)")
