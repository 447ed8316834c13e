"""Preprocessing inside the guarantee: a scaler and a one-hot encoder, public or private."""

from .transformers import DPOneHotEncoder, DPStandardScaler, category_counts, moment_sums

__all__ = ["DPOneHotEncoder", "DPStandardScaler", "category_counts", "moment_sums"]
