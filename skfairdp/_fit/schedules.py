"""Training schedules that depend on ``n``: ``batch_size="auto"`` and ``max_epochs="auto"``.

On small data a fixed epoch count leaves DP-SGD with a few dozen steps (at
``n = 750`` and batch 256, 20 epochs are 60 steps: too few to move a logistic
regression off its initialisation). What matters there is the number of steps
(and ``lr * steps``), so the rules keep the sampling rate small and ask for a
minimum number of steps, while large data keeps the usual batch and epoch count.
"""

from __future__ import annotations

import math

__all__ = ["power_of_two_batch_size", "min_steps_epochs", "reduction_iterations"]


def power_of_two_batch_size(n_samples: int, fraction_inv: float, low: int, high: int) -> int:
    """``2^round(log2(n / fraction_inv))``, clipped to ``[low, high]``."""
    target = max(1.0, n_samples / fraction_inv)
    return int(min(high, max(low, 2 ** round(math.log2(target)))))


def min_steps_epochs(n_samples: int, batch_size: int, min_epochs: int, min_steps: int) -> int:
    """``min_epochs`` passes, or more so that the run takes at least ``min_steps`` steps."""
    steps_per_epoch = max(1.0, n_samples / batch_size)
    return int(max(min_epochs, math.ceil(min_steps / steps_per_epoch)))


def reduction_iterations(n_samples: int, epsilon: float, scale: float, low: int, high: int) -> int:
    """``round((n * epsilon)^(2/3) / scale)`` within ``[low, high]`` (``high`` at ``epsilon=inf``).

    A reduction's ``T`` oracle calls share the budget: each released statistic
    carries noise of std ``~ sqrt(T) / (n epsilon)`` while Frank–Wolfe's own error
    falls like ``1 / T``; the two balance at ``T ~ (n epsilon)^(2/3)``.
    """
    if math.isinf(epsilon):
        return int(high)
    return int(min(high, max(low, round((n_samples * epsilon) ** (2.0 / 3.0) / scale))))
