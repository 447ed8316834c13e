"""Each estimator parameter declared once: its constraint, its default, its place in ``__init__``.

scikit-learn needs every parameter in the signature of ``__init__`` and stored
unchanged as an attribute of the same name. Five estimators share most of their
parameters (privacy target, training, module, execution), so writing that
signature and its body by hand repeats ~25 lines per estimator. Instead each
estimator *declares* its parameters (:func:`declare_parameters`): the block every
estimator takes (:data:`COMMON_CONSTRAINTS`), the shared entries it names
(:data:`SHARED_CONSTRAINTS`), and its own. :class:`~skfairdp.base.PrivateClassifierBase`
turns the declaration into ``_parameter_constraints`` (sklearn's validation) and
an ``__init__`` with an explicit signature (``inspect.signature`` and therefore
``get_params``, ``clone``, ``repr`` and ``help`` see every parameter and its
default) that only stores its arguments.

The signature: the estimator's ``positional`` own parameters first, then
keyword-only ones (as in scikit-learn since SLEP009): the privacy target, the
estimator's other own parameters, the shared ones, then training, model and
execution. ``**kwargs`` routes skorch-style ``module__*`` / ``optimizer__*``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, NamedTuple

import numpy as np
import torch
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
)

from ..nn import ACTIVATIONS
from ..privacy.accountant import ACCOUNTANTS, PRIVACY_UNITS
from .validation import HiddenLayerSizes, TorchDevice

#: Constraint of a positive real (``> 0``).
POSITIVE = Interval(Real, 0, None, closed="neither")
#: Constraint of a non-negative real (``>= 0``).
NON_NEGATIVE = Interval(Real, 0, None, closed="left")


class Param(NamedTuple):
    """One parameter: its default and its sklearn constraints."""

    default: Any
    constraints: list


_N_JOBS = [
    None,
    Interval(Integral, None, -1, closed="right"),
    Interval(Integral, 1, None, closed="left"),
]

#: Privacy-target parameters every estimator takes (first among the keyword-only ones).
_PRIVACY = {
    "epsilon": Param(1.0, [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})]),
    "delta": Param("auto", [StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")]),
    "max_grad_norm": Param(1.0, [Interval(Real, 0, None, closed="neither")]),
    "max_sample_weight": Param(1.0, [Interval(Real, 0, None, closed="neither")]),
    "noise_multiplier": Param(None, [None, Interval(Real, 0, None, closed="neither")]),
}
#: Training, model and execution parameters every estimator takes (last in the signature).
_TRAINING = {
    "lr": Param(0.1, [Interval(Real, 0, None, closed="neither")]),
    "batch_size": Param(256, [Interval(Integral, 1, None, closed="left")]),
    "max_epochs": Param(20, [Interval(Integral, 1, None, closed="left")]),
    "module": Param(None, [None, type, HasMethods(["forward"])]),
    "hidden_layer_sizes": Param((), [HiddenLayerSizes()]),
    "optimizer": Param(torch.optim.SGD, [type]),
    "callbacks": Param(None, [None, list, tuple]),
    "random_state": Param(None, ["random_state"]),
    "secure_mode": Param(False, ["boolean"]),
    "device": Param("cpu", [TorchDevice()]),
    "n_jobs": Param(None, _N_JOBS),
    "record_private_diagnostics": Param(False, ["boolean"]),
    "verbose": Param(0, ["verbose"]),
}
_COMMON = {**_PRIVACY, **_TRAINING}

#: Parameters that several (not all) estimators take; each names the ones it takes.
_SHARED = {
    "privacy_unit": Param("record", [StrOptions(set(PRIVACY_UNITS))]),
    "accountant": Param("auto", [StrOptions(set(ACCOUNTANTS))]),
    "iterate": Param("last", [StrOptions({"last", "random"})]),
    "calibration": Param("accountant", [StrOptions({"accountant", "paper"})]),
    "sensitive_values": Param(None, [None, "array-like", dict]),
    "activation": Param("tanh", [StrOptions(set(ACTIVATIONS))]),
    "count_noise_multiplier": Param(
        "auto", [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")]
    ),
}

#: Constraints of the parameters every estimator's ``__init__`` takes.
COMMON_CONSTRAINTS: dict = {name: p.constraints for name, p in _COMMON.items()}
#: Constraints of the parameters several estimators take.
SHARED_CONSTRAINTS: dict = {name: p.constraints for name, p in _SHARED.items()}


def parameter_constraints(
    *shared: str, own: dict | None = None, also_accept: dict | None = None
) -> dict:
    """An estimator's ``_parameter_constraints``.

    :data:`COMMON_CONSTRAINTS`, plus the :data:`SHARED_CONSTRAINTS` entries named in
    ``shared``, plus ``own`` (the estimator's own parameters). A name that is not
    shared, or an own entry that redefines a common or shared one, is an error: each
    parameter is constrained in one place.

    Parameters
    ----------
    *shared : str
        Names in :data:`SHARED_CONSTRAINTS`.
    own : dict, optional
        The estimator's own ``name -> constraints``.
    also_accept : dict of str to list, optional
        More valid values of common or shared parameters for this estimator, as
        constraints added to theirs (e.g. ``{"batch_size": [StrOptions({"auto"})]}``
        for an estimator that resolves ``"auto"`` in ``fit``).

    Returns
    -------
    dict
        ``name -> constraints`` for every parameter of the estimator.
    """
    own = dict(own or {})
    unknown = sorted(set(shared) - set(SHARED_CONSTRAINTS))
    if unknown:
        raise ValueError(f"not in SHARED_CONSTRAINTS: {unknown}")
    redefined = sorted(set(own) & (set(COMMON_CONSTRAINTS) | set(SHARED_CONSTRAINTS)))
    if redefined:
        raise ValueError(f"own constraints redefine common/shared ones: {redefined}")
    constraints = {
        **COMMON_CONSTRAINTS,
        **{name: SHARED_CONSTRAINTS[name] for name in shared},
        **own,
    }
    for name, extra in (also_accept or {}).items():
        if name not in constraints or name in own:
            raise ValueError(f"also_accept names {name!r}, not a common or shared parameter")
        constraints[name] = [*constraints[name], *extra]
    return constraints


@dataclass(frozen=True)
class ParameterDeclaration:
    """An estimator's parameters: ``defaults`` in signature order, constraints, positional ones.

    Made by :func:`declare_parameters`; :class:`~skfairdp._fit.base.PrivateEstimatorBase`
    builds ``_parameter_constraints`` from it.
    """

    defaults: Mapping[str, Any]
    constraints: Mapping[str, list]
    positional: tuple[str, ...]

    def signature(self) -> inspect.Signature:
        """The ``__init__`` signature (``self`` first, ``**kwargs`` last)."""
        P = inspect.Parameter
        params = [P("self", P.POSITIONAL_OR_KEYWORD)]
        for name, default in self.defaults.items():
            kind = P.POSITIONAL_OR_KEYWORD if name in self.positional else P.KEYWORD_ONLY
            params.append(P(name, kind, default=default))
        params.append(P("kwargs", P.VAR_KEYWORD))
        return inspect.Signature(params)

    def make_init(self, owner: type):
        """``owner.__init__``: stores each argument under its name, routes ``**kwargs``."""
        signature = self.signature()

        def __init__(self, *args, **kwargs):
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            del arguments["self"]
            prefixed = arguments.pop("kwargs")
            for name, value in arguments.items():
                setattr(self, name, value)
            self._store_prefixed(prefixed)

        __init__.__signature__ = signature
        __init__.__qualname__ = f"{owner.__qualname__}.__init__"
        __init__.__module__ = owner.__module__
        __init__.__doc__ = f"Store the parameters (see :class:`{owner.__name__}`)."
        return __init__


def declare_parameters(
    *shared: str,
    own: dict[str, Param] | None = None,
    defaults: dict[str, Any] | None = None,
    positional: tuple[str, ...] = (),
    also_accept: dict[str, list] | None = None,
) -> ParameterDeclaration:
    """Declare an estimator's parameters (set it as the class attribute ``_parameters``).

    Parameters
    ----------
    *shared : str
        The :data:`SHARED_CONSTRAINTS` parameters the estimator takes.
    own : dict of str to Param, optional
        The estimator's own parameters, in signature order.
    defaults : dict, optional
        Defaults of common or shared parameters that differ for this estimator
        (e.g. ``{"max_epochs": 40}``).
    positional : tuple of str, default=()
        Own parameters that may be passed by position (the first ones of
        ``own``, e.g. the fairness notion); every other parameter is keyword-only.
    also_accept : dict of str to list, optional
        More valid values of common or shared parameters for this estimator, as
        constraints added to theirs (e.g. ``{"batch_size": [StrOptions({"auto"})]}``
        for an estimator that resolves ``"auto"`` in ``fit``).

    Returns
    -------
    ParameterDeclaration
    """
    own = dict(own or {})
    constraints = parameter_constraints(
        *shared, own={name: p.constraints for name, p in own.items()}
    )
    if tuple(own)[: len(positional)] != tuple(positional):
        raise ValueError(f"positional={positional} must be the first own parameters")
    unknown = sorted(set(defaults or {}) - set(constraints))
    if unknown:
        raise ValueError(f"defaults for parameters the estimator lacks: {unknown}")
    for name, extra in (also_accept or {}).items():
        if name not in constraints or name in own:
            raise ValueError(f"also_accept names {name!r}, not a common or shared parameter")
        constraints[name] = [*constraints[name], *extra]
    order = [
        *positional,
        *_PRIVACY,
        *(name for name in own if name not in positional),
        *shared,
        *_TRAINING,
    ]
    table = {**_COMMON, **_SHARED, **own}
    values = {name: table[name].default for name in order}
    values.update(defaults or {})
    return ParameterDeclaration(values, constraints, tuple(positional))
