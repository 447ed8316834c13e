"""Tables larger than memory: a Parquet source and exact Poisson sampling out of core.

:class:`ParquetSource` names a Parquet file, a directory of files or a
``pyarrow.dataset.Dataset`` and which of its columns are the features, the
target, the sensitive features and the sample weights. Every estimator on the
fit template accepts it as ``X`` (``y`` and ``sensitive_features`` then come from
it) and streams it at ``predict``. Each epoch is one streaming pass that draws
every (row, step) inclusion of the epoch at rate ``q`` and writes step-ordered
buckets to a scratch directory (:mod:`.buckets`); training then reads bucket by
bucket. See ``doc/large_data.md``.

pyarrow is imported on first use of :class:`ParquetSource` (the ``parquet``
extra), never by ``import skfairdp``.
"""

from .._lazy import lazy_exports
from .source import DataSource, is_source, reject_source

_EXPORTS = {"ParquetSource": "parquet", "BucketedSampler": "buckets"}

__all__ = ["BucketedSampler", "DataSource", "ParquetSource", "is_source", "reject_source"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
