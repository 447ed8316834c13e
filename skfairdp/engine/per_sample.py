"""Per-sample gradients of per-sample objectives, from one forward pass.

Two strategies compute the same thing:

``"vmap"``
    ``torch.func``: ``vmap(jacrev(functional_call))``; works for any module
    whose forward treats samples independently (no batch statistics).
``"linear"``
    for modules whose only parametrised layers are :class:`torch.nn.Linear`:
    one ordinary forward and backward, and the per-sample weight gradient as the
    outer product of the layer's input and its output gradient (as Opacus does).
    Much lower overhead for the small tabular models this library targets.

``"auto"`` picks ``"linear"`` when it applies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, jacrev, vmap

# An objective maps (model outputs for a batch, *per-sample tensors) to a tuple
# of K per-sample objective vectors, each of shape (B,).
Objectives = Callable[..., Sequence[torch.Tensor]]

_BATCH_STAT_LAYERS = (nn.modules.batchnorm._BatchNorm,)


def check_per_sample_compatible(module: nn.Module) -> None:
    """Raise if ``module`` mixes samples (batch statistics) in its forward pass."""
    for name, sub in module.named_modules():
        if isinstance(sub, _BATCH_STAT_LAYERS):
            raise ValueError(
                f"module layer {name or type(sub).__name__!r} ({type(sub).__name__}) uses batch "
                "statistics, so one sample's gradient depends on the others and clipping no "
                "longer bounds its influence. Use GroupNorm/LayerNorm or no normalisation."
            )


def _linear_only(module: nn.Module) -> bool:
    for sub in module.modules():
        own = list(sub.parameters(recurse=False))
        if own and not isinstance(sub, nn.Linear):
            return False
    return any(isinstance(sub, nn.Linear) for sub in module.modules())


class PerSampleGradients:
    """Computes flat per-sample gradients of the trainable parameters of ``module``.

    Parameters
    ----------
    module : torch.nn.Module
        The model; its trainable parameters are differentiated.
    strategy : {"auto", "vmap", "linear"}
        See the module docstring.
    """

    def __init__(self, module: nn.Module, strategy: str = "auto"):
        check_per_sample_compatible(module)
        if strategy not in ("auto", "vmap", "linear"):
            raise ValueError(f"strategy must be 'auto', 'vmap' or 'linear', got {strategy!r}")
        if strategy == "auto":
            strategy = "linear" if _linear_only(module) else "vmap"
        if strategy == "linear" and not _linear_only(module):
            raise ValueError("strategy='linear' needs a module whose parametrised layers are Linear")
        self.module = module
        self.strategy = strategy
        self.names = [n for n, p in module.named_parameters() if p.requires_grad]
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.sizes = [p.numel() for p in self.params]
        self.n_params = sum(self.sizes)

    def __call__(
        self, X: torch.Tensor, objectives: Objectives, *per_sample: torch.Tensor
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Per-sample gradients and the batch outputs.

        Parameters
        ----------
        X : Tensor of shape (B, ...)
            Inputs.
        objectives : callable
            ``objectives(outputs, *per_sample) -> (o_1, ..., o_K)`` with each
            ``o_k`` of shape ``(B,)``; sample ``i``'s objectives must depend only
            on row ``i`` of ``outputs`` and of the per-sample tensors.
        *per_sample : Tensor
            Tensors with leading dimension ``B`` (labels, groups, coefficients).

        Returns
        -------
        grads : list of K tensors of shape (B, n_params)
        outputs : Tensor
            The module's outputs for ``X``, detached.
        """
        if self.strategy == "linear":
            return self._linear(X, objectives, per_sample)
        return self._vmap(X, objectives, per_sample)

    def _vmap(self, X, objectives, per_sample):
        params = {n: p.detach() for n, p in zip(self.names, self.params)}
        buffers = dict(self.module.named_buffers())

        def one(params_, x, *extra):
            out = functional_call(self.module, (params_, buffers), (x.unsqueeze(0),))
            objs = objectives(out, *(e.unsqueeze(0) for e in extra))
            return torch.stack([o.squeeze(0) for o in objs]), out.squeeze(0)

        jac, outputs = vmap(jacrev(one, has_aux=True), in_dims=(None, 0) + (0,) * len(per_sample))(
            params, X, *per_sample
        )
        batch = X.shape[0]
        flat = torch.cat([jac[n].reshape(batch, jac[n].shape[1], -1) for n in self.names], dim=2)
        return [flat[:, k] for k in range(flat.shape[1])], outputs.detach()

    def _linear(self, X, objectives, per_sample):
        records: dict[nn.Linear, list[tuple[torch.Tensor, torch.Tensor]]] = {}

        def hook(layer, inputs, output):
            records.setdefault(layer, []).append((inputs[0].detach(), output))

        handles = [
            m.register_forward_hook(hook) for m in self.module.modules() if isinstance(m, nn.Linear)
        ]
        try:
            outputs = self.module(X)
        finally:
            for h in handles:
                h.remove()
        objs = objectives(outputs, *per_sample)
        layer_outputs = [out for calls in records.values() for _, out in calls]
        grads = []
        for k, obj in enumerate(objs):
            backprops = torch.autograd.grad(
                obj.sum(), layer_outputs, retain_graph=k < len(objs) - 1, allow_unused=True
            )
            grads.append(self._assemble(records, backprops, X.shape[0], X.dtype, X.device))
        return grads, outputs.detach()

    def _assemble(self, records, backprops, batch, dtype, device):
        per_param: dict[int, torch.Tensor] = {}
        it = iter(backprops)
        for layer, calls in records.items():
            for activation, _ in calls:
                grad_out = next(it)
                if grad_out is None:
                    continue
                gw = torch.einsum("b...o,b...i->boi", grad_out, activation)
                self._accumulate(per_param, layer.weight, gw)
                if layer.bias is not None:
                    gb = grad_out.reshape(batch, -1, grad_out.shape[-1]).sum(1)
                    self._accumulate(per_param, layer.bias, gb)
        columns = []
        for p, size in zip(self.params, self.sizes):
            g = per_param.get(id(p))
            columns.append(
                g.reshape(batch, size) if g is not None else torch.zeros(batch, size, dtype=dtype, device=device)
            )
        return torch.cat(columns, dim=1)

    @staticmethod
    def _accumulate(store, param, grad):
        if not param.requires_grad:
            return
        key = id(param)
        store[key] = grad if key not in store else store[key] + grad

    def unflatten(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """Split a flat ``(n_params,)`` vector into parameter-shaped tensors."""
        return [chunk.view_as(p) for chunk, p in zip(flat.split(self.sizes), self.params)]
