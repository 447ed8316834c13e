"""How ``sensitive_features`` reaches a fit or a scorer inside scikit-learn: the hint of an error.

scikit-learn forwards ``sensitive_features`` from a ``Pipeline``, ``GridSearchCV`` or
``cross_validate`` to skfairdp's estimators and scorers only through metadata routing. When
one of them is called without it, its error ends with :func:`routing_hint`, which names
``sklearn.set_config(enable_metadata_routing=True)`` while routing is disabled.
"""

from __future__ import annotations

import sklearn

__all__ = ["ENABLE_ROUTING", "routing_enabled", "routing_hint"]

#: The call that enables metadata routing, as the errors write it.
ENABLE_ROUTING = "sklearn.set_config(enable_metadata_routing=True)"


def routing_enabled() -> bool:
    """Whether scikit-learn's metadata routing is enabled (``sklearn.get_config()``)."""
    return bool(sklearn.get_config().get("enable_metadata_routing", False))


def routing_hint() -> str:
    """The sentence an error about a missing ``sensitive_features`` ends with.

    Returns
    -------
    str
        With routing disabled: that a ``Pipeline``, ``GridSearchCV`` or
        ``cross_validate`` forwards ``sensitive_features`` only with routing, and the
        ``sklearn.set_config`` call that enables it. With routing enabled: to pass it to
        their ``fit`` (or ``params=`` of ``cross_validate``).
    """
    if routing_enabled():
        return (
            "Inside a Pipeline, GridSearchCV or cross_validate (metadata routing is enabled), "
            "pass it to their fit: pipeline.fit(X, y, sensitive_features=s), or "
            "cross_validate(..., params={'sensitive_features': s})."
        )
    return (
        "Inside a Pipeline, GridSearchCV or cross_validate, scikit-learn forwards "
        f"sensitive_features only with metadata routing, which is disabled: call {ENABLE_ROUTING} "
        "(or use `with sklearn.config_context(enable_metadata_routing=True):`) first."
    )
