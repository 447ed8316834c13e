"""The constraints of every estimator parameter, each written once.

scikit-learn validates parameters against ``_parameter_constraints``. Every
estimator on the fit template takes the common block (:data:`COMMON_CONSTRAINTS`:
privacy target, training, module, execution), names the shared entries it takes
(:data:`SHARED_CONSTRAINTS`) and adds its own; :func:`parameter_constraints`
composes them, so one concept has one name and one constraint across estimators.
The defaults are in each estimator's explicit ``__init__`` (scikit-learn's shape).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
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

_N_JOBS = [
    None,
    Interval(Integral, None, -1, closed="right"),
    Interval(Integral, 1, None, closed="left"),
]

#: Constraints of the parameters every estimator's ``__init__`` takes.
COMMON_CONSTRAINTS: dict = {
    # the privacy target
    "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
    "delta": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")],
    "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
    "max_sample_weight": [Interval(Real, 0, None, closed="neither")],
    "noise_multiplier": [None, Interval(Real, 0, None, closed="neither")],
    # training, model and execution (skorch's names)
    "lr": [Interval(Real, 0, None, closed="neither")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "max_epochs": [Interval(Integral, 1, None, closed="left")],
    "module": [None, type, HasMethods(["forward"])],
    "hidden_layer_sizes": [HiddenLayerSizes()],
    "optimizer": [type],
    "callbacks": [None, list, tuple],
    "random_state": ["random_state"],
    "secure_mode": ["boolean"],
    "device": [TorchDevice()],
    "n_jobs": _N_JOBS,
    "record_private_diagnostics": ["boolean"],
    "verbose": ["verbose"],
}
#: Constraints of the parameters several (not all) estimators take; each names its own.
SHARED_CONSTRAINTS: dict = {
    "privacy_unit": [StrOptions(set(PRIVACY_UNITS))],
    "accountant": [StrOptions(set(ACCOUNTANTS))],
    "iterate": [StrOptions({"last", "random"})],
    "calibration": [StrOptions({"accountant", "paper"})],
    "sensitive_values": [None, "array-like", dict],
    "activation": [StrOptions(set(ACTIVATIONS))],
    "count_noise_multiplier": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
}


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


def store_parameters(estimator, arguments: dict) -> dict:
    """Store ``__init__``'s named arguments unchanged on ``estimator``; return ``**kwargs``.

    ``arguments`` is ``locals()`` at the top of ``__init__``: each named argument
    becomes the attribute of the same name, as scikit-learn requires (no
    validation, no conversion: that happens in ``fit``). The estimator's explicit
    signature stays the one place its parameters and defaults are written.
    """
    arguments = {k: v for k, v in arguments.items() if k not in ("self", "__class__")}
    kwargs = arguments.pop("kwargs", {})
    for name, value in arguments.items():
        setattr(estimator, name, value)
    return kwargs
