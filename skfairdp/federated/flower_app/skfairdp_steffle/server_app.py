"""The server: averages the silos' noisy gradients, descent on theta, ascent on W."""

from skfairdp.federated.flower import server_app as app

__all__ = ["app"]
