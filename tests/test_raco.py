"""RaCODPClassifier: decomposition, dual, accounting, hygiene, end to end (digest §5)."""

import math
import pickle
import warnings

import dp_accounting
import numpy as np
import pytest
import sklearn
import torch
from conftest import make_biased_data, make_tradeoff_data
from dp_accounting.pld import PLDAccountant
from scipy import stats
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

import skfairdp.raco.problem as raco_problem
from skfairdp._fit import schedules
from skfairdp.engine import PerSampleGradients, clipped_sum
from skfairdp.engine.iterates import load_flat_parameters
from skfairdp.fairness.rates import (
    Cells,
    DemographicParity,
    FalseNegativeRate,
    RateConstraint,
    compile_rate_constraints,
)
from skfairdp.fermi import DPFermiClassifier
from skfairdp.metrics import demographic_parity_violation
from skfairdp.privacy import RandomSource, calibration, epsilon_spent
from skfairdp.privacy.joint import joint_epsilon, joint_sampled_event
from skfairdp.privacy.mechanisms import laplace_noise
from skfairdp.raco import RaCODPClassifier, solutions
from skfairdp.raco.linear_step import LinearRacoStep
from skfairdp.raco.problem import RacoProblem

ADD_REMOVE = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


def _problem(program, *, lam=None, noise=None, scale=math.inf, batch=None, lr_dual=0.5, **kw):
    extra = {
        k: kw.pop(k)
        for k in ("dual_rates", "denominators", "planned_steps", "margin_z", "sampling_rate")
        if k in kw
    }
    problem = RacoProblem(
        membership=torch.as_tensor(program.membership),
        coefficients=torch.as_tensor(program.coefficients),
        bounds=torch.as_tensor(program.bounds),
        temperature=kw.pop("temperature", 2.0),
        lr_dual=lr_dual,
        dual_bound=kw.pop("dual_bound", None),
        histogram_noise=noise,
        histogram_scale=scale,
        expected_batch_size=batch,
        random=RandomSource(0),
        **extra,
    )
    if lam is not None:
        problem.state = dict(problem.state, **{"lambda": torch.as_tensor(lam, dtype=torch.float32)})
    return problem


# --------------------------------------------------------------------------- A4
@pytest.mark.parametrize("strategy", ["linear", "vmap"])
def test_per_sample_decomposition_is_exact(strategy):
    """Full batch, exact histogram: mean of per-sample gradients = grad of the soft Lagrangian."""
    torch.manual_seed(0)
    n, d, groups, classes = 60, 4, ["a", "b", "c"], [0, 1, 2]
    program = compile_rate_constraints(
        [DemographicParity(0.05), FalseNegativeRate(0.3, classes=[2])], groups, classes
    )
    rng = np.random.default_rng(0)
    z = rng.integers(0, 3, n)
    y = rng.integers(0, 3, n)
    parts = torch.as_tensor(program.parts(z, y))
    X = torch.randn(n, d)
    yt = torch.as_tensor(y)
    module = torch.nn.Sequential(torch.nn.Linear(d, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    lam = torch.rand(program.n_constraints) * 3
    problem = _problem(program, lam=lam.clone(), dual_rates="soft")
    with torch.no_grad():
        batch, statistics = problem.release_batch_statistics(module(X), yt, parts)
    problem.apply_statistics(statistics)  # the step's apply half
    # the dual moved by lr_dual * (Gamma - gamma) from the exact histogram
    grads_of = PerSampleGradients(module, strategy)
    (g,), _, _ = grads_of(X, problem.primal_objectives, *batch)
    mean_grad = g.dense().mean(0) if hasattr(g, "dense") else g.mean(0)
    grads_of.close()

    # independent full-batch soft Lagrangian
    S = torch.as_tensor(program.membership, dtype=torch.float32)
    A = torch.as_tensor(program.coefficients, dtype=torch.float32)
    gamma = torch.as_tensor(program.bounds, dtype=torch.float32)
    module.zero_grad()
    out = module(X)
    loss = torch.nn.functional.cross_entropy(out, yt)
    soft = torch.softmax(2.0 * out, dim=1)
    member = S[:, parts].T  # (n, M): row i in set m
    rates = (member.T @ soft) / member.sum(0)[:, None]
    values = torch.einsum("jmk,mk->j", A, rates)
    lagrangian = loss + (lam * (values - gamma)).sum()
    lagrangian.backward()
    expected = torch.cat([p.grad.reshape(-1) for p in module.parameters()])
    torch.testing.assert_close(mean_grad, expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(
        problem.lam, (lam + 0.5 * (values.detach() - gamma)).clamp(min=0), rtol=1e-4, atol=1e-5
    )


def test_output_gradients_match_autograd():
    program = compile_rate_constraints(DemographicParity(0.05), ["a", "b"], [0, 1, 2])
    problem = _problem(program, temperature=3.0)
    torch.manual_seed(1)
    outputs = torch.randn(20, 3, requires_grad=True)
    y = torch.randint(0, 3, (20,))
    weights = torch.randn(20, 3) * 4
    (objective,), diag = problem.primal_objectives(outputs, y, weights)
    (expected,) = torch.autograd.grad(objective.sum(), outputs)
    (grad,), diag2 = problem.primal_output_gradients(outputs.detach(), y, weights)
    torch.testing.assert_close(grad, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(diag["loss"].detach(), diag2["loss"])


# --------------------------------------------------------------------------- A5
def test_normalisation_equivalence():
    """Paper form (clip at C/B, std z C/B) = implementation (clip at C, std z C, / B)."""
    torch.manual_seed(0)
    G = torch.randn(40, 7) * 3  # per-sample gradients of loss + B * regulariser
    C, B, z = 1.5, 32.0, 2.0
    noise = torch.randn(7)
    paper = clipped_sum(G / B, C / B)[0] + noise * z * C / B
    ours = (clipped_sum(G, C)[0] + noise * z * C) / B
    torch.testing.assert_close(paper, ours)


# --------------------------------------------------------------------------- A6
def test_dual_update_behaviour():
    program = compile_rate_constraints(DemographicParity(0.1), ["a", "b"], [0, 1])
    problem = _problem(program, lr_dual=1.0)
    assert torch.equal(problem.lam, torch.zeros(4))
    problem.dual_update(torch.tensor([0.05, -0.05, -0.05, 0.05]))  # all below gamma
    assert torch.equal(problem.lam, torch.zeros(4))
    problem.dual_update(torch.tensor([0.3, -0.3, -0.3, 0.3]))
    assert problem.lam[0] == pytest.approx(0.2) and problem.lam[3] == pytest.approx(0.2)
    assert problem.lam[1] == 0 and (problem.lam >= 0).all()
    boxed = _problem(program, lr_dual=10.0, dual_bound=0.5)
    for _ in range(5):
        boxed.dual_update(torch.tensor([0.9, -0.9, -0.9, 0.9]))
    assert float(boxed.lam.max()) == pytest.approx(0.5)


# --------------------------------------------------------------------------- issue 24
@pytest.mark.parametrize(
    ("tolerance", "z", "rows", "margin"),
    [
        # Adult by race, non-White at 5 %: sqrt(0.25 / 1536 + 0.25 / 31000) = 0.013070
        (0.05, 1.0, (1536, 31000), 0.0130701),
        (0.02, 1.0, (1536, 31000), 0.01),  # capped at gamma / 2
        (0.05, 2.0, (1536, 31000), 0.025),  # 0.0261 capped
        # Adult by sex: sqrt(0.25 / 11000 + 0.25 / 23000) = 0.0057963
        (0.02, 1.0, (11000, 23000), 0.0057963),
        (0.05, 0.0, (1536, 31000), 0.0),
    ],
)
def test_tolerance_margin_golden(tolerance, z, rows, margin):
    """``min(gamma / 2, z sqrt(sum_m a_m^2 / (4 n_m)))`` with ``n_m`` the running released
    count per batch over the sampling rate (here 1 %); every DP constraint of two groups
    reads both sets."""
    program = compile_rate_constraints(DemographicParity(tolerance), ["a", "b"], [0, 1])
    problem = _problem(program, margin_z=z, sampling_rate=0.01)
    running = torch.tensor([r * 0.01 for r in rows])
    margins = problem.tolerance_margins(running)
    torch.testing.assert_close(margins, torch.full((4,), margin), atol=2e-7, rtol=0)


def test_tolerance_margin_is_monotone_and_capped():
    """More rows in any set never raise the margin; it never exceeds gamma / 2."""
    program = compile_rate_constraints(DemographicParity(0.03), ["a", "b", "c"], [0, 1])
    problem = _problem(program, margin_z=3.0, sampling_rate=0.05)
    rng, n_sets = np.random.default_rng(0), program.membership.shape[0]
    for _ in range(200):
        counts = torch.as_tensor(rng.uniform(0.0, 500.0, n_sets), dtype=torch.float32)
        more = counts + torch.as_tensor(rng.uniform(0.0, 50.0, n_sets), dtype=torch.float32)
        low, high = problem.tolerance_margins(more), problem.tolerance_margins(counts)
        assert (low <= high + 1e-7).all() and (high <= 0.015 + 1e-7).all()


def test_tolerance_margin_tightens_the_dual_ascent():
    """A value at gamma - margin / 2 raises lambda with the margin, not without it."""
    program = compile_rate_constraints(DemographicParity(0.1), ["a", "b"], [0, 1])
    values = torch.tensor([0.09, -0.09, -0.09, 0.09])
    plain = _problem(program, lr_dual=1.0)
    plain.dual_update(values)
    assert torch.equal(plain.lam, torch.zeros(4))
    tight = _problem(program, lr_dual=1.0, margin_z=1.0, sampling_rate=0.5)
    tight.dual_update(values, margins=torch.full((4,), 0.02))
    torch.testing.assert_close(tight.lam, torch.tensor([0.01, 0.0, 0.0, 0.01]))
    assert tight.violation_log[-1][0] == pytest.approx(-0.01)  # logged against gamma itself
    with pytest.raises(ValueError, match="sampling rate"):
        _problem(program, margin_z=1.0)


def test_tolerance_margin_parameter():
    X, y, s = make_biased_data(n=300, seed=0)
    fit = dict(epsilon=2.0, max_epochs=2, batch_size=50, random_state=0)
    auto = RaCODPClassifier(**fit).fit(X, y, sensitive_features=s)
    off = RaCODPClassifier(tolerance_margin=0, **fit).fit(X, y, sensitive_features=s)
    np.testing.assert_array_equal(off.tolerance_margins_, np.zeros(4))
    # 300 rows: the margin is capped at gamma / 2 = 0.025
    np.testing.assert_allclose(auto.tolerance_margins_, 0.025, rtol=1e-6)
    assert auto.privacy_spent_ == off.privacy_spent_  # the margin costs nothing
    with pytest.raises(InvalidParameterError, match="tolerance_margin"):
        RaCODPClassifier(tolerance_margin=-1.0).fit(X, y, sensitive_features=s)


# --------------------------------------------------------------------------- A7
def _max_steps(est, z, scale, q, cap, delta):
    """Largest step count within est's epsilon at gradient z and histogram scale."""
    return calibration.max_steps_within(
        est.epsilon,
        delta,
        lambda steps: est._calibrated_view_event(z, scale, q, steps),
        cap,
        **est._calibration_options(),
    )


def _paper_eps(z, scale, q, steps, delta=1e-5):
    est = RaCODPClassifier(histogram_noise="laplace", calibration="paper")
    return est._spent(z, scale, q, steps, delta)


def test_accountant_reproduces_paper_values():
    """Digest §2.4 (dp-accounting 0.6.0, separate composition, PLD, delta = 1e-5)."""
    assert _paper_eps(4, 2, 0.0345, 500) == pytest.approx(1.626, rel=0.01)
    assert _paper_eps(3, 5, 0.0345, 1000) == pytest.approx(1.707, rel=0.01)
    est = RaCODPClassifier(histogram_noise="laplace", calibration="paper", epsilon=1.0)
    t_max = _max_steps(est, 4.0, 2.0, 1024 / 29676, 100_000, 1e-5)
    assert abs(t_max - 205) <= 2


def test_sound_joint_accounting_is_not_below_paper():
    for z, scale, q, steps in [(4, 2, 0.0345, 500), (3, 5, 0.0345, 1000), (6, 10, 0.0345, 300)]:
        sound = RaCODPClassifier(histogram_noise="laplace")._spent(z, scale, q, steps, 1e-5)
        assert sound >= _paper_eps(z, scale, q, steps)
    # Gaussian histogram: joint (one mechanism) vs the paper-style separate composition
    g_sound = RaCODPClassifier()._spent(4, 8, 0.0345, 500, 1e-5)
    g_paper = RaCODPClassifier(calibration="paper")._spent(4, 8, 0.0345, 500, 1e-5)
    assert g_sound >= g_paper * 0.99  # RDP (sound) vs PLD of a looser composition


def test_joint_pld_reduces_to_dp_accounting_for_one_release():
    """The joint construction is wired right: one release = dp-accounting's own PLD."""
    q, steps = 0.0345, 400
    for event, _kwargs in [
        (dp_accounting.GaussianDpEvent(3.0), {"gaussian_multiplier": 3.0}),
        (dp_accounting.LaplaceDpEvent(4.0), {"laplace_scale": 4.0}),
    ]:
        acc = PLDAccountant(ADD_REMOVE, value_discretization_interval=1e-3)
        acc.compose(
            dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(q, event), steps)
        )
        reference = acc.get_epsilon(1e-5)
        # force the joint path: compose with a release of (practically) no information
        joint = dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(
                q, dp_accounting.ComposedDpEvent([event, dp_accounting.GaussianDpEvent(1e4)])
            ),
            steps,
        )
        assert joint_epsilon(joint, 1e-5) == pytest.approx(reference, rel=0.01)
        assert joint_epsilon(joint, 1e-5) >= reference * 0.999


def test_epsilon_monotone_and_histogram_costs_steps():
    est = RaCODPClassifier(histogram_noise="laplace")
    q = 0.02
    eps = [est._spent(3.0, 6.0, q, t, 1e-5) for t in (50, 200, 800)]
    assert eps[0] < eps[1] < eps[2]
    assert est._spent(4.0, 8.0, q, 200, 1e-5) < est._spent(3.0, 6.0, q, 200, 1e-5)
    event = joint_sampled_event(q, gaussian_multiplier=3.0, laplace_scale=6.0)
    assert contains_joint(event)
    with_hist = _max_steps(
        RaCODPClassifier(epsilon=1.0, noise_multiplier=3.0), 3.0, 6.0, q, 10**5, 1e-5
    )
    dpsgd_alone = _max_steps(
        RaCODPClassifier(epsilon=1.0, noise_multiplier=3.0), 3.0, math.inf, q, 10**5, 1e-5
    )
    assert with_hist < dpsgd_alone


def contains_joint(event):
    from skfairdp.privacy.joint import contains_joint_sampled_event

    return contains_joint_sampled_event(event)


def test_rdp_accountant_rejects_joint_laplace_event():
    event = dp_accounting.SelfComposedDpEvent(
        joint_sampled_event(0.1, gaussian_multiplier=2.0, laplace_scale=3.0), 10
    )
    with pytest.raises(ValueError, match="joint PLD"):
        epsilon_spent(event, 1e-5, accountant="rdp")
    assert epsilon_spent(event, 1e-5).epsilon > 0


# --------------------------------------------------------------------------- fits
@pytest.fixture(scope="module")
def tradeoff():
    return make_tradeoff_data(n=3000, seed=0), make_tradeoff_data(n=3000, seed=1)


def test_constraint_enforced_in_non_private_limit(tradeoff):
    """A8: unconstrained violates gamma; constrained SGDA meets it (soft on train, hard on test).

    The optimiser enforces the *soft* rates (tempered softmax, tau = 1); on this
    strongly proxied data the hard test violation sits a few points above them.
    """
    (X, y, s), (Xt, yt, st) = tradeoff
    kw = dict(epsilon=np.inf, max_epochs=20, batch_size=300, random_state=0)
    free = RaCODPClassifier(tolerance=1.0, **kw).fit(X, y, sensitive_features=s)
    fair = RaCODPClassifier(tolerance=0.05, **kw).fit(X, y, sensitive_features=s)
    v_free = demographic_parity_violation(yt, free.predict(Xt), sensitive_features=st)
    v_fair = demographic_parity_violation(yt, fair.predict(Xt), sensitive_features=st)
    program = fair.rate_program_
    soft_hist = program.histogram(fair.predict_proba(X), program.parts(s, y))
    soft_train = program.constraint_values(soft_hist).max()
    assert v_free > 0.3
    assert soft_train <= 0.05 + 0.01
    assert v_fair <= 0.05 + 0.05
    assert np.all(free.lambda_ == 0) and fair.lambda_.max() > 0
    assert fair.privacy_spent_ == (math.inf, 0.0)


def test_private_fit_reduces_violation_and_meets_epsilon(tradeoff):
    (X, y, s), (Xt, yt, st) = tradeoff
    # the run's own models (enforce_tolerance's check would spend after the last epoch)
    kw = dict(epsilon=8.0, max_epochs=4, batch_size=300, random_state=0, enforce_tolerance=False)
    free = RaCODPClassifier(tolerance=1.0, **kw).fit(X, y, sensitive_features=s)
    fair = RaCODPClassifier(tolerance=0.02, **kw).fit(X, y, sensitive_features=s)
    v_free = demographic_parity_violation(yt, free.predict(Xt), sensitive_features=st)
    v_fair = demographic_parity_violation(yt, fair.predict(Xt), sensitive_features=st)
    assert v_fair < v_free - 0.1
    assert fair.privacy_spent_.epsilon <= 8.0 + 1e-9
    assert fair.effective_noise_multiplier_ == pytest.approx(
        (fair.noise_multiplier_**-2 + fair.histogram_noise_multiplier_**-2) ** -0.5
    )
    assert fair.histogram_noise_multiplier_ == pytest.approx(2 * fair.noise_multiplier_)
    assert len(fair.history_) == 4 and "constraint_violation" in fair.history_[-1]
    assert fair.history_[-1, "epsilon"] == pytest.approx(fair.privacy_spent_.epsilon)


def test_non_private_unconstrained_equals_plain_sgd(small_data):
    """lambda stays 0 and no noise: the same trajectory as DP-FERMI with lambda = 0 (plain SGD)."""
    X, y, s = small_data
    kw = dict(epsilon=np.inf, lr=0.3, batch_size=16, max_epochs=3, random_state=4)
    ours = RaCODPClassifier(tolerance=2.0, solution="last", **kw).fit(X, y, sensitive_features=s)
    plain = DPFermiClassifier(fairness_weight=0, iterate="last", **kw).fit(X, y)
    for a, b in zip(ours.module_.parameters(), plain.module_.parameters()):
        torch.testing.assert_close(a, b)


def test_fnr_constraint_needs_no_groups(small_data):
    X, y, _ = small_data
    est = RaCODPClassifier(
        constraints=FalseNegativeRate(0.1),
        epsilon=np.inf,
        max_epochs=5,
        batch_size=20,
        random_state=0,
    ).fit(X, y)
    assert est.group_encoder_ is None and est.constraint_names_ == ["FNR[y=1]"]
    pred = est.predict(X)
    assert np.mean(pred[y == 1] != 1) <= 0.2


# --------------------------------------------------------------------------- A10/A11
def test_poisson_batches_and_one_release_per_step(monkeypatch, small_data):
    X, y, s = small_data
    sizes, releases = [], []

    def privatize(self, H):  # the engine's step and the linear step's alike
        releases.append(H.shape)
        sizes.append(round(float(H.sum())))  # hard rows: one count per row of the batch
        return H + self.random.normal(H.shape, self.histogram_scale)

    monkeypatch.setattr(RacoProblem, "privatize", privatize)
    est = RaCODPClassifier(
        epsilon=50.0, batch_size=10, max_epochs=15, random_state=0, delta=1e-4
    ).fit(X, y, sensitive_features=s)
    n, q = len(y), 10 / len(y)
    assert len(sizes) == len(releases) == est.n_steps_ == 150
    assert np.mean(sizes) == pytest.approx(n * q, rel=0.1)
    assert np.var(sizes) == pytest.approx(n * q * (1 - q), rel=0.35)
    assert max(sizes) > 10 and min(sizes) < 10  # not truncated or padded to a fixed size


# a small fit that may come out degenerate; the warning is not the subject here
@pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")
def test_noiseless_histogram_never_reaches_the_update(monkeypatch, small_data):
    """A11: with the release pinned, shifting the raw histogram changes nothing."""
    X, y, s = small_data

    def fit(shift):
        real = raco_problem.soft_histogram
        monkeypatch.setattr(raco_problem, "soft_histogram", lambda p, q, k: real(p, q, k) + shift)
        counts = LinearRacoStep._histogram  # the linear step's (skfairdp/raco/linear_step.py)
        monkeypatch.setattr(
            LinearRacoStep, "_histogram", lambda self, *args: counts(self, *args) + shift
        )
        return RaCODPClassifier(
            epsilon=5.0, tolerance=0.01, batch_size=100, max_epochs=15, random_state=1
        ).fit(X, y, sensitive_features=s)

    pinned = torch.tensor([[40.0, 10.0], [20.0, 30.0]])
    monkeypatch.setattr(RacoProblem, "privatize", lambda self, H: pinned + 0 * H)
    a, b = fit(0.0), fit(5.0)
    for p, r in zip(a.module_.parameters(), b.module_.parameters()):
        torch.testing.assert_close(p, r)
    np.testing.assert_array_equal(a.lambda_, b.lambda_)
    # control: if the update read the raw histogram, the shift would matter
    monkeypatch.setattr(RacoProblem, "privatize", lambda self, H: H)
    c, d = fit(0.0), fit(5.0)
    assert not np.array_equal(c.lambda_, d.lambda_)


# --------------------------------------------------------------------------- modes
def test_fixed_noise_finds_the_largest_steps(small_data):
    X, y, s = small_data
    est = RaCODPClassifier(
        epsilon=2.0,
        noise_multiplier=2.0,
        batch_size=10,
        max_epochs=50,
        random_state=0,
        enforce_tolerance=False,
    ).fit(X, y, sensitive_features=s)
    assert est.n_steps_ < 50 * 10  # capped by epsilon, not by max_epochs
    assert est.privacy_spent_.epsilon <= 2.0
    assert est._spent(2.0, 4.0, 0.1, est.n_steps_ + 1, est.privacy_spent_.delta) > 2.0
    assert est.noise_multiplier_ == 2.0 and est.histogram_noise_multiplier_ == 4.0


def test_laplace_histogram_sound_and_paper_calibration(small_data):
    X, y, s = small_data
    kw = dict(
        epsilon=3.0, histogram_noise="laplace", batch_size=50, max_epochs=1, random_state=0,
        enforce_tolerance=False,
    )  # fmt: skip
    sound = RaCODPClassifier(**kw).fit(X, y, sensitive_features=s)
    assert sound.privacy_spent_.epsilon <= 3.0 + 1e-6
    assert sound.paper_epsilon_ <= sound.privacy_spent_.epsilon
    assert isinstance(sound.dp_event_, dp_accounting.SelfComposedDpEvent)
    with pytest.warns(UserWarning, match="sound"):
        paper = RaCODPClassifier(calibration="paper", **kw).fit(X, y, sensitive_features=s)
    assert paper.paper_epsilon_ <= 3.0 + 1e-3
    assert paper.privacy_spent_.epsilon > 3.0
    assert paper.noise_multiplier_ < sound.noise_multiplier_


def test_fixed_histogram_noise(small_data):
    X, y, s = small_data
    est = RaCODPClassifier(
        epsilon=4.0, histogram_noise_multiplier=10.0, batch_size=20, max_epochs=2, random_state=0
    ).fit(X, y, sensitive_features=s)
    assert est.histogram_noise_multiplier_ == 10.0
    assert est.privacy_spent_.epsilon == pytest.approx(4.0, rel=0.01)
    with pytest.raises(ValueError, match="histogram_noise_multiplier=0.05 alone"):
        RaCODPClassifier(epsilon=1.0, histogram_noise_multiplier=0.05, max_epochs=2).fit(
            X, y, sensitive_features=s
        )


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"constraints": "parity"}, InvalidParameterError, "constraints"),
        ({"tolerance": -0.1}, InvalidParameterError, "tolerance"),
        ({"temperature": 0}, InvalidParameterError, "temperature"),
        ({"histogram_noise": "uniform"}, InvalidParameterError, "histogram_noise"),
        ({"histogram_noise_multiplier": np.inf}, InvalidParameterError, "histogram_noise_mult"),
        ({"noise_multiplier": 0.0}, InvalidParameterError, "noise_multiplier"),
        ({"lr_dual": 0}, InvalidParameterError, "lr_dual"),
        ({"dual_bound": -1}, InvalidParameterError, "dual_bound"),
        ({"calibration": "loose"}, InvalidParameterError, "calibration"),
        ({"constraints": ["demographic_parity", 3]}, TypeError, "constraints"),
        ({"epsilon": np.inf, "noise_multiplier": 2.0}, ValueError, "noise_multiplier"),
        ({"histogram_noise": "laplace", "accountant": "rdp"}, ValueError, "accountant='rdp'"),
    ],
)
def test_bad_parameters_name_the_argument(small_data, params, error, match):
    X, y, s = small_data
    with pytest.raises(error, match=match):
        RaCODPClassifier(max_epochs=1, **params).fit(X, y, sensitive_features=s)


def test_missing_or_bad_sensitive_features(small_data):
    X, y, s = small_data
    with pytest.raises(ValueError, match="sensitive_features is required"):
        RaCODPClassifier(max_epochs=1).fit(X, y)
    with pytest.raises(ValueError, match="sensitive_features"):
        RaCODPClassifier(max_epochs=1).fit(X, y, sensitive_features=s[:-3])
    custom = RateConstraint([(Cells(groups=["nobody"]), {1: 1.0})], 0.1)
    with pytest.raises(ValueError, match="'nobody'"):
        RaCODPClassifier(constraints=custom, max_epochs=1).fit(X, y, sensitive_features=s)


# --------------------------------------------------------------------------- sklearn
def test_pickle_clone_and_predict_without_groups(small_data):
    X, y, s = small_data
    est = RaCODPClassifier(epsilon=4.0, batch_size=20, max_epochs=2, random_state=0)
    est.fit(X, y, sensitive_features=s)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    np.testing.assert_allclose(again.predict_proba(X), est.predict_proba(X))
    assert clone(est).get_params() == est.get_params()
    assert not hasattr(clone(est), "module_")


def test_pipeline_and_grid_search_route_sensitive_features(small_data):
    X, y, s = small_data
    with sklearn.config_context(enable_metadata_routing=True):
        est = RaCODPClassifier(
            epsilon=np.inf, max_epochs=2, batch_size=20, random_state=0
        ).set_fit_request(sensitive_features=True)
        pipe = Pipeline([("scale", StandardScaler()), ("clf", est)])
        pipe.fit(X, y, sensitive_features=s)
        assert pipe[-1].group_encoder_.n_groups_ == 2
        grid = GridSearchCV(pipe, {"clf__tolerance": [0.05, 0.2]}, cv=2)
        grid.fit(X, y, sensitive_features=s)
        assert grid.best_params_["clf__tolerance"] in (0.05, 0.2)
        with pytest.raises(ValueError, match="sensitive_features is required"):
            Pipeline([("clf", clone(est))]).fit(X, y)


@pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")  # tiny data
def test_constraint_objects_and_names_in_fitted_attributes(small_data):
    X, y, s = small_data
    fpr = RateConstraint([(Cells(groups=[1], labels=[0]), {1: 1.0})], 0.2, name="FPR s=1")
    est = RaCODPClassifier(
        constraints=[DemographicParity(0.1), fpr], epsilon=np.inf, max_epochs=2, batch_size=20
    ).fit(X, y, sensitive_features=s)
    assert est.constraint_names_[-1] == "FPR s=1"
    assert est.lambda_.shape == (5,)
    assert est.rate_program_.n_parts == 3  # s=0 | (s=1, y=0) | (s=1, y=1)


def test_warning_free_default_fit(small_data):
    X, y, s = small_data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # enforce_tolerance warns, rightly, that 1 epoch at epsilon = 1 cannot confirm
        # the tolerance on these 200 rows (tests/test_raco_enforcement.py)
        RaCODPClassifier(max_epochs=1, batch_size=20, random_state=0, enforce_tolerance=False).fit(
            X, y, sensitive_features=s
        )


def test_biased_data_fixture_is_biased():
    X, y, s = make_biased_data(n=200)
    assert abs(y[s == 1].mean() - y[s == 0].mean()) > 0.3


# --------------------------------------------------------------------------- A9
def test_clipping_bias_small_norm_misses_a_strict_constraint():
    """Paper Fig. 6: with clipping but no noise, a small C cannot enforce a strict FNR bound."""
    from skfairdp.engine import NoiseConfig, train
    from skfairdp.privacy import ShuffledBatches

    X, y, _ = make_tradeoff_data(n=1000, seed=0)
    program = compile_rate_constraints(FalseNegativeRate(0.02), [None], [0, 1])
    packed = torch.as_tensor(np.stack([y, program.parts(np.zeros_like(y), y)], axis=1))

    def fnr_after(clip):
        torch.manual_seed(0)
        module = torch.nn.Linear(X.shape[1], 2)
        random = RandomSource(0)
        problem = _problem(program, batch=100.0, lr_dual=1.0, temperature=1.0)
        train(
            module,
            torch.as_tensor(X),
            (packed,),
            problem,
            sampler=ShuffledBatches(len(y), 100, random),
            optimizer=torch.optim.SGD(module.parameters(), lr=0.1),
            noise=NoiseConfig(clip, 0.0, None),  # clipped, no noise
            random=random,
            max_epochs=10,
        )
        with torch.no_grad():
            pred = module(torch.as_tensor(X)).argmax(1).numpy()
        return float(np.mean(pred[y == 1] != 1))

    assert fnr_after(0.05) > 0.2
    assert fnr_after(20.0) < 0.05


def _laplace_rate(a):
    """Chernoff rate of the mean of Laplace(0, 1) draws: sup_s a s + log(1 - s^2)."""
    s = (math.sqrt(1.0 + a * a) - 1.0) / a  # the maximiser, |s| < 1
    return a * s + math.log1p(-s * s)


@pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")  # tiny data
def test_laplace_noise_distribution_and_secure_mode(small_data):
    """laplace_noise draws iid Laplace(0, b), seeded or from the CSPRNG (unseeded).

    N = 10^5 draws of x / b per source, four checks; each fails a correct
    implementation with probability < 1e-6, so the secure source fails by chance
    with probability < 4e-6 (the seeded one is deterministic):

    - scale: |x| / b ~ Exp(1), so sum |x| / b ~ Gamma(N, 1); exact 1e-6 quantiles give
      a band of +-1.6% on b: a scale 20% off (or halved) fails with certainty.
    - symmetry: #{x > 0} ~ Binomial(N, 1/2), exact 1e-6 quantiles (+-0.8%).
    - mean: Chernoff, P(|mean(x / b)| >= a) <= 2 exp(-N I(a)) with the Laplace log-mgf
      -log(1 - s^2); a = 0.025 gives 3e-7.
    - second moment: x^2 / b^2 = E^2, E ~ Exp(1) (mean 2, variance 20). P(max E > 40)
      <= N e^-40 < 1e-12; below that E^2 <= 1600 and Bernstein gives
      P(|mean - 2| >= 0.3) <= 2 exp(-N 0.3^2 / 2 / (20 + 1600 * 0.3 / 3)) < 1e-10. The
      band [1.7, 2.3] excludes a Gaussian with the same E|x| (pi / 2 = 1.57).
    """
    scale, n, alpha = 3.0, 100_000, 1e-6
    gamma_lo, gamma_hi = stats.gamma(n).ppf([alpha / 2, 1 - alpha / 2])
    sign_lo, sign_hi = stats.binom(n, 0.5).ppf([alpha / 2, 1 - alpha / 2])
    assert 2 * math.exp(-n * _laplace_rate(0.025)) < alpha
    assert 2 * math.exp(-n * 0.3**2 / 2 / (20 + 1600 * 0.3 / 3)) < 1e-10
    assert n * math.exp(-40) < 1e-12
    for source in (RandomSource(0), RandomSource(secure_mode=True)):
        noise = laplace_noise(source, (500, 200), scale, "cpu")
        assert noise.shape == (500, 200) and noise.dtype == torch.float32
        x = noise.double().ravel().numpy() / scale
        assert gamma_lo <= np.abs(x).sum() <= gamma_hi
        assert sign_lo <= np.sum(x > 0) <= sign_hi
        assert abs(x.mean()) < 0.025
        assert 1.7 <= np.mean(x**2) <= 2.3
    X, y, s = small_data
    est = RaCODPClassifier(
        epsilon=4.0, histogram_noise="laplace", secure_mode=True, batch_size=50, max_epochs=1
    ).fit(X, y, sensitive_features=s)
    assert est.privacy_spent_.epsilon <= 4.0 + 1e-6


def test_capped_last_epoch_is_partial(small_data):
    X, y, s = small_data
    est = RaCODPClassifier(
        epsilon=2.0, noise_multiplier=2.0, batch_size=10, max_epochs=50, random_state=0
    ).fit(X, y, sensitive_features=s)
    assert est.history_[-1, "steps"] == est.n_steps_
    assert est.n_steps_ % 10 != 0 or len(est.history_) * 10 == est.n_steps_
    assert len(est.history_) == -(-est.n_steps_ // 10)


# a small fit that may come out degenerate; the warning is not the subject here
@pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")
def test_joint_groups_and_custom_cells(small_data):
    X, y, s = small_data
    other = (X[:, 1] > 0).astype(int)
    sf = {"s": s, "other": other}
    est = RaCODPClassifier(epsilon=np.inf, max_epochs=2, batch_size=20, random_state=0)
    est.fit(X, y, sensitive_features=sf)
    # 4 joint groups, every ordered pair, 2 classes (issue 34; one-vs-rest had 4 x 2 = 8)
    assert est.rate_program_.n_parts == 4 and len(est.constraint_names_) == 24
    one = RateConstraint([(Cells(groups=[(1, 1)], labels=[0]), {1: 1.0})], 0.1)
    est2 = RaCODPClassifier(constraints=one, epsilon=np.inf, max_epochs=2, batch_size=20)
    est2.fit(X, y, sensitive_features=sf)
    assert est2.rate_program_.n_parts == 2


# --------------------------------------------------------------------------- issue 12
def clone_module(est):
    import copy

    return copy.deepcopy(est.module_)


def test_hard_rates_move_the_dual_when_the_soft_constraint_holds():
    """Proxy-Lagrangian: the dual sees hard rates; scores bunched at the threshold fool soft ones.

    Group a scores +0.1, group b -0.1 (logit of class 1 minus class 0): soft rates of
    class 1 are 0.525 and 0.475 (gap 0.05 <= gamma = 0.1), hard rates 1 and 0 (gap 1).
    """
    program = compile_rate_constraints(DemographicParity(0.1), ["a", "b"], [0, 1])
    n = 40
    part = torch.as_tensor(program.parts(np.repeat([0, 1], n // 2), np.zeros(n, dtype=int)))
    margin = torch.where(part == 0, 0.1, -0.1)
    outputs = torch.stack([torch.zeros(n), margin], dim=1)
    y = torch.zeros(n, dtype=torch.int64)
    for rates, moves in (("soft", False), ("hard", True)):
        problem = _problem(program, dual_rates=rates, temperature=1.0, lr_dual=1.0)
        _, statistics = problem.release_batch_statistics(outputs, y, part)
        problem.apply_statistics(statistics)
        assert bool((problem.lam > 0).any()) is moves
    # the hard values are the exact hard rates: Gamma = P_1(a) - P_1(b) = 1 for (a, 1)
    torch.testing.assert_close(statistics["values"], torch.tensor([-1.0, 1.0, 1.0, -1.0]))
    torch.testing.assert_close(problem.lam, torch.tensor([0.0, 0.9, 0.9, 0.0]))


def test_hard_histogram_counts_argmax_with_sensitivity_one():
    outputs = torch.tensor([[0.2, 0.1], [0.0, 3.0], [-1.0, -0.5]])
    onehot = raco_problem.hard_predictions(outputs)
    torch.testing.assert_close(onehot, torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]))
    H = raco_problem.soft_histogram(onehot, torch.tensor([0, 0, 1]), 2)
    torch.testing.assert_close(H, torch.tensor([[1.0, 1.0], [0.0, 1.0]]))
    # one row more or less moves one count by one (L1 = L2 = 1)
    H2 = raco_problem.soft_histogram(onehot[:2], torch.tensor([0, 0]), 2)
    assert float((H - H2).abs().sum()) == 1.0


def test_running_denominators_average_the_released_counts():
    """'running': rates divide by the mean released set count so far (post-processing)."""
    program = compile_rate_constraints(DemographicParity(0.1), ["a", "b"], [0, 1])
    problem = _problem(program, noise="gaussian", scale=1.0, batch=10.0, denominators="running")
    releases = [torch.tensor([[3.0, 1.0], [2.0, 6.0]]), torch.tensor([[5.0, 3.0], [1.0, 1.0]])]
    released = iter(releases)
    problem.privatize = lambda H: next(released)
    y = torch.zeros(4, dtype=torch.int64)
    part = torch.tensor([0, 0, 1, 1])
    outputs = torch.zeros(4, 2)
    _, first = problem.release_batch_statistics(outputs, y, part)
    problem.apply_statistics(first)
    _, second = problem.release_batch_statistics(outputs, y, part)
    # set counts: step 1 (4, 8), step 2 (8, 2); running means (4, 8), then (6, 5)
    torch.testing.assert_close(second["counts"], torch.tensor([8.0, 2.0]))
    expected = torch.tensor([3.0 / 6 - 1.0 / 5, 1.0 / 5 - 3.0 / 6])  # P_1(a) - P_1(b), mirrored
    torch.testing.assert_close(second["values"][[1, 3]], expected)
    batch = _problem(program, noise="gaussian", scale=1.0, batch=10.0, denominators="batch")
    batch.privatize = lambda H: releases[1]
    _, stats = batch.release_batch_statistics(outputs, y, part)
    torch.testing.assert_close(stats["values"][1], torch.tensor(3.0 / 8 - 1.0 / 2))


def test_auto_dual_steps_shrink_with_the_noise_of_the_estimate_and_the_run():
    program = compile_rate_constraints(DemographicParity(0.1), ["a", "b"], [0, 1])
    problem = _problem(program, noise="gaussian", scale=4.0, batch=100.0, lr_dual=None)
    assert problem.planned_steps == schedules.RACO_MIN_STEPS  # the default run length
    denom = torch.tensor([50.0, 200.0])
    # sigma^2 = sum over the two sets of (1 part * 16 + n / 4) / n^2
    sigma = math.sqrt((16 + 12.5) / 50**2 + (16 + 50) / 200**2)
    expected = raco_problem.DUAL_WALK / (sigma * math.sqrt(schedules.RACO_MIN_STEPS))
    torch.testing.assert_close(problem.dual_steps(denom), torch.full((4,), expected))
    noisier = _problem(program, noise="gaussian", scale=40.0, batch=100.0, lr_dual=None)
    assert bool((noisier.dual_steps(denom) < problem.dual_steps(denom)).all())
    # four times the steps: half the step, the same accumulated noise
    longer = _problem(
        program, noise="gaussian", scale=4.0, batch=100.0, lr_dual=None,
        planned_steps=4 * schedules.RACO_MIN_STEPS,
    )  # fmt: skip
    torch.testing.assert_close(longer.dual_steps(denom), problem.dual_steps(denom) / 2)
    exact = _problem(program, lr_dual=None, planned_steps=1)  # sampling noise only, capped
    big = torch.tensor([1e6, 1e6])
    assert bool((exact.dual_steps(big) == raco_problem.LR_DUAL_MAX).all())


def test_auto_dual_step_multiplier_walk_has_std_dual_walk():
    """lr_dual=None: over the planned T steps, a multiplier's accumulated noise has std DUAL_WALK.

    The estimator's released histograms at a constraint that holds with equality
    in expectation (every row predicted 0, so the class-1 rates are pure histogram
    noise, and the bound is 0): lambda starts away from 0 (no projection), takes
    T real release-and-update steps, and its change is then noise alone, with std
    ``eta sigma_noise sqrt(T)``; ``sigma`` over-states ``sigma_noise`` by the
    sampling term ``n / 4`` (here 2.5%), and the noisy denominators (a running
    mean of counts of 2,000 +- 141) add about 1%. 150 runs: the sample std is
    within 6% (one sd) of the truth, so the +-30% margins fail by chance with
    p < 1e-5. Under the earlier rule (a per-step noise of 0.03, whatever T) the
    walk was 0.03 sqrt(64) = 0.24, 60% too much.
    """
    program = compile_rate_constraints(DemographicParity(0.0), ["a", "b"], [0, 1])
    ones = [j for j, name in enumerate(program.names) if name.endswith("yhat=1]")]
    assert len(ones) == 2
    steps, n, scale = 64, 2000, 100.0
    y = torch.zeros(2 * n, dtype=torch.int64)
    part = torch.repeat_interleave(torch.arange(2), n)
    outputs = torch.tensor([[1.0, 0.0]]).repeat(2 * n, 1)  # every row predicts class 0
    moves = []
    for rep in range(150):
        problem = RacoProblem(
            membership=torch.as_tensor(program.membership),
            coefficients=torch.as_tensor(program.coefficients),
            bounds=torch.as_tensor(program.bounds),
            temperature=1.0,
            lr_dual=None,
            dual_bound=None,
            histogram_noise="gaussian",
            histogram_scale=scale,
            expected_batch_size=float(2 * n),
            random=RandomSource(rep),
            planned_steps=steps,
        )
        start = torch.full((len(program.names),), 10.0)
        problem.state = dict(problem.state, **{"lambda": start})
        for _ in range(steps):
            _, statistics = problem.release_batch_statistics(outputs, y, part)
            problem.apply_statistics(statistics)
        change = (problem.lam - start)[ones]
        assert float(change.sum()) == pytest.approx(0.0, abs=1e-4)  # the two mirror each other
        moves.append(float(change[0]))
    moves = np.array(moves)
    truth = raco_problem.DUAL_WALK * math.sqrt(scale**2 / (scale**2 + n / 4))
    assert abs(moves.mean()) < 0.4 * truth  # no drift (the mean's sd: truth / sqrt(150) = 0.08)
    assert 0.7 * truth < moves.std() < 1.3 * truth


def _mixture_fit(data, **kw):
    X, y, s = data
    return RaCODPClassifier(
        tolerance=0.02, epsilon=np.inf, solution="mixture", batch_size=50, max_epochs=20,
        random_state=3, **kw,
    ).fit(X, y, sensitive_features=s)  # fmt: skip


def test_mixture_predict_proba_is_the_weighted_mixture_of_hard_predictions(tradeoff):
    (X, y, s), (Xt, _, _) = tradeoff
    est = _mixture_fit((X[:600], y[:600], s[:600]))
    n_params = sum(p.numel() for p in est.module_.parameters())
    assert est.iterates_.shape == (solutions.N_ITERATES, n_params)
    np.testing.assert_allclose(est.iterate_weights_.sum(), 1.0)
    module = clone_module(est)
    expected = np.zeros((len(Xt), 2))
    for w, flat in zip(est.iterate_weights_, est.iterates_):
        load_flat_parameters(module, flat)
        with torch.no_grad():
            pred = module(torch.as_tensor(Xt)).argmax(1).numpy()
        expected[np.arange(len(Xt)), pred] += w
    proba = est.predict_proba(Xt)
    np.testing.assert_allclose(proba, expected, atol=1e-12)
    assert 0 < np.mean((proba > 0) & (proba < 1)) < 1  # the iterates disagree on some rows
    np.testing.assert_allclose(est.decision_function(Xt), proba[:, 1] - proba[:, 0])


def test_mixture_predict_draws_reproducibly_from_predict_proba(tradeoff):
    (X, y, s), (Xt, _, _) = tradeoff
    est = _mixture_fit((X[:600], y[:600], s[:600]))
    p1 = est.predict_proba(Xt)[:, 1]
    a, b = est.predict(Xt), est.predict(Xt)
    np.testing.assert_array_equal(a, b)  # random_state=3: the same draws every call
    c = est.predict(Xt, random_state=123)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(a[p1 == 1], 1)
    np.testing.assert_array_equal(a[p1 == 0], 0)
    # rows the iterates disagree on are drawn as fairlearn does: u < p_1
    rng = np.random.RandomState(3)
    np.testing.assert_array_equal(a, (rng.uniform(size=len(p1)) < p1).astype(int))
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(Xt), a)


def test_average_solution_is_the_average_of_the_iterates(small_data):
    X, y, s = small_data
    kw = dict(epsilon=np.inf, batch_size=10, max_epochs=3, random_state=0, tolerance=0.05)
    last = RaCODPClassifier(solution="last", **kw).fit(X, y, sensitive_features=s)
    avg = RaCODPClassifier(solution="average", **kw).fit(X, y, sensitive_features=s)
    assert avg.iterates_ is None and avg.solution_ == "average"
    assert not np.allclose(avg.predict_proba(X), last.predict_proba(X))
    np.testing.assert_array_equal(avg.lambda_, last.lambda_)  # same run, another read-out


def test_best_selection_is_accounted_exactly(small_data):
    """'best': K candidates' histograms, one Gaussian of sensitivity sqrt(K) = K releases."""
    X, y, s = small_data
    est = RaCODPClassifier(
        solution="best",
        epsilon=3.0,
        delta=1e-5,
        batch_size=20,
        max_epochs=4,
        random_state=0,
        enforce_tolerance=False,
    ).fit(X, y, sensitive_features=s)
    K = solutions.N_CANDIDATES + 1  # the copies and the average
    assert 0 <= est.selected_iterate_ < K
    assert est.selection_statistics_["error"].shape == (K,)
    # what dp-accounting says, built by hand: T steps of one joint Gaussian, then K
    # Gaussian histograms each of sensitivity 1 and std z_sel * sqrt(K)
    rho = (math.sqrt(3.0 + math.log(1e5)) - math.sqrt(math.log(1e5))) ** 2
    z_sel = 1.0 / math.sqrt(2 * solutions.SELECTION_SHARE * rho)
    steps = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            20 / len(y), dp_accounting.GaussianDpEvent(est.effective_noise_multiplier_)
        ),
        est.n_steps_,
    )
    separate = dp_accounting.ComposedDpEvent(
        [steps] + [dp_accounting.GaussianDpEvent(z_sel * math.sqrt(K))] * K
    )
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(separate)
    assert est.privacy_spent_.epsilon == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-6)
    assert est.privacy_spent_.epsilon <= 3.0 + 1e-9
    # the selection's share: without it the steps would spend less
    plain = RaCODPClassifier(
        solution="average",
        epsilon=3.0,
        delta=1e-5,
        batch_size=20,
        max_epochs=4,
        random_state=0,
        enforce_tolerance=False,
    ).fit(X, y, sensitive_features=s)
    assert plain.noise_multiplier_ < est.noise_multiplier_


def test_auto_schedule_depends_on_n_and_is_stored(small_data):
    X, y, s = small_data
    est = RaCODPClassifier(epsilon=np.inf, random_state=0).fit(X, y, sensitive_features=s)
    b = schedules.raco_batch_size(len(y), np.inf)
    assert (est.batch_size_, est.max_epochs_) == (b, schedules.raco_max_epochs(len(y), b))
    assert schedules.raco_batch_size(4000, np.inf) > schedules.raco_batch_size(4000)
    assert est.n_steps_ >= schedules.RACO_MIN_STEPS
    assert (
        est.max_grad_norm_ == schedules.RACO_CLIP_RANGE[1]
    )  # non-private: no clipping; the upper end
    private = RaCODPClassifier(epsilon=2.0, max_epochs=1, random_state=0)
    private.fit(X, y, sensitive_features=s)
    assert private.max_grad_norm_ == 1.0  # 100 rows * 2 * 6e-4 < 1
    assert schedules.raco_max_grad_norm(10_000, 1.0) == pytest.approx(6.0)
    assert schedules.raco_max_grad_norm(1_000, 1.0) == 1.0  # a thousand rows: the floor
    assert schedules.raco_max_grad_norm(20_000, 1.0) == 10.0  # the cap
    assert schedules.raco_max_grad_norm(10**6, 0.5) == 10.0
    assert schedules.raco_batch_size(100) == schedules.RACO_MIN_BATCH
    assert schedules.raco_batch_size(10**7) == schedules.RACO_MAX_BATCH
    assert schedules.raco_batch_size(30_000) == round(30_000 / schedules.RACO_BATCH_FRACTION_INV)
    big = schedules.raco_max_epochs(10**5, schedules.RACO_MAX_BATCH)
    assert big == schedules.RACO_MIN_EPOCHS  # many rows: an epoch count
    huge = schedules.raco_max_epochs(10**6, schedules.RACO_MAX_BATCH)
    # past MAX_AUTO_STEPS steps: the fewest passes (at least one) that reach that many steps
    steps_per_epoch = math.ceil(10**6 / schedules.RACO_MAX_BATCH)
    assert 1 <= huge < schedules.RACO_MIN_EPOCHS
    assert (huge - 1) * steps_per_epoch < schedules.MAX_AUTO_STEPS <= huge * steps_per_epoch
    small_n = 800
    b = schedules.raco_batch_size(small_n)
    assert (
        schedules.raco_max_epochs(small_n, b) * math.ceil(small_n / b) >= schedules.RACO_MIN_STEPS
    )


def test_hard_training_violation_meets_the_tolerance_without_noise():
    """eps = inf on strongly proxied data: the hard TRAINING violation <= gamma + 0.01."""
    X, y, s = make_tradeoff_data(n=1500, seed=2)
    for solution in ("average", "mixture"):
        est = RaCODPClassifier(
            tolerance=0.05, epsilon=np.inf, solution=solution, random_state=0
        ).fit(X, y, sensitive_features=s)
        p1 = est.predict_proba(X)[:, 1] if solution == "mixture" else est.predict(X)
        # the randomised classifier's expected rates (its draws add only sampling noise)
        gap = abs(p1[s == 1].mean() - p1[s == 0].mean())
        assert gap <= 0.05 + 0.01, solution
        assert np.mean(est.predict(X) != y) < 0.3


def test_soft_and_hard_histograms_on_one_batch_are_one_gaussian():
    """Were both histograms released on a step's batch, they would be accounted jointly.

    The fit releases one (hard) histogram per step. Two releases of the same
    batch with multiplier z each are one Gaussian mechanism of the stacked vector:
    L2 sensitivity sqrt(2), i.e. multiplier z / sqrt(2) (the joint multiplier
    (z^-2 + z^-2)^-1/2); the recorder combines them so, which dp-accounting confirms.
    """
    from skfairdp.privacy import EventRecorder, noisy_histogram

    z, q, steps = 6.0, 0.02, 300
    recorder = EventRecorder()
    H = torch.zeros(2, 2)
    for _ in range(steps):
        with recorder.batch(q):
            noisy_histogram(H, RandomSource(0), noise_multiplier=z, recorder=recorder)  # soft
            noisy_histogram(H, RandomSource(1), noise_multiplier=z, recorder=recorder)  # hard
    event = recorder.build()
    step = event.event
    assert isinstance(event, dp_accounting.SelfComposedDpEvent) and event.count == steps
    assert step.sampling_probability == q
    assert step.event.noise_multiplier == pytest.approx(z / math.sqrt(2), rel=1e-12)
    stacked = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z / math.sqrt(2))),
        steps,
    )
    eps = []
    for e in (event, stacked):
        acc = PLDAccountant(ADD_REMOVE)
        acc.compose(e)
        eps.append(acc.get_epsilon(1e-5))
    assert eps[0] == pytest.approx(eps[1], rel=1e-9)
    assert epsilon_spent(event, 1e-5).epsilon <= 1.0  # the library's RDP bound is finite
    # not the (unsound) view of two independently sampled releases
    assert recorder.build("separate") != recorder.build()
