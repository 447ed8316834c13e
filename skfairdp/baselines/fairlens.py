"""FairLensClassifier: DP-SGD with Tran et al.'s (2021a) regularisers (Esipova et al. Alg. 4).

The per-sample loss gets two batch-level terms, for two groups ``a, b``:

``R1 = |<g_Ba - g_Bb, gbar_B - g_B>|``
    how differently the clipping error ``gbar_B - g_B`` moves the two groups'
    losses (targets the clipping part of the excess risk);
``R2 = (f_a (1 - f_a) + f_b (1 - f_b)) / 2``
    with ``f_k`` the group's mean predicted probability of the positive class
    (distance to the decision boundary, a proxy for the noise part).

Each sample's gradient of ``loss_i + lambda_clip R1 + lambda_noise R2`` is
clipped to ``C0`` and the sum noised, as DP-SGD. The regularisers' gradients
are attributed to samples through their own outputs/gradients (as Opacus'
per-sample hooks do for a batch loss), with the clipping factors and batch
statistics held fixed: ``R1``'s part of sample ``i``'s gradient is the
Hessian-vector product ``H_i d_i`` (computed with ``torch.func``), ``R2``'s a
multiple of ``grad p_i``.

Privacy caveat (why fitting warns): ``R1`` and ``R2`` couple the samples of a
batch, so one row changes *every* processed gradient and the sum's
sensitivity is not ``C0``. ``privacy_spent_`` is the DP-SGD accounting the
paper reports for this method, not a proven guarantee. It is a baseline.
"""

from __future__ import annotations

import math
from numbers import Real

import torch
from sklearn.utils._param_validation import Interval
from torch.func import functional_call, grad, vmap

from .._fit.base import parameter_constraints
from ..dpsgd.core import CrossEntropyProblem, NoisySGDClassifierBase
from ..engine import clipped_total
from ..engine.per_sample import finite_outputs
from .checks import check_two_groups_binary, groups_required, warn_unbounded_sensitivity


class FairLensProblem(CrossEntropyProblem):
    """FairLens' per-step processing as an engine problem (``private_sum`` hook)."""

    def __init__(self, *, module, max_grad_norm, lambda_clip, lambda_noise):
        self.state: dict = {}  # no dual state
        self.module = module
        self.max_grad_norm = float(max_grad_norm)
        self.lambda_clip = float(lambda_clip)
        self.lambda_noise = float(lambda_noise)
        self.names = [n for n, p in module.named_parameters() if p.requires_grad]

    def regularised_gradients(self, G, X, y, groups):
        """Per-sample gradients ``(B, P)`` of the regularised loss, given those of the loss."""
        B = G.shape[0]
        norms = torch.linalg.vector_norm(G, dim=1)
        w = (self.max_grad_norm / (norms + 1e-12)).clamp(max=1.0)
        in_a = groups == 0
        n_a, n_b = int(in_a.sum()), int((~in_a).sum())
        if n_a == 0 or n_b == 0 or (self.lambda_clip == 0 and self.lambda_noise == 0):
            return G  # both regularisers compare the two groups of the batch
        c = torch.where(in_a, 1.0 / n_a, -1.0 / n_b).to(G.dtype)
        u = c @ G  # g_Ba - g_Bb
        v = ((w - 1.0) @ G) / B  # gbar_B - g_B
        sign = torch.sign(u @ v)
        params = {n: p.detach() for n, p in self.module.named_parameters() if p.requires_grad}
        sizes = [params[n].numel() for n in self.names]

        def as_params(flat):
            return {n: t.view_as(params[n]) for n, t in zip(self.names, flat.split(sizes))}

        U, V = as_params(u), as_params(v)
        with torch.no_grad():
            prob = torch.softmax(finite_outputs(self.module(X)), dim=1)[:, 1]
        f_a, f_b = prob[in_a].mean(), prob[~in_a].mean()
        f = torch.where(in_a, f_a, f_b)
        share = torch.where(in_a, B / n_a, B / n_b).to(G.dtype)
        coef_noise = self.lambda_noise * 0.5 * (1.0 - 2.0 * f) * share
        coef_v = self.lambda_clip * sign * B * c
        coef_u = self.lambda_clip * sign * (w - 1.0)
        module = self.module

        def regulariser(p, x, target, cv, cu, cn):
            def loss(q):
                out = functional_call(module, q, (x.unsqueeze(0),))
                return torch.nn.functional.cross_entropy(out, target.unsqueeze(0))

            g = grad(loss)(p)
            dot = sum((g[n] * (cv * V[n] + cu * U[n])).sum() for n in self.names)
            out = functional_call(module, p, (x.unsqueeze(0),))
            return dot + cn * torch.softmax(out, dim=1)[0, 1]

        extra = vmap(grad(regulariser), in_dims=(None, 0, 0, 0, 0, 0))(
            params, X, y, coef_v, coef_u, coef_noise
        )
        flat = torch.cat([extra[n].reshape(B, -1) for n in self.names], dim=1)
        return G + flat

    def private_sum(self, per_sample, X, y, groups, weights=None):
        """Clipped (then weighted) sum of the regularised gradients.

        The regularisers' batch statistics stay unweighted (this baseline has no
        proven guarantee either way); sample weights multiply the clipped rows.
        """
        if per_sample is None:
            return None, self.max_grad_norm
        G = self.regularised_gradients(per_sample.dense(), X, y, groups)
        return clipped_total(G, self.max_grad_norm, weights), self.max_grad_norm


class FairLensClassifier(NoisySGDClassifierBase):
    """DP-SGD with FairLens regularisers (Tran et al. 2021a), as in Esipova et al.'s Alg. 4.

    Binary labels and exactly two groups. A comparison baseline: its batch
    regularisers couple samples, so the reported ``privacy_spent_`` (the
    DP-SGD accounting the paper uses) is not a proven guarantee, and every
    private fit warns (:class:`~skfairdp.baselines.UnboundedSensitivityWarning`).

    Parameters
    ----------
    lambda_clip : float, default=1.0
        Weight of ``R1`` (paper: ``lambda_1 = 1``).
    lambda_noise : float, default=1.0
        Weight of ``R2`` (paper: ``lambda_2 = 1``).
    epsilon, delta, max_grad_norm, max_sample_weight, noise_multiplier, lr,
    batch_size, max_epochs, module, hidden_layer_sizes, activation,
    sensitive_values, optimizer, callbacks, random_state, secure_mode, device,
    n_jobs, record_private_diagnostics, verbose, **kwargs
        As :class:`~skfairdp.baselines.DPSGDFClassifier`, whose ``lr`` default
        of 0.1 it shares (the paper's is 0.01: pass ``lr=0.01`` to reproduce it).
        At ε = 1 with 0.01 its default fit was worse than the majority class on
        German (sex) and Communities and Crime; see :doc:`/choosing`.

    Attributes
    ----------
    group_encoder_, privacy_spent_, dp_event_, noise_multiplier_,
    effective_noise_multiplier_, history_, n_steps_, module_, classes_

    Examples
    --------
    The fit warns ``UnboundedSensitivityWarning`` (its ``privacy_spent_`` is the
    literature's accounting, not a proven guarantee):

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> s = rng.integers(0, 2, size=400)  # the sensitive attribute
    >>> y = (X[:, 0] + s + rng.normal(size=400) > 0.5).astype(int)
    >>> from skfairdp import FairLensClassifier
    >>> clf = FairLensClassifier(epsilon=1.0, hidden_layer_sizes=(16,), batch_size=64,
    ...                          max_epochs=3, random_state=0)
    >>> clf.fit(X, y, sensitive_features=s).predict(X[:5]).shape
    (5,)
    """

    # its regularisers compare the groups of the whole batch: not split over ranks
    _data_parallel = False
    _parameter_constraints = parameter_constraints(
        "activation",
        "sensitive_values",
        own={
            "lambda_clip": [Interval(Real, 0, None, closed="left")],
            "lambda_noise": [Interval(Real, 0, None, closed="left")],
        },
    )

    def __init__(
        self, lambda_clip=1.0, lambda_noise=1.0, *, epsilon=1.0, delta="auto", max_grad_norm=1.0,
        max_sample_weight=1.0, noise_multiplier=None, activation="tanh", sensitive_values=None,
        lr=0.1, batch_size=256, max_epochs=20, module=None, hidden_layer_sizes=(256, 256),
        optimizer=torch.optim.SGD, callbacks=None, random_state=None, secure_mode=False,
        device="cpu", n_jobs=None, record_private_diagnostics=False, verbose=0, **kwargs,
    ):  # fmt: skip
        self._store_parameters(locals())

    def _check_params(self) -> None:
        if not math.isinf(self.epsilon):
            warn_unbounded_sensitivity(stacklevel=5)  # user -> fit -> ... -> _check_params

    def _encode_groups(self, sensitive_features, n_samples):
        why = "FairLensClassifier's regularisers compare two groups"
        codes = self._encode_sensitive(sensitive_features, n_samples, groups_required(why))
        check_two_groups_binary(self.group_encoder_, self.classes_)
        return codes

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _make_problem(self, ctx, plan):
        # no release inside the hook: the engine records the noisy gradient sum
        names = ("max_grad_norm", "lambda_clip", "lambda_noise")
        return FairLensProblem(module=self.module_, **self._param_values(*names))
