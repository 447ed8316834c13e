"""skfairdp.diagnostics: per-group privacy cost / excessive risk and the R_dir/R_mag split."""

import copy

import matplotlib
import numpy as np
import pytest
import torch
from conftest import make_biased_data
from torch.func import functional_call, hessian

from skfairdp.diagnostics import disparate_impact_report, plot_group_accuracy
from skfairdp.dpsgd.global_scaling import GlobalScalingDPClassifier

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def fitted():
    X, y, s = make_biased_data(n=300, seed=4)
    common = dict(hidden_layer_sizes=(4,), max_epochs=3, batch_size=50, random_state=0)
    reference = GlobalScalingDPClassifier(epsilon=np.inf, lr=0.3, **common).fit(X, y)
    private = GlobalScalingDPClassifier(
        variant="clip", epsilon=1.0, max_grad_norm=0.05, lr=0.3, **common
    ).fit(X, y)
    return X, y, s, reference, private


def _manual(est, X, y, s):
    proba = est.predict_proba(X)
    out = {}
    for g in (0, 1):
        m = s == g
        out[g] = ((proba[m].argmax(1) == y[m]).mean(), -np.log(proba[m, y[m]]).mean())
    return out


def test_outcome_metrics_match_a_manual_computation(fitted):
    X, y, s, reference, private = fitted
    report = disparate_impact_report(private, reference, X, y, sensitive_features=s,
                                     decomposition=False)  # fmt: skip
    assert report.attrs["private"] is False
    mine, ref = _manual(private, X, y, s), _manual(reference, X, y, s)
    for row, g in zip(report.itertuples(), (0, 1)):
        assert row.accuracy == pytest.approx(mine[g][0])
        assert row.privacy_cost == pytest.approx(ref[g][0] - mine[g][0])
        assert row.excessive_risk == pytest.approx(mine[g][1] - ref[g][1])
    assert report["privacy_cost_gap"].min() == 0.0
    assert report["privacy_cost_gap"].max() == pytest.approx(np.ptp(report["privacy_cost"]))
    assert list(report["n"]) == [int((s == 0).sum()), int((s == 1).sum())]


def test_non_private_step_has_no_clipping_error(fitted):
    X, y, s, reference, _ = fitted
    report = disparate_impact_report(reference, reference, X, y, sensitive_features=s,
                                     n_batches=2, hutchinson_probes=5)  # fmt: skip
    np.testing.assert_allclose(report[["R_mag", "R_dir", "R_noise"]].to_numpy(), 0.0, atol=1e-7)
    np.testing.assert_allclose(report["direction_error"], 0.0, atol=1e-6)
    assert report.attrs["magnitude_ratio"] == pytest.approx(1.0)


def _loss_after(est, X, y, rows, direction, eta):
    module = copy.deepcopy(est.module_)
    with torch.no_grad():
        offset = 0
        for p in module.parameters():
            p -= eta * direction[offset : offset + p.numel()].view_as(p)
            offset += p.numel()
        out = module(torch.as_tensor(X[rows]))
        return float(torch.nn.functional.cross_entropy(out, torch.as_tensor(y[rows])))


def test_r_clip_matches_exact_loss_difference_for_small_steps(fitted):
    """R_mag + R_dir: 2nd-order expansion of L_k(theta - eta gbar_B) - L_k(theta - eta g_B)."""
    X, y, s, _, private = fitted
    eta = 0.05
    report = disparate_impact_report(
        private, private, X, y, sensitive_features=s, lr=eta, n_batches=1, batch_size=len(y),
        hutchinson_probes=0,
    )  # fmt: skip
    module = private.module_
    params = {n: p.detach() for n, p in module.named_parameters()}
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)

    def one(p, x, t):
        return torch.nn.functional.cross_entropy(functional_call(module, p, (x[None],)), t[None])

    per = torch.func.vmap(torch.func.grad(one), in_dims=(None, 0, 0))(params, Xt, yt)
    G = torch.cat([per[n].reshape(len(y), -1) for n in params], dim=1)
    gamma = (0.05 / torch.linalg.vector_norm(G, dim=1)).clamp(max=1.0)
    g_b, gbar_b = G.mean(0), (gamma @ G) / len(y)
    assert report.attrs["cos_processed"] < 0.999  # clipping at 0.05 does misalign
    for row, g in zip(report.itertuples(), (0, 1)):
        rows = np.flatnonzero(s == g)
        exact = _loss_after(private, X, y, rows, gbar_b, eta) - _loss_after(
            private, X, y, rows, g_b, eta
        )
        assert row.R_clip == pytest.approx(exact, rel=0.05, abs=1e-6)


def test_global_scaling_above_all_norms_has_no_direction_error(fitted):
    X, y, s, _, private = fitted
    wide = copy.deepcopy(private)
    wide.variant, wide.z_ = "adapt", 1e6  # Z above every norm: pure rescaling
    report = disparate_impact_report(wide, wide, X, y, sensitive_features=s, n_batches=2,
                                     hutchinson_probes=0)  # fmt: skip
    np.testing.assert_allclose(report["R_dir"], 0.0, atol=1e-7)
    np.testing.assert_allclose(report["direction_error"], 0.0, atol=1e-5)
    assert report.attrs["cos_processed"] == pytest.approx(1.0, abs=1e-6)
    assert np.all(report["R_mag"] > 0)  # steps much shorter than SGD's: magnitude error only


def test_hutchinson_trace_close_to_exact(fitted):
    X, y, s, _, private = fitted
    report = disparate_impact_report(private, private, X, y, sensitive_features=s, n_batches=1,
                                     hutchinson_probes=400)  # fmt: skip
    module = private.module_
    params = {n: p.detach() for n, p in module.named_parameters()}
    for row, g in zip(report.itertuples(), (0, 1)):
        rows = torch.as_tensor(np.flatnonzero(s == g))

        def f(p, rows=rows):
            out = functional_call(module, p, (torch.as_tensor(X)[rows],))
            return torch.nn.functional.cross_entropy(out, torch.as_tensor(y)[rows])

        H = hessian(f)(params)
        exact = sum(float(torch.diagonal(H[n][n].reshape(p.numel(), p.numel())).sum())
                    for n, p in params.items())  # fmt: skip
        assert row.hessian_trace == pytest.approx(exact, rel=0.15)
        sigma_c_over_e = private.noise_multiplier_ * private.max_grad_norm / private.batch_size
        assert row.R_noise == pytest.approx(0.5 * private.lr**2 * row.hessian_trace
                                            * sigma_c_over_e**2)  # fmt: skip


def test_plot_group_accuracy(fitted):
    X, y, s, reference, private = fitted
    report = disparate_impact_report(private, reference, X, y, sensitive_features=s,
                                     decomposition=False)  # fmt: skip
    ax = plot_group_accuracy(report, title="test")
    assert len(ax.patches) == 4 and ax.get_title() == "test"


def test_unfitted_estimator_is_an_error():
    X, y, s = make_biased_data(n=50)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        disparate_impact_report(GlobalScalingDPClassifier(), GlobalScalingDPClassifier(), X, y,
                                sensitive_features=s)  # fmt: skip
