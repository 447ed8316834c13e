"""The silo: noise, clipping and budget from this SuperNode's own node config.

Light (flwr and numpy): Flower starts a process per message; the silo's work runs in
its worker process (skfairdp.federated.silo_worker), kept for the run.
"""

from skfairdp.federated.flower_client import client_app as app

__all__ = ["app"]
