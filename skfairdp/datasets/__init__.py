"""Bundled tabular fairness benchmark datasets.

UCI Adult, Default of Credit Card Clients, Statlog German Credit, Bank
Marketing (``bank.csv``) and Communities and Crime, all CC BY 4.0.  The data
ship inside the package as compressed CSV files; the loaders read them with
:mod:`importlib.resources` and need no network access.  :func:`load_dataset`
gives the preprocessed benchmark variants by name (:data:`BENCHMARK_DATASETS`);
:func:`stratified_subsample` the deterministic stratified subsample they use.
"""

from ._bank import load_bank_marketing
from ._base import load_adult, load_credit_card
from ._crime import load_communities_crime
from ._german import load_german_credit
from ._registry import BENCHMARK_DATASETS, load_dataset, stratified_subsample

__all__ = [
    "BENCHMARK_DATASETS",
    "load_adult",
    "load_bank_marketing",
    "load_communities_crime",
    "load_credit_card",
    "load_dataset",
    "load_german_credit",
    "stratified_subsample",
]
