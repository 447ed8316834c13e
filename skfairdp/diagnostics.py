"""Disparate-impact diagnostics of a private model (NOT private: opt-in, for analysis).

Everything here reads raw data (usually the training data) and exact gradients,
Hessian-vector products and losses on it. Nothing is noised and nothing counts
toward ``privacy_spent_``: run it on data you may inspect, and do not publish
its output as if it were covered by the model's guarantee.

:func:`disparate_impact_report` measures, per group ``k`` (Esipova et al., ICLR
2023, Eq. 1-2 and Prop. 1-2):

- ``privacy_cost`` ``pi_k = acc_k(reference) - acc_k(private)`` and
  ``excessive_risk`` ``R_k = loss_k(private) - loss_k(reference)``, with their
  gaps to the best-off group;
- at the private model's parameters ``theta``, the second-order excess loss of
  one private step on group ``k`` split into ``R_mag`` (magnitude error: the
  processed batch gradient ``gbar_B`` is shorter than ``g_B``) and ``R_dir``
  (direction error: ``gbar_B`` points elsewhere), in the paper's HVP form
  (its App. A, Eq. 5), and ``R_noise = (lr^2 / 2) Tr(H_k) (sigma C0 / E)^2``
  with a Hutchinson trace estimate (Rademacher probes). The paper prints
  ``R_noise`` without the ``1 / E^2`` of its own normalisation by the batch
  size; it is included here. ``direction_error`` is
  ``cos(g_Dk, g_B) - cos(g_Dk, gbar_B)``: positive when processing turns the
  step away from group ``k``'s gradient.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from sklearn.utils.validation import check_is_fitted, check_random_state
from torch.func import functional_call, grad, jvp, vmap

from .fairness import encode_sensitive_features

__all__ = ["disparate_impact_report", "plot_group_accuracy", "processed_weights"]


def processed_weights(estimator, norms: torch.Tensor, groups: torch.Tensor | None = None):
    """Per-sample factors ``gamma_i`` the fitted ``estimator`` applies (noise aside).

    ``GlobalScalingDPClassifier``: its variant at its final ``Z``;
    ``DPSGDFClassifier``: its last group bounds; any other private estimator:
    flat clipping at ``max_grad_norm``; a non-private fit: 1.
    """
    from .baselines import DPSGDFClassifier
    from .dpsgd.global_scaling import GlobalScalingDPClassifier, scaling_weights

    if math.isinf(getattr(estimator, "epsilon", math.inf)):
        return torch.ones_like(norms)
    c0 = float(estimator.max_grad_norm)
    if isinstance(estimator, GlobalScalingDPClassifier):
        z = float(getattr(estimator, "z_", estimator.z_init))
        return scaling_weights(norms, z, c0, estimator.variant)
    if isinstance(estimator, DPSGDFClassifier) and groups is not None:
        history = estimator.group_clip_history_
        if len(history):
            bounds = torch.as_tensor(history[-1], dtype=norms.dtype)
            if int(groups.max()) < len(bounds):
                return (bounds[groups] / (norms + 1e-12)).clamp(max=1.0)
    return (c0 / (norms + 1e-12)).clamp(max=1.0)


def _group_metrics(estimator, X, y, codes, n_groups):
    proba = np.clip(np.asarray(estimator.predict_proba(X), dtype=float), 1e-15, 1.0)
    classes = list(estimator.classes_)
    index = np.array([classes.index(v) for v in y])
    correct = proba.argmax(axis=1) == index
    losses = -np.log(proba[np.arange(len(y)), index])
    acc = np.array([correct[codes == k].mean() for k in range(n_groups)])
    loss = np.array([losses[codes == k].mean() for k in range(n_groups)])
    return acc, loss


def disparate_impact_report(
    private_estimator,
    reference_estimator,
    X,
    y,
    *,
    sensitive_features,
    decomposition: bool = True,
    lr: float | None = None,
    n_batches: int = 5,
    batch_size: int | None = None,
    hutchinson_probes: int = 100,
    random_state=0,
) -> pd.DataFrame:
    """Per-group privacy cost, excessive risk and their error decomposition (not private).

    Parameters
    ----------
    private_estimator : fitted skfairdp estimator
        A classifier with ``module_`` (for the decomposition) and ``predict_proba``.
    reference_estimator : fitted classifier
        The non-private reference (same architecture in the paper), with
        ``predict_proba`` and the same ``classes_``.
    X, y : array-like
        Data to evaluate on. Outcome metrics are usually taken on a test set;
        the decomposition describes training and uses the training set.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
        Group labels (used here only; never by ``GlobalScalingDPClassifier.fit``).
    decomposition : bool, default=True
        Also compute ``R_dir``, ``R_mag``, ``R_clip``, ``R_noise`` and
        ``direction_error`` (needs a torch ``module_``).
    lr : float, default=None
        Step size of the analysed step; ``None`` uses the estimator's ``lr``.
    n_batches : int, default=5
        Batches averaged for the expectations over ``B``.
    batch_size : int, default=None
        Size of those batches; ``None`` uses the estimator's ``batch_size``.
    hutchinson_probes : int, default=100
        Rademacher probes per group for ``Tr(H_k)`` (the paper's 100); 0 skips
        ``R_noise``.
    random_state : int or None, default=0

    Returns
    -------
    pandas.DataFrame
        One row per group (indexed by the group label) with ``n``, ``accuracy``,
        ``reference_accuracy``, ``privacy_cost``, ``loss``, ``reference_loss``,
        ``excessive_risk``, ``privacy_cost_gap``, ``excessive_risk_gap`` (to the
        group with the smallest value; the largest entry is the max pairwise
        gap) and, with ``decomposition``, ``R_mag``, ``R_dir``, ``R_clip``,
        ``R_noise``, ``direction_error``. ``attrs`` holds the global
        ``cos_processed`` (``cos(g_B, gbar_B)``) and ``magnitude_ratio``
        (``||gbar_B|| / ||g_B||``), and ``private: False``.
    """
    check_is_fitted(private_estimator)
    check_is_fitted(reference_estimator)
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y)
    codes, encoder = encode_sensitive_features(sensitive_features, len(y))
    k = encoder.n_groups_
    acc, loss = _group_metrics(private_estimator, X, y, codes, k)
    ref_acc, ref_loss = _group_metrics(reference_estimator, X, y, codes, k)
    report = pd.DataFrame(
        {
            "n": np.bincount(codes, minlength=k),
            "accuracy": acc,
            "reference_accuracy": ref_acc,
            "privacy_cost": ref_acc - acc,
            "loss": loss,
            "reference_loss": ref_loss,
            "excessive_risk": loss - ref_loss,
        },
        index=pd.Index([encoder.format_group(g) for g in range(k)], name="group"),
    )
    report["privacy_cost_gap"] = report["privacy_cost"] - report["privacy_cost"].min()
    report["excessive_risk_gap"] = report["excessive_risk"] - report["excessive_risk"].min()
    report.attrs["private"] = False
    if decomposition:
        terms, extra = _decomposition(
            private_estimator, X, y, codes, k, lr, n_batches, batch_size,
            hutchinson_probes, random_state,
        )  # fmt: skip
        for name, values in terms.items():
            report[name] = values
        report.attrs.update(extra)
    return report


def _decomposition(est, X, y, codes, k, lr, n_batches, batch_size, probes, random_state):
    module = est.module_
    device = next(module.parameters()).device
    classes = list(est.classes_)
    target = torch.as_tensor(np.array([classes.index(v) for v in y]), device=device)
    inputs = torch.as_tensor(X, device=device)
    groups = torch.as_tensor(codes, device=device)
    names = [n for n, p in module.named_parameters() if p.requires_grad]
    params = {n: p.detach() for n, p in module.named_parameters() if p.requires_grad}
    sizes = [params[n].numel() for n in names]
    eta = float(est.lr if lr is None else lr)
    rng = check_random_state(random_state)
    gen = torch.Generator(device="cpu").manual_seed(int(rng.randint(2**31 - 1)))

    def flat(tree):
        return torch.cat([tree[n].reshape(-1) for n in names])

    def tree(vec):
        return {n: t.view_as(params[n]) for n, t in zip(names, vec.split(sizes))}

    def mean_loss(rows):
        def f(p):
            out = functional_call(module, p, (inputs[rows],))
            return torch.nn.functional.cross_entropy(out, target[rows])

        return f

    def one_loss(p, x, t):
        out = functional_call(module, p, (x.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, t.unsqueeze(0))

    group_rows = [torch.nonzero(groups == g).squeeze(1) for g in range(k)]
    group_loss = [mean_loss(rows) for rows in group_rows]
    g_groups = [flat(grad(f)(params)) for f in group_loss]

    def hvp(g, v):
        return flat(jvp(grad(group_loss[g]), (params,), (tree(v),))[1])

    n = len(y)
    m = int(batch_size or getattr(est, "batch_size", 256))
    acc = {name: np.zeros(k) for name in ("R_mag", "R_dir", "direction_error")}
    cos_processed, ratios = [], []
    for _ in range(n_batches):
        rows = torch.randperm(n, generator=gen)[: min(m, n)].to(device)
        per = vmap(grad(one_loss), in_dims=(None, 0, 0))(params, inputs[rows], target[rows])
        G = torch.cat([per[name].reshape(len(rows), -1) for name in names], dim=1)
        norms = torch.linalg.vector_norm(G, dim=1)
        gamma = processed_weights(est, norms.double(), groups[rows]).to(G.dtype)
        g_b = G.mean(0)
        gbar_b = (gamma @ G) / len(rows)
        r = float(gbar_b.norm() / g_b.norm().clamp(min=1e-30))
        cos_processed.append(float(torch.nn.functional.cosine_similarity(g_b, gbar_b, dim=0)))
        ratios.append(r)
        for g in range(k):
            gd = g_groups[g]
            g_hg = float(g_b @ hvp(g, g_b))
            gbar_hgbar = float(gbar_b @ hvp(g, gbar_b))
            acc["R_mag"][g] += eta * float(gd @ (g_b - r * g_b)) + 0.5 * eta**2 * (r * r - 1) * g_hg
            acc["R_dir"][g] += eta * float(gd @ (r * g_b - gbar_b)) + 0.5 * eta**2 * (
                gbar_hgbar - r * r * g_hg
            )
            cos = torch.nn.functional.cosine_similarity
            acc["direction_error"][g] += float(cos(gd, g_b, dim=0) - cos(gd, gbar_b, dim=0))
    terms = {name: values / max(n_batches, 1) for name, values in acc.items()}
    terms["R_clip"] = terms["R_mag"] + terms["R_dir"]
    noise_std = _noise_std_over_batch(est, n)
    if probes > 0 and noise_std > 0:
        traces = np.zeros(k)
        for g in range(k):
            total = 0.0
            for _ in range(probes):
                v = (torch.randint(0, 2, (sum(sizes),), generator=gen) * 2 - 1).to(
                    device=device, dtype=g_b.dtype
                )
                total += float(v @ hvp(g, v))
            traces[g] = total / probes
        terms["R_noise"] = 0.5 * eta**2 * traces * noise_std**2
        terms["hessian_trace"] = traces
    else:
        terms["R_noise"] = np.zeros(k)
    extra = {
        "cos_processed": float(np.mean(cos_processed)),
        "magnitude_ratio": float(np.mean(ratios)),
        "lr": eta,
    }
    return {key: terms[key] for key in terms}, extra


def _noise_std_over_batch(est, n):
    """Std of the noise on the averaged update: ``sigma * C0 / E`` (0 if non-private)."""
    sigma = getattr(est, "noise_multiplier_", math.inf)
    if math.isinf(getattr(est, "epsilon", math.inf)) or math.isinf(sigma):
        return 0.0
    expected = min(float(getattr(est, "batch_size", n)), float(n))
    return float(sigma) * float(est.max_grad_norm) / expected


def plot_group_accuracy(report: pd.DataFrame, ax=None, *, title: str | None = None):
    """Bar chart of per-group accuracy, private vs reference, from a report.

    Returns the matplotlib ``Axes``.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(1.6 + 1.2 * len(report), 3.2))
    x = np.arange(len(report))
    width = 0.38
    ax.bar(x - width / 2, 100 * report["reference_accuracy"], width, label="reference")
    ax.bar(x + width / 2, 100 * report["accuracy"], width, label="private")
    for xi, cost in zip(x, report["privacy_cost"]):
        top = 100 * max(report["reference_accuracy"].max(), report["accuracy"].max())
        ax.annotate(f"π={100 * cost:.1f}", (xi, top), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [str(i) for i in report.index])
    ax.set_ylabel("accuracy (%)")
    low = 100 * min(report["reference_accuracy"].min(), report["accuracy"].min())
    ax.set_ylim(max(0.0, low - 10.0), 103.0)
    ax.legend(loc="lower right", fontsize=8)
    if title:
        ax.set_title(title)
    return ax
