"""RaCO-DP's linear step (skfairdp/raco/linear_step.py) against the engine's step.

With the problem's own (torch float32) post-processing (``linear_step.HOST_STATISTICS``
off) each seeded fit is run twice, with the dedicated step and with the generic engine
(``linear_step.ENABLED`` off), and must give the same parameters, multipliers,
``dp_event_`` and ``privacy_spent_``, bit for bit. With the post-processing in float64 on
the host (:mod:`skfairdp.raco.host_dual`, the default) the releases are the same (same
events, same noise draws) and the model agrees to float32 rounding; the float64
post-processing itself is checked against the problem's torch version on random
histograms. The clipped contributions the step sums are checked against the sensitivity
the test derives from the parameters it sets, and both noise draws against it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import (
    check_linear_step_release,
    count_linear_steps,
    make_biased_data,
    spy_linear_step,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skfairdp import RaCODPClassifier
from skfairdp.fairness.rates import compile_rate_constraints, resolve_constraints
from skfairdp.privacy import RandomSource
from skfairdp.raco import linear_step
from skfairdp.raco.host_dual import HostDual
from skfairdp.raco.linear_step import LinearRacoStep
from skfairdp.raco.problem import RacoProblem, hard_predictions, soft_histogram

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture
def taken(monkeypatch):
    """Counts of the steps the linear step took (True) and handed to the engine (False)."""
    return count_linear_steps(monkeypatch, LinearRacoStep)


def _data(n=400, seed=0, groups=2, n_features=4):
    X, y, s = make_biased_data(n=n, seed=seed, n_features=n_features)
    if groups == 3:
        s = s + (np.random.default_rng(seed).random(n) < 0.3)  # groups 0, 1, 2
    return X, y, s


def _fit(X, y, s, fast, monkeypatch, sample_weight=None, host=False, **params):
    monkeypatch.setattr(linear_step, "ENABLED", fast)
    monkeypatch.setattr(linear_step, "HOST_STATISTICS", host)
    settings_ = dict(epsilon=2.0, delta=1e-5, max_epochs=2, batch_size=64, lr=0.5)
    settings_.update(params)
    est = RaCODPClassifier(**settings_)
    return est.fit(X, y, sensitive_features=s, sample_weight=sample_weight)


def assert_same_fit(a, b, X):
    for p, q in zip(a.module_.parameters(), b.module_.parameters(), strict=True):
        assert torch.equal(p, q)
    assert np.array_equal(a.lambda_, b.lambda_)
    assert np.array_equal(a.tolerance_margins_, b.tolerance_margins_)
    assert (a.dual_steps_ is None) == (b.dual_steps_ is None)
    if a.dual_steps_ is not None:
        assert np.array_equal(a.dual_steps_, b.dual_steps_)
    assert a.dp_event_ == b.dp_event_
    assert a.privacy_spent_ == b.privacy_spent_
    assert a.paper_epsilon_ == b.paper_epsilon_
    assert a.n_steps_ == b.n_steps_
    for row_a, row_b in zip(a.history_, b.history_, strict=True):
        np.testing.assert_array_equal(row_a["constraint_violation"], row_b["constraint_violation"])
        assert row_a["lambda_max"] == row_b["lambda_max"]
    if a.iterates_ is not None:
        assert np.array_equal(a.iterates_, b.iterates_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def assert_close_fit(a, b, X, atol=1e-5):
    """The host's float64 post-processing: the same releases (events, steps), the model and
    the multipliers within float32 rounding of the engine's."""
    assert a.dp_event_ == b.dp_event_
    assert a.privacy_spent_ == b.privacy_spent_
    assert a.paper_epsilon_ == b.paper_epsilon_
    assert a.n_steps_ == b.n_steps_
    for p, q in zip(a.module_.parameters(), b.module_.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=atol)
    np.testing.assert_allclose(a.lambda_, b.lambda_, rtol=1e-4, atol=atol)
    np.testing.assert_allclose(a.tolerance_margins_, b.tolerance_margins_, rtol=1e-5, atol=1e-7)
    if a.dual_steps_ is not None:
        np.testing.assert_allclose(a.dual_steps_, b.dual_steps_, rtol=1e-5)
    for row_a, row_b in zip(a.history_, b.history_, strict=True):
        assert row_a["constraint_violation"] == pytest.approx(
            row_b["constraint_violation"], abs=1e-5
        )
        assert row_a["lambda_max"] == pytest.approx(row_b["lambda_max"], rel=1e-4, abs=atol)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=atol)


CONFIGS = {
    "demographic-parity": {},
    "equalized-odds": dict(constraints="equalized_odds"),
    "three-groups": dict(groups=3),
    "three-groups-eo-vs-rest": dict(groups=3, constraints="equalized_odds_vs_rest"),
    "laplace": dict(histogram_noise="laplace"),
    "soft-rates": dict(dual_rates="soft", temperature=2.0),
    "lr-dual-bound-no-margin": dict(lr_dual=0.3, dual_bound=2.0, tolerance_margin=0.0),
    "mixture": dict(solution="mixture"),
    "last-adam": dict(solution="last", optimizer=torch.optim.Adam, lr=0.05),
    "large-batch-clip": dict(batch_size=300, max_grad_norm=0.3),
}


#: two seeds for these, one for the others (the suite's time)
TWO_SEEDS = ("demographic-parity", "equalized-odds", "three-groups")
CASES = [(config, seed) for config in CONFIGS for seed in ((0, 1) if config in TWO_SEEDS else (0,))]


@pytest.mark.parametrize(("config", "seed"), CASES, ids=[f"{c}-{s}" for c, s in CASES])
def test_linear_step_fits_are_the_engines(config, seed, monkeypatch, taken):
    params = dict(CONFIGS[config], random_state=seed)
    X, y, s = _data(seed=seed, groups=params.pop("groups", 2))
    fast = _fit(X, y, s, True, monkeypatch, **params)
    assert taken[True] == fast.n_steps_  # every step was the linear step's
    engine = _fit(X, y, s, False, monkeypatch, **params)
    assert_same_fit(fast, engine, X)
    host = _fit(X, y, s, True, monkeypatch, host=True, **params)
    assert taken[True] == fast.n_steps_ + host.n_steps_
    assert_close_fit(host, engine, X)


@pytest.mark.parametrize("constraints", ["demographic_parity", "equalized_odds"])
def test_sample_weights_and_three_classes(constraints, monkeypatch, taken):
    """Weighted (float64 clip factors, weighted histogram), three groups, three classes."""
    rng = np.random.default_rng(3)
    X, _, s = _data(n=450, seed=3, groups=3, n_features=3)
    y = rng.integers(0, 3, len(X))
    w = rng.uniform(0.0, 2.0, len(X))
    params = dict(max_sample_weight=2.0, constraints=constraints, random_state=4)
    fast = _fit(X, y, s, True, monkeypatch, sample_weight=w, **params)
    assert taken[True] == fast.n_steps_
    engine = _fit(X, y, s, False, monkeypatch, sample_weight=w, **params)
    assert_same_fit(fast, engine, X)
    host = _fit(X, y, s, True, monkeypatch, sample_weight=w, host=True, **params)
    assert_close_fit(host, engine, X)


def test_empty_batches_and_wild_rows(monkeypatch, taken):
    """Empty Poisson batches and a row whose outputs overflow take the engine's step; a row
    at 1e25 (gradient norm not tame) is clipped by the engine's float64 path inside the
    linear step: the same fit."""
    X, y, s = _data(n=300, seed=2, n_features=3)
    X[7] = 1e25  # |(a, 1)| ~ 1.7e25: not tame
    X[11] = np.finfo(np.float32).max  # outputs overflow
    params = dict(batch_size=3, max_epochs=3, random_state=5)  # q = 1 %: P(empty) ~ 5 %
    fast = _fit(X, y, s, True, monkeypatch, **params)
    assert taken["empty"] > 0 and taken[True] > 0
    assert taken[False] > taken["empty"]  # a non-empty batch on the engine's step
    assert taken[True] + taken[False] == fast.n_steps_
    engine = _fit(X, y, s, False, monkeypatch, **params)
    assert_same_fit(fast, engine, X)
    # the host's dual state: stored before each engine step, reloaded after it
    host = _fit(X, y, s, True, monkeypatch, host=True, **params)
    assert_close_fit(host, engine, X)


def test_untame_row_is_taken(monkeypatch, taken):
    calls = []
    original = linear_step.clipped_total
    monkeypatch.setattr(
        linear_step, "clipped_total", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    X, y, s = _data(n=200, seed=2, n_features=3)
    X[:20] = 1e25
    params = dict(batch_size=40, max_epochs=2, random_state=1)
    fast = _fit(X, y, s, True, monkeypatch, **params)
    assert calls and taken[True] == fast.n_steps_
    engine = _fit(X, y, s, False, monkeypatch, **params)
    assert_same_fit(fast, engine, X)


@pytest.mark.parametrize(
    "params",
    [
        dict(hidden_layer_sizes=(4,)),
        dict(epsilon=math.inf),
        dict(record_private_diagnostics=True),
    ],
    ids=["mlp", "non-private", "diagnostics"],
)
def test_options_it_does_not_cover_take_the_engine(params, monkeypatch, taken):
    X, y, s = _data(n=200, seed=0, n_features=3)
    _fit(X, y, s, True, monkeypatch, max_epochs=1, random_state=0, **params)
    assert taken[True] == taken[False] == 0


def test_hooked_module_takes_the_engine(monkeypatch, taken):
    module = torch.nn.Linear(3, 2)
    module.register_forward_hook(lambda *args: None)
    X, y, s = _data(n=200, seed=0, n_features=3)
    _fit(X, y, s, True, monkeypatch, max_epochs=1, random_state=0, module=module)
    assert taken[True] == taken[False] == 0


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    scale=st.floats(-3.0, 6.0),
    clip=st.floats(0.05, 5.0),
    temperature=st.sampled_from([0.5, 1.0, 4.0]),
    weighted=st.booleans(),
    laplace=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_each_clipped_contribution_is_within_the_sensitivity(
    scale, clip, temperature, weighted, laplace, seed, monkeypatch
):
    """Row i's contribution to the released gradient sum is ``r_i (a_i, 1)^T`` for the
    clipped logit row ``r_i`` the step multiplies by the inputs: its norm, computed here in
    float64 from the batch's own rows, is at most ``C * max_sample_weight`` (the test's own
    values); the gradient noise has std ``z * C * max_sample_weight`` and the histogram's
    ``z_hist * max_sample_weight`` (Gaussian) or scale ``b * max_sample_weight`` (Laplace)."""
    rng = np.random.default_rng(seed)
    X, y, s = make_biased_data(n=160, seed=seed % 7, n_features=3)
    X = X * np.float32(10.0**scale) * rng.lognormal(0.0, 2.0, (len(X), 1)).astype(np.float32)
    max_weight = 3.0 if weighted else 1.0
    w = rng.uniform(0.0, max_weight, len(X)) if weighted else None
    bound = clip * max_weight
    seen, draws = spy_linear_step(monkeypatch, LinearRacoStep)
    laplace_scales = []
    from skfairdp.privacy import mechanisms

    original_laplace = mechanisms.laplace_noise

    def laplace_noise(random, shape, scale, *args):
        laplace_scales.append(scale)
        return original_laplace(random, shape, scale, *args)

    monkeypatch.setattr(mechanisms, "laplace_noise", laplace_noise)
    est = _fit(
        X, y, s, True, monkeypatch, sample_weight=w, max_grad_norm=clip, temperature=temperature,
        host=True,
        max_sample_weight=max_weight, batch_size=20, max_epochs=1, random_state=seed,
        histogram_noise="laplace" if laplace else "gaussian", enforce_tolerance=False,
    )  # fmt: skip
    n_params = check_linear_step_release(est, X, seen, draws, bound)
    hist = est.histogram_noise_multiplier_ * max_weight
    if laplace:
        assert laplace_scales == pytest.approx([hist] * est.n_steps_)
    else:
        hist_stds = [std for shape, std in draws if shape != (n_params,)]
        assert hist_stds == pytest.approx([hist] * est.n_steps_)


@pytest.mark.parametrize("K", [2, 3])
def test_count_histogram_is_the_problems(K):
    """The unweighted hard histogram by ``bincount`` (ties to the first class, as argmax) is
    ``soft_histogram(hard_predictions(outputs))``, exactly."""
    rng = np.random.default_rng(K)
    outputs = torch.from_numpy(rng.integers(-2, 3, (500, K)).astype(np.float32))  # many ties
    part = rng.integers(0, 5, 500)
    step = LinearRacoStep.__new__(LinearRacoStep)
    step.n_parts, step.n_classes, step.hard = 5, K, True
    expected = soft_histogram(hard_predictions(outputs), torch.from_numpy(part), 5)
    assert torch.equal(step._histogram(outputs, part, None), expected)


def _random_problem(rng, constraints, n_groups, denominators, lr_dual, margin_z, dual_bound):
    families = resolve_constraints(constraints, 0.05)
    program = compile_rate_constraints(families, list(range(n_groups)), [0, 1])
    problem = RacoProblem(
        membership=torch.as_tensor(program.membership),
        coefficients=torch.as_tensor(program.coefficients),
        bounds=torch.as_tensor(program.bounds),
        temperature=1.0,
        lr_dual=lr_dual,
        dual_bound=dual_bound,
        histogram_noise=str(rng.choice(["gaussian", "laplace"])),
        histogram_scale=float(rng.uniform(0.5, 20.0)),
        expected_batch_size=float(rng.uniform(16, 1024)),
        random=RandomSource(0),
        max_weight=float(rng.choice([1.0, 2.5])),
        denominators=denominators,
        planned_steps=int(rng.integers(10, 5000)),
        margin_z=margin_z,
        sampling_rate=float(rng.uniform(0.001, 0.5)),
    )
    n_sets, n_constraints = problem.S.shape[0], problem.A.shape[0]
    problem.state = {
        "lambda": torch.as_tensor(rng.exponential(2.0, n_constraints), dtype=torch.float32),
        "count_sum": torch.as_tensor(rng.uniform(0, 5e4, n_sets), dtype=torch.float32),
        "count_steps": torch.tensor(float(rng.integers(0, 300))),
    }
    return problem


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    constraints=st.sampled_from(["demographic_parity", "equalized_odds", "equal_opportunity"]),
    n_groups=st.sampled_from([2, 3, 4]),
    denominators=st.sampled_from(["running", "batch"]),
    lr_dual=st.sampled_from([None, 0.3]),
    margin_z=st.sampled_from([0.0, 1.0]),
    dual_bound=st.sampled_from([None, 1.5]),
)
def test_host_post_processing_is_the_problems(
    seed, constraints, n_groups, denominators, lr_dual, margin_z, dual_bound
):
    """:class:`HostDual` (float64) against ``release_batch_statistics`` / ``dual_update``
    (torch float32) on a random released histogram (noisy: fractional, possibly negative
    counts) and dual state: per-part weights, values, counts, dual steps, margins, then
    the multipliers and running counts after the step, within float32 rounding (1e-6
    relative to each vector's largest entry)."""
    rng = np.random.default_rng(seed)
    problem = _random_problem(
        rng, constraints, n_groups, denominators, lr_dual, margin_z, dual_bound
    )
    Q = problem.n_parts
    H = torch.as_tensor(rng.normal(rng.uniform(0, 400), rng.uniform(0.1, 60), (Q, 2)))
    H = H.to(torch.float32)
    host = HostDual(problem)
    W, (values, counts, steps, margins) = host.statistics(H.numpy().astype(np.float64))
    problem.privatize = lambda histogram: H  # the released histogram, as given
    part = torch.arange(Q)
    (_, per_row), statistics = problem.release_batch_statistics(
        torch.zeros(Q, 2), torch.zeros(Q, dtype=torch.int64), part
    )

    def close(ours, theirs, floor=1e-30):
        """Within 1e-6 of the vector's largest entry (or of ``floor``: constraint values are
        differences of rates of order 1, whose float32 rounding is relative to the rates)."""
        theirs = theirs.double().numpy()
        scale = max(np.abs(theirs).max(), np.abs(ours).max(), floor)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6 * scale)

    close(W, per_row)
    close(values, statistics["values"], floor=1.0)
    close(counts, statistics["counts"])
    assert (steps is None) == ("dual_steps" not in statistics)
    if steps is not None:
        close(steps, statistics["dual_steps"])
    assert (margins is None) == ("margins" not in statistics)
    if margins is not None:
        close(margins, statistics["margins"])
    host.update(values, counts, steps, margins)
    problem.apply_statistics(statistics)
    close(host.lam, problem.lam, floor=1.0)
    close(host.count_sum, problem.state["count_sum"])
    assert host.count_steps == float(problem.state["count_steps"])
    close(host.violations[-1], problem.violation_log[-1], floor=1.0)
    assert (host.lam >= 0).all() and (dual_bound is None or (host.lam <= dual_bound).all())
