"""Lazy exports of a package (PEP 562): a public name is imported on first use.

``skfairdp`` and ``skfairdp.federated`` export their names this way, so that
``import skfairdp`` (and the ``skfairdp`` command's ``--help``) loads neither
torch nor scikit-learn, and a Flower ClientApp process imports only the silo's
modules.  This module itself imports nothing but :mod:`importlib`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Make a package's ``__getattr__`` and ``__dir__`` that import names on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to str
        Public name -> the submodule of ``package`` that defines it.
    namespace : mutable mapping
        The package's ``globals()``, holding its ``__all__``.  A name is
        stored there once imported, so later look-ups skip ``__getattr__``.

    Returns
    -------
    __getattr__ : callable
        Returns an exported name, importing its submodule; otherwise the
        submodule ``package.<name>``, imported, for a name without leading
        ``__``; otherwise raises :class:`AttributeError`.  A
        :class:`ModuleNotFoundError` raised by a submodule that exists (a
        missing dependency) propagates.
    __dir__ : callable
        The sorted names of ``namespace`` and ``__all__``.

    Examples
    --------
    In a package's ``__init__.py``::

        _EXPORTS = {"Silo": "silo"}
        __all__ = ["Silo"]
        __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
    """

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(f".{exports[name]}", package), name)
            namespace[name] = value
            return value
        if not name.startswith("__"):
            try:
                return importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace["__all__"]))

    return __getattr__, __dir__
