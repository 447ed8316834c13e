"""Named benchmark datasets: one preprocessed design matrix and binary groups per name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from sklearn.utils import Bunch

from ._bank import load_bank_marketing
from ._base import load_adult, load_credit_card
from ._crime import load_communities_crime
from ._german import load_german_credit

__all__ = ["BENCHMARK_DATASETS", "load_dataset"]

# Fixed seed of the subsamples: changing it changes the benchmark datasets.
SUBSAMPLE_SEED = 0


@dataclass(frozen=True)
class _Entry:
    loader: Callable[..., Bunch]
    kwargs: Mapping[str, str] = field(default_factory=dict)
    n_samples: int | None = None


_REGISTRY: Mapping[str, _Entry] = MappingProxyType(
    {
        "adult": _Entry(load_adult),
        "adult-2k": _Entry(load_adult, n_samples=2_000),
        "adult-race": _Entry(load_adult, {"sensitive_feature": "race"}),
        "adult-race-5k": _Entry(load_adult, {"sensitive_feature": "race"}, n_samples=5_000),
        "credit-card": _Entry(load_credit_card),
        "credit-card-education": _Entry(load_credit_card, {"sensitive_feature": "education"}),
        "credit-card-age": _Entry(load_credit_card, {"sensitive_feature": "age"}),
        "german": _Entry(load_german_credit),
        "german-sex": _Entry(load_german_credit, {"sensitive_feature": "sex"}),
        "bank-marketing": _Entry(load_bank_marketing),
        "communities-crime": _Entry(load_communities_crime),
    }
)

#: Names accepted by :func:`load_dataset`; iterate over it to benchmark on
#: every bundled dataset and grouping.
BENCHMARK_DATASETS: tuple[str, ...] = tuple(_REGISTRY)


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser of ``uint64`` values: a fixed, well-mixed hash."""
    z = values + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def stratified_subsample(strata: np.ndarray, n_samples: int, seed: int) -> np.ndarray:
    """Row indices of a deterministic subsample stratified by ``strata``.

    Each stratum gets its proportional share of ``n_samples`` (largest
    remainders round the shares, ties to the first stratum in sorted order).
    Within a stratum the rows with the smallest ``SplitMix64(row + seed)``
    hashes are taken.  Nothing depends on a random generator's stream, so
    the subsample is the same on every platform and library version.

    Parameters
    ----------
    strata : numpy.ndarray of shape (n_rows,)
        Stratum label of each row (any sortable dtype).
    n_samples : int
        Number of rows to keep, ``0 < n_samples <= n_rows``.
    seed : int
        Non-negative seed; another seed gives another subsample.

    Returns
    -------
    numpy.ndarray of shape (n_samples,)
        Sorted ``int64`` row indices.
    """
    strata = np.asarray(strata)
    if not 0 < n_samples <= len(strata):
        raise ValueError(f"n_samples must be in [1, {len(strata)}]; got {n_samples}")
    if seed < 0:
        raise ValueError(f"seed must be non-negative; got {seed}")
    _, codes, counts = np.unique(strata, return_inverse=True, return_counts=True)
    quotas = counts * (n_samples / len(strata))
    take = np.floor(quotas).astype(np.int64)
    by_remainder = np.argsort(-(quotas - take), kind="stable")
    take[by_remainder[: n_samples - take.sum()]] += 1

    rows = np.arange(len(strata), dtype=np.uint64)
    keys = _splitmix64(rows + np.uint64(seed) * np.uint64(len(strata)))
    chosen = []
    for code, k in enumerate(take):
        members = np.flatnonzero(codes == code)
        chosen.append(members[np.argsort(keys[members], kind="stable")[:k]])
    return np.sort(np.concatenate(chosen)).astype(np.int64)


def load_dataset(
    name: str, *, return_X_y_s: bool = False
) -> Bunch | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Load a bundled benchmark dataset by name, preprocessed, as NumPy arrays.

    Every name is a preprocessed (z-scored and one-hot encoded) design
    matrix with binary groups, from one of the bundled loaders; the
    ``-2k`` / ``-5k`` names are deterministic subsamples stratified by group
    and label (fixed seed, the same on every platform), drawn after the
    preprocessing of the full table.

    =========================  ======  ========  ===================================
    name                       rows    features  groups
    =========================  ======  ========  ===================================
    ``adult``                  45,222  102       sex: Male / Female
    ``adult-2k``               2,000   102       sex
    ``adult-race``             45,222  99        race: White / non-White
    ``adult-race-5k``          5,000   99        race
    ``credit-card``            30,000  85        SEX: female / male
    ``credit-card-education``  30,000  83        EDUCATION: higher education / other
    ``credit-card-age``        30,000  86        AGE: >25 / <=25
    ``german``                 1,000   60        age: >25 / <=25
    ``german-sex``             1,000   57        sex: male / female
    ``bank-marketing``         4,521   50        age: 25-59 / <25 or >=60
    ``communities-crime``      1,993   98        racepctblack: >0.06 / <=0.06
    =========================  ======  ========  ===================================

    Parameters
    ----------
    name : str
        One of :data:`BENCHMARK_DATASETS`.
    return_X_y_s : bool, default=False
        If True, return ``(X, y, s)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple of numpy.ndarray
        The Bunch of the underlying loader with ``as_frame=False`` and
        ``preprocess=True`` (``data`` ``float32``, ``target`` ``int64``,
        ``sensitive_features`` strings, ``DESCR`` of the source dataset),
        restricted to the subsample where there is one, plus ``name``.  With
        ``return_X_y_s=True``: ``X`` (C-contiguous ``float32``), ``y`` and
        ``s``.

    Examples
    --------
    >>> from skfairdp.datasets import BENCHMARK_DATASETS, load_dataset
    >>> X, y, s = load_dataset("adult-race-5k", return_X_y_s=True)
    >>> X.shape
    (5000, 99)
    >>> sorted(set(s))
    ['White', 'non-White']
    >>> "german" in BENCHMARK_DATASETS
    True
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown dataset {name!r}; choose one of {list(BENCHMARK_DATASETS)}")
    entry = _REGISTRY[name]
    bunch = entry.loader(preprocess=True, as_frame=False, **entry.kwargs)
    if entry.n_samples is not None:
        strata = np.array(
            [f"{g}|{t}" for g, t in zip(bunch.sensitive_features, bunch.target)], dtype=str
        )
        rows = stratified_subsample(strata, entry.n_samples, SUBSAMPLE_SEED)
        bunch.data = bunch.data[rows]
        bunch.target = bunch.target[rows]
        bunch.sensitive_features = bunch.sensitive_features[rows]
    bunch.data = np.ascontiguousarray(bunch.data, dtype=np.float32)
    bunch.name = name
    if return_X_y_s:
        return bunch.data, bunch.target, bunch.sensitive_features
    return bunch
