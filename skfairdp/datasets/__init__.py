"""Bundled tabular benchmark datasets (UCI Adult and UCI Default of Credit Card Clients).

The data ship inside the package as compressed CSV files; the loaders read them
with :mod:`importlib.resources` and need no network access.
"""

from ._base import load_adult, load_credit_card

__all__ = ["load_adult", "load_credit_card"]
