"""Whether a fit is data-parallel, and how: :func:`data_parallel`.

By default a fit is data-parallel exactly when ``torch.distributed`` is
initialised with more than one rank at fit time (the user's script called
``init_process_group``, e.g. under ``torchrun``); every rank then passes the full
data to ``fit`` and trains on its contiguous block of rows (``shard="full"``).
``with data_parallel(shard="local"):`` tells fits that each rank passes only its
own rows; ``data_parallel(False)`` makes fits in the block ordinary one-process
fits again, whatever ``torch.distributed`` says.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["DataParallelConfig", "configured", "data_parallel"]

SHARDS = ("full", "local")


@dataclass(frozen=True)
class DataParallelConfig:
    """How fits in a :func:`data_parallel` block use the ranks.

    Attributes
    ----------
    enabled : bool or None
        ``None``: data-parallel when ``torch.distributed`` is initialised with more
        than one rank; ``True``: require it (an error otherwise); ``False``: never.
    shard : {"full", "local"}
        ``"full"``: every rank passes all rows to ``fit`` (the same arrays), and
        trains on its contiguous block; ``"local"``: each rank passes its own rows.
    group : ProcessGroup or None
        The ranks that train together (``None``: the default group).
    simulate : int or None
        One process sampling ``simulate`` contiguous shards as that many ranks
        would (each with its rank's stream): the same batches and noise as a
        data-parallel run, for checking one against the other. Not a speed-up.
    """

    enabled: bool | None = None
    shard: str = "full"
    group: object = None
    simulate: int | None = None


_DEFAULT = DataParallelConfig()
_CONFIG: ContextVar[DataParallelConfig | None] = ContextVar("skfairdp_data_parallel", default=None)


@contextlib.contextmanager
def data_parallel(
    enabled: bool | None = True,
    *,
    shard: str = "full",
    group=None,
    simulate: int | None = None,
) -> Iterator[DataParallelConfig]:
    """Block whose fits train data-parallel as configured (see :doc:`/distributed`).

    Parameters
    ----------
    enabled : bool or None, default=True
        ``True``: fits in the block are data-parallel over ``group`` (an error if
        ``torch.distributed`` is not initialised); ``False``: never; ``None``:
        when ``torch.distributed`` is initialised with more than one rank (the
        default outside any block).
    shard : {"full", "local"}, default="full"
        What each rank passes to ``fit``: all rows (the same on every rank; a fit
        checks that they are) or its own rows.
    group : ProcessGroup, optional
        The process group that trains together (default: the default group).
    simulate : int, optional
        Run in one process, sampling ``simulate`` shards as that many ranks would.

    Yields
    ------
    DataParallelConfig
    """
    if shard not in SHARDS:
        raise ValueError(f"shard must be one of {SHARDS}, got {shard!r}")
    if simulate is not None and (isinstance(simulate, bool) or int(simulate) < 1):
        raise ValueError(f"simulate must be a number of shards >= 1, got {simulate!r}")
    config = DataParallelConfig(enabled, shard, group, None if simulate is None else int(simulate))
    token = _CONFIG.set(config)
    try:
        yield config
    finally:
        _CONFIG.reset(token)


def configured() -> DataParallelConfig:
    """The configuration in force (the default: automatic, ``shard="full"``)."""
    config = _CONFIG.get()
    return _DEFAULT if config is None else config


def initialised_world_size(group=None) -> int:
    """Ranks of ``group`` when ``torch.distributed`` is initialised, else 0."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return 0
    return dist.get_world_size(group)
