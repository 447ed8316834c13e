"""After training, one noisy check that the model beats a constant predictor.

On a table the private fit cannot learn (a few hundred rows, a penalty that drowns
the loss), a fairness estimator can end near a constant, or below it: issue 34's
held-out 4,406-row table gave DP-FERMI at λ = 64 an error of 0.698 against the
majority class's 0.221. A constant needs no data to be trusted and meets every
group-parity bound exactly, so where the released evidence does not show the model
to be better, the constant is returned instead.

**The release** (:func:`release_confusion`): the model's (true label, predicted
class) counts on the training rows, once, with Gaussian noise of multiplier
:func:`check_noise_multiplier` (``CHECK_SHARE`` of the budget's zCDP rho). A row adds
1 (its weight, when weighted) to one cell: L2 sensitivity 1 (``max_sample_weight``).
Recorded and accounted with the fit's other releases.

**The rule** (:func:`beats_constant_margin`, :func:`decide`): the model's noisy
training error minus a constant's is a sum of the released counts with coefficients
``[k != label] - [label != c]``, so its noise sd follows from the counts' own. The
model is kept only where its noisy error beats the best constant's by ``CHECK_Z``
of those sds (RaCO-DP's tolerance check uses the same rule,
:mod:`skfairdp.raco.enforcement`). Without noise the constant wins exact ties.
"""

from __future__ import annotations

import dataclasses
import warnings

import dp_accounting
import numpy as np
import torch

from ..privacy import noisy_histogram
from ..privacy.collective import sum_over_ranks
from .base import row_chunks
from .budget import reserved_zcdp_noise_multiplier
from .context import FitContext

__all__ = [
    "CHECK_SHARE",
    "CHECK_Z",
    "FALLBACK_LOGIT",
    "ConstantCheck",
    "ConstantFallbackMixin",
    "beats_constant_margin",
    "check_noise_multiplier",
    "constant_label",
    "decide",
    "release_confusion",
    "release_counts",
    "warn_fallback",
]

#: the check's share of the budget's zCDP rho, and the sds by which the model's noisy
#: training error must beat the constant's (RaCO-DP's ``ENFORCE_Z``; doc/dpfermi.md,
#: "The constant wins near-ties", for how the share was measured on the zoo)
CHECK_SHARE = 0.05
CHECK_Z = 0.5


@dataclasses.dataclass
class ConstantCheck:
    """What the check released and concluded (``constant_check_``).

    Attributes
    ----------
    counts : ndarray (n_classes, n_classes)
        The released counts: rows are true labels, columns predicted classes.
    error : float
        The model's training error from the noisy counts.
    constant_class : int
        Index into ``classes_`` of the constant with the smallest noisy error.
    constant_error : float
        That constant's training error from the noisy counts.
    margin : float
        ``CHECK_Z`` sds of the noisy difference of the two errors (0 without noise).
    falls_back : bool
        Whether ``predict`` returns the constant: ``constant_error <= error + margin``.
    noise_multiplier : float
        The release's Gaussian multiplier (0 without noise).
    """

    counts: np.ndarray
    error: float
    constant_class: int
    constant_error: float
    margin: float
    falls_back: bool
    noise_multiplier: float


def check_noise_multiplier(epsilon: float, delta: float) -> float:
    """The check's Gaussian multiplier: ``CHECK_SHARE`` of the budget's zCDP rho."""
    return reserved_zcdp_noise_multiplier(CHECK_SHARE, epsilon, delta)


def beats_constant_margin(
    H: np.ndarray, labels: np.ndarray, c: int, std: float, z: float = CHECK_Z
) -> float:
    """``z`` sds of (the model's noisy error - constant ``c``'s), as a share of the rows.

    ``H`` (cells, classes): noisy counts per cell (rows) and predicted class; ``labels``
    (cells,): each cell's true label; ``std``: each count's noise std.
    """
    predicted = np.arange(H.shape[1])[None, :]
    loadings = (predicted != labels[:, None]).astype(float) - (labels != c)[:, None]
    total = max(float(H.sum()), 1.0)
    return z * std * float(np.sqrt(np.square(loadings).sum())) / total


def decide(H: np.ndarray, std: float, noise_multiplier: float = 0.0, z: float = CHECK_Z):
    """The check's conclusion from (noisy) ``(true label, predicted class)`` counts ``H``."""
    H = np.asarray(H, dtype=float)
    n_classes = H.shape[1]
    labels = np.arange(n_classes)
    total = max(float(H.sum()), 1.0)
    error = float(np.clip((H.sum() - np.trace(H)) / total, 0.0, 1.0))
    constant_errors = np.clip((total - H.sum(axis=1)) / total, 0.0, 1.0)
    c = int(np.argmin(constant_errors))
    margin = beats_constant_margin(H, labels, c, std, z)
    return ConstantCheck(
        counts=H, error=error, constant_class=c, constant_error=float(constant_errors[c]),
        margin=margin, falls_back=bool(constant_errors[c] <= error + margin + 1e-12),
        noise_multiplier=float(noise_multiplier),
    )  # fmt: skip


def release_confusion(
    module: torch.nn.Module, ctx: FitContext, noise_multiplier: float
) -> ConstantCheck:
    """Release the model's training ``(true label, predicted class)`` counts once; decide.

    ``noise_multiplier`` 0 (non-private fits, or counts that are public) releases the
    exact counts.
    """
    k = ctx.n_classes
    weight = np.broadcast_to(1.0 if ctx.sample_weight is None else ctx.sample_weight, ctx.y.shape)
    H = np.zeros(k * k)
    module.eval()
    with torch.no_grad():
        for rows, xb in row_chunks(ctx.X, ctx.device):
            pred = module(xb).argmax(dim=1).cpu().numpy()
            H += np.bincount(ctx.y[rows] * k + pred, weights=weight[rows], minlength=k * k)
    H, std = release_counts(H.reshape(k, k), ctx, noise_multiplier)
    # --- post-processing of the released counts ---
    return decide(H, std, noise_multiplier if std else 0.0)


def release_counts(H: np.ndarray, ctx: FitContext, noise_multiplier: float):
    """``(counts, std)``: ``H`` released once with Gaussian noise, recorded in ``ctx``.

    One row adds its weight (at most ``max_sample_weight``) to one cell, or a
    probability vector of norm at most 1 to one row of cells: L2 sensitivity
    ``ctx.max_weight``. Without privacy, or with ``noise_multiplier`` 0 (counts that
    are public), the exact counts and std 0. In a data-parallel fit either is summed
    over the ranks, so that every rank decides alike. Shared by RaCO-DP's tolerance
    check and DP-FERMI's.
    """
    if not (ctx.private and noise_multiplier > 0):
        (H,) = sum_over_ranks(H)  # every rank's rows (the identity in one process)
        return H, 0.0
    noisy, _ = noisy_histogram(
        torch.from_numpy(np.ascontiguousarray(H)),
        ctx.random,
        noise_multiplier=noise_multiplier,
        sensitivity=ctx.max_weight,
        recorder=ctx.recorder,
    )
    return noisy.numpy(), noise_multiplier * ctx.max_weight


def constant_label(classes: np.ndarray, check: ConstantCheck):
    """The label of ``check``'s constant class, as a Python scalar where it is one."""
    constant = classes[check.constant_class]
    return constant.item() if hasattr(constant, "item") else constant


def warn_fallback(
    estimator, check: ConstantCheck, what: str, source: str, remedy: str, stacklevel: int
) -> None:
    """The ``UserWarning`` of a fallback to ``estimator.fallback_class_``: ``what`` (the
    model's, or the thresholds', training error) read from ``source`` did not beat it."""
    constant = estimator.fallback_class_
    evidence = (
        f"did not beat the constant class {constant!r}'s ({check.constant_error:.3f}) by "
        f"{CHECK_Z} sd of their difference ({check.margin:.3f}) at "
        f"epsilon={estimator.epsilon!r}"
        if check.noise_multiplier
        else f"is not below the constant class {constant!r}'s ({check.constant_error:.3f})"
    )
    warnings.warn(
        f"fallback_to_constant: {what} ({check.error:.3f}, from {source}) {evidence}, so "
        f"predict returns the constant class {constant!r}. {remedy}",
        UserWarning,
        stacklevel=stacklevel,
    )


#: the logit ``predict``'s constant gets (and minus it, the other classes): its
#: probability is 1 to float64's precision, and ``decision_function`` stays finite
FALLBACK_LOGIT = 20.0


class ConstantFallbackMixin:
    """``fallback_to_constant``: the check after training, and the constant's predictions.

    The estimator has ``fallback_to_constant``, ``epsilon``, ``classes_`` and
    ``_outputs``; the check's counts are public (exact, free) under
    ``privacy_unit="sensitive"``, and ``calibration="paper"`` keeps the paper's
    algorithm (no check).
    """

    def _constant_check_runs(self) -> bool:
        return bool(self.fallback_to_constant) and (
            getattr(self, "calibration", "accountant") != "paper"
        )

    def _constant_check_multiplier(self, ctx: FitContext) -> float:
        if not (ctx.private and getattr(self, "privacy_unit", "record") == "record"):
            return 0.0
        return check_noise_multiplier(self.epsilon, ctx.delta)

    def _constant_check_event(self, ctx: FitContext) -> dp_accounting.DpEvent:
        """The check's planned release (no-op when it does not run or needs no noise)."""
        multiplier = self._constant_check_multiplier(ctx) if self._constant_check_runs() else 0
        if multiplier > 0:
            return dp_accounting.GaussianDpEvent(multiplier)
        return dp_accounting.NoOpDpEvent()

    def _check_constant(self, ctx: FitContext) -> None:
        """Run the check on the returned model; set ``constant_check_`` and ``fallback_class_``."""
        self.constant_check_ = None
        self.fallback_class_ = None
        if not self._constant_check_runs():
            return
        check = release_confusion(self.module_, ctx, self._constant_check_multiplier(ctx))
        self.constant_check_ = check
        if not check.falls_back:
            return
        self.fallback_class_ = constant_label(self.classes_, check)
        warn_fallback(
            self,
            check,
            "the model's training error",
            "the check's counts",
            "A larger epsilon, more rows or a smaller fairness weight keep the model; "
            "fallback_to_constant=False returns it as trained.",
            stacklevel=7,  # user -> fit -> _private_fit -> _fit_template -> _store_fitted
        )

    def _outputs(self, X) -> np.ndarray:
        logits = super()._outputs(X)
        check = getattr(self, "constant_check_", None)
        if check is None or not check.falls_back:
            return logits
        out = np.full_like(logits, -FALLBACK_LOGIT)
        out[:, check.constant_class] = FALLBACK_LOGIT
        return out
