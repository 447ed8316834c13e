"""Whether Flower is installed, and the error that says how to install it.

A module of its own: the ClientApp imports it first, before anything heavy.
"""

from __future__ import annotations

__all__ = ["INSTALL_HINT", "require_flwr"]

#: the install line of the optional dependency (the package is not on PyPI)
INSTALL_HINT = (
    'install the "federated" extra (flwr 1.41, Python >= 3.11); from a checkout of '
    'skfairdp: pip install -e ".[federated]"'
)


def require_flwr() -> None:
    """Raise a ``ModuleNotFoundError`` naming the extra and its install line if flwr is missing."""
    try:
        import flwr  # noqa: F401
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"backend='flower' needs Flower (flwr), which is not installed: {INSTALL_HINT}"
        ) from exc
