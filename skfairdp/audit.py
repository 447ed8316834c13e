"""Empirical privacy audit by canary membership inference.

The test of Jagielski, Ullman & Oprea (2020) and Nasr et al. (2021): train ``R``
models on the base data plus one *canary* row (IN) and ``R`` models on the base
data alone (OUT), each with a fresh seed, so fresh sampling and noise. A
mechanism that is ``(epsilon, delta)``-DP under add/remove-one bounds every test
that looks at the released model and guesses IN or OUT:

``TPR <= exp(epsilon) FPR + delta``  and  ``1 - FPR <= exp(epsilon) (1 - TPR) + delta``.

So an attack's true and false positive rates give a lower bound on epsilon.
This module only uses the fitted estimators' public interface (``fit``,
``decision_function`` or ``predict_proba``, ``classes_`` and ``privacy_spent_``);
it knows nothing of how they train.

Design choices, all of which keep the bound honest:

Score
    Black-box: the fitted model's log-odds of the canary's label at the canary,
    ``logit_y - logsumexp(other logits)`` (for two classes, the signed decision
    function; the negative cross-entropy is a monotone function of it, so the
    attack is the loss attack). A non-finite output that is not an ordered
    infinity (NaN), or a fit that raised (``on_fit_error="nan"``), is kept as
    NaN and placed beyond every number, at the IN or at the OUT end: which end
    is part of the rule chosen below. A model that turns NaN with the canary
    and not without it is then caught by the attack.
Threshold split
    The runs are exchangeable, so the first ``R // 2`` runs of each side
    *select* the rule, maximising the lower bound computed on those runs: the
    score or its distance to the median OUT score of those runs (two-sided),
    its orientation, the end for NaN, and the threshold ("IN when the oriented
    score is >= t"). The bound is then computed once, on the other runs only.
    The selection never sees the evaluation runs, so no multiple-comparison
    correction is needed.
Confidence
    Exact Clopper-Pearson bounds from :func:`scipy.stats.binomtest`. Both
    inequalities above grow with TPR and shrink with FPR, so they need only two
    one-sided bounds: a lower bound on TPR and an upper bound on FPR. Each is
    taken at level ``alpha / 2`` (Bonferroni, ``alpha = 1 - confidence``), which
    are the two ends of the two-sided ``1 - alpha`` exact interval. With
    probability at least ``1 - alpha`` both hold, and then both inequalities,
    evaluated at (TPR lower bound, FPR upper bound), are valid lower bounds on
    epsilon, and so is their maximum.

With ``m`` evaluation runs per side the bound can never exceed
``log((1 - b) / b)`` with ``b = 1 - (alpha / 2) ** (1 / m)`` (perfect
separation): about 3.5 for ``m = 125`` and 4.2 for ``m = 250`` at 95%.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from joblib import Parallel, delayed
from scipy.special import logsumexp
from scipy.stats import binomtest

__all__ = [
    "AuditResult",
    "Canary",
    "ThresholdRule",
    "canary_score",
    "choose_rule",
    "clopper_pearson_bounds",
    "epsilon_lower_bound",
    "extreme_canary",
    "ordinary_canary",
    "run_audit",
]

_BIG = np.finfo(np.float64).max


# -- confidence bounds ------------------------------------------------------------
def clopper_pearson_bounds(
    true_positives: int, n_in: int, false_positives: int, n_out: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Joint exact lower bound on TPR and upper bound on FPR.

    Parameters
    ----------
    true_positives : int
        IN runs guessed IN.
    n_in : int
        IN runs.
    false_positives : int
        OUT runs guessed IN.
    n_out : int
        OUT runs.
    confidence : float, default=0.95
        Joint confidence ``1 - alpha``: each one-sided bound is at level
        ``alpha / 2`` (Bonferroni), i.e. the lower end (TPR) and upper end (FPR)
        of the two-sided ``1 - alpha`` Clopper-Pearson interval.

    Returns
    -------
    tpr_lower, fpr_upper : float
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    tpr_lower = _exact_interval(int(true_positives), int(n_in), float(confidence))[0]
    fpr_upper = _exact_interval(int(false_positives), int(n_out), float(confidence))[1]
    return tpr_lower, fpr_upper


@lru_cache(maxsize=65536)
def _exact_interval(k: int, n: int, confidence: float) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def _bound_from_rates(tpr_lower: float, fpr_upper: float, delta: float) -> float:
    """``max(log((TPR-d)/FPR), log((1-FPR-d)/(1-TPR)), 0)`` at the bounds."""
    best = 0.0
    for num, den in ((tpr_lower - delta, fpr_upper), (1.0 - fpr_upper - delta, 1.0 - tpr_lower)):
        if num > 0 and den > 0:
            best = max(best, math.log(num / den))
    return best


def epsilon_lower_bound(
    true_positives: int,
    n_in: int,
    false_positives: int,
    n_out: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> float:
    """Lower bound on epsilon, valid with probability ``confidence``.

    ``max(log((TPR_lo - delta) / FPR_hi), log((1 - FPR_hi - delta) / (1 - TPR_lo)), 0)``
    with ``TPR_lo, FPR_hi`` from :func:`clopper_pearson_bounds`.

    Parameters
    ----------
    true_positives, n_in, false_positives, n_out : int
        Counts of the evaluation runs (see :func:`clopper_pearson_bounds`).
    delta : float, default=0.0
        The claimed delta.
    confidence : float, default=0.95
        Joint confidence of the two one-sided bounds.

    Returns
    -------
    float
        Non-negative (0 when the attack shows nothing).
    """
    tpr_lower, fpr_upper = clopper_pearson_bounds(
        true_positives, n_in, false_positives, n_out, confidence
    )
    return _bound_from_rates(tpr_lower, fpr_upper, float(delta))


# -- threshold rule -----------------------------------------------------------------
@dataclass(frozen=True)
class ThresholdRule:
    """Guess IN when the oriented score is at least ``threshold``.

    Attributes
    ----------
    direction : {1, -1}
        ``1``: high (oriented) scores are IN-like; ``-1``: low ones are.
    nan_in : bool
        Whether a NaN score counts as the most IN-like value (else the most
        OUT-like).
    threshold : float
    center : None or float, default=None
        None: the score itself (one-sided test). A float: the distance
        ``|score - center|`` (two-sided test, for canaries that push the score
        far from its OUT value in either direction).
    """

    direction: int
    nan_in: bool
    threshold: float
    center: float | None = None

    def keys(self, scores) -> np.ndarray:
        """Oriented scores: ``direction * score`` (or ``* |score - center|``), ``+-inf``
        clipped to the largest float, NaN to ``+inf`` (``nan_in``) or ``-inf``."""
        s = np.clip(np.asarray(scores, dtype=np.float64), -_BIG, _BIG)
        if self.center is not None:
            with np.errstate(over="ignore"):
                s = np.abs(s - self.center)
        s = s * self.direction
        return np.where(np.isnan(s), np.inf if self.nan_in else -np.inf, s)

    def guess_in(self, scores) -> np.ndarray:
        """Boolean array: runs guessed IN."""
        return self.keys(scores) >= self.threshold

    def describe(self) -> str:
        """Short text, e.g. ``"score >= 1.5, NaN IN"``."""
        value = "score" if self.center is None else f"|score - {self.center:.4g}|"
        op = ">=" if self.direction > 0 else "<="
        t = self.threshold * self.direction
        return f"IN if {value} {op} {t:.4g}, NaN {'IN' if self.nan_in else 'OUT'}"


def choose_rule(
    scores_in, scores_out, *, delta: float = 0.0, confidence: float = 0.95
) -> tuple[ThresholdRule, float]:
    """The rule with the largest epsilon lower bound on these (selection) runs.

    Tries the score itself and its distance to the median finite OUT score
    (two-sided), both orientations, both ends for NaN and every observed value
    as the threshold; ties go to the first found (one-sided before two-sided,
    direction ``1`` before ``-1``, NaN IN before OUT, lower thresholds first).

    Parameters
    ----------
    scores_in, scores_out : array-like of float
        Scores of the selection runs with and without the canary.
    delta : float, default=0.0
    confidence : float, default=0.95

    Returns
    -------
    rule : ThresholdRule
    bound : float
        The (optimistic, selection-set) bound of that rule.
    """
    scores_in = np.asarray(scores_in, dtype=np.float64)
    scores_out = np.asarray(scores_out, dtype=np.float64)
    n_in, n_out = len(scores_in), len(scores_out)
    if n_in == 0 or n_out == 0:
        raise ValueError("choose_rule needs at least one run on each side")
    confidence = float(confidence)
    tpr_lo = [_exact_interval(k, n_in, confidence)[0] for k in range(n_in + 1)]
    fpr_hi = [_exact_interval(k, n_out, confidence)[1] for k in range(n_out + 1)]
    finite_out = np.clip(scores_out[~np.isnan(scores_out)], -_BIG, _BIG)
    center = float(np.median(finite_out)) if len(finite_out) else 0.0
    best_rule, best = ThresholdRule(1, True, np.inf), -1.0
    for c in (None, center):
        for direction in (1, -1):
            for nan_in in (True, False):
                probe = ThresholdRule(direction, nan_in, 0.0, c)
                k_in, k_out = np.sort(probe.keys(scores_in)), np.sort(probe.keys(scores_out))
                for t in np.unique(np.concatenate([k_in, k_out])):
                    tp = n_in - int(np.searchsorted(k_in, t, side="left"))
                    fp = n_out - int(np.searchsorted(k_out, t, side="left"))
                    bound = _bound_from_rates(tpr_lo[tp], fpr_hi[fp], float(delta))
                    if bound > best:
                        best_rule, best = ThresholdRule(direction, nan_in, float(t), c), bound
    return best_rule, best


# -- canaries -------------------------------------------------------------------------
@dataclass(frozen=True)
class Canary:
    """One training row: features ``x`` (1-D), label ``y`` and group ``s`` (or None)."""

    x: np.ndarray
    y: object
    s: object = None
    name: str = "canary"


def ordinary_canary(
    X, y, sensitive_features=None, *, spread: float = 1.0, name: str = "ordinary"
) -> Canary:
    """A mislabelled outlier-ish row from the data distribution.

    Takes the row farthest from the feature means (in standard deviations),
    moves it ``spread`` times as far from the means, and gives it another
    class's label (the next one in sorted order; for binary labels, the flip).
    Its group is the row's own.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    sensitive_features : None or array-like of shape (n_samples,) or (n_samples, k)
    spread : float, default=1.0
        1 keeps the row as it is (a mislabelled copy of the most outlying row).
    name : str, default="ordinary"

    Returns
    -------
    Canary
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    mean, std = X.mean(axis=0), X.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    i = int(np.argmax((((X - mean) / std) ** 2).sum(axis=1)))
    x = mean + float(spread) * (X[i] - mean)
    classes = np.unique(y)
    label = classes[(int(np.searchsorted(classes, y[i])) + 1) % len(classes)]
    s = None if sensitive_features is None else np.asarray(sensitive_features)[i]
    return Canary(x=x, y=label, s=s, name=name)


def extreme_canary(
    canary: Canary, *, feature: int = 0, value: float = 2e19, name: str = "extreme"
) -> Canary:
    """The same row with one feature set to a huge (still finite float32) value.

    Parameters
    ----------
    canary : Canary
    feature : int, default=0
    value : float, default=2e19
        The outside audit's value: finite in float32, but its square is not.
    name : str, default="extreme"

    Returns
    -------
    Canary
    """
    x = np.array(canary.x, dtype=np.float64)
    x[feature] = value
    return Canary(x=x, y=canary.y, s=canary.s, name=name)


def _with_canary(X, y, sensitive_features, canary: Canary):
    X = np.asarray(X)
    X_in = np.vstack([X, np.asarray(canary.x, dtype=X.dtype).reshape(1, -1)])
    y = np.asarray(y)
    y_in = np.concatenate([y, np.asarray([canary.y], dtype=y.dtype)])
    if sensitive_features is None:
        return X_in, y_in, None
    s = np.asarray(sensitive_features)
    row = np.asarray(canary.s, dtype=s.dtype).reshape((1,) + s.shape[1:])
    return X_in, y_in, np.concatenate([s, row])


# -- score ------------------------------------------------------------------------------
def canary_score(estimator, x, y) -> float:
    """Log-odds of label ``y`` at ``x`` under a fitted classifier (NaN if undefined).

    ``logit_y - logsumexp(other logits)`` from ``decision_function`` (two
    classes: the decision function, signed towards ``y``), else
    ``log p_y - log(1 - p_y)`` from ``predict_proba``. ``+-inf`` is returned
    as is (an ordered value); anything else non-finite is NaN.

    Parameters
    ----------
    estimator : fitted classifier
    x : array-like of shape (n_features,)
    y : label
        One of ``estimator.classes_``.

    Returns
    -------
    float
    """
    classes = list(estimator.classes_)
    k = classes.index(y)
    row = np.asarray(x, dtype=np.float64).reshape(1, -1)
    with np.errstate(all="ignore"):
        if hasattr(estimator, "decision_function"):
            d = np.asarray(estimator.decision_function(row), dtype=np.float64)
            if d.ndim == 1 or d.shape[1] == 1:
                value = float(d.reshape(-1)[0])
                return value if k == 1 else -value
            logits = d[0]
            if not np.all(np.isfinite(logits)):
                return float("nan")
            return float(logits[k] - logsumexp(np.delete(logits, k)))
        p = np.asarray(estimator.predict_proba(row), dtype=np.float64)[0]
        if not np.all(np.isfinite(p)):
            return float("nan")
        return float(np.log(p[k]) - np.log1p(-p[k]))


def _finite_model(estimator, X) -> bool:
    with np.errstate(all="ignore"):
        if hasattr(estimator, "decision_function"):
            out = estimator.decision_function(X)
        else:
            out = estimator.predict_proba(X)
    return bool(np.all(np.isfinite(np.asarray(out, dtype=np.float64))))


def _one_run(make_estimator, seed, X, y, s, canary, probe, on_fit_error):
    start = time.perf_counter()
    estimator = make_estimator(int(seed))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if s is None:
                estimator.fit(X, y)
            else:
                estimator.fit(X, y, sensitive_features=s)
    except Exception as exc:  # recorded, see on_fit_error
        if on_fit_error == "raise":
            raise
        return math.nan, True, math.nan, math.nan, time.perf_counter() - start, repr(exc)
    seconds = time.perf_counter() - start
    score = canary_score(estimator, canary.x, canary.y)
    finite = _finite_model(estimator, probe) and not math.isnan(score)
    spent = getattr(estimator, "privacy_spent_", None)
    eps = float(spent[0]) if spent is not None else math.nan
    delta = float(spent[1]) if spent is not None else math.nan
    return score, finite, eps, delta, seconds, None


# -- audit ----------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`run_audit` (counts and rates are of the evaluation runs).

    Attributes
    ----------
    n_runs : int
        Runs per side (IN and OUT).
    n_eval_in, n_eval_out : int
        Evaluation runs per side (the other runs selected the rule).
    true_positives, false_positives : int
        Evaluation runs guessed IN, with and without the canary.
    tpr, fpr : float
        Point estimates.
    tpr_lower, fpr_upper : float
        Joint Clopper-Pearson bounds (``alpha / 2`` each).
    epsilon_lower_bound : float
        Empirical lower bound on epsilon at ``confidence``.
    epsilon_claimed : float
        Largest ``privacy_spent_.epsilon`` over the fitted runs (NaN if absent).
    delta : float
        The delta used in the bound (the largest claimed one unless given).
    confidence : float
    nonfinite_in, nonfinite_out : float
        Fractions of runs whose fitted model outputs a non-finite value on the
        base data or a NaN score on the canary (failed fits not included).
    failed_in, failed_out : float
        Fractions of runs whose fit raised (only with ``on_fit_error="nan"``).
    errors : tuple of str
        The distinct exceptions of the failed fits.
    rule : ThresholdRule
        The rule chosen on the selection runs.
    selection_bound : float
        Its bound on the selection runs (optimistic; for information).
    fit_seconds : float
        Median fit time.
    scores_in, scores_out : ndarray
        All runs' scores (selection runs first).
    """

    n_runs: int
    n_eval_in: int
    n_eval_out: int
    true_positives: int
    false_positives: int
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    epsilon_lower_bound: float
    epsilon_claimed: float
    delta: float
    confidence: float
    nonfinite_in: float
    nonfinite_out: float
    failed_in: float
    failed_out: float
    errors: tuple
    rule: ThresholdRule
    selection_bound: float
    fit_seconds: float
    scores_in: np.ndarray = field(repr=False)
    scores_out: np.ndarray = field(repr=False)

    @property
    def nonfinite_fraction(self) -> float:
        """Fraction of all runs (IN and OUT) with a non-finite model."""
        return (self.nonfinite_in + self.nonfinite_out) / 2

    @property
    def passed(self) -> bool:
        """Whether the empirical bound is at most the claimed epsilon."""
        return bool(self.epsilon_lower_bound <= self.epsilon_claimed)


def run_audit(
    make_estimator: Callable[[int], object],
    X,
    y,
    canary: Canary,
    *,
    sensitive_features=None,
    n_runs: int = 250,
    confidence: float = 0.95,
    delta: float | None = None,
    random_state: int = 0,
    n_jobs: int | None = None,
    on_fit_error: str = "raise",
) -> AuditResult:
    """Canary membership audit of a training procedure.

    Parameters
    ----------
    make_estimator : callable
        ``make_estimator(seed) -> unfitted estimator``; the seed must drive all
        of its randomness (sampling, noise, initialisation). Must be picklable
        when ``n_jobs`` is not 1 (a module-level function or ``functools.partial``).
    X, y : array-like
        Base data (without the canary).
    canary : Canary
        The row added in the IN runs.
    sensitive_features : None or array-like, default=None
        Passed to ``fit`` as ``sensitive_features`` when not None (with the
        canary's ``s`` appended in the IN runs).
    n_runs : int, default=250
        Runs per side; the first ``n_runs // 2`` of each side select the rule,
        the rest evaluate it.
    confidence : float, default=0.95
        Joint confidence of the Clopper-Pearson bounds.
    delta : None or float, default=None
        Delta in the bound; None uses the largest ``privacy_spent_.delta`` of
        the runs (0 if none).
    random_state : int, default=0
        Seeds the runs' seeds (all ``2 * n_runs`` distinct).
    n_jobs : None or int, default=None
        joblib workers.
    on_fit_error : {"raise", "nan"}, default="raise"
        ``"nan"``: a fit that raises counts as a run with a NaN score and a
        non-finite model (an observable event, like a NaN model).

    Returns
    -------
    AuditResult
    """
    if n_runs < 2:
        raise ValueError(f"n_runs must be >= 2 (half select, half evaluate), got {n_runs!r}")
    if on_fit_error not in ("raise", "nan"):
        raise ValueError(f"on_fit_error must be 'raise' or 'nan', got {on_fit_error!r}")
    rng = np.random.default_rng(random_state)
    seeds = rng.choice(2**31 - 1, size=2 * n_runs, replace=False)
    X_in, y_in, s_in = _with_canary(X, y, sensitive_features, canary)
    probe = np.asarray(X)
    jobs = [(X_in, y_in, s_in)] * n_runs + [(X, y, sensitive_features)] * n_runs
    runs = Parallel(n_jobs=n_jobs)(
        delayed(_one_run)(make_estimator, seed, Xr, yr, sr, canary, probe, on_fit_error)
        for seed, (Xr, yr, sr) in zip(seeds, jobs)
    )
    scores = np.array([r[0] for r in runs], dtype=np.float64)
    finite = np.array([r[1] for r in runs], dtype=bool)
    eps = np.array([r[2] for r in runs], dtype=np.float64)
    deltas = np.array([r[3] for r in runs], dtype=np.float64)
    failed = np.array([r[5] is not None for r in runs], dtype=bool)
    errors = tuple(sorted({r[5] for r in runs if r[5] is not None}))
    scores_in, scores_out = scores[:n_runs], scores[n_runs:]
    if delta is None:
        delta = float(np.nanmax(deltas)) if np.any(np.isfinite(deltas)) else 0.0
    eps_claimed = float(np.nanmax(eps)) if np.any(~np.isnan(eps)) else math.nan

    half = n_runs // 2
    rule, selection_bound = choose_rule(
        scores_in[:half], scores_out[:half], delta=delta, confidence=confidence
    )
    eval_in, eval_out = scores_in[half:], scores_out[half:]
    tp, fp = int(rule.guess_in(eval_in).sum()), int(rule.guess_in(eval_out).sum())
    n_in, n_out = len(eval_in), len(eval_out)
    tpr_lower, fpr_upper = clopper_pearson_bounds(tp, n_in, fp, n_out, confidence)
    return AuditResult(
        n_runs=n_runs,
        n_eval_in=n_in,
        n_eval_out=n_out,
        true_positives=tp,
        false_positives=fp,
        tpr=tp / n_in,
        fpr=fp / n_out,
        tpr_lower=tpr_lower,
        fpr_upper=fpr_upper,
        epsilon_lower_bound=_bound_from_rates(tpr_lower, fpr_upper, delta),
        epsilon_claimed=eps_claimed,
        delta=delta,
        confidence=confidence,
        nonfinite_in=float(np.mean(~finite[:n_runs])),
        nonfinite_out=float(np.mean(~finite[n_runs:])),
        failed_in=float(np.mean(failed[:n_runs])),
        failed_out=float(np.mean(failed[n_runs:])),
        errors=errors,
        rule=rule,
        selection_bound=selection_bound,
        fit_seconds=float(np.median([r[4] for r in runs])),
        scores_in=scores_in,
        scores_out=scores_out,
    )
