"""The warnings of a search's runs: held back, and only the selected run's shown.

Under repeat-and-select the number of runs ``K`` and every run but the selected
one stay secret (that is what its accounting prices). A run's warnings are
outputs of that run: how many there are tracks ``K``, and their text can quote
the noisy values of runs that were not selected. So every run's warnings are
recorded, not shown, and after the selection only the selected run's are
re-emitted (a function of the selected run's output, which the search releases),
less those a fit computes on exact rows (:class:`DegenerateModelWarning`,
one unnoised bit about the training part), which are dropped.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from .._fit.degenerate import DegenerateModelWarning
from .._fit.search_run import search_run

__all__ = ["NOT_SHOWN", "held_warnings", "show_selected"]

#: Warnings computed on exact rows: never shown from inside a search.
NOT_SHOWN = (DegenerateModelWarning,)


@contextmanager
def held_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Record (do not show) the warnings of one run, fitted as a search run."""
    with warnings.catch_warnings(record=True) as caught, search_run():
        warnings.simplefilter("always")
        yield caught


def show_selected(caught: list[warnings.WarningMessage]) -> None:
    """Re-emit the selected run's recorded warnings, under the caller's filters."""
    for message in caught:
        if issubclass(message.category, NOT_SHOWN):
            continue
        warnings.warn_explicit(message.message, message.category, message.filename, message.lineno)
