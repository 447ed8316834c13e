"""What the dedicated steps for one ``nn.Linear`` layer share (DP-FERMI's and RaCO-DP's).

:class:`~skfairdp.fermi.linear_step.LinearErmiStep` and
:class:`~skfairdp.raco.linear_step.LinearRacoStep` compute an engine step's release and
apply from a batch's rows without the engine's per-step machinery (``engine.train``'s
``fast_step``). Their releases differ; their bookkeeping does not, and lives here:

- :func:`single_linear`: the model's one ``nn.Linear`` layer, or None;
- :func:`declines_fit`: the fit-level conditions under which neither applies (the engine
  then takes the whole fit);
- :class:`LinearStep`: the layer's parameters and their autograd-free aliases, the
  batch's sampling rate and denominator, the flat buffer the clipped sum is written to,
  the primal half of :func:`~skfairdp.engine.step.apply` (the plain-SGD shortcut or the
  optimizer's step) and the ``.grad`` the engine would leave.
"""

from __future__ import annotations

import torch
from torch import nn

from ..privacy.collective import active_collective
from .step import plain_sgd

__all__ = ["LinearStep", "declines_fit", "single_linear"]


def single_linear(module: nn.Module) -> nn.Linear | None:
    """The layer of a module that is one ``nn.Linear`` (itself, or ``MLPModule`` without
    hidden layers) with a trainable bias and weight, no hooks, float32; else None."""
    layer = module
    from ..nn import MLPModule

    if type(module) is MLPModule and len(module.layers) == 1:
        layer = module.layers[0]
    if type(layer) is not nn.Linear or layer.bias is None:
        return None
    params = [p for p in module.parameters() if p.requires_grad]
    if len(params) != 2 or params[0] is not layer.weight or params[1] is not layer.bias:
        return None
    if layer.weight.dtype != torch.float32 or layer.bias.dtype != torch.float32:
        return None
    hooked = (
        m._forward_hooks or m._forward_pre_hooks
        for m in (module, *module.modules())  # nn.Module.__call__ would run these
    )
    if any(hooked) or nn.modules.module._global_forward_hooks:
        return None
    if nn.modules.module._global_forward_pre_hooks:
        return None
    return layer


def declines_fit(X, noise, sampler, record_diagnostics: bool) -> bool:
    """True where a dedicated linear step cannot take this fit.

    A matrix that is not a 2-D float32 CPU tensor (the steps do the batch's arithmetic in
    NumPy on the host), a non-private fit, recorded diagnostics, a data-parallel
    collective, or a sampler other than Poisson.
    """
    if X is None or X.dim() != 2 or X.dtype != torch.float32 or X.device.type != "cpu":
        return True
    if not noise.private or record_diagnostics or active_collective() is not None:
        return True
    return not getattr(sampler, "poisson", False)


class LinearStep:
    """The shared half of a dedicated step for a model that is one ``nn.Linear`` layer.

    Subclasses call :meth:`_bind` first in their ``__init__`` and :meth:`start_epoch`
    last; their ``step`` writes the clipped sum into ``self._total`` and hands the
    released primal to :meth:`_primal_step`; their ``finish`` calls
    :meth:`_restore_grads`.
    """

    def _bind(self, problem, layer, X, sampler, optimizer, random, recorder) -> None:
        self.problem, self.X, self.optimizer = problem, X, optimizer
        self.weight, self.bias = layer.weight, layer.bias
        # aliases without autograd (they see the in-place steps): the forward builds no graph
        self._weight_data, self._bias_data = layer.weight.detach(), layer.bias.detach()
        self.random, self.recorder = random, recorder
        self.q = float(sampler.sampling_rate)
        self.denominator = float(sampler.expected_batch_size)
        self.sizes = [self.weight.numel(), self.bias.numel()]
        total = torch.empty(sum(self.sizes))
        weight_part = total[: self.sizes[0]].view(self.weight.shape)
        self._total = (total, weight_part, total[self.sizes[0] :])
        self._grads = None  # the last plain-SGD step's gradients, for the parameters' .grad
        self.sgd = False

    def start_epoch(self) -> None:
        """Read the optimizer's settings (a callback may have changed them)."""
        self.sgd = plain_sgd(self.optimizer)

    def _primal_step(self, primal: torch.Tensor) -> None:
        """The parameters' step of :func:`~skfairdp.engine.step.apply` on the released sum."""
        primal = primal / self.denominator
        weight, bias = self.weight, self.bias
        grad_w, grad_b = primal.split_with_sizes(self.sizes)
        grad_w = grad_w.view(weight.shape)
        if self.sgd:  # the parameters' .grad: set by finish() (the last step's, as the engine)
            lr = -self.optimizer.param_groups[0]["lr"]
            self._weight_data.add_(grad_w, alpha=lr)  # aliases: no autograd to skip
            self._bias_data.add_(grad_b, alpha=lr)
            self._grads = (grad_w, grad_b)
        else:
            weight.grad, bias.grad = grad_w, grad_b
            self.optimizer.step()

    def _restore_grads(self) -> None:
        """The last plain-SGD step's gradient becomes the parameters' ``.grad``."""
        if self._grads is not None:
            self.weight.grad, self.bias.grad = self._grads
            self._grads = None
