"""Federated DP-FERMI (SteFFLe): private fair learning across silos under ISRL-DP.

- :mod:`.partition`: which silo holds which rows (``silo_ids`` or Algorithm 3).
- :mod:`.objective`: the DP-FERMI objective the parties share, the round-0 statistics.
- :mod:`.silo`: a silo's own sampling, clipping, noise, random stream and accountant.
- :mod:`.server`: averaging, descent on theta, projected ascent on W.
- :mod:`.release`: the clipped per-silo sums of a round (silos vectorised).
- :mod:`.local`: the in-process backend.
- :mod:`.flower`: the same silo and server on Flower's Message API (optional extra).
- :mod:`.estimator`: :class:`FederatedDPFermiClassifier`.
"""

from .estimator import FederatedDPFermiClassifier
from .partition import heterogeneous_partition, silo_sizes
from .server import Server, aggregation_weights
from .silo import BROADCAST_KEYS, REPLY_KEYS, Silo, SiloBudgetExceeded, SiloConfig

__all__ = [
    "BROADCAST_KEYS",
    "FederatedDPFermiClassifier",
    "REPLY_KEYS",
    "Server",
    "Silo",
    "SiloBudgetExceeded",
    "SiloConfig",
    "aggregation_weights",
    "heterogeneous_partition",
    "silo_sizes",
]
