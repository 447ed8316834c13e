"""ERMI math against the golden values of research/seed-000-dp-fermi.md §1.3-§1.7, §4.5."""

import math

import numpy as np
import pytest
import torch

from skfairdp.fermi import ermi
from skfairdp.metrics import demographic_parity_violation

torch.set_default_dtype(torch.float32)

# --- the 4-sample binary example of digest §4.5 ---------------------------------
S4 = torch.tensor([0, 0, 1, 1])
P4 = torch.tensor([0.9, 0.7, 0.2, 0.4], dtype=torch.float64)
F4 = torch.stack([1 - P4, P4], dim=1)  # (n, l) with l = 2: [1 - sigma, sigma]
PS4 = torch.tensor([0.5, 0.5], dtype=torch.float64)
W_STAR = [[0.3142697, 1.0285190], [1.0999439, 0.3856946]]
GRAD_AT_0 = [[0.2828427, 1.1313708], [0.9899495, 0.4242641]]
W1 = torch.tensor([[0.5, -0.25], [1.0, 0.0]], dtype=torch.float64)
PSI_AT_W1 = [-1.6762247, -1.4894607, 0.2502417, -0.0779437]
C_AT_W1 = [[0.1642136, -0.7696068]] * 2 + [[1.5784271, -0.0625]] * 2


def _one_block(W, p_s):
    """(W, pinv, block) in the module's blocked layout, for a single notion block."""
    return W.unsqueeze(0), p_s.rsqrt().unsqueeze(0)


def _mean_w_gradient(F, W, p_s, s):
    Wb, pinv = _one_block(W, p_s)
    shared, own = ermi.psi_w_gradients(F, Wb, pinv, s, torch.zeros_like(s))
    return (shared + own).mean(0)[0]


def _trace_psi(F_i, s_i, W, p_s):
    """The paper's trace form of psi_i (Thm 3.2), with E[yhat s^T] as the l x k matrix."""
    k, l = W.shape
    onehot = torch.zeros(k, dtype=F_i.dtype)
    onehot[s_i] = 1.0
    M = torch.outer(F_i, onehot)  # (l, k): M[j, r] = F_j s_r
    quad = torch.trace(W @ torch.diag(F_i) @ W.T)
    lin = torch.trace(W @ M @ torch.diag(p_s.rsqrt()))
    return -quad + 2 * lin - 1


@pytest.mark.parametrize("seed", range(5))
def test_scalar_form_equals_trace_form(seed):
    gen = torch.Generator().manual_seed(seed)
    k = int(torch.randint(2, 6, (1,), generator=gen))
    l = int(torch.randint(2, 5, (1,), generator=gen))
    n = 7
    W = torch.randn(k, l, generator=gen, dtype=torch.float64)
    F = torch.softmax(torch.randn(n, l, generator=gen, dtype=torch.float64), dim=1)
    s = torch.randint(0, k, (n,), generator=gen)
    p_s = torch.rand(k, generator=gen, dtype=torch.float64) + 0.1
    p_s /= p_s.sum()
    Wb, pinv = _one_block(W, p_s)
    scalar = ermi.psi(F, Wb, pinv, s, torch.zeros_like(s))
    trace = torch.stack([_trace_psi(F[i], s[i], W, p_s) for i in range(n)])
    torch.testing.assert_close(scalar, trace, rtol=0, atol=1e-12)


def test_golden_ermi_and_inner_maximiser():
    assert float(ermi.ermi(F4, S4, 2)) == pytest.approx(25 / 99, abs=1e-12)
    assert float(ermi.ermi(F4, S4, 2, PS4)) == pytest.approx(25 / 99, abs=1e-12)
    W_star = ermi.optimal_w(F4, S4, 2, PS4)
    np.testing.assert_allclose(W_star.numpy(), W_STAR, atol=5e-8)
    # the inner max of the mean surrogate is ERMI ...
    Wb, pinv = _one_block(W_star, PS4)
    mean_psi = ermi.psi(F4, Wb, pinv, S4, torch.zeros_like(S4)).mean()
    assert float(mean_psi) == pytest.approx(25 / 99, abs=1e-12)
    # ... attained where the mean W-gradient vanishes
    np.testing.assert_allclose(_mean_w_gradient(F4, W_star, PS4, S4).numpy(), 0.0, atol=1e-12)


def test_golden_values_at_zero_and_w1():
    grad0 = _mean_w_gradient(F4, torch.zeros(2, 2, dtype=torch.float64), PS4, S4)
    np.testing.assert_allclose(grad0.numpy(), GRAD_AT_0, atol=5e-8)
    Wb, pinv = _one_block(W1, PS4)
    block = torch.zeros_like(S4)
    np.testing.assert_allclose(ermi.psi(F4, Wb, pinv, S4, block).numpy(), PSI_AT_W1, atol=5e-8)
    own, shared = ermi.psi_coefficients(Wb, pinv, S4, block)
    np.testing.assert_allclose((own + shared).numpy(), C_AT_W1, atol=5e-8)


def test_golden_hard_label_dp_violation():
    y_pred = (P4.numpy() > 0.5).astype(int)
    assert demographic_parity_violation(np.zeros(4), y_pred, sensitive_features=S4.numpy()) == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_inner_max_is_ermi_and_bounded(seed):
    gen = torch.Generator().manual_seed(seed)
    k, l, n = 3, 4, 60
    F = torch.softmax(2 * torch.randn(n, l, generator=gen, dtype=torch.float64), dim=1)
    s = torch.cat([torch.arange(k), torch.randint(0, k, (n - k,), generator=gen)])
    p_s = torch.bincount(s, minlength=k).double() / n
    rho = float(p_s.min())
    W_star = ermi.optimal_w(F, s, k, p_s)
    Wb, pinv = _one_block(W_star, p_s)
    value = ermi.psi(F, Wb, pinv, s, torch.zeros_like(s)).mean()
    assert float(value) == pytest.approx(float(ermi.ermi(F, s, k)), abs=1e-12)
    assert float(ermi.ermi(F, s, k)) >= 0
    np.testing.assert_allclose(_mean_w_gradient(F, W_star, p_s, s).numpy(), 0.0, atol=1e-12)
    # any other W does worse (concavity)
    other = W_star + 0.1 * torch.randn(k, l, generator=gen, dtype=torch.float64)
    Wo, _ = _one_block(other, p_s)
    assert float(ermi.psi(F, Wo, pinv, s, torch.zeros_like(s)).mean()) < float(value)
    assert float(torch.linalg.matrix_norm(W_star)) <= math.sqrt(l / rho) + 1e-12
    assert float(W_star.min()) >= 0
    assert float(W_star.max()) <= 1 / math.sqrt(rho) + 1e-12


def test_ermi_zero_at_independence():
    F = torch.tensor([[0.3, 0.7]] * 6, dtype=torch.float64)
    s = torch.tensor([0, 1, 2, 0, 1, 1])
    assert abs(float(ermi.ermi(F, s, 3))) < 1e-12


def test_w_gradient_matches_autograd_and_finite_differences():
    gen = torch.Generator().manual_seed(3)
    n_blocks, k, l, n = 2, 3, 4, 9
    W = torch.randn(n_blocks, k, l, generator=gen, dtype=torch.float64)
    pinv = torch.rand(n_blocks, k, generator=gen, dtype=torch.float64) + 1.0
    F = torch.softmax(torch.randn(n, l, generator=gen, dtype=torch.float64), dim=1)
    s = torch.randint(0, k, (n,), generator=gen)
    block = torch.randint(0, n_blocks, (n,), generator=gen)
    shared, own = ermi.psi_w_gradients(F, W, pinv, s, block)
    analytic = shared + own
    for i in range(n):
        Wi = W.clone().requires_grad_(True)
        (auto,) = torch.autograd.grad(
            ermi.psi(F[i : i + 1], Wi, pinv, s[i : i + 1], block[i : i + 1]).sum(), Wi
        )
        torch.testing.assert_close(analytic[i], auto, rtol=0, atol=1e-12)
    # finite differences of the batch sum in one random direction
    direction = torch.randn(W.shape, generator=gen, dtype=torch.float64)
    h = 1e-6

    def total(Wx):
        return float(ermi.psi(F, Wx, pinv, s, block).sum())

    fd = (total(W + h * direction) - total(W - h * direction)) / (2 * h)
    assert float((analytic.sum(0) * direction).sum()) == pytest.approx(fd, rel=1e-7, abs=1e-9)
    # the s-dependent part has Frobenius norm 2 pinv[b_i, s_i] ||F_i|| (sensitivity bound)
    own_norms = torch.linalg.vector_norm(own.flatten(1), dim=1)
    torch.testing.assert_close(own_norms, 2 * pinv[block, s] * torch.linalg.vector_norm(F, dim=1))


def test_softmax_theta_gradient_identity():
    """d psi_i / d z_a = F_a (c_a - c . F) for a softmax head (digest §1.4)."""
    gen = torch.Generator().manual_seed(4)
    k, l, n = 3, 4, 8
    z = torch.randn(n, l, generator=gen, dtype=torch.float64, requires_grad=True)
    W = torch.randn(1, k, l, generator=gen, dtype=torch.float64)
    pinv = torch.rand(1, k, generator=gen, dtype=torch.float64) + 1.0
    s = torch.randint(0, k, (n,), generator=gen)
    block = torch.zeros_like(s)
    F = torch.softmax(z, dim=1)
    (grad,) = torch.autograd.grad(ermi.psi(F, W, pinv, s, block).sum(), z)
    own, shared = ermi.psi_coefficients(W, pinv, s, block)
    c = own + shared
    Fd = F.detach()
    expected = Fd * (c - (c * Fd).sum(1, keepdim=True))
    torch.testing.assert_close(grad, expected, rtol=0, atol=1e-12)


def test_equalized_odds_per_sample_form_matches_eq5():
    """Mean of the per-label-block psi at the per-label maximisers equals eq. (5)."""
    gen = torch.Generator().manual_seed(5)
    k, l, n = 3, 2, 80
    F = torch.softmax(torch.randn(n, l, generator=gen, dtype=torch.float64), dim=1)
    y = torch.cat(
        [torch.arange(l).repeat_interleave(k), torch.randint(0, l, (n - k * l,), generator=gen)]
    )
    s = torch.cat([torch.arange(k).repeat(l), torch.randint(0, k, (n - k * l,), generator=gen)])
    p_s_given_y = torch.stack(
        [torch.bincount(s[y == c], minlength=k).double() / int((y == c).sum()) for c in range(l)]
    )
    W = torch.stack([ermi.optimal_w(F[y == c], s[y == c], k, p_s_given_y[c]) for c in range(l)])
    mean_psi = ermi.psi(F, W, p_s_given_y.rsqrt(), s, y).mean()
    # eq. (5), directly from the conditional empirical distributions
    eq5 = -1.0
    for c in range(l):
        Fc, sc = F[y == c], s[y == c]
        p_y = len(sc) / n
        joint = torch.zeros(k, l, dtype=torch.float64).index_add_(0, sc, Fc) / len(
            sc
        )  # p(r, j | y)
        ratio = joint**2 / (p_s_given_y[c].unsqueeze(1) * Fc.mean(0).unsqueeze(0))
        eq5 += p_y * float(ratio.sum())
    assert float(mean_psi) == pytest.approx(eq5, abs=1e-12)
    # and each block's maximiser zeroes that block's mean gradient
    shared, own = ermi.psi_w_gradients(F, W, p_s_given_y.rsqrt(), s, y)
    np.testing.assert_allclose((shared + own).mean(0).numpy(), 0.0, atol=1e-12)


def test_project_frobenius_per_block():
    W = torch.stack([torch.full((2, 3), 2.0), torch.full((2, 3), 0.1)])
    before = W.clone()
    out = ermi.project_frobenius(W, 1.5)
    assert out is W  # in place
    norms = torch.linalg.matrix_norm(W)
    assert float(norms[0]) == pytest.approx(1.5)
    torch.testing.assert_close(W[1], before[1])  # inside the ball: untouched
    torch.testing.assert_close(W[0] / norms[0], before[0] / torch.linalg.matrix_norm(before[0]))


@pytest.mark.parametrize("n_blocks", [1, 3])
@pytest.mark.parametrize("include", ["own", "shared", "both"])
def test_w_gradients_factored_protocol(n_blocks, include):
    """ermi.WGradients (norms / weighted_sum without materialising) equals its dense rows."""
    gen = torch.Generator().manual_seed(6)
    k, l, n = 4, 3, 11
    W = torch.randn(n_blocks, k, l, generator=gen, dtype=torch.float64)
    pinv = torch.rand(n_blocks, k, generator=gen, dtype=torch.float64) + 1.0
    F = torch.softmax(torch.randn(n, l, generator=gen, dtype=torch.float64), dim=1)
    s = torch.randint(0, k, (n,), generator=gen)
    block = torch.randint(0, n_blocks, (n,), generator=gen)
    weight = 2.5 * (torch.rand(n, generator=gen, dtype=torch.float64) > 0.3).double()
    grads = ermi.WGradients(F, W, pinv, s, block, weight, include=include)
    shared, own = ermi.psi_w_gradients(F, W, pinv, s, block)
    reference = {"shared": shared, "own": own, "both": shared + own}[include]
    reference = (reference * weight.view(-1, 1, 1, 1)).flatten(1)
    torch.testing.assert_close(grads.dense(), reference)
    torch.testing.assert_close(grads.norms(), torch.linalg.vector_norm(reference, dim=1))
    w = torch.rand(n, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(grads.weighted_sum(w), w @ reference)


@pytest.mark.parametrize("n_blocks", [1, 3])
@pytest.mark.parametrize("include", ["own", "both"])
def test_dense_w_gradient_rows_equal_definition(n_blocks, include):
    gen = torch.Generator().manual_seed(7)
    k, l, n = 3, 4, 13
    W = torch.randn(n_blocks, k, l, generator=gen, dtype=torch.float64)
    pinv = torch.rand(n_blocks, k, generator=gen, dtype=torch.float64) + 1.0
    F = torch.softmax(torch.randn(n, l, generator=gen, dtype=torch.float64), dim=1)
    s = torch.randint(0, k, (n,), generator=gen)
    block = torch.randint(0, n_blocks, (n,), generator=gen)
    weight = 1.5 * (torch.rand(n, generator=gen, dtype=torch.float64) > 0.3).double()
    reference = ermi.WGradients(F, W, pinv, s, block, weight, include=include).dense()
    rows = ermi.w_gradient_rows(F, W, pinv, s, block, weight, include=include)
    torch.testing.assert_close(rows, reference)
