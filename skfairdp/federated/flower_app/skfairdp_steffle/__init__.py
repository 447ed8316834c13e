"""skfairdp's federated DP-FERMI as a Flower app (see skfairdp.federated.flower)."""
