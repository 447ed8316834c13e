"""A fit run inside a private search: it must not branch on which declared groups have rows.

A search fits each run on a random part of the rows. Which declared groups (or
(group, label) cells) land in that part depends on their private counts: a group
of ``k`` rows is absent from a 60 % part with probability ``0.4 ** k``, and one
more row changes that by a factor of 2.5. A fit that raised on an empty group
(the clear error a single fit gives for bad input) would let that event decide
whether the search ends, and a fit that learned its groups from the part would
show it in the selected model. So inside :func:`search_run`, a fit whose groups
are declared (``sensitive_values``) keeps an empty declared group or cell: its
counts are noise about zero, like any small group's, and only released values
steer what follows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["allow_empty_declared_groups", "search_run"]

_INSIDE = ContextVar("skfairdp_search_run", default=False)


@contextmanager
def search_run() -> Iterator[None]:
    """Fits in this block are runs of a private search (see the module)."""
    token = _INSIDE.set(True)
    try:
        yield
    finally:
        _INSIDE.reset(token)


def allow_empty_declared_groups(sensitive_values) -> bool:
    """Whether a fit with these ``sensitive_values`` keeps empty groups and cells silently."""
    return sensitive_values is not None and _INSIDE.get()
