"""DPSGDFClassifier: DPSGD-F (Xu, Du & Wu 2021), as Esipova et al. ran it (their Alg. 3).

Per step, on the Poisson batch: count per group the samples whose gradient
norm is above / at most ``C0`` (a ``2K`` vector, L2 sensitivity 1), release it
with ``N(0, sigma_c^2 I)``, floor and clamp at 0 (post-processing), and set
group ``k``'s clipping bound

    ``C_k = C0 (1 + (m~_k / b~_k) / (m~ / b~))``

(``m~_k`` noisy count above ``C0``, ``b~_k = m~_k + o~_k``, ``m~ = sum_k m~_k``,
``b~ = sum_k b~_k``). Each sample is clipped at its group's ``C_k`` and the sum
gets noise ``sigma * max_k C_k`` (the sensitivity; the paper's printed ``C0``
would not be private, its text and the authors' code use the maximum).
"""

from __future__ import annotations

import numpy as np
import torch

from .._dpsgd import NoisySGDClassifierBase
from ..base import parameter_constraints, private_fit
from ..fairness import encode_sensitive_features
from ..privacy import EventRecorder, noisy_histogram


def group_clip_bounds(
    noisy_counts: torch.Tensor, max_grad_norm: float, n_groups: int
) -> torch.Tensor:
    """``C_k`` from the released ``[m~_1..m~_K, o~_1..o~_K]`` (already post-processed).

    Groups with no (noisy) samples, or steps where no sample is (noisily) above
    ``C0``, get ``C0``.
    """
    above, below = noisy_counts[:n_groups], noisy_counts[n_groups:]
    sizes = above + below
    ratio = torch.where(sizes > 0, above / sizes.clamp(min=1.0), torch.zeros_like(above))
    total = sizes.sum()
    overall = above.sum() / total.clamp(min=1.0)
    if float(overall) <= 0.0:
        return torch.full_like(above, float(max_grad_norm))
    return float(max_grad_norm) * (1.0 + ratio / overall)


class DPSGDFProblem:
    """DPSGD-F's per-step processing as an engine problem (``private_sum`` hook).

    The count release is recorded in ``recorder`` (the fit's, shared with the
    engine; a new one by default).
    """

    private_primal = (True,)
    dual_clip = 0.0

    def __init__(self, *, max_grad_norm, n_groups, count_noise_std, random, recorder=None):
        self.state: dict = {}  # no dual state
        self.max_grad_norm = float(max_grad_norm)
        self.n_groups = int(n_groups)
        self.count_noise_std = float(count_noise_std)
        self.random = random
        self.recorder = recorder if recorder is not None else EventRecorder()
        self.bounds_log: list[torch.Tensor] = []

    def prepare_batch(self, codes):
        return codes[:, 0], codes[:, 1]

    def primal_objectives(self, outputs, y, groups):
        loss = torch.nn.functional.cross_entropy(outputs, y, reduction="none")
        return (loss,), {"loss": loss}

    def private_sum(self, per_sample, X, y, groups):
        k = self.n_groups
        device = groups.device
        if per_sample is None:
            norms = torch.zeros(0, device=device)
        else:
            norms = per_sample.norms()
        above = norms > self.max_grad_norm
        counts = torch.cat(
            [
                torch.bincount(groups[above], minlength=k),
                torch.bincount(groups[~above], minlength=k),
            ]
        ).double()
        # a row moves one of the 2K counts by 1: L2 sensitivity 1
        noisy = noisy_histogram(
            counts, self.random, noise_multiplier=self.count_noise_std, recorder=self.recorder
        )[0]
        noisy = torch.floor(noisy).clamp(min=0.0)
        bounds = group_clip_bounds(noisy, self.max_grad_norm, k)
        self.bounds_log.append(bounds)
        sensitivity = float(bounds.max())
        if per_sample is None:
            return None, sensitivity
        limit = bounds.to(norms.dtype)[groups]
        weights = (limit / (norms + 1e-12)).clamp(max=1.0)
        return per_sample.weighted_sum(weights), sensitivity


class DPSGDFClassifier(NoisySGDClassifierBase):
    """DP-SGD with group-wise adaptive clipping (DPSGD-F, Xu et al. 2021).

    A comparison method of Esipova et al. (ICLR 2023), implemented as their
    Alg. 3 on skfairdp's engine. Needs group labels at fit; the per-step group
    counts are private and accounted (jointly with the gradient by default).

    Parameters
    ----------
    epsilon : float, default=1.0
        Target epsilon (add/remove one row); ``np.inf`` trains plain SGD.
    delta : "auto" or float, default="auto"
    max_grad_norm : float, default=1.0
        ``C0``, the base clipping bound; group ``k`` is clipped at
        ``C_k = C0 (1 + r_k / r) >= C0`` (``r_k``, ``r``: noisy fractions of group
        ``k`` / of the batch above ``C0``).
    count_noise_multiplier : float, default=10.0
        Std of the noise on each of the ``2K`` counts (sensitivity 1); the paper
        uses ``10 sigma``.
    accounting : {"joint", "composed"}, default="joint"
        As :class:`~skfairdp.GlobalScalingDPClassifier`.
    lr : float, default=0.01
        SGD learning rate (paper: 0.01 with ``C0=0.5`` on Adult).
    batch_size : int, default=256
    max_epochs : int, default=20
    module : None, nn.Module class or instance, default=None
    hidden_layer_sizes : tuple of int, default=(256, 256)
    activation : str, default="tanh"
    sensitive_values : None or list, default=None
        Public domain of the sensitive feature(s) (so that which groups exist is
        not learned from the private data).
    optimizer, callbacks, random_state, secure_mode, device, n_jobs,
    record_private_diagnostics, verbose, **kwargs
        As :class:`~skfairdp.GlobalScalingDPClassifier`.

    Attributes
    ----------
    group_clip_history_ : ndarray of shape (n_steps_, n_groups)
        The group bounds ``C_k`` of each step (functions of released counts).
    group_encoder_ : GroupEncoder
    privacy_spent_, dp_event_, noise_multiplier_, effective_noise_multiplier_,
    history_, n_steps_, module_, classes_
        As :class:`~skfairdp.GlobalScalingDPClassifier`; ``noise_multiplier_``
        is the gradient-noise std over ``max_k C_k``.
    """

    _parameter_constraints: dict = parameter_constraints(
        "count_noise_multiplier", "accounting", "activation", "sensitive_values"
    )

    def __init__(
        self,
        epsilon: float = 1.0,
        delta="auto",
        max_grad_norm: float = 1.0,
        count_noise_multiplier: float = 10.0,
        accounting: str = "joint",
        lr: float = 0.01,
        batch_size: int = 256,
        max_epochs: int = 20,
        module=None,
        hidden_layer_sizes=(256, 256),
        activation: str = "tanh",
        sensitive_values=None,
        optimizer=torch.optim.SGD,
        callbacks=None,
        random_state=None,
        secure_mode: bool = False,
        device="cpu",
        n_jobs=None,
        record_private_diagnostics: bool = False,
        verbose: int = 0,
        **kwargs,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.max_grad_norm = max_grad_norm
        self.count_noise_multiplier = count_noise_multiplier
        self.accounting = accounting
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.module = module
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.sensitive_values = sensitive_values
        self.optimizer = optimizer
        self.callbacks = callbacks
        self.random_state = random_state
        self.secure_mode = secure_mode
        self.device = device
        self.n_jobs = n_jobs
        self.record_private_diagnostics = record_private_diagnostics
        self.verbose = verbose
        self._store_prefixed(kwargs)

    @private_fit
    def fit(self, X, y, *, sensitive_features=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Group labels (required).

        Returns
        -------
        self
        """
        return self._fit(X, y, sensitive_features)

    def _encode_groups(self, sensitive_features, n):
        if sensitive_features is None:
            raise ValueError(
                f"sensitive_features is required: {type(self).__name__} clips each group at its "
                "own bound. Pass fit(X, y, sensitive_features=...) (with metadata routing "
                "enabled inside a Pipeline or GridSearchCV)."
            )
        codes, self.group_encoder_ = encode_sensitive_features(
            sensitive_features, n, sensitive_values=self.sensitive_values
        )
        return codes

    def _count_noise_multiplier(self) -> float:
        return float(self.count_noise_multiplier)

    def _make_problem(self, *, random, expected_batch_size, device, n_classes, private, recorder):
        return DPSGDFProblem(
            max_grad_norm=self.max_grad_norm,
            n_groups=self.group_encoder_.n_groups_,
            count_noise_std=self.count_noise_multiplier,
            random=random,
            recorder=recorder,
        )

    def _after_fit(self, problem) -> None:
        k = self.group_encoder_.n_groups_
        self.group_clip_history_ = (
            torch.stack(problem.bounds_log).cpu().numpy()
            if problem.bounds_log
            else np.zeros((0, k))
        )
