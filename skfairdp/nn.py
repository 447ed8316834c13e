"""Default torch modules and skorch-style module resolution."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence

from torch import nn

from ._fit.validation import check_hidden_layer_sizes

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "logistic": nn.Sigmoid, "identity": nn.Identity}


class MLPModule(nn.Module):
    """Fully connected network with one logit per class.

    With ``hidden_layer_sizes=()`` it is multinomial logistic regression (one
    ``Linear`` layer; binary tasks get two logits).

    Parameters
    ----------
    n_features : int
        Input width.
    n_outputs : int
        Number of logits.
    hidden_layer_sizes : sequence of int
        Widths of hidden layers (positive ints; a ValueError names the parameter
        otherwise).
    activation : {"relu", "tanh", "logistic", "identity"}
        Hidden activation.
    """

    def __init__(
        self,
        n_features: int,
        n_outputs: int,
        hidden_layer_sizes: Sequence[int] = (),
        activation: str = "relu",
    ):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        widths = [int(n_features), *check_hidden_layer_sizes(hidden_layer_sizes)]
        layers: list[nn.Module] = []
        for width_in, width_out in zip(widths[:-1], widths[1:]):
            layers += [nn.Linear(width_in, width_out), ACTIVATIONS[activation]()]
        layers.append(nn.Linear(widths[-1], int(n_outputs)))
        self.layers = nn.Sequential(*layers)

    def forward(self, X):
        return self.layers(X)


def build_module(
    module,
    *,
    n_features: int,
    n_outputs: int,
    hidden_layer_sizes: Sequence[int] = (),
    module_kwargs: dict | None = None,
) -> nn.Module:
    """Resolve the ``module`` parameter into an initialised ``nn.Module``.

    ``None`` builds :class:`MLPModule` from ``hidden_layer_sizes``; a class is
    instantiated with ``module__*`` keyword arguments (``n_features`` and
    ``n_outputs`` are passed too when its ``__init__`` accepts them and the user
    did not set them); an instance is deep-copied so that fitting never mutates
    the user's object, and then must not receive ``module__*`` arguments.
    """
    kwargs = dict(module_kwargs or {})
    if module is None:
        kwargs.setdefault("hidden_layer_sizes", tuple(hidden_layer_sizes))
        return MLPModule(n_features, n_outputs, **kwargs)
    if isinstance(module, nn.Module):
        if kwargs:
            raise ValueError(
                "module__* parameters were given but module is an instance; pass the class "
                f"instead (got {sorted(kwargs)})"
            )
        return copy.deepcopy(module)
    if isinstance(module, type) and issubclass(module, nn.Module):
        accepted = inspect.signature(module.__init__).parameters
        for name, value in (("n_features", n_features), ("n_outputs", n_outputs)):
            if name in accepted:
                kwargs.setdefault(name, value)
        return module(**kwargs)
    raise TypeError(f"module must be None, a torch.nn.Module subclass or instance, got {module!r}")
