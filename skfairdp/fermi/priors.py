"""DP-FERMI's group priors: their release, the ``rho`` rules, public ``group_priors``.

ERMI weighs each group by its prior ``p_S`` (per label for the conditional
notions). :func:`release_priors` is what :class:`~skfairdp.fermi.DPFermiClassifier`
releases before training: the priors (public, or one noisy histogram from
:data:`~skfairdp.fermi.problem.GROUP_PRIOR_BUDGET_SHARE` of epsilon), the label
weights, and which W block each row uses.

``rho`` is DP-FERMI's public lower bound on every group's frequency; the
sensitivity bounds of its W-gradients use priors clamped at it. Priors the user
declares below it are an error; priors estimated from the data below it are
clamped, with a warning (:func:`check_priors_against_rho`).
:class:`~skfairdp.FederatedDPFermiClassifier` applies the same rules.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from dp_accounting import DpEvent, NoOpDpEvent

from .._fit.budget import reserved_noise_multiplier
from ..fairness.groups import _format_label
from ..fairness.inputs import MAX_LISTED
from ..privacy import gaussian_release_event, noisy_histogram
from ..privacy.collective import sum_over_ranks
from .problem import GROUP_PRIOR_BUDGET_SHARE

__all__ = [
    "PriorRelease",
    "blocks",
    "check_min_group_fraction",
    "check_priors_against_rho",
    "group_frequencies",
    "min_cell_share",
    "prior_labels",
    "public_priors",
    "release_priors",
    "resolve_rho",
]

#: ``rho="auto"`` where rho bounds a sensitivity (the paper's projected ascent of W,
#: ``calibration="paper"``): the bound DP-FERMI's experiments use.
PAPER_RHO = 0.05
#: ``rho="auto"`` under ``lr_dual="auto"``: a released prior is floored at this many
#: standard deviations of its noise (an exact or public one at one row).
NOISE_FLOOR_SDS = 2.0


def resolve_rho(rho: Any, *, bounds_sensitivity: bool, n_samples: int, noise_std: float) -> float:
    """The floor of the group priors: ``rho``, or its ``"auto"`` rule.

    Where ``rho`` bounds a sensitivity (W's projected ascent: its clip and ball grow
    like ``rho^-1/2``) ``"auto"`` is :data:`PAPER_RHO`. Under ``lr_dual="auto"`` W's
    release is a histogram of unit rows whatever the priors, so a floor above the
    data only mis-weights a small group (a 2 % group clamped at 0.05 gets 2.6 times
    less of the penalty's push, doc/dpfermi.md); ``"auto"`` then floors a prior at
    :data:`NOISE_FLOOR_SDS` noise standard deviations (``noise_std`` counts, over
    ``n_samples``), or one row when the priors are exact or public, and never above
    :data:`PAPER_RHO` (a larger group is weighted as before).
    """
    if rho != "auto":
        return float(rho)
    if bounds_sensitivity:
        return PAPER_RHO
    floor = max(1.0, NOISE_FLOOR_SDS * float(noise_std)) / max(int(n_samples), 1)
    return min(PAPER_RHO, floor)


class PriorRelease(NamedTuple):
    """What DP-FERMI releases before training, and W's block of every row."""

    #: Group priors per block, shape (n_blocks, n_groups), before clamping at rho.
    priors: np.ndarray
    #: Weight of each class's psi terms in theta's objective, shape (n_classes,).
    label_weights: np.ndarray
    #: W block of each row (its label under equalized odds, else 0).
    block: np.ndarray
    #: 1.0 where a row has a psi term (equal opportunity: positive rows only).
    active: np.ndarray
    n_blocks: int
    n_groups: int
    #: Planned event of the release (a Gaussian histogram, or nothing).
    event: DpEvent
    #: The floor the priors are clamped at (``rho``, resolved when ``"auto"``).
    rho: float


def release_priors(
    ctx,
    *,
    fairness: str,
    fairness_weight: float,
    rho: Any,
    privacy_unit: str,
    epsilon: float,
    group_priors: Any,
    group_encoder: Any,
    classes: np.ndarray,
    bounds_sensitivity: bool = True,
) -> PriorRelease:
    """Group priors (one noisy histogram unless public) and label weights.

    Parameters
    ----------
    ctx : FitContext
        The fit's data, randomness and recorder (the histogram is recorded there).
    fairness, fairness_weight, rho, privacy_unit, epsilon, group_priors
        The estimator's parameters of those names.
    group_encoder : GroupEncoder or None
        ``group_encoder_`` (None: one group).
    classes : ndarray
        ``classes_``.
    bounds_sensitivity : bool, default=True
        Whether ``rho`` bounds a sensitivity of the fit (see :func:`resolve_rho`).

    Returns
    -------
    PriorRelease
    """
    n, n_classes, private = ctx.n_samples, ctx.n_classes, ctx.private
    lam = float(fairness_weight)
    n_groups = group_encoder.n_groups_ if group_encoder is not None else 1
    block, active, n_blocks = blocks(fairness, ctx.y, n_classes)
    sensitive_unit = privacy_unit == "sensitive"
    uses_groups = lam > 0
    releases_priors = uses_groups and group_priors is None
    conditional = uses_groups and fairness != "demographic_parity"
    # label frequencies (for the label weights) are private only under "record"
    releases_histogram = private and (releases_priors or (conditional and not sensitive_unit))
    statistics_multiplier = math.inf
    if releases_histogram:
        # Sized by the exact Gaussian curve, which reaches any epsilon > 0 (an RDP
        # conversion bottoms out near 0.006); the whole event is accounted with the fit.
        # Under "sensitive", PLD's replace-one Gaussian is a shift of 2 per unit.
        statistics_multiplier = reserved_noise_multiplier(
            GROUP_PRIOR_BUDGET_SHARE,
            epsilon,
            ctx.delta,
            sensitivity=2.0 if sensitive_unit else 1.0,
        )
    counts_std = 0.0
    if releases_histogram and releases_priors:
        counts_std = statistics_multiplier * ctx.max_weight
    rho = resolve_rho(rho, bounds_sensitivity=bounds_sensitivity, n_samples=n, noise_std=counts_std)
    public = None
    if uses_groups and group_priors is not None:
        public = public_priors(
            group_priors,
            fairness=fairness,
            group_labels=group_encoder.group_labels_,
            classes=classes,
        )
    priors, label_freq = np.full((n_blocks, n_groups), 1.0 / n_groups), None
    if uses_groups:
        priors, label_freq = group_frequencies(
            ctx,
            fairness=fairness,
            privacy_unit=privacy_unit,
            public=public,
            n_groups=n_groups,
            statistics_multiplier=statistics_multiplier,
        )
    label_weights = (
        1.0 / (n_classes * np.maximum(label_freq, rho)) if conditional else np.ones(n_classes)
    )
    if uses_groups:
        # a fraction estimated from the data below rho is clamped at rho like every
        # prior (the sensitivity bounds use the clamped values): a warning, not an error
        check_priors_against_rho(
            priors,
            rho,
            prior_labels(fairness, group_encoder.group_labels_, classes, n_blocks),
            declared=not releases_priors,
            source=(
                f"come from a noisy histogram (noise multiplier {statistics_multiplier:.3g}, "
                f"{GROUP_PRIOR_BUDGET_SHARE:.0%} of epsilon) of n={n} rows"
                + _noise_dominates(counts_std, n, n_groups)
                if private
                else f"were counted on the n={n} training rows (epsilon=inf)"
            ),
            remedy=(
                "pass public group_priors=... or use a larger epsilon"
                if private
                else "lower rho (it bounds the sensitivity only when epsilon is finite)"
            ),
            noise_std=counts_std / max(n, 1) if private and releases_priors else None,
            stacklevel=6,  # user -> fit -> _private_fit -> _fit_template -> hook -> here
        )
    event = gaussian_release_event(statistics_multiplier) if releases_histogram else NoOpDpEvent()
    return PriorRelease(priors, label_weights, block, active, n_blocks, n_groups, event, rho)


def _noise_dominates(counts_std: float, n: int, n_groups: int) -> str:
    """A clause for the warning when the counts' noise is as large as a group's share of n."""
    if counts_std < 0.5 * n / max(n_groups, 1):
        return ""
    return (
        f" (noise std {counts_std:.3g} against {n} rows: an estimated fraction of 0 here is "
        "noise, not a sign that the group is small or absent)"
    )


def group_frequencies(
    ctx,
    *,
    fairness: str,
    privacy_unit: str,
    public: np.ndarray | None,
    n_groups: int,
    statistics_multiplier: float,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Group priors per block and, for conditional notions, label frequencies.

    Everything private comes from one noisy histogram: of groups (demographic
    parity) or of (label, group) cells (conditional notions), whose row sums
    give the label frequencies. With ``public`` priors and
    ``privacy_unit="record"`` a conditional notion releases a label histogram
    instead; under ``"sensitive"`` labels are public and counted exactly.
    """
    y_enc, codes, n_classes = ctx.y, ctx.groups, ctx.n_classes
    sensitive_unit = privacy_unit == "sensitive"
    conditional = fairness != "demographic_parity"

    def released(cells, n_cells, moves_two):
        return _histogram(ctx, cells, n_cells, moves_two, statistics_multiplier)

    exact_labels = np.bincount(y_enc, ctx.sample_weight, minlength=n_classes).astype(float)
    (exact_labels,) = sum_over_ranks(exact_labels)  # public; all ranks' rows when data-parallel
    if public is not None:
        if not conditional:
            return public, None
        labels = exact_labels if sensitive_unit else released(y_enc, n_classes, False)
        return public, _normalised(labels)
    if not conditional:
        return _normalised(released(codes, n_groups, sensitive_unit))[None, :], None
    joint = released(y_enc * n_groups + codes, n_classes * n_groups, sensitive_unit)
    joint = joint.reshape(n_classes, n_groups)
    labels = exact_labels if sensitive_unit else joint.sum(axis=1)
    rows = joint if fairness == "equalized_odds" else joint[[n_classes - 1]]
    return _normalised(rows), _normalised(labels)


def _histogram(ctx, cells, n_cells, moves_two, statistics_multiplier) -> np.ndarray:
    """Weighted counts of ``cells``, noised when private, clipped at 0."""
    counts = np.bincount(cells, ctx.sample_weight, minlength=n_cells).astype(float)
    if ctx.private:
        # record: one row moves one count by its weight (L2 sensitivity 1, times
        # max_weight); sensitive: a replaced s moves two counts (L2 distance
        # sqrt 2), and PLD's replace-one Gaussian models a shift of 2 per unit of
        # sensitivity: sensitivity 1 / sqrt 2, sigma = z / sqrt 2.
        unit = math.sqrt(0.5) if moves_two else 1.0
        noisy, _ = noisy_histogram(
            torch.from_numpy(counts),
            ctx.random,
            noise_multiplier=statistics_multiplier,
            sensitivity=unit * ctx.max_weight,
            recorder=ctx.recorder,
        )
        counts = noisy.numpy()
    return np.clip(counts, 0.0, None)


def _normalised(counts: np.ndarray) -> np.ndarray:
    """Rows of counts as fractions; a row the noise clipped to all zeros is uniform."""
    totals = counts.sum(axis=-1, keepdims=True)
    uniform = np.full_like(counts, 1.0 / counts.shape[-1])
    return np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), uniform)


def blocks(fairness: str, y_enc: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Which W block each sample uses, whether its psi term is active, and the block count."""
    n = len(y_enc)
    if fairness == "demographic_parity":
        return np.zeros(n, dtype=np.int64), np.ones(n), 1
    if fairness == "equalized_odds":
        return y_enc.astype(np.int64), np.ones(n), n_classes
    positive = n_classes - 1
    return np.zeros(n, dtype=np.int64), (y_enc == positive).astype(float), 1


def prior_labels(
    fairness: str, group_labels: Sequence[Any], classes: np.ndarray, n_blocks: int
) -> list[list[Any]]:
    """The label of each prior, per block, for messages (``"g | y='hi'"``)."""
    groups = list(group_labels)
    # .tolist() gives Python scalars: y='hi', not y=np.str_('hi')
    classes = classes.tolist()
    if fairness == "demographic_parity":
        return [groups]
    if fairness == "equal_opportunity":
        return [[f"{g} | y={classes[-1]!r}" for g in groups]]
    return [[f"{g} | y={c!r}" for g in groups] for c in classes[:n_blocks]]


def min_cell_share(pinv: torch.Tensor, fairness: str, label_weights: np.ndarray) -> float:
    """Smallest expected share of a batch in one (block, group) cell of W's histogram.

    From public or released values only: the priors (``pinv ** -2``, clamped at
    ``rho``) times, for the conditional notions, the label frequency of the block
    (``1 / (L label_weights)``, itself from the released histogram).
    """
    priors = pinv.double().pow(-2).cpu().numpy()  # (blocks, k)
    if fairness == "demographic_parity":
        return float(priors.min())
    n_classes = len(label_weights)
    label_share = 1.0 / (n_classes * label_weights)  # max(p_Y, rho)
    if fairness == "equal_opportunity":
        label_share = label_share[-1:]
    return float((label_share[: priors.shape[0], None] * priors).min())


def check_min_group_fraction(
    fractions: Any,
    rho: float,
    labels: Sequence[Any] | None = None,
    *,
    noise_std: float | None = None,
) -> np.ndarray:
    """Check that every group's (estimated) fraction is at least ``rho``.

    Parameters
    ----------
    fractions : array-like of float, shape (n_groups,)
        Estimated fraction of rows in each group (may be noisy, so values can
        lie outside ``[0, 1]``).
    rho : float
        Public lower bound on the group fractions, in ``[0, 1)``.
    labels : sequence or None, default=None
        Group labels for the error message (e.g. ``encoder.group_labels_``);
        defaults to the group codes.
    noise_std : float or None, default=None
        Standard deviation of the noise on each fraction when it is a noisy
        estimate. The message then shows it next to each fraction, and where it
        is at least ``rho`` says that the estimate is noise rather than a sign
        that the group is small.

    Returns
    -------
    fractions : ndarray of float64
        The validated fractions.

    Raises
    ------
    ValueError
        If a fraction is below ``rho``; the message names the group(s).
    """
    fractions = np.asarray(fractions, dtype=np.float64)
    if fractions.ndim != 1 or not np.all(np.isfinite(fractions)):
        raise ValueError(f"fractions must be a finite 1-D array; got {fractions!r}.")
    if not (isinstance(rho, numbers.Real) and 0.0 <= float(rho) < 1.0):
        raise ValueError(f"rho (the minimum group fraction) must be in [0, 1); got {rho!r}.")
    if labels is None:
        labels = [f"group {g}" for g in range(fractions.size)]
    elif len(labels) != fractions.size:
        raise ValueError(f"got {len(labels)} labels for {fractions.size} group fractions.")
    low = np.flatnonzero(fractions < rho)
    if low.size:
        noisy = noise_std is not None
        spread = f" +- {float(noise_std):.2g} noise std" if noisy else ""
        shown = "; ".join(
            f"{_format_label(labels[g])} ({'estimated ' if noisy else ''}fraction "
            f"{fractions[g]:.4g}{spread})"
            for g in low[:MAX_LISTED]
        )
        more = f"; and {low.size - MAX_LISTED} more" if low.size > MAX_LISTED else ""
        advice = "Merge or drop small groups, or lower rho."
        if noise_std is not None and float(noise_std) >= float(rho):
            advice = (
                "The noise is at least rho, so these estimates say nothing about the "
                "groups' sizes (a group holding half the rows can read as 0)."
            )
        raise ValueError(
            f"{low.size} group(s) have an estimated fraction below the minimum group "
            f"fraction rho={float(rho):g}: {shown}{more}. {advice}"
        )
    return fractions


def check_priors_against_rho(
    priors: Any,
    rho: float,
    labels: Sequence[Sequence[Any]],
    *,
    declared: bool,
    source: str,
    remedy: str,
    noise_std: float | None = None,
    stacklevel: int = 2,
) -> None:
    """Apply the rule for group priors below ``rho``: refuse declared ones, warn on counted ones.

    Priors the user declared as public (``group_priors=...``) that fall below ``rho``
    contradict it and raise. Priors counted from the data (exactly at ε = ∞, or from a
    noisy histogram) are clamped at ``rho`` by the caller like every prior, so the
    sensitivity bounds hold; only that group's fairness weighting is off, which is
    warned about.

    Parameters
    ----------
    priors : array-like of float, shape (n_blocks, n_groups)
        One row of group fractions per block (one block for demographic parity,
        one per class for the conditional notions).
    rho : float
        The public minimum group fraction.
    labels : sequence of sequences
        Group labels for each row's message.
    declared : bool
        Whether the user passed ``priors`` as public.
    source, remedy : str
        How the fractions were obtained and what the user can do, for the warning
        ("These fractions {source} and were clamped at rho; for an accurate fairness
        weighting {remedy}.").
    noise_std : float or None, default=None
        Standard deviation of the noise on each counted fraction (noisy count
        standard deviation over n), shown in the message; None when exact.
    stacklevel : int, default=2
        The warning's stack level as seen from the caller.

    Raises
    ------
    ValueError
        If ``declared`` and a prior is below ``rho``.
    """
    try:
        for row, row_labels in zip(np.atleast_2d(priors), labels, strict=True):
            check_min_group_fraction(row, rho, row_labels, noise_std=noise_std)
    except ValueError as exc:
        if declared:
            raise  # the user's public priors contradict rho
        warnings.warn(
            f"{exc} These fractions {source} and were clamped at rho={float(rho):g}; for an "
            f"accurate fairness weighting {remedy}.",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def public_priors(
    spec: Any,
    *,
    fairness: str,
    group_labels: Sequence[Any],
    classes: Sequence[Any],
) -> np.ndarray:
    """Public ``group_priors`` as one row of group frequencies per W block.

    Parameters
    ----------
    spec : array-like or dict
        Demographic parity: a vector of ``k`` frequencies (in the order of
        ``group_labels``) or a mapping group label -> frequency. Conditional
        notions: a mapping class -> such a vector or mapping, ``p(S | Y=class)``.
    fairness : {"demographic_parity", "equalized_odds", "equal_opportunity"}
    group_labels : sequence
        The encoder's group labels (``group_encoder_.group_labels_``).
    classes : sequence
        ``classes_``; equal opportunity uses the last one.

    Returns
    -------
    ndarray of shape (n_blocks, n_groups)
    """
    labels = list(group_labels)
    n_groups = len(labels)

    def as_vector(row, where):
        if isinstance(row, dict):
            missing = [g for g in labels if g not in row]
            if missing:
                raise ValueError(f"group_priors{where} has no entry for groups {missing}")
            vec = np.array([row[g] for g in labels], dtype=float)
        else:
            vec = np.asarray(row, dtype=float).ravel()
        if vec.shape != (n_groups,) or np.any(vec < 0) or not np.isclose(vec.sum(), 1.0):
            raise ValueError(
                f"group_priors{where} must give {n_groups} non-negative frequencies summing "
                f"to 1 (one per group {labels}); got {vec.tolist()}"
            )
        return vec

    if fairness == "demographic_parity":
        return as_vector(spec, "")[None, :]
    if not isinstance(spec, dict) or not all(c in spec for c in classes):
        raise ValueError(
            f"with fairness={fairness!r}, group_priors must map each class in "
            f"{list(classes)} to that class's group frequencies p(S | Y=class)"
        )
    if fairness == "equal_opportunity":
        return as_vector(spec[classes[-1]], f"[{classes[-1]!r}]")[None, :]
    return np.stack([as_vector(spec[c], f"[{c!r}]") for c in classes])
