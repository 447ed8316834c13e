"""Objectives ``f`` of a CGOO reduction as differentiable torch functions of group statistics.

Binary classification with labels 0/1 and ``G`` groups.  A *cell* is a
(group, label) pair with index ``z = 2 * g + y``, so there are ``K = 2 * G``
cells.  Every function here takes the same two statistics, both 1-D tensors
of shape ``(K,)`` (float64 in the estimator):

``positives``
    ``J_z = P[yhat = 1, cell = z]``, the (mixture's expected) fraction of *all*
    rows that are in cell ``z`` and predicted 1.  These are the joint
    frequencies the reduction releases with noise (seed-002 digest §1.1, P6);
    a Frank-Wolfe iterate is a convex combination of them, so it may be
    slightly outside ``[0, cells]`` once noise is added, and every function is
    defined (and finite) for any real ``positives``.
``cells``
    ``q_z = P[cell = z]``, summing to 1, every entry ``> 0`` (the caller floors
    them).  Treated as a constant: gradients are taken in ``positives`` only.

Derived statistics (all affine in ``positives`` for fixed ``cells``):
:func:`group_positive_rates`, :func:`group_true_positive_rates`,
:func:`group_false_positive_rates`, :func:`true_positive_rate`,
:func:`true_negative_rate`, :func:`error_rate`, :func:`group_error_rates`.

Built-in objectives (:data:`OBJECTIVES`), each convex in ``positives``:
``"error_rate"`` and ``"balanced_error"`` (linear), ``"neg_g_mean"``,
``"neg_h_mean"``, ``"q_mean"`` and ``"worst_group_error"``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = [
    "DEFAULT_KAPPA",
    "DEFAULT_TEMPERATURE",
    "OBJECTIVES",
    "Objective",
    "balanced_error",
    "check_statistics",
    "concave_geometric_mean",
    "concave_harmonic_mean",
    "error_rate",
    "group_error_rates",
    "group_false_positive_rates",
    "group_positive_rates",
    "group_true_positive_rates",
    "linear_objective_vector",
    "make_objective",
    "neg_g_mean",
    "neg_h_mean",
    "q_mean",
    "resolve_objective",
    "true_negative_rate",
    "true_positive_rate",
    "worst_group_error",
]

#: Default floor on the class recalls inside the G-mean and H-mean (digest P5).
DEFAULT_KAPPA = 1e-3
#: Default temperature of the log-sum-exp smooth max in ``"worst_group_error"``.
DEFAULT_TEMPERATURE = 50.0

StatisticFunction = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


def check_statistics(positives: torch.Tensor, cells: torch.Tensor) -> int:
    """Check the shapes of the group statistics and return the number of groups.

    Only shapes are checked (cheap, no synchronisation): the caller guarantees
    ``cells > 0`` and ``sum(cells) == 1``.

    Parameters
    ----------
    positives : torch.Tensor of shape (K,)
        Joint frequencies ``J_z = P[yhat=1, cell=z]``.
    cells : torch.Tensor of shape (K,)
        Cell proportions ``q_z = P[cell=z]``.

    Returns
    -------
    int
        The number of groups ``G = K // 2``.

    Raises
    ------
    ValueError
        If either tensor is not 1-D, their shapes differ, or ``K`` is not a
        positive even number.
    """
    if positives.ndim != 1 or cells.ndim != 1:
        raise ValueError(
            "positives and cells must be 1-D tensors of shape (K,), got shapes "
            f"{tuple(positives.shape)} and {tuple(cells.shape)}."
        )
    if positives.shape != cells.shape:
        raise ValueError(
            f"positives and cells must have the same shape, got {tuple(positives.shape)} "
            f"and {tuple(cells.shape)}."
        )
    n_cells = cells.shape[0]
    if n_cells == 0 or n_cells % 2:
        raise ValueError(
            f"K = {n_cells} cells: expected a positive even number (cell z = 2 * group + label)."
        )
    return n_cells // 2


def group_positive_rates(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Per-group positive rate ``PR_g = (J_{g,0} + J_{g,1}) / (q_{g,0} + q_{g,1})``.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).

    Returns
    -------
    torch.Tensor of shape (G,)
    """
    check_statistics(positives, cells)
    return (positives[0::2] + positives[1::2]) / (cells[0::2] + cells[1::2])


def group_true_positive_rates(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Per-group true positive rate ``TPR_g = J_{g,1} / q_{g,1}``.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).

    Returns
    -------
    torch.Tensor of shape (G,)
    """
    check_statistics(positives, cells)
    return positives[1::2] / cells[1::2]


def group_false_positive_rates(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Per-group false positive rate ``FPR_g = J_{g,0} / q_{g,0}``.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).

    Returns
    -------
    torch.Tensor of shape (G,)
    """
    check_statistics(positives, cells)
    return positives[0::2] / cells[0::2]


def true_positive_rate(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Overall true positive rate (recall of class 1) ``sum_g J_{g,1} / sum_g q_{g,1}``.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).

    Returns
    -------
    torch.Tensor
        A scalar (0-dim) tensor.
    """
    check_statistics(positives, cells)
    return positives[1::2].sum() / cells[1::2].sum()


def true_negative_rate(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Overall true negative rate (recall of class 0) ``1 - sum_g J_{g,0} / sum_g q_{g,0}``.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).

    Returns
    -------
    torch.Tensor
        A scalar (0-dim) tensor.
    """
    check_statistics(positives, cells)
    return 1.0 - positives[0::2].sum() / cells[0::2].sum()


def error_rate(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Error rate ``err = sum_g (J_{g,0} + q_{g,1} - J_{g,1})`` (false positives + false negatives).

    Linear in ``positives``; ``|d err / d J_z| = 1`` for every ``z``.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).

    Returns
    -------
    torch.Tensor
        A scalar (0-dim) tensor.
    """
    check_statistics(positives, cells)
    return (positives[0::2] + cells[1::2] - positives[1::2]).sum()


def group_error_rates(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Per-group error rate ``err_g = (J_{g,0} + q_{g,1} - J_{g,1}) / (q_{g,0} + q_{g,1})``.

    ``error_rate == sum_g (q_{g,0} + q_{g,1}) * err_g``.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).

    Returns
    -------
    torch.Tensor of shape (G,)
    """
    check_statistics(positives, cells)
    errors = positives[0::2] + cells[1::2] - positives[1::2]
    return errors / (cells[0::2] + cells[1::2])


# --------------------------------------------------------------------------------------------
# Concave means with bounded gradients
# --------------------------------------------------------------------------------------------


def _check_kappa(kappa: float) -> float:
    kappa = float(kappa)
    if not 0.0 < kappa < 1.0:
        raise ValueError(f"kappa must be in (0, 1), got {kappa!r}.")
    return kappa


def _check_temperature(temperature: float) -> float:
    temperature = float(temperature)
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a positive finite number, got {temperature!r}.")
    return temperature


def concave_geometric_mean(
    a: torch.Tensor, b: torch.Tensor, kappa: float = DEFAULT_KAPPA
) -> torch.Tensor:
    r"""Geometric mean ``sqrt(a * b)`` of two recalls, extended concavely with bounded gradient.

    Returns

    .. math::

        GM_\kappa(a, b) = \min_{t \in [\sqrt\kappa, 1/\sqrt\kappa]} \tfrac12 (t a + b / t),

    a minimum of linear functions, hence concave and non-decreasing in
    ``(a, b)`` on all of ``R^2``, with ``|dGM/da|, |dGM/db| <= 1 / (2 sqrt(kappa))``.
    Since ``sqrt(a b) = min_{t > 0} (t a + b / t) / 2`` is attained at
    ``t = sqrt(b / a)``, it **equals** ``sqrt(a * b)`` whenever
    ``kappa <= b / a <= 1 / kappa``, in particular whenever both recalls are in
    ``[kappa, 1]``, and is ``>= sqrt(a * b)`` on ``a, b >= 0``.

    This replaces "clamp the recalls at ``kappa``" (digest §2.9 / P5):
    ``-sqrt(max(a, kappa) * b)`` is *not* convex (its slope in ``a`` jumps from
    0 down to ``-sqrt(b / kappa) / 2`` at ``a = kappa``), so clamping would break
    the convexity Frank-Wolfe relies on.  Both bound the gradient by the same
    ``1 / (2 sqrt(kappa))``.

    Parameters
    ----------
    a, b : torch.Tensor
        Recalls (any real values; broadcastable).
    kappa : float, default=1e-3
        In ``(0, 1)``; the mean is exact when both recalls are at least ``kappa``.

    Returns
    -------
    torch.Tensor
        ``GM_kappa(a, b)``, broadcast shape of ``a`` and ``b``.
    """
    kappa = _check_kappa(kappa)
    a, b = torch.broadcast_tensors(a, b)
    root = math.sqrt(kappa)
    # Endpoint values t = sqrt(kappa) and t = 1/sqrt(kappa): the minimum whenever the
    # unconstrained minimiser sqrt(b/a) is outside the interval or undefined (a or b <= 0).
    ends = torch.minimum(0.5 * (root * a + b / root), 0.5 * (a / root + root * b))
    interior = (a > 0) & (b > 0) & (b >= kappa * a) & (b * kappa <= a)
    one = torch.ones_like(a)
    # Safe operands so the unused branch never produces inf/NaN gradients.
    inner = torch.sqrt(torch.where(interior, a, one)) * torch.sqrt(torch.where(interior, b, one))
    return torch.where(interior, inner, ends)


def concave_harmonic_mean(
    a: torch.Tensor, b: torch.Tensor, kappa: float = DEFAULT_KAPPA
) -> torch.Tensor:
    r"""Harmonic mean ``2 / (1/a + 1/b)`` of two recalls, extended concavely to all of ``R^2``.

    Returns

    .. math::

        HM_\kappa(a, b) = 2 \min_{s \in [\kappa/(1+\kappa),\ 1/(1+\kappa)]}
        \left(s^2 a + (1 - s)^2 b\right),

    a minimum of linear functions, hence concave and non-decreasing in
    ``(a, b)``, with gradient entries in ``[0, 2]``.  The unconstrained minimum
    over ``s`` is ``a b / (a + b)`` at ``s = b / (a + b)``, so it **equals** the
    harmonic mean ``2 a b / (a + b)`` whenever ``kappa <= b / a <= 1 / kappa``, in
    particular whenever both recalls are in ``[kappa, 1]``.  Unlike the exact
    formula it is finite (with finite gradient) at ``a = b = 0`` and for the
    slightly negative recalls that noisy statistics can produce.

    Parameters
    ----------
    a, b : torch.Tensor
        Recalls (any real values; broadcastable).
    kappa : float, default=1e-3
        In ``(0, 1)``; the mean is exact when both recalls are at least ``kappa``.

    Returns
    -------
    torch.Tensor
        ``HM_kappa(a, b)``, broadcast shape of ``a`` and ``b``.
    """
    kappa = _check_kappa(kappa)
    a, b = torch.broadcast_tensors(a, b)
    low, high = kappa / (1.0 + kappa), 1.0 / (1.0 + kappa)

    def phi(s: torch.Tensor | float) -> torch.Tensor:
        return 2.0 * (s * s * a + (1.0 - s) * (1.0 - s) * b)

    total = a + b
    convex = total > 0  # phi is a convex quadratic in s: clip its minimiser b / (a + b)
    s = torch.clamp(b / torch.where(convex, total, torch.ones_like(total)), low, high)
    # Otherwise phi is concave (or linear) in s and the minimum is at an endpoint.
    return torch.where(convex, phi(s), torch.minimum(phi(low), phi(high)))


# --------------------------------------------------------------------------------------------
# Objectives
# --------------------------------------------------------------------------------------------


def balanced_error(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Balanced error ``((1 - TPR) + (1 - TNR)) / 2`` of the overall class recalls (linear).

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).

    Returns
    -------
    torch.Tensor
        A scalar (0-dim) tensor.
    """
    tpr = true_positive_rate(positives, cells)
    tnr = true_negative_rate(positives, cells)
    return 0.5 * ((1.0 - tpr) + (1.0 - tnr))


def neg_g_mean(
    positives: torch.Tensor, cells: torch.Tensor, kappa: float = DEFAULT_KAPPA
) -> torch.Tensor:
    """Negative G-mean ``-sqrt(TPR * TNR)`` of the overall class recalls (convex).

    The paper's Example 8.2 for ``L = 2`` classes.  The geometric mean is
    :func:`concave_geometric_mean`: exact when both recalls are at least
    ``kappa``, and with gradient bounded by ``1 / (2 sqrt(kappa))`` in the
    recalls everywhere (digest P5: the exact ``-GMean`` is not Lipschitz as a
    recall tends to 0).  The extension is concave, so this objective stays
    convex, which clamping the recalls at ``kappa`` would not.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).
    kappa : float, default=1e-3
        Recall floor of the exact region, in ``(0, 1)``.

    Returns
    -------
    torch.Tensor
        A scalar (0-dim) tensor.
    """
    tpr = true_positive_rate(positives, cells)
    tnr = true_negative_rate(positives, cells)
    return -concave_geometric_mean(tpr, tnr, kappa)


def neg_h_mean(
    positives: torch.Tensor, cells: torch.Tensor, kappa: float = DEFAULT_KAPPA
) -> torch.Tensor:
    """Negative H-mean ``-2 / (1/TPR + 1/TNR)``: the harmonic mean of the class *recalls* (convex).

    The paper's Example 8.3 prints ``HMean(C) = L (sum_i (sum_j C_ji) / C_ii)^-1``.
    With rows of ``C`` indexing the true label (its Def 8.1), ``sum_j C_ji`` is a
    *column* sum, which makes that the harmonic mean of per-class
    **precisions**; this is a bug in the paper (digest §2.9, P17).  The
    standard H-mean (Kennedy et al.; Narasimhan et al. 2015), implemented here,
    is the harmonic mean of per-class **recalls**, ``sum_j C_ij`` (row sums); only
    it is a concave function of the recalls alone, and only it satisfies
    ``HM <= GM <= AM`` against the recall-based G-mean.

    The harmonic mean is :func:`concave_harmonic_mean`: exact when both
    recalls are at least ``kappa``, finite with bounded gradient everywhere.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).
    kappa : float, default=1e-3
        Recall floor of the exact region, in ``(0, 1)``.

    Returns
    -------
    torch.Tensor
        A scalar (0-dim) tensor.
    """
    tpr = true_positive_rate(positives, cells)
    tnr = true_negative_rate(positives, cells)
    return -concave_harmonic_mean(tpr, tnr, kappa)


def q_mean(positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """Q-mean loss ``sqrt(((1 - TPR)^2 + (1 - TNR)^2) / 2)`` (Narasimhan et al. 2015; convex).

    The Euclidean norm of an affine map of ``positives``, hence convex and
    Lipschitz.  At the perfect classifier (norm 0) autograd returns the
    subgradient 0 instead of NaN.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).

    Returns
    -------
    torch.Tensor
        A scalar (0-dim) tensor.
    """
    tpr = true_positive_rate(positives, cells)
    tnr = true_negative_rate(positives, cells)
    misses = torch.stack([1.0 - tpr, 1.0 - tnr])
    return torch.linalg.vector_norm(misses) / math.sqrt(2.0)


def worst_group_error(
    positives: torch.Tensor, cells: torch.Tensor, temperature: float = DEFAULT_TEMPERATURE
) -> torch.Tensor:
    """Smooth worst-group error ``(1/temperature) * logsumexp(temperature * err_g)`` (convex).

    A log-sum-exp smooth max of the affine group errors
    (:func:`group_error_rates`): ``max_g err_g <= value <= max_g err_g +
    log(G) / temperature``.

    Parameters
    ----------
    positives, cells : torch.Tensor of shape (K,)
        Group statistics (see the module docstring).
    temperature : float, default=50.0
        Positive smoothing temperature (larger is closer to the max, less smooth).

    Returns
    -------
    torch.Tensor
        A scalar (0-dim) tensor.
    """
    temperature = _check_temperature(temperature)
    errors = group_error_rates(positives, cells)
    return torch.logsumexp(temperature * errors, dim=0) / temperature


# --------------------------------------------------------------------------------------------
# Objective records, registry and resolution
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Objective:
    """An objective ``f(positives, cells) -> scalar tensor`` of a CGOO reduction.

    Parameters
    ----------
    name : str
        Display name (the registry key for built-ins).
    function : callable
        ``function(positives, cells) -> torch.Tensor`` (0-dim), convex and
        differentiable (almost everywhere) in ``positives`` for fixed ``cells``.
    linear : bool
        Whether ``function`` is affine in ``positives`` for fixed ``cells`` (then
        :func:`linear_objective_vector` gives its coefficients).
    lipschitz : float or None
        A bound on ``max_z |d f / d J_z|`` valid for **every** ``positives`` and
        ``cells``, i.e. the Lipschitz constant with respect to the l1 norm of
        ``positives``; ``None`` when it depends on ``cells`` or is unknown.  The
        l1 diameter of the feasible box ``0 <= J <= q`` is ``sum(q) = 1``, so in
        Lemma 4.1 of the paper ``L_f * diameter`` is simply ``lipschitz``.
    """

    name: str
    function: StatisticFunction
    linear: bool
    lipschitz: float | None

    def __call__(self, positives: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
        """Evaluate ``function(positives, cells)``."""
        return self.function(positives, cells)


def make_objective(
    name: str, *, kappa: float = DEFAULT_KAPPA, temperature: float = DEFAULT_TEMPERATURE
) -> Objective:
    """Build a built-in objective, with non-default ``kappa`` or ``temperature`` if wanted.

    Parameters
    ----------
    name : str
        One of ``"error_rate"``, ``"balanced_error"``, ``"neg_g_mean"``,
        ``"neg_h_mean"``, ``"q_mean"``, ``"worst_group_error"``.
    kappa : float, default=1e-3
        Recall floor of ``"neg_g_mean"`` and ``"neg_h_mean"`` (ignored otherwise).
    temperature : float, default=50.0
        Smoothing temperature of ``"worst_group_error"`` (ignored otherwise).

    Returns
    -------
    Objective

    Raises
    ------
    ValueError
        For an unknown name (the message lists the valid names), or an invalid
        ``kappa`` or ``temperature``.
    """
    if name == "error_rate":
        return Objective("error_rate", error_rate, linear=True, lipschitz=1.0)
    if name == "balanced_error":
        return Objective("balanced_error", balanced_error, linear=True, lipschitz=None)
    if name == "neg_g_mean":
        kappa = _check_kappa(kappa)
        function = functools.partial(neg_g_mean, kappa=kappa)
        return Objective("neg_g_mean", function, linear=False, lipschitz=None)
    if name == "neg_h_mean":
        kappa = _check_kappa(kappa)
        function = functools.partial(neg_h_mean, kappa=kappa)
        return Objective("neg_h_mean", function, linear=False, lipschitz=None)
    if name == "q_mean":
        return Objective("q_mean", q_mean, linear=False, lipschitz=None)
    if name == "worst_group_error":
        temperature = _check_temperature(temperature)
        function = functools.partial(worst_group_error, temperature=temperature)
        return Objective("worst_group_error", function, linear=False, lipschitz=None)
    raise ValueError(
        f"Unknown objective {name!r}; valid names are: {', '.join(map(repr, _NAMES))}."
    )


_NAMES = (
    "error_rate",
    "balanced_error",
    "neg_g_mean",
    "neg_h_mean",
    "q_mean",
    "worst_group_error",
)

#: Built-in objectives with default parameters, by name.
OBJECTIVES: dict[str, Objective] = {name: make_objective(name) for name in _NAMES}


def resolve_objective(objective: str | Objective | StatisticFunction) -> Objective:
    """Turn a name, an :class:`Objective` or a torch callable into an :class:`Objective`.

    Parameters
    ----------
    objective : str, Objective or callable
        A key of :data:`OBJECTIVES`; an :class:`Objective` (returned as is); or
        a callable ``f(positives, cells) -> scalar tensor``, which must be
        convex and differentiable in ``positives`` (treated as non-linear, with
        unknown Lipschitz constant; wrap it in an :class:`Objective` to declare
        otherwise).

    Returns
    -------
    Objective

    Raises
    ------
    ValueError
        For an unknown name; the message lists the valid names.
    TypeError
        For anything else.
    """
    if isinstance(objective, Objective):
        return objective
    if isinstance(objective, str):
        try:
            return OBJECTIVES[objective]
        except KeyError:
            raise ValueError(
                f"Unknown objective {objective!r}; valid names are: {', '.join(map(repr, _NAMES))}."
            ) from None
    if callable(objective):
        name = getattr(objective, "__name__", type(objective).__name__)
        return Objective(name, objective, linear=False, lipschitz=None)
    raise TypeError(
        "objective must be a name, an Objective or a callable f(positives, cells), "
        f"got {type(objective).__name__}."
    )


# --------------------------------------------------------------------------------------------
# Linear objectives as vectors
# --------------------------------------------------------------------------------------------


def _error_rate_vector(cells: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    coefficients = torch.ones_like(cells)
    coefficients[1::2] = -1.0
    return coefficients, cells[1::2].sum()


def _balanced_error_vector(cells: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    coefficients = torch.empty_like(cells)
    coefficients[0::2] = 0.5 / cells[0::2].sum()
    coefficients[1::2] = -0.5 / cells[1::2].sum()
    return coefficients, torch.tensor(0.5, dtype=cells.dtype, device=cells.device)


_LINEAR_VECTORS = {error_rate: _error_rate_vector, balanced_error: _balanced_error_vector}


def linear_objective_vector(
    objective: str | Objective, cells: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Coefficients ``(c, c0)`` of a linear objective: ``f(J, cells) == c @ J + c0`` for all ``J``.

    Built-in linear objectives are written out in closed form; another
    :class:`Objective` declared ``linear=True`` is differentiated at
    ``J = 0`` (exact for an affine function).

    Parameters
    ----------
    objective : str or Objective
        A linear objective (resolved with :func:`resolve_objective`).
    cells : torch.Tensor of shape (K,)
        Cell proportions ``q``.

    Returns
    -------
    c : torch.Tensor of shape (K,)
    c0 : torch.Tensor
        A scalar (0-dim) tensor.

    Raises
    ------
    ValueError
        If the objective is not linear.
    """
    objective = resolve_objective(objective)
    if not objective.linear:
        raise ValueError(
            f"Objective {objective.name!r} is not linear: it has no (c, c0) representation."
        )
    cells = cells.detach()
    zeros = torch.zeros_like(cells)
    check_statistics(zeros, cells)
    builder = _LINEAR_VECTORS.get(objective.function)
    if builder is not None:
        return builder(cells)
    positives = zeros.clone().requires_grad_(True)
    with torch.enable_grad():
        value = objective.function(positives, cells)
        (coefficients,) = torch.autograd.grad(value, positives, allow_unused=True)
    if coefficients is None:
        coefficients = torch.zeros_like(cells)
    return coefficients.detach(), value.detach().reshape(())
