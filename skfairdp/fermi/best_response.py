"""W's best response (``lr_dual="auto"``) on the tiny released histogram, in float64 NumPy.

Every step, :class:`~skfairdp.fermi.problem.ErmiProblem` folds the released batch
histogram of (block, group, prediction) into a running mean and answers it with the
shrunk best response. The arrays are ``(n_blocks, k, l)``: a handful of numbers, for
which each torch operation costs its dispatch (a few microseconds), not its
arithmetic. The same formulas in NumPy float64 cost a fraction of that and round
less; only the answer (W and the ERMI coefficient tables it implies) goes back to
torch, once per step. Everything here is post-processing of released values.
"""

from __future__ import annotations

import numpy as np

# W with at most this many entries takes the Python-float path (a few float operations
# each, no array calls); larger ones the NumPy one. Both compute the same float64 formulas.
SMALL_W = 64


def shrunk_best_response(H: np.ndarray, variance: float, pinv: np.ndarray) -> np.ndarray:
    """W from a (noisy) joint histogram, each column shrunk towards independence.

    ``H[b, r, j]`` estimates ``P(block=b, S=r, Yhat=j)`` (up to a factor) with
    independent noise of variance ``variance`` per cell. The maximiser of the psi
    terms is ``W*[b, r, j] = P(S=r | Yhat=j, b) / sqrt(p_S(r | b))``. Each column's
    conditional rates ``P_hat(. | j)`` are moved towards the block's pooled group
    shares ``q`` (where every column equal means no force on theta) by the
    positive-part James-Stein gain

        g_j = max(0, 1 - E[noise part of D_j] / D_j),   D_j = sum_r (P_hat(r|j) - q_r)^2 / p_r,

    with the noise part from the delta method (``variance / T_j^2`` times
    ``(1 - P_r)^2 + (k - 1) P_r^2`` for the column total ``T_j``). A dependence
    that the released statistics cannot tell from their noise moves theta by
    (about) nothing; a clear one is kept whole.

    Parameters
    ----------
    H : ndarray of shape (n_blocks, k, l)
        The (running mean of the) released histograms.
    variance : float
        Noise variance of each cell of ``H``.
    pinv : ndarray of shape (n_blocks, k)
        ``1 / sqrt(p_S(r | b))`` (public).

    Returns
    -------
    W : ndarray of shape (n_blocks, k, l), float64
    """
    H = np.asarray(H, dtype=np.float64)
    pinv = np.asarray(pinv, dtype=np.float64)
    k = H.shape[1]
    Hp = np.maximum(H, 0.0)
    totals = Hp.sum(axis=1, keepdims=True)  # (b, 1, l)
    filled = totals > 0
    safe = np.where(filled, totals, 1.0)
    pooled = Hp.sum(axis=2, keepdims=True)
    pooled_total = pooled.sum(axis=1, keepdims=True)
    priors = (1.0 / pinv**2)[:, :, None]  # (b, k, 1)
    q = np.where(pooled_total > 0, pooled / np.maximum(pooled_total, 1e-12), priors)
    # P_hat(r | j); a column with no mass says nothing: it stays at the pooled shares
    rates = np.where(filled, Hp / safe, q)
    gap = rates - q
    deviation = (gap * gap / priors).sum(axis=1, keepdims=True)
    noise = (variance / (safe * safe)) * ((1.0 - rates) ** 2 + (k - 1) * rates * rates)
    noise = (noise / priors).sum(axis=1, keepdims=True)
    gain = np.where(deviation > 0, np.maximum(1.0 - noise / np.maximum(deviation, 1e-30), 0.0), 0.0)
    return (q + np.where(filled, gain, 0.0) * gap) * pinv[:, :, None]


def psi_tables(W: np.ndarray, pinv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The per-cell coefficient tables of :func:`skfairdp.fermi.ermi.psi_coefficients`.

    Returns ``own`` (``(n_blocks * k, l)``: ``2 W[b, r] pinv[b, r]``), ``shared``
    (``(n_blocks, l)``: ``-sum_r W[b, r]^2``) and ``combined`` (``own`` plus its
    block's ``shared``: row ``i``'s whole coefficient vector ``c_i`` is
    ``combined[b_i k + s_i]``).
    """
    n_blocks, k, l = W.shape
    own = (2.0 * W * pinv[:, :, None]).reshape(n_blocks * k, l)
    shared = -(W * W).sum(axis=1)
    combined = own + np.repeat(shared, k, axis=0)
    return own, shared, combined


def running_mean_step(
    H: np.ndarray, V: float, t: float, gradient: np.ndarray, beta: float, noise_std: float
) -> tuple[np.ndarray, float, float, np.ndarray, float]:
    """One step of the bias-corrected running mean of released histograms.

    ``H`` (mean, starting at zero), ``V`` (its noise variance per cell, from the public
    noise std) and ``t`` (steps so far) move by rate ``beta`` towards ``gradient``;
    returns the new ``(H, V, t)`` and the bias-corrected mean and variance
    ``H / c``, ``V / c^2`` with ``c = 1 - (1 - beta)^t``.
    """
    keep = 1.0 - beta
    H = H * keep + beta * gradient
    V = V * keep * keep + (beta * noise_std) ** 2
    t = t + 1.0
    corrected = 1.0 - keep**t  # the running mean starts at zero
    return H, V, t, H / corrected, V / (corrected * corrected)


def shrunk_best_response_small(H: list, variance: float, pinv: list) -> tuple[list, list, list]:
    """:func:`shrunk_best_response` and :func:`psi_tables` on nested Python lists.

    For the tiny ``W`` of tabular problems (a few groups and classes), where even a
    NumPy call costs more than the arithmetic. ``H[b][r][j]`` and ``pinv[b][r]``;
    returns ``W`` (flat, ``(b, r, j)`` order), the flat ``combined`` table and the flat
    ``own`` table and ``shared`` table as lists: ``(W, own, shared, combined)``.
    """
    W, own, shared, combined = [], [], [], []
    for Hb, pb in zip(H, pinv):
        k, l = len(Hb), len(Hb[0])
        priors = [1.0 / (p * p) for p in pb]
        Hp = [[max(v, 0.0) for v in row] for row in Hb]
        pooled = [sum(row) for row in Hp]
        pooled_total = sum(pooled)
        if pooled_total > 0:
            q = [v / max(pooled_total, 1e-12) for v in pooled]
        else:
            q = priors
        Wb = [[0.0] * l for _ in range(k)]
        for j in range(l):
            # sum() of lists, not generators (faster; the same additions in the same order)
            total = sum([Hp[r][j] for r in range(k)])
            filled = total > 0
            safe = total if filled else 1.0
            rates = [Hp[r][j] / safe if filled else q[r] for r in range(k)]
            gap = [rates[r] - q[r] for r in range(k)]
            deviation = sum([gap[r] * gap[r] / priors[r] for r in range(k)])
            scale = variance / (safe * safe)
            noise = sum(
                [
                    scale * ((1.0 - rates[r]) ** 2 + (k - 1) * rates[r] * rates[r]) / priors[r]
                    for r in range(k)
                ]
            )
            gain = max(1.0 - noise / max(deviation, 1e-30), 0.0) if deviation > 0 else 0.0
            gain = gain if filled else 0.0
            for r in range(k):
                Wb[r][j] = (q[r] + gain * gap[r]) * pb[r]
        shared_b = [-sum([Wb[r][j] * Wb[r][j] for r in range(k)]) for j in range(l)]
        for r in range(k):
            W.extend(Wb[r])
            own_r = [2.0 * Wb[r][j] * pb[r] for j in range(l)]
            own.extend(own_r)
            combined.extend([o + c for o, c in zip(own_r, shared_b)])
        shared.extend(shared_b)
    return W, own, shared, combined
