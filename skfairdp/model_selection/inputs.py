"""The search's input: rows, labels, the groups of the fairness statistics, the split size."""

from __future__ import annotations

import math
import numbers

import numpy as np
from sklearn.utils import indexable
from sklearn.utils.validation import _num_samples

from ..data.source import reject_source
from ..fairness import encode_sensitive_features
from ..fairness.routing import routing_hint

__all__ = [
    "check_search_input",
    "declared_domain",
    "held_out_split",
    "independent_split",
    "part_share",
    "validation_rows",
]


def check_search_input(
    X, y, sensitive_features, fairness: str | None, sensitive_values=None
) -> tuple:
    """``(X, y, groups, encoder)``: indexable rows, labels as an array, encoded groups.

    ``groups`` and ``encoder`` are None (one group) without ``fairness``; the
    encoder's ``n_groups_`` counts every group, not only those that land in the
    validation part (its domain: ``sensitive_values`` where declared).
    """
    reject_source(X, "PrivateSearchCV")
    X, y = indexable(X, y)
    y = np.asarray(y)
    n = _num_samples(X)
    if n == 0:
        raise ValueError("X has 0 samples: PrivateSearchCV needs rows to search on")
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]}")
    if fairness is None:
        return X, y, None, None
    if sensitive_features is None:
        raise ValueError(
            f"fairness={fairness!r} needs fit(X, y, sensitive_features=...). {routing_hint()}"
        )
    groups, encoder = encode_sensitive_features(
        sensitive_features, n, sensitive_values=sensitive_values
    )
    return X, y, groups, encoder


def declared_domain(encoder) -> list:
    """The encoder's domain as ``sensitive_values`` (one list, or one list per attribute):
    what a search declares to each run, so that no run learns its groups from its part."""
    categories = [list(values) for values in encoder.categories_]
    return categories[0] if len(categories) == 1 else categories


def validation_rows(
    validation_size: float | int, n_samples: int, name: str = "validation_size"
) -> int:
    """How many of ``n_samples`` rows a held-out part takes (``ValueError`` if no training
    rows remain); ``name`` is the parameter the error names."""
    n_val = (
        int(validation_size)
        if isinstance(validation_size, numbers.Integral)
        else math.ceil(float(validation_size) * n_samples)
    )
    if not 1 <= n_val < n_samples - 1:
        raise ValueError(f"{name}={validation_size!r} leaves no training rows")
    return n_val


def part_share(size: float | int, n_samples: int) -> float:
    """The probability with which a row joins a held-out part of ``size`` (a share, or a
    number of rows out of ``n_samples``, which is public)."""
    return size / n_samples if isinstance(size, numbers.Integral) else float(size)


def independent_split(random, n_samples: int, shares: list[float]) -> list[np.ndarray]:
    """Row indices of each held-out part (``shares``) and, last, of the training part.

    Every row joins a part on its own coin (``shares[k]``; the rest train), whatever the
    other rows and the values, so adding or removing one row changes exactly one part by
    that row: each release on a part is then private under add/remove as accounted. A
    split of fixed sizes from ``n`` would not be: one more row shifts a neighbour across a
    part's boundary (a replacement in one part, and in another a row more or less).
    The parts' sizes are therefore random (binomial); they depend on the coins and ``n``
    only, and the runs are planned after the split, on the realised training size.
    """
    u = random.uniform(n_samples)  # in (0, 1]
    part = np.searchsorted(np.cumsum(shares), u, side="left")
    return [np.flatnonzero(part == k) for k in range(len(shares) + 1)]


def held_out_split(random, n_samples: int, sizes: dict, min_train: int = 2) -> list[np.ndarray]:
    """:func:`independent_split` into the held-out parts ``sizes`` (name: share or rows)
    and, last, the training part; ``ValueError`` when the sizes, or the parts the coins
    drew, leave a part empty or fewer than ``min_train`` training rows."""
    expected = n_samples - sum(validation_rows(v, n_samples, k) for k, v in sizes.items())
    if expected < min_train:
        raise ValueError(
            f"{' and '.join(sizes)} leave {expected} training rows of {n_samples}; at least "
            f"{min_train} are needed"
        )
    shares = [part_share(size, n_samples) for size in sizes.values()]
    parts = independent_split(random, n_samples, shares)
    if min(len(p) for p in parts[:-1]) == 0 or len(parts[-1]) < min_train:
        raise ValueError(
            f"the random split of {n_samples} rows drew parts of {[len(p) for p in parts]} "
            f"rows ({', '.join(sizes)}, training): use more rows or smaller held-out parts"
        )
    return parts
