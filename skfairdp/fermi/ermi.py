"""ERMI, the fairness regulariser of FERMI / DP-FERMI, in per-sample form.

Notation (digest §1.3, checked against the paper's Theorem 3.2): ``F`` is the
``(B, l)`` matrix of predicted class probabilities, ``s`` the group codes,
``W`` a ``(k, l)`` matrix and ``pinv[r] = 1 / sqrt(p_S(r))``. The per-sample
term is

    psi_i(theta, W) = sum_j F_ij * (2 W[s_i, j] pinv[s_i] - sum_r W[r, j]^2) - 1,

linear in ``F_i``; its batch mean is concave in ``W`` and maximised at
``W*[r, j] = P(S=r | Yhat=j) / sqrt(p_S(r))`` where it equals ERMI. The paper
prints ``E[y s^T]`` as ``k x l``; for the trace to type-check it is ``l x k``
(the scalar form above sidesteps the typo).

For conditional notions (equalized odds) each label value ``y`` has its own
block ``W[y]`` and ``pinv[y] = 1 / sqrt(p_{S|Y}(. | y))``; sample ``i`` uses
block ``y_i`` (digest §1.7), so a uniform minibatch mean weights block ``y`` by
``p_Y(y)`` as in the paper's eq. (5).
"""

from __future__ import annotations

import torch


def psi_coefficients(
    W: torch.Tensor, pinv: torch.Tensor, s: torch.Tensor, block: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Split ``c_i`` (so that ``psi_i = <c_i, F_i> - 1``) into its two parts.

    Parameters
    ----------
    W : Tensor (n_blocks, k, l)
    pinv : Tensor (n_blocks, k)
    s, block : Tensor (B,) of int64

    Returns
    -------
    own : Tensor (B, l)
        ``2 W[b_i, s_i, :] pinv[b_i, s_i]``, the only part that depends on ``s_i``.
    shared : Tensor (B, l)
        ``-sum_r W[b_i, r, :]^2``, which does not.
    """
    n_blocks, k, l = W.shape
    own_table = (2.0 * W * pinv.unsqueeze(2)).reshape(n_blocks * k, l)
    own = own_table.index_select(0, block * k + s if n_blocks > 1 else s)
    shared = -(W * W).sum(dim=1)
    shared = shared.index_select(0, block) if n_blocks > 1 else shared.expand(len(s), l)
    return own, shared


def psi(F: torch.Tensor, W, pinv, s, block) -> torch.Tensor:
    """Per-sample ``psi_i`` of shape (B,)."""
    own, shared = psi_coefficients(W, pinv, s, block)
    return (F * (own + shared)).sum(dim=1) - 1.0


def psi_w_gradients(
    F: torch.Tensor, W: torch.Tensor, pinv: torch.Tensor, s: torch.Tensor, block: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample gradients of ``psi_i`` in ``W`` (all blocks), as two parts.

    ``grad_W psi_i = -2 W[b_i] diag(F_i) + 2 pinv[b_i, s_i] e_{s_i} F_i^T`` in
    block ``b_i`` and zero elsewhere (Lemma D.1).

    Returns
    -------
    shared : Tensor (B, n_blocks, k, l)
        ``-2 W[b_i] diag(F_i)``: independent of ``s_i``.
    own : Tensor (B, n_blocks, k, l)
        ``2 pinv[b_i, s_i] e_{s_i} F_i^T``: the ``s``-dependent part, with
        Frobenius norm ``2 pinv[b_i, s_i] ||F_i||``.
    """
    batch, (n_blocks, k, _) = F.shape[0], W.shape
    cell = block * k + s if n_blocks > 1 else s
    # scatter rather than one_hot, which scans its input for min/max on every call
    cell_scale = F.new_zeros((batch, n_blocks * k)).scatter_(
        1, cell.unsqueeze(1), 2.0 * pinv.reshape(-1).index_select(0, cell).unsqueeze(1)
    )
    F_ = F[:, None, None, :]
    own = cell_scale.view(batch, n_blocks, k, 1) * F_
    shared = -2.0 * W.unsqueeze(0) * F_
    if n_blocks > 1:
        block_mask = F.new_zeros((batch, n_blocks)).scatter_(1, block.unsqueeze(1), 1.0)
        shared = shared * block_mask[:, :, None, None]
    return shared, own


def w_gradient_rows(
    F: torch.Tensor,
    W: torch.Tensor,
    pinv: torch.Tensor,
    s: torch.Tensor,
    block: torch.Tensor,
    weight: torch.Tensor,
    include: str = "both",
) -> torch.Tensor:
    """Per-sample W-gradients of ``weight_i * psi_i`` as a dense ``(B, W.numel())`` matrix.

    Entry ``(b_i, r, j)`` is ``2 weight_i F_ij (p_i [r = s_i] - W[b_i, r, j])``
    (``include="both"``) or ``2 weight_i F_ij p_i [r = s_i]`` (``"own"``); other
    blocks are zero. The same rows as :meth:`WGradients.dense` in fewer tensor
    operations, for the small ``W`` of tabular problems.
    """
    batch, (n_blocks, k, l) = F.shape[0], W.shape
    cell = block * k + s if n_blocks > 1 else s
    p = pinv.reshape(-1).index_select(0, cell)
    own = F.new_zeros((batch, k)).scatter_(1, s.unsqueeze(1), p.unsqueeze(1)).unsqueeze(2)
    if include == "both":
        own = own - (W if n_blocks == 1 else W.index_select(0, block))
    local = own * (F * (2.0 * weight).unsqueeze(1)).unsqueeze(1)
    if n_blocks == 1:
        return local.reshape(batch, k * l)
    rows = F.new_zeros((batch, n_blocks, k * l))
    index = block.view(batch, 1, 1).expand(batch, 1, k * l)
    return rows.scatter_(1, index, local.reshape(batch, 1, k * l)).reshape(batch, -1)


def optimal_w(F: torch.Tensor, s: torch.Tensor, n_groups: int, p_s: torch.Tensor) -> torch.Tensor:
    """The inner maximiser ``W*[r, j] = p(Yhat=j, S=r) / (sqrt(p_S(r)) p(Yhat=j))`` (one block)."""
    joint = torch.zeros(n_groups, F.shape[1], dtype=F.dtype, device=F.device)
    joint.index_add_(0, s, F)
    joint /= F.shape[0]
    return joint / (p_s.sqrt().unsqueeze(1) * F.mean(dim=0).unsqueeze(0))


def ermi(
    F: torch.Tensor, s: torch.Tensor, n_groups: int, p_s: torch.Tensor | None = None
) -> torch.Tensor:
    """Empirical ERMI ``sum_{j,r} p(j, r)^2 / (p(j) p_S(r)) - 1`` of soft predictions."""
    if p_s is None:
        p_s = torch.bincount(s, minlength=n_groups).to(F.dtype) / F.shape[0]
    joint = torch.zeros(n_groups, F.shape[1], dtype=F.dtype, device=F.device)
    joint.index_add_(0, s, F)
    joint /= F.shape[0]
    return (joint**2 / (p_s.unsqueeze(1) * F.mean(dim=0).unsqueeze(0))).sum() - 1.0


def project_frobenius(W: torch.Tensor, radius: float) -> torch.Tensor:
    """Project each block ``W[b]`` onto the Frobenius ball of ``radius`` (in place)."""
    scale = radius / torch.linalg.matrix_norm(W, dim=(-2, -1)).clamp(min=radius)
    W.mul_(scale.view(-1, *([1] * (W.dim() - 1))))
    return W


class WGradients:
    """Per-sample W-gradients of ``weight_i * psi_i``, without materialising them.

    ``G_i = weight_i (-2 W[b_i] diag(F_i) + 2 p_i e_{s_i} F_i^T)`` with
    ``p_i = pinv[b_i, s_i]``; ``include`` selects ``"shared"``, ``"own"`` or
    ``"both"`` parts. Implements the ``norms()`` / ``weighted_sum(w)`` /
    ``dense()`` protocol of :func:`skfairdp.engine.clipped_sum`, using

        ||G_i||^2 = 4 weight_i^2 sum_j F_ij^2 (|W[b_i, :, j]|^2 + p_i^2 - 2 p_i W[b_i, s_i, j]).
    """

    def __init__(self, F, W, pinv, s, block, weight, include: str = "both"):
        self.F, self.W, self.pinv, self.s, self.block = F, W, pinv, s, block
        self.weight = weight
        self.include = include
        n_blocks, k, _ = W.shape
        self.cell = block * k + s if n_blocks > 1 else s
        self.p = pinv.reshape(-1).index_select(0, self.cell)

    def norms(self) -> torch.Tensor:
        F2 = self.F * self.F
        p = self.p.unsqueeze(1)
        if self.include == "own":
            sq = (p * p * F2).sum(1)
        else:
            W, (n_blocks, k, l) = self.W, self.W.shape
            colsq = (W * W).sum(1)
            colsq = colsq.index_select(0, self.block) if n_blocks > 1 else colsq
            if self.include == "shared":
                sq = (F2 * colsq).sum(1)
            else:
                row = W.reshape(n_blocks * k, l).index_select(0, self.cell)
                sq = (F2 * (colsq + p * p - 2.0 * p * row)).sum(1)
        return 2.0 * self.weight.abs() * sq.clamp(min=0.0).sqrt()

    def weighted_sum(self, weights: torch.Tensor) -> torch.Tensor:
        n_blocks, k, l = self.W.shape
        u = (weights * self.weight).unsqueeze(1) * self.F
        total = self.W.new_zeros(self.W.shape)
        if self.include != "shared":
            own = self.W.new_zeros((n_blocks * k, l))
            own.index_add_(0, self.cell, 2.0 * self.p.unsqueeze(1) * u)
            total += own.view_as(self.W)
        if self.include != "own":
            if n_blocks > 1:
                f_sum = self.W.new_zeros((n_blocks, l)).index_add_(0, self.block, u)
            else:
                f_sum = u.sum(0, keepdim=True)
            total += -2.0 * self.W * f_sum.unsqueeze(1)
        return total.reshape(-1)

    def dense(self) -> torch.Tensor:
        """The ``(B, W.numel())`` matrix (for tests and small problems)."""
        shared, own = psi_w_gradients(self.F, self.W, self.pinv, self.s, self.block)
        parts = {"shared": shared, "own": own, "both": shared + own}[self.include]
        return (parts * self.weight.view(-1, 1, 1, 1)).flatten(1)
