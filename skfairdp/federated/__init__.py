"""Federated DP-FERMI (SteFFLe): private fair learning across silos under ISRL-DP.

- :mod:`.partition`: which silo holds which rows (``silo_ids`` or Algorithm 3).
- :mod:`.objective`: the DP-FERMI objective the parties share, the round-0 statistics.
- :mod:`.silo`: a silo's own sampling, clipping, noise, random stream and accountant.
- :mod:`.server`: averaging, descent on theta, projected ascent on W.
- :mod:`.release`: the clipped per-silo sums of a round (silos vectorised).
- :mod:`.guarantee`: the federation's one ``(epsilon, delta)`` from the silos' own.
- :mod:`.local`: the in-process backend.
- :mod:`.flower`: the same silo and server on Flower's Message API (optional extra).
- :mod:`.flower_client`: the ClientApp (light: flwr and numpy), forwarding to
- :mod:`.silo_worker`: the silo's process for a run, holding a
  :class:`~.flower_silo.SiloHost` (:mod:`.flower_silo`).
- :mod:`.flower_install`: whether flwr is installed, and how to install it.
- :mod:`.flower_runner`: a loopback Flower deployment and ``backend="flower"``'s fit.
- :mod:`.flower_simulation`: ``backend="flower-simulation"``, the app on Flower's
  Simulation Engine (one machine).
- :mod:`.processes`: every process of a loopback deployment, and stopping them all.
- :mod:`.estimator`: :class:`FederatedDPFermiClassifier`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# public name -> submodule (imported on first use, PEP 562: a ClientApp process,
# started by Flower for every message, imports only the silo's modules)
_EXPORTS = {
    "BROADCAST_KEYS": "silo",
    "FederatedDPFermiClassifier": "estimator",
    "REPLY_KEYS": "silo",
    "Server": "server",
    "Silo": "silo",
    "SiloBudgetExceeded": "silo",
    "SiloConfig": "silo",
    "aggregation_weights": "server",
    "heterogeneous_partition": "partition",
    "silo_sizes": "partition",
}

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

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .estimator import FederatedDPFermiClassifier
    from .partition import heterogeneous_partition, silo_sizes
    from .server import Server, aggregation_weights
    from .silo import BROADCAST_KEYS, REPLY_KEYS, Silo, SiloBudgetExceeded, SiloConfig


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
