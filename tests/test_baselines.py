"""DPSGDFClassifier and FairLensClassifier: formulas, sensitivity, accounting, sklearn."""

import dp_accounting
import numpy as np
import pytest
import torch
from conftest import make_biased_data
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from torch.func import functional_call, grad, vmap

from skfairdp.baselines import DPSGDFClassifier, FairLensClassifier, UnboundedSensitivityWarning
from skfairdp.baselines.dpsgdf import DPSGDFProblem, group_clip_bounds
from skfairdp.baselines.fairlens import FairLensProblem
from skfairdp.engine.per_sample import DenseGradients
from skfairdp.nn import MLPModule
from skfairdp.privacy import RandomSource, joint_noise_multiplier


# ---------------------------------------------------------------------------
# DPSGD-F
# ---------------------------------------------------------------------------
def test_group_clip_bounds_formula():
    # above = [2, 8], below = [8, 2]: ratios 0.2, 0.8; overall 10/20
    bounds = group_clip_bounds(torch.tensor([2.0, 8.0, 8.0, 2.0]), 0.5, 2)
    torch.testing.assert_close(bounds, 0.5 * torch.tensor([1.4, 2.6]))
    # nobody above C0: every group keeps C0
    torch.testing.assert_close(
        group_clip_bounds(torch.tensor([0.0, 0.0, 5.0, 7.0]), 1.0, 2), torch.ones(2)
    )
    # a group absent from the (noisy) batch gets C0
    bounds = group_clip_bounds(torch.tensor([0.0, 4.0, 0.0, 4.0]), 1.0, 2)
    torch.testing.assert_close(bounds, torch.tensor([1.0, 2.0]))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), c0=st.floats(1e-2, 10.0), spread=st.floats(0.0, 4.0))
def test_dpsgdf_contributions_bounded_by_released_sensitivity(seed, c0, spread):
    gen = torch.Generator().manual_seed(seed)
    G = torch.randn(40, 6, generator=gen) * torch.exp(spread * torch.randn(40, 1, generator=gen))
    groups = torch.randint(0, 3, (40,), generator=gen)
    problem = DPSGDFProblem(
        max_grad_norm=c0, n_groups=3, count_noise_std=2.0, random=RandomSource(seed)
    )
    total, sensitivity = problem.private_sum(DenseGradients(G), None, None, groups)
    bounds = problem.bounds_log[-1]
    assert sensitivity == pytest.approx(float(bounds.max())) and sensitivity >= c0
    norms = torch.linalg.vector_norm(G, dim=1)
    clipped = torch.minimum(norms, bounds.float()[groups])
    assert float(clipped.max()) <= sensitivity * (1 + 1e-6)
    weights = (bounds.float()[groups] / (norms + 1e-12)).clamp(max=1.0)
    torch.testing.assert_close(total, weights @ G)


def test_dpsgdf_empty_batch_still_releases_counts():
    problem = DPSGDFProblem(
        max_grad_norm=1.0, n_groups=2, count_noise_std=5.0, random=RandomSource(0)
    )
    total, sensitivity = problem.private_sum(None, None, None, torch.zeros(0, dtype=torch.long))
    assert total is None and sensitivity >= 1.0 and len(problem.bounds_log) == 1


def test_dpsgdf_fit_accounts_counts_jointly():
    X, y, s = make_biased_data(n=400, seed=0)
    est = DPSGDFClassifier(
        epsilon=2.0, hidden_layer_sizes=(), max_epochs=2, batch_size=100, lr=0.5, random_state=0
    ).fit(X, y, sensitive_features=s)
    assert 0.97 * 2.0 <= est.privacy_spent_.epsilon <= 2.0
    assert est.effective_noise_multiplier_ == pytest.approx(
        joint_noise_multiplier(est.noise_multiplier_, 10.0)
    )
    assert isinstance(est.dp_event_, dp_accounting.SelfComposedDpEvent)
    assert est.group_clip_history_.shape == (est.n_steps_, 2)
    assert np.all(est.group_clip_history_ >= 1.0)


# a small fit that may come out degenerate; the warning is not the subject here
@pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")
def test_dpsgdf_needs_groups_and_routes_them(routing):
    X, y, s = make_biased_data(n=200, seed=1)
    with pytest.raises(ValueError, match="sensitive_features is required"):
        DPSGDFClassifier(hidden_layer_sizes=()).fit(X, y)
    requests = DPSGDFClassifier().get_metadata_routing().fit.requests
    assert requests == {"sensitive_features": True, "sample_weight": True}
    pipe = Pipeline(
        [
            ("scale", StandardScaler()),
            ("clf", DPSGDFClassifier(epsilon=3.0, max_epochs=1, hidden_layer_sizes=())),
        ]
    )
    pipe.fit(X, y, sensitive_features=s)
    assert pipe[-1].group_encoder_.n_groups_ == 2


def test_dpsgdf_count_noise_too_small_is_an_error():
    X, y, s = make_biased_data(n=200)
    with pytest.raises(ValueError, match="count_noise_multiplier"):
        DPSGDFClassifier(epsilon=0.3, count_noise_multiplier=0.5, hidden_layer_sizes=()).fit(
            X, y, sensitive_features=s
        )


# ---------------------------------------------------------------------------
# FairLens
# ---------------------------------------------------------------------------
def _fairlens_setup(lambda_clip, lambda_noise, seed=0, batch=24):
    torch.manual_seed(seed)
    module = MLPModule(3, 2, (5,), activation="tanh").double()
    X = torch.randn(batch, 3, dtype=torch.float64)
    y = torch.randint(0, 2, (batch,))
    groups = torch.arange(batch) % 3 == 0  # unbalanced groups: 8 vs 16
    groups = groups.long()
    params = {n: p.detach() for n, p in module.named_parameters()}

    def loss(p, x, t):
        out = functional_call(module, p, (x.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, t.unsqueeze(0))

    per = vmap(grad(loss), in_dims=(None, 0, 0))(params, X, y)
    G = torch.cat([per[n].reshape(batch, -1) for n in params], dim=1)
    problem = FairLensProblem(
        module=module, max_grad_norm=0.3, lambda_clip=lambda_clip, lambda_noise=lambda_noise
    )
    return module, params, X, y, groups, G, problem, loss


def test_fairlens_without_regularisers_is_dpsgd():
    _, _, X, y, groups, G, problem, _ = _fairlens_setup(0.0, 0.0)
    torch.testing.assert_close(problem.regularised_gradients(G, X, y, groups), G)


def test_fairlens_r2_attribution_sums_to_the_batch_gradient():
    module, params, X, y, groups, G, problem, _ = _fairlens_setup(0.0, 1.7)
    extra = problem.regularised_gradients(G, X, y, groups) - G
    in_a = groups == 0

    def r2(p):
        prob = torch.softmax(functional_call(module, p, (X,)), dim=1)[:, 1]
        f_a, f_b = prob[in_a].mean(), prob[~in_a].mean()
        return 0.5 * (f_a * (1 - f_a) + f_b * (1 - f_b))

    expected = torch.cat([g.reshape(-1) for g in grad(r2)(params).values()])
    torch.testing.assert_close(extra.sum(0) / len(X), 1.7 * expected)


def test_fairlens_r1_attribution_sums_to_the_batch_gradient():
    """With the clipping factors held fixed, sum_i of R1's per-sample parts / B = grad R1."""
    module, params, X, y, groups, G, problem, loss = _fairlens_setup(0.9, 0.0)
    extra = problem.regularised_gradients(G, X, y, groups) - G
    B = len(X)
    w = (0.3 / (torch.linalg.vector_norm(G, dim=1) + 1e-12)).clamp(max=1.0)
    in_a = groups == 0
    c = torch.where(in_a, 1.0 / int(in_a.sum()), -1.0 / int((~in_a).sum())).double()

    def r1(p):
        per = vmap(grad(loss), in_dims=(None, 0, 0))(p, X, y)
        flat = torch.cat([per[n].reshape(B, -1) for n in per], dim=1)
        return torch.abs((c @ flat) @ (((w - 1.0) @ flat) / B))

    expected = torch.cat([g.reshape(-1) for g in grad(r1)(params).values()])
    torch.testing.assert_close(extra.sum(0) / B, 0.9 * expected)


@pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning")  # tiny data
def test_fairlens_warns_and_validates():
    X, y, s = make_biased_data(n=120, seed=2)
    est = FairLensClassifier(epsilon=3.0, hidden_layer_sizes=(3,), max_epochs=1, batch_size=40)
    with pytest.warns(UnboundedSensitivityWarning):
        est.fit(X, y, sensitive_features=s)
    assert est.privacy_spent_.epsilon <= 3.0
    with pytest.raises(ValueError, match="exactly 2 groups"):
        FairLensClassifier(epsilon=np.inf, max_epochs=1).fit(
            X, y, sensitive_features=np.arange(len(y)) % 3
        )
    with pytest.raises(ValueError, match="Only binary classification"):
        FairLensClassifier(epsilon=np.inf, max_epochs=1).fit(X, y + s, sensitive_features=s)
