"""The ``delta="auto"`` rule and checks on a user's delta."""

from __future__ import annotations

import math
import numbers
import warnings


def resolve_delta(delta: float | str, n_samples: int) -> float:
    """Resolve ``delta`` for a training set of ``n_samples`` rows.

    ``"auto"`` gives ``0.1 / n`` rounded down to one significant digit (e.g.
    ``n = 33,916 -> 2e-06``, ``n = 1,000 -> 1e-04``), safely below ``1/n``:
    a delta of order ``1/n`` permits releasing one record outright.

    Raises
    ------
    ValueError
        If ``delta`` is not ``"auto"`` or a number in ``(0, 1)``.

    Warns
    -----
    UserWarning
        If ``delta >= 1/n``.
    """
    if isinstance(delta, str):
        if delta != "auto":
            raise ValueError(f"delta must be 'auto' or a float in (0, 1), got {delta!r}")
        raw = 0.1 / max(int(n_samples), 1)
        exponent = math.floor(math.log10(raw))
        return math.floor(raw / 10**exponent) * 10**exponent
    if not isinstance(delta, numbers.Real) or isinstance(delta, bool) or not 0 < delta < 1:
        raise ValueError(f"delta must be 'auto' or a float in (0, 1), got {delta!r}")
    if delta >= 1.0 / n_samples:
        warnings.warn(
            f"delta={delta:g} is not below 1/n = {1.0 / n_samples:g}; such a delta allows "
            "releasing individual records. Use delta='auto' or a smaller value.",
            UserWarning,
            stacklevel=3,
        )
    return float(delta)
