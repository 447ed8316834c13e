"""torch intra-op threads for the duration of a fit (``n_jobs``), restored after.

Tiny tabular models spend most of a step in small kernels, where torch's thread
pool costs more than it saves; on a busy 2-core machine a fit with torch's
default threads ran 6-10x slower than with one. So a fit uses ``n_jobs`` threads
(``None``: 1), as scikit-learn's ``n_jobs`` does, and leaves the global setting
as it found it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from numbers import Integral

import torch


def resolve_n_jobs(n_jobs) -> int | None:
    """Threads for ``n_jobs`` (joblib's convention); ``None`` for an invalid value.

    ``None`` -> 1; a positive int -> itself; ``-1`` -> all CPUs; ``-k`` -> all but
    ``k - 1``. Invalid values (0, non-integers) return ``None`` and are left to
    parameter validation to report.
    """
    if n_jobs is None:
        return 1
    if not isinstance(n_jobs, Integral) or isinstance(n_jobs, bool) or n_jobs == 0:
        return None
    if n_jobs > 0:
        return int(n_jobs)
    return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))


@contextmanager
def torch_threads(n_jobs) -> Iterator[None]:
    """Run the block with ``resolve_n_jobs(n_jobs)`` torch intra-op threads."""
    wanted = resolve_n_jobs(n_jobs)
    before = torch.get_num_threads()
    if wanted is not None and wanted != before:
        torch.set_num_threads(wanted)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
