"""The silo: noise, clipping and budget from this SuperNode's own node config."""

from skfairdp.federated.flower import client_app as app

__all__ = ["app"]
