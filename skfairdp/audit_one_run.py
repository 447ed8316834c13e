"""Privacy auditing with one training run (Steinke, Nasr & Jagielski, NeurIPS 2023).

:mod:`skfairdp.audit` trains hundreds of models to test one canary. This module
trains **one**: ``m`` canaries are each included independently with probability
1/2, the model is fitted once, and an auditor that sees the fitted model (and
the canaries, never the coin flips) scores every canary. It guesses "IN" for the
``k`` highest scores, "OUT" for the ``k`` lowest and abstains on the rest. If the
fit is ``(epsilon, delta)``-DP under add/remove-one, the number ``v`` of correct
guesses among the ``r = 2k`` is stochastically dominated as in the paper's
Corollary 5.4 of arXiv:2305.08846 (the binomial-tail bound with ``delta``,
:func:`one_run_p_value`), so a large ``v`` rejects "the fit is
``(epsilon, delta)``-DP" and the largest rejected ``epsilon`` is a lower bound
(:func:`one_run_epsilon_lower_bound`, the paper's Appendix D).

Validity of the choices made here:

Guess counts
    The bound is computed for every ``k`` of a grid fixed before the run
    (:func:`guess_counts`) and the largest is reported; each ``k`` is tested at
    level ``(1 - confidence) / len(grid)`` (Bonferroni), so the maximum is a
    lower bound with probability at least ``confidence``.
Ranking
    Ties are broken by the canary's index (drawn before the coin flips, so
    independent of them); a NaN score ranks as the most IN-like value. Both
    are fixed functions of the output, which is all the theorem asks of a
    guesser.
Neighbouring relation
    Including a canary adds a row, so the bound is for add/remove-one, the
    relation of ``privacy_unit="record"`` (the estimators' default).

What it can show: the bound is a *lower* bound, and the (epsilon, delta) form of
the one-run method is loose for a Gaussian mechanism even with the strongest
canaries: with :func:`dirac_canaries` (white-box gradient canaries, a
zero-initialised linear model, full batches) DP-SGD is exactly a composition of
Gaussian mechanisms, and that bound saturates near 2.5 at ``epsilon = 8``,
``m = 1000``. For such fits ``claim="gaussian"`` tests the f-DP claim of
Mahloujifar, Melis & Chaudhuri (2024) instead (:func:`one_run_gdp_rejects`), which
reaches about 5 of 8 at ``m = 10,000`` (see doc/privacy.md).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import dp_accounting
import numpy as np
import torch
from scipy.special import ndtr, ndtri
from scipy.stats import binom

from .audit import canary_score

# ZeroInitLinear is public but kept out of __all__: the API pages document inherited
# members, and a torch.nn.Module subclass would bring in torch's own docstrings.
__all__ = [
    "CanarySet",
    "OneRunResult",
    "dirac_canaries",
    "dirac_weight_score",
    "gaussian_mu",
    "guess_counts",
    "input_canaries",
    "one_run_audit",
    "one_run_bound",
    "one_run_epsilon_lower_bound",
    "one_run_gdp_epsilon_lower_bound",
    "one_run_gdp_rejects",
    "one_run_p_value",
]


# -- the bound --------------------------------------------------------------------------
def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P-value of ``v`` correct guesses out of ``r`` under ``(epsilon, delta)``-DP.

    Steinke, Nasr & Jagielski (2023, arXiv:2305.08846), Corollary 5.4 (their
    Appendix D's ``p_value_DP_audit``): with ``q = e^eps / (1 + e^eps)``,
    ``beta = P[Binomial(r, q) >= v]`` and
    ``alpha = max_{1 <= i <= v} P[v - i <= Binomial(r, q) < v] / i``, the
    probability of at least ``v`` correct guesses is at most
    ``beta + alpha * 2 m delta``.

    Parameters
    ----------
    m : int
        Canaries (each included with probability 1/2), guessed or not.
    r : int
        Guesses (not abstentions).
    v : int
        Correct guesses.
    epsilon : float
        Null hypothesis: the fit is ``(epsilon, delta)``-DP.
    delta : float

    Returns
    -------
    float
        In ``[0, 1]``.
    """
    m, r, v = int(m), int(r), int(v)
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got m={m}, r={r}, v={v}")
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if not 0 <= delta <= 1:
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")
    q = 1.0 / (1.0 + math.exp(-epsilon))
    beta = float(binom.sf(v - 1, r, q))
    if delta == 0 or v == 0:
        return min(beta, 1.0)
    # P[v - i <= B < v] for i = 1..v, accumulated from pmf(v - 1) downwards
    below = np.cumsum(binom.pmf(np.arange(v - 1, -1, -1), r, q))
    alpha = float(np.max(below / np.arange(1, v + 1)))
    return min(beta + alpha * delta * 2 * m, 1.0)


@lru_cache(maxsize=65536)
def one_run_epsilon_lower_bound(
    m: int, r: int, v: int, *, delta: float = 0.0, confidence: float = 0.95
) -> float:
    """Largest ``epsilon`` that ``v`` correct guesses out of ``r`` reject.

    The paper's ``get_eps_audit`` (Appendix D): bisection (30 halvings after
    bracketing by whole units) for the ``epsilon`` at which
    :func:`one_run_p_value` reaches ``1 - confidence``, returning the low end,
    so the result errs on the small (valid) side.

    Parameters
    ----------
    m, r, v : int
        See :func:`one_run_p_value`.
    delta : float, default=0.0
    confidence : float, default=0.95
        The bound holds with this probability if the fit is ``(epsilon, delta)``-DP.

    Returns
    -------
    float
        0 when nothing is rejected.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    level = 1.0 - confidence
    if one_run_p_value(m, r, v, 0.0, delta) >= level:
        return 0.0
    low, high = 0.0, 1.0
    while one_run_p_value(m, r, v, high, delta) < level:
        low, high = high, high + 1.0
    for _ in range(30):
        mid = (low + high) / 2
        if one_run_p_value(m, r, v, mid, delta) < level:
            low = mid
        else:
            high = mid
    return low


@lru_cache(maxsize=4096)
def gaussian_mu(epsilon: float, delta: float) -> float:
    """The ``mu`` of the Gaussian mechanism that is exactly ``(epsilon, delta)``-DP.

    The largest ``mu`` with ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) <= delta``
    (Balle & Wang 2018's analytic Gaussian mechanism, dp-accounting's
    ``get_sigma_gaussian``; ``mu`` = sensitivity over the noise std): the ``mu``-GDP
    curve through the claimed ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon : float
        At least 0.
    delta : float
        In ``(0, 1)``.

    Returns
    -------
    float
    """
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1) for a Gaussian claim, got {delta!r}")
    return 1.0 / dp_accounting.get_sigma_gaussian(float(epsilon), float(delta))


def one_run_gdp_rejects(m: int, r: int, v: int, mu: float, level: float) -> bool:
    """Whether ``v`` correct guesses out of ``r`` reject "the fit is ``mu``-GDP" at ``level``.

    Mahloujifar, Melis & Chaudhuri (2024, arXiv:2410.22235), the one-run guessing game
    under f-DP with ``f`` the ``mu``-GDP trade-off curve: if the fit is ``mu``-GDP
    and at least ``v`` of ``r`` guesses are correct with probability ``level``, the mass
    of correct guesses (``c``) and of wrong ones (``w``) at the thresholds
    ``v, v - 1, ..., 1`` obeys the recursion started at ``c = level v / m``,
    ``w = level (r - v) / m``: ``w' = max(w, beta(c))`` with ``beta(c) = Phi(Phi^-1(c) -
    mu)`` the least wrong-guess mass a ``mu``-GDP fit needs for correct-guess mass ``c``,
    and ``c' = min(1, c + i / (r - i) (w' - w))`` at threshold ``i``; they must end with
    ``c + w <= r / m``. An end above ``r / m`` is impossible under the hypothesis, so
    seeing ``v`` correct has probability below ``level``: reject.

    Parameters
    ----------
    m, r, v : int
        Canaries, guesses, correct guesses.
    mu : float
        The hypothesis' GDP parameter.
    level : float
        Significance, in ``(0, 1)``.

    Returns
    -------
    bool
    """
    m, r, v = int(m), int(r), int(v)
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got m={m}, r={r}, v={v}")
    if v == 0:
        return False
    correct, wrong = level * v / m, level * (r - v) / m
    for i in range(v - 1, -1, -1):
        needed = max(wrong, float(ndtr(ndtri(correct) - mu)))
        if needed == wrong:
            break  # neither mass moves again
        correct = min(correct + i / (r - i) * (needed - wrong), 1.0)
        wrong = needed
    return correct + wrong > r / m


@lru_cache(maxsize=65536)
def one_run_gdp_epsilon_lower_bound(
    m: int, r: int, v: int, *, delta: float, confidence: float = 0.95
) -> float:
    """Largest ``epsilon`` whose Gaussian claim ``v`` correct guesses out of ``r`` reject.

    The claim for ``epsilon`` is "the fit is as private as the Gaussian mechanism that is
    exactly ``(epsilon, delta)``-DP", i.e. ``mu``-GDP with ``mu = gaussian_mu(epsilon,
    delta)``, tested by :func:`one_run_gdp_rejects`. Valid when the fit's privacy
    curve is dominated by that Gaussian curve: a composition of Gaussian mechanisms
    without subsampling (the white-box :func:`dirac_canaries` audits, full batches),
    whose accounted ``epsilon`` at ``delta`` can only overstate its ``mu``. A
    Poisson-subsampled run's curve is not a Gaussian one: audit it with
    :func:`one_run_epsilon_lower_bound`.

    Parameters
    ----------
    m, r, v : int
    delta : float
        The claimed delta, in ``(0, 1)``.
    confidence : float, default=0.95

    Returns
    -------
    float
        0 when nothing is rejected; bisected to 1e-6, from below.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    level = 1.0 - confidence

    def rejects(epsilon: float) -> bool:
        return one_run_gdp_rejects(m, r, v, gaussian_mu(epsilon, delta), level)

    if not rejects(0.0):
        return 0.0
    low, high = 0.0, 1.0
    while rejects(high):
        low, high = high, 2 * high
    while high - low > 1e-6:
        mid = (low + high) / 2
        low, high = (mid, high) if rejects(mid) else (low, mid)
    return low


def guess_counts(m: int, n_counts: int = 16) -> tuple[int, ...]:
    """The grid of guesses per side ``k`` tried (fixed before the run).

    About ``n_counts`` distinct values, geometrically spaced from 1 to ``m // 2``.

    Parameters
    ----------
    m : int
        Canaries.
    n_counts : int, default=16

    Returns
    -------
    tuple of int
    """
    if m < 2:
        raise ValueError(f"need at least 2 canaries, got {m!r}")
    grid = np.unique(np.round(np.geomspace(1, m // 2, n_counts)).astype(int))
    return tuple(int(k) for k in grid)


@dataclass(frozen=True)
class OneRunResult:
    """Outcome of :func:`one_run_bound` / :func:`one_run_audit`.

    Attributes
    ----------
    epsilon_lower_bound : float
        Lower bound on epsilon, valid with probability ``confidence``.
    k : int
        Guesses per side of the best grid point (``r = 2k`` guesses).
    r, v : int
        Its guesses and correct guesses.
    m : int
        Canaries.
    n_included : int
        Canaries in the training set.
    delta, confidence : float
    n_candidates : int
        Grid points tried (the Bonferroni factor).
    epsilon_claimed : float
        The fit's ``privacy_spent_.epsilon`` (NaN from :func:`one_run_bound`).
    scores : ndarray
        Every canary's score.
    included : ndarray of bool
        The coin flips.
    """

    epsilon_lower_bound: float
    k: int
    r: int
    v: int
    m: int
    n_included: int
    delta: float
    confidence: float
    n_candidates: int
    epsilon_claimed: float = math.nan
    scores: np.ndarray = field(default=None, repr=False)
    included: np.ndarray = field(default=None, repr=False)

    @property
    def passed(self) -> bool:
        """Whether the bound is at most the claimed epsilon."""
        return bool(self.epsilon_lower_bound <= self.epsilon_claimed)


def one_run_bound(
    scores,
    included,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    counts: Sequence[int] | None = None,
    claim: str = "dp",
) -> OneRunResult:
    """Lower bound on epsilon from one run's canary scores.

    For each ``k`` in ``counts``: guess IN for the ``k`` highest scores, OUT for
    the ``k`` lowest (ties by index, NaN highest), count the correct guesses and
    bound epsilon at level ``(1 - confidence) / len(counts)``; return the best.

    Parameters
    ----------
    scores : array-like of shape (m,)
        Higher means more IN-like.
    included : array-like of bool, shape (m,)
        Which canaries were trained on.
    delta : float, default=0.0
        The claimed delta.
    confidence : float, default=0.95
        Joint confidence over the grid.
    counts : None or sequence of int, default=None
        Guesses per side to try (each at most ``m // 2``); None:
        :func:`guess_counts`. Must not depend on ``included``.
    claim : {"dp", "gaussian"}, default="dp"
        The hypothesis each ``epsilon`` stands for. ``"dp"``: the fit is
        ``(epsilon, delta)``-DP (:func:`one_run_epsilon_lower_bound`, Steinke et al.).
        ``"gaussian"``: the fit is as private as the Gaussian mechanism that is
        exactly ``(epsilon, delta)``-DP (:func:`one_run_gdp_epsilon_lower_bound`,
        Mahloujifar et al.'s f-DP audit): far tighter, and valid only for fits whose
        privacy curve is a Gaussian one (full-batch Gaussian compositions); ``delta``
        must then be in ``(0, 1)``.

    Returns
    -------
    OneRunResult

    Examples
    --------
    >>> import numpy as np
    >>> from skfairdp.audit_one_run import one_run_bound
    >>> included = np.arange(1000) % 2 == 0
    >>> scores = included + np.random.default_rng(0).normal(size=1000)  # mu = 1
    >>> result = one_run_bound(scores, included)
    >>> result.r, result.v  # the best grid point: 2k guesses, v of them right
    (288, 244)
    >>> round(result.epsilon_lower_bound, 2)
    1.28
    """
    scores = np.asarray(scores, dtype=np.float64)
    included = np.asarray(included, dtype=bool)
    if scores.shape != included.shape or scores.ndim != 1:
        raise ValueError("scores and included must be 1-D and of the same length")
    m = len(scores)
    counts = guess_counts(m) if counts is None else tuple(int(k) for k in counts)
    bounds = {"dp": one_run_epsilon_lower_bound, "gaussian": one_run_gdp_epsilon_lower_bound}
    if claim not in bounds:
        raise ValueError(f"claim must be 'dp' or 'gaussian', got {claim!r}")
    if not counts or min(counts) < 1 or max(counts) > m // 2:
        raise ValueError(f"guess counts must lie in [1, {m // 2}], got {counts!r}")
    keys = np.where(np.isnan(scores), np.inf, scores)
    order = np.lexsort((np.arange(m), -keys))  # highest first, ties by index
    hits_in = np.cumsum(included[order])  # correct IN guesses among the top j + 1
    hits_out = np.cumsum(~included[order[::-1]])  # correct OUT guesses among the bottom
    level = 1.0 - (1.0 - float(confidence)) / len(counts)
    best = (-1.0, counts[0], 0)
    for k in counts:
        v = int(hits_in[k - 1] + hits_out[k - 1])
        bound = bounds[claim](m, 2 * k, v, delta=float(delta), confidence=level)
        if bound > best[0]:
            best = (bound, k, v)
    bound, k, v = best
    return OneRunResult(
        epsilon_lower_bound=bound,
        k=k,
        r=2 * k,
        v=v,
        m=m,
        n_included=int(included.sum()),
        delta=float(delta),
        confidence=float(confidence),
        n_candidates=len(counts),
        scores=scores,
        included=included,
    )


# -- canaries ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CanarySet:
    """``m`` candidate training rows, and the base data they are audited against.

    Attributes
    ----------
    X_base : ndarray of shape (n, d)
        The base rows (always trained on), with any columns the canaries need.
    X : ndarray of shape (m, d)
        The canaries' features.
    y : ndarray of shape (m,)
        Their labels.
    s : None or ndarray of shape (m,)
        Their groups.
    columns : None or ndarray of int, shape (m,)
        For :func:`dirac_canaries`: each canary's own feature.
    """

    X_base: np.ndarray
    X: np.ndarray
    y: np.ndarray
    s: np.ndarray | None = None
    columns: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.y)


def _random_groups(sensitive_features, m: int, rng) -> np.ndarray | None:
    if sensitive_features is None:
        return None
    groups = np.unique(np.asarray(sensitive_features))
    return groups[rng.integers(0, len(groups), size=m)]


def input_canaries(
    X, y, m: int, *, sensitive_features=None, spread: float = 6.0, random_state: int = 0
) -> CanarySet:
    """Black-box canaries: out-of-distribution rows with random labels.

    Each canary is ``mean + spread * std * u`` for an independent random unit
    direction ``u`` scaled to length ``sqrt(d)`` (so ``spread`` standard
    deviations per feature on average), labelled with a uniformly random class
    and, when groups are given, a uniformly random observed group. Far from the
    data and from each other, each canary's loss is moved mainly by itself: the
    paper's "input-space" canaries.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    m : int
        Canaries.
    sensitive_features : None or array-like of shape (n,), default=None
    spread : float, default=6.0
    random_state : int, default=0

    Returns
    -------
    CanarySet
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    rng = np.random.default_rng(random_state)
    d = X.shape[1]
    mean, std = X.mean(axis=0), X.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    u = rng.normal(size=(m, d))
    u *= math.sqrt(d) / np.linalg.norm(u, axis=1, keepdims=True)
    Xc = mean + float(spread) * std * u
    classes = np.unique(y)
    yc = classes[rng.integers(0, len(classes), size=m)]
    return CanarySet(X_base=X, X=Xc, y=yc, s=_random_groups(sensitive_features, m, rng))


def dirac_canaries(
    X,
    y,
    m: int,
    *,
    sensitive_features=None,
    value: float = 100.0,
    random_state: int = 0,
) -> CanarySet:
    """White-box gradient canaries: each canary has a feature of its own.

    ``m`` zero columns are appended to ``X``; canary ``i`` is zero except for
    ``value`` in column ``d + i``, with a uniformly random label (and, when
    groups are given, a uniformly random observed group). In a linear
    model its gradient then lies on its own column's weights (and the bias),
    almost entirely on the weights when ``value`` is large, so after clipping it
    is (nearly) a Dirac of norm ``C`` there, and no other row moves those
    weights. Read with :func:`dirac_weight_score` on a model that starts at zero
    (``skfairdp.audit_one_run.ZeroInitLinear``) and keeps its logits small (a small ``lr``), the
    canary's weight is the sum of the noisy updates on its coordinate: the
    Gaussian mechanism the accountant composes.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    m : int
    sensitive_features : None or array-like of shape (n,), default=None
    value : float, default=100.0
    random_state : int, default=0

    Returns
    -------
    CanarySet
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    n, d = X.shape
    rng = np.random.default_rng(random_state)
    X_base = np.hstack([X, np.zeros((n, m))])
    Xc = np.zeros((m, d + m))
    columns = d + np.arange(m)
    Xc[np.arange(m), columns] = float(value)
    classes = np.unique(y)
    yc = classes[rng.integers(0, len(classes), size=m)]
    return CanarySet(
        X_base=X_base, X=Xc, y=yc, s=_random_groups(sensitive_features, m, rng), columns=columns
    )


def _first_linear(estimator):
    module = getattr(estimator, "module_", None)
    if module is None:
        raise ValueError(f"{type(estimator).__name__} has no fitted module_ to read")
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            return layer
    raise ValueError("the fitted module has no torch.nn.Linear layer")


def dirac_weight_score(estimator, canaries: CanarySet) -> np.ndarray:
    """White-box scores of :func:`dirac_canaries`: each canary's own weight.

    ``W[y_i, c_i] - mean_{k != y_i} W[k, c_i]`` in the module's first
    ``torch.nn.Linear`` layer, for canary ``i`` with label ``y_i`` and column
    ``c_i``: the sum of the (noisy) updates its own gradient pushed there.

    Parameters
    ----------
    estimator : fitted estimator with ``module_`` and ``classes_``
    canaries : CanarySet
        From :func:`dirac_canaries`.

    Returns
    -------
    ndarray of shape (m,)
    """
    if canaries.columns is None:
        raise ValueError("dirac_weight_score needs canaries from dirac_canaries")
    W = _first_linear(estimator).weight.detach().cpu().double().numpy()
    classes = list(estimator.classes_)
    rows = np.array([classes.index(label) for label in canaries.y])
    cols = W[:, canaries.columns]  # (n_outputs, m)
    own = cols[rows, np.arange(len(rows))]
    if cols.shape[0] == 1:  # a single logit: its sign favours classes_[1]
        return np.where(rows == 1, own, -own)
    others = (cols.sum(axis=0) - own) / (cols.shape[0] - 1)
    return own - others


def _black_box_scores(estimator, canaries: CanarySet) -> np.ndarray:
    return np.array([canary_score(estimator, x, y) for x, y in zip(canaries.X, canaries.y)])


class ZeroInitLinear(torch.nn.Linear):
    """``torch.nn.Linear(n_features, n_outputs)`` with zero weights and bias.

    A ``module`` for :func:`dirac_canaries` audits: the start is public and
    zero, so a canary's weight after training is the sum of its noisy updates.

    Parameters
    ----------
    n_features, n_outputs : int
    """

    def __init__(self, n_features: int, n_outputs: int) -> None:
        super().__init__(int(n_features), int(n_outputs))
        with torch.no_grad():
            self.weight.zero_()
            self.bias.zero_()


# -- the audit ----------------------------------------------------------------------------
def one_run_audit(
    make_estimator: Callable[[int], object],
    canaries: CanarySet,
    y_base,
    *,
    sensitive_features=None,
    score: str | Callable = "loss",
    delta: float | None = None,
    confidence: float = 0.95,
    counts: Sequence[int] | None = None,
    fit_params: dict | None = None,
    random_state: int = 0,
    claim: str = "dp",
) -> OneRunResult:
    """Audit one fit: each canary included with probability 1/2, one lower bound.

    Parameters
    ----------
    make_estimator : callable
        ``make_estimator(seed) -> unfitted estimator``.
    canaries : CanarySet
        From :func:`input_canaries` or :func:`dirac_canaries`; its ``X_base``
        is the base data.
    y_base : array-like of shape (n,)
        Labels of the base rows.
    sensitive_features : None or array-like of shape (n,), default=None
        Groups of the base rows, passed to ``fit`` as ``sensitive_features``
        (with the included canaries' groups appended).
    score : "loss", "weight" or callable, default="loss"
        ``"loss"``: the black-box log-odds of each canary's label
        (:func:`skfairdp.audit.canary_score`, minus the loss);
        ``"weight"``: :func:`dirac_weight_score`; a callable:
        ``score(estimator, canaries) -> array of shape (m,)``.
    delta : None or float, default=None
        None: the fit's ``privacy_spent_.delta``.
    confidence : float, default=0.95
    counts : None or sequence of int, default=None
        Guess counts (see :func:`one_run_bound`).
    fit_params : None or dict, default=None
        More keyword arguments of ``fit``.
    random_state : int, default=0
        Seeds the coin flips, the row order and the estimator's seed.
    claim : {"dp", "gaussian"}, default="dp"
        See :func:`one_run_bound`.

    Returns
    -------
    OneRunResult
        With ``epsilon_claimed`` from the fit's ``privacy_spent_``.
    """
    rng = np.random.default_rng(random_state)
    m = len(canaries)
    included = rng.random(m) < 0.5
    seed = int(rng.integers(2**31 - 1))
    X = np.vstack([canaries.X_base, canaries.X[included]])
    y = np.concatenate([np.asarray(y_base), canaries.y[included]])
    kwargs = dict(fit_params or {})
    if sensitive_features is not None:
        if canaries.s is None:
            raise ValueError("sensitive_features given but the canaries have no groups")
        kwargs["sensitive_features"] = np.concatenate(
            [np.asarray(sensitive_features), canaries.s[included]]
        )
    perm = rng.permutation(len(y))  # the canaries' rows anywhere, not at the end
    X, y = X[perm], y[perm]
    if "sensitive_features" in kwargs:
        kwargs["sensitive_features"] = kwargs["sensitive_features"][perm]
    estimator = make_estimator(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, y, **kwargs)
    if score == "loss":
        scores = _black_box_scores(estimator, canaries)
    elif score == "weight":
        scores = dirac_weight_score(estimator, canaries)
    elif callable(score):
        scores = np.asarray(score(estimator, canaries), dtype=np.float64)
    else:
        raise ValueError(f"score must be 'loss', 'weight' or a callable, got {score!r}")
    spent = getattr(estimator, "privacy_spent_", None)
    claimed = float(spent[0]) if spent is not None else math.nan
    if delta is None:
        delta = float(spent[1]) if spent is not None else 0.0
    result = one_run_bound(
        scores, included, delta=delta, confidence=confidence, counts=counts, claim=claim
    )
    return OneRunResult(
        **{**result.__dict__, "epsilon_claimed": claimed, "scores": scores, "included": included}
    )
