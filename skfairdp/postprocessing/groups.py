"""The groups a :class:`DPThresholdOptimizer` thresholds: declared, or those present at fit."""

from __future__ import annotations

import numpy as np

from ..fairness.groups import encode_sensitive_features

__all__ = ["ThresholdGroupsMixin"]


class ThresholdGroupsMixin:
    """``group_labels_`` at fit, and each new row's fitted group at predict."""

    def _fit_groups(self, sensitive_features, n: int) -> np.ndarray:
        """Codes of the fitted groups, in ``[0, n_groups)``; sets ``group_labels_``.

        Declared ``sensitive_values``: every declared group, read from no row.
        Otherwise the groups present at fit: with several attributes the encoder's
        grid of combinations is cut to those that occur, as doc/postprocessing.md says.
        """
        declared = self.sensitive_values is not None
        codes, self.group_encoder_ = encode_sensitive_features(
            sensitive_features, n, sensitive_values=self.sensitive_values,
            allow_empty_groups=True, allow_single_group=declared,
        )  # fmt: skip
        n_groups = self.group_encoder_.n_groups_
        if declared:
            if n_groups < 2:
                raise ValueError(
                    f"sensitive_values declares a single group ({self.sensitive_values!r}); "
                    "thresholds per group need at least 2."
                )
            self._group_codes_ = np.arange(n_groups)
            self.group_labels_ = self.group_encoder_.group_labels_
            return codes.astype(np.int64)
        self._group_codes_ = np.flatnonzero(np.bincount(codes, minlength=n_groups))
        if self._group_codes_.size < 2:
            only = self.group_encoder_.format_group(int(self._group_codes_[0]))
            raise ValueError(
                f"sensitive_features has a single group present ({only}); thresholds per "
                "group need at least 2. Check that the right column was passed."
            )
        self.group_labels_ = self.group_encoder_.group_labels_[self._group_codes_]
        return np.searchsorted(self._group_codes_, codes).astype(np.int64)

    def _group_codes(self, sensitive_features, n: int) -> np.ndarray:
        """Codes of the fitted groups for new rows; a combination absent at fit is an error."""
        codes = self.group_encoder_.transform(sensitive_features, n_samples=n)
        index = np.minimum(np.searchsorted(self._group_codes_, codes), self._group_codes_.size - 1)
        absent = np.unique(codes[self._group_codes_[index] != codes])
        if absent.size:
            shown = "; ".join(self.group_encoder_.format_group(int(g)) for g in absent[:5])
            raise ValueError(
                f"sensitive_features has rows of group(s) that had no rows at fit: {shown}. "
                "Each row needs a group seen at fit, whose thresholds were chosen."
            )
        return index.astype(np.int64)
