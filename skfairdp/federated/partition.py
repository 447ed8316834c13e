"""Which silo each row belongs to: given ``silo_ids``, or the paper's Algorithm 3.

Algorithm 3 of Gupta et al. (SteFFLe, App. E.2.3) models heterogeneous silos with
one interpretable knob ``h``: sort the rows by a partition attribute (age in the
paper), cut them into ``N`` contiguous blocks of equal size, give each silo a
fraction ``h`` of its own block, and fill the rest of every silo with rows drawn
uniformly from what is left. ``h = 0`` is an i.i.d. random split, ``h = 1`` pure
blocks; the silo sizes are exact either way.

The partition simulates who holds which rows; it is not a release (in a real
deployment each silo simply has its own rows).
"""

from __future__ import annotations

import numpy as np
from sklearn.preprocessing import LabelEncoder

__all__ = ["assign_silos", "encode_silo_ids", "heterogeneous_partition", "silo_sizes"]


def silo_sizes(n_samples: int, n_silos: int) -> np.ndarray:
    """Sizes of Algorithm 3's silos: ``n // N`` each, the last one takes the remainder."""
    n, k = int(n_samples), int(n_silos)
    if not 1 <= k <= n:
        raise ValueError(f"n_silos must be between 1 and n_samples={n}, got {k}")
    sizes = np.full(k, n // k, dtype=np.int64)
    sizes[-1] += n - sizes.sum()
    return sizes


def heterogeneous_partition(
    n_samples: int,
    n_silos: int,
    heterogeneity: float,
    rng: np.random.Generator,
    values: np.ndarray | None = None,
) -> np.ndarray:
    """Silo index of every row by Algorithm 3 (SteFFLe, App. E.2.3).

    Parameters
    ----------
    n_samples : int
        Rows to partition.
    n_silos : int
        ``N``.
    heterogeneity : float in [0, 1]
        ``h``: the fraction of each silo drawn from its own block of sorted rows.
    rng : numpy Generator
    values : ndarray of shape (n_samples,), optional
        The partition attribute (sorted stably, so ties keep row order). ``None``
        (only with ``heterogeneity=0``) is an i.i.d. random split.

    Returns
    -------
    ndarray of int64, shape (n_samples,)
        Silo of each row; silo ``k`` has exactly ``silo_sizes(n, N)[k]`` rows.
    """
    n = int(n_samples)
    if not 0.0 <= heterogeneity <= 1.0:
        raise ValueError(f"heterogeneity must be in [0, 1], got {heterogeneity}")
    if values is None:
        if heterogeneity > 0:
            raise ValueError("heterogeneity > 0 needs a partition attribute (partition_feature)")
        values = np.zeros(n)
    values = np.asarray(values)
    if values.shape != (n,):
        raise ValueError(f"the partition attribute must have shape ({n},), got {values.shape}")
    sizes = silo_sizes(n, n_silos)
    order = np.argsort(values, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    silo = np.full(n, -1, dtype=np.int64)
    # lines 6-10: a fraction h of each silo from its own block
    for k in range(n_silos):
        block = order[bounds[k] : bounds[k + 1]]
        own = int(np.floor(sizes[k] * heterogeneity))
        silo[rng.choice(block, size=own, replace=False)] = k
    # lines 12-17: the rest of each silo uniformly from the rows left (any block)
    for k in range(n_silos):
        left = np.flatnonzero(silo < 0)
        need = int(sizes[k] - np.count_nonzero(silo == k))
        silo[rng.choice(left, size=need, replace=False)] = k
    return silo


def encode_silo_ids(silo_ids, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``0..N-1`` of user-given silo ids, and the ids in code order."""
    ids = np.asarray(silo_ids)
    if ids.ndim != 1 or len(ids) != n_samples:
        raise ValueError(
            f"silo_ids must be one value per row (shape ({n_samples},)), got shape {ids.shape}"
        )
    encoder = LabelEncoder().fit(ids)
    return encoder.transform(ids).astype(np.int64), encoder.classes_


def assign_silos(
    X: np.ndarray,
    silo_ids,
    *,
    n_silos: int,
    heterogeneity: float,
    partition_feature,
    feature_names,
    random,
) -> tuple[np.ndarray, np.ndarray]:
    """The silo code of every row and the silo labels: ``silo_ids``, else Algorithm 3.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The validated features (``partition_feature`` is read from them).
    silo_ids : array-like of shape (n_samples,) or None
        Which silo holds each row (then the other parameters are not read).
    n_silos, heterogeneity : int, float
        Algorithm 3's ``N`` and ``h``.
    partition_feature : None, int or str
        Column Algorithm 3 sorts by: an index, or a name in ``feature_names``.
    feature_names : array-like of str or None
        The estimator's ``feature_names_in_`` (a DataFrame's columns).
    random : RandomSource
        The fit's source; Algorithm 3 draws from one child of it (the OS in secure mode).

    Returns
    -------
    codes : ndarray of int64, shape (n_samples,)
        Silo ``0..N-1`` of each row.
    labels : ndarray of shape (N,)
        The ``silo_ids`` values in code order, or ``0..N-1``.
    """
    n = X.shape[0]
    if silo_ids is not None:
        return encode_silo_ids(silo_ids, n)
    if n_silos > n:
        raise ValueError(f"n_silos={n_silos} exceeds the {n} rows")
    values = None
    if partition_feature is not None:
        column = partition_feature
        if isinstance(column, str):
            names = list(feature_names if feature_names is not None else [])
            if column not in names:
                raise ValueError(
                    f"partition_feature={column!r} is not a column name of X ({names[:10]})"
                )
            column = names.index(column)
        if not 0 <= column < X.shape[1]:
            raise ValueError(f"partition_feature={column} is not a column of X")
        values = X[:, column]
    elif heterogeneity > 0:
        raise ValueError("heterogeneity > 0 needs partition_feature (the column to sort by)")
    seed = None if random.secure_mode else random.spawn().seed
    codes = heterogeneous_partition(
        n, n_silos, float(heterogeneity), np.random.default_rng(seed), values
    )
    return codes, np.arange(n_silos)
