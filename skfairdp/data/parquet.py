"""A Parquet table as the ``X`` of a fit: its columns named once, its rows streamed in chunks.

Only the features are large. The fit keeps the target, the group codes and the
sample weights in memory as compact arrays (:mod:`.columns`); every pass over the
features reads ``batch_rows`` rows at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .columns import SourceColumns, read_columns
from .source import DataSource

__all__ = ["ParquetSource"]

#: Environment variable naming the default scratch directory of the sampling passes.
SCRATCH_ENV = "SKFAIRDP_SCRATCH_DIR"


def _numeric(type_: pa.DataType) -> bool:
    return pa.types.is_integer(type_) or pa.types.is_floating(type_) or pa.types.is_boolean(type_)


class ParquetSource(DataSource):
    """A Parquet table read in chunks: pass it as ``X`` to ``fit``, ``predict``, ``predict_proba``.

    ``fit(source)`` of every estimator on the fit template (``DPSGDClassifier``,
    ``DPSGDRegressor``, ``DPFermiClassifier``, ``RaCODPClassifier``,
    ``GlobalScalingDPClassifier``, ``DPSGDFClassifier``, ``FairLensClassifier``)
    reads the target, sensitive features and sample weights from the named columns
    (passing ``y``, ``sensitive_features`` or ``sample_weight`` as well is an
    error) and trains on exact Poisson batches drawn out of core, one streaming
    pass per epoch (see ``doc/large_data.md``). ``predict`` and friends stream the
    features in chunks.

    Parameters
    ----------
    path : str, path-like or pyarrow.dataset.Dataset
        A Parquet file, a directory of Parquet files (read in the order pyarrow
        lists them) or a dataset.
    target : str
        The column of ``y``: class labels, or numbers for a regressor.
    sensitive_features : str or sequence of str, optional
        The column(s) of the groups; several columns form joint groups, as a
        DataFrame of ``sensitive_features`` does in memory.
    features : sequence of str, optional
        The feature columns, in order; default: every column except ``target``,
        ``sensitive_features`` and ``sample_weight``. Numeric (integer, float or
        boolean) columns only; a NaN, null or infinite value is an error, raised
        by the first pass that reads it and naming its column.
    sample_weight : str, optional
        The column of public sample weights (see ``fit``'s ``sample_weight``).
    batch_rows : int, default=65536
        Rows per chunk read. The memory of a pass is about two chunks of
        features; the scratch buckets hold about this many rows each.
    scratch_dir : str or path-like, optional
        Where the sampling passes write their buckets (about the table's size in
        float32 per epoch, removed after the epoch); default: the environment
        variable ``SKFAIRDP_SCRATCH_DIR``, else the system's temporary directory.
    prefetch : bool, default=True
        Run the next epoch's sampling pass in a background thread while this
        epoch trains (faster with a spare core; two epochs' buckets on disk).

    Attributes
    ----------
    dataset : pyarrow.dataset.Dataset
    features : tuple of str
        The feature columns, resolved.
    shape : tuple of int
        ``(n_rows, n_features)``; ``n_rows`` from the files' metadata.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> import pandas as pd
    >>> from skfairdp import DPFermiClassifier
    >>> from skfairdp.data import ParquetSource
    >>> rng = np.random.default_rng(0)
    >>> loans = pd.DataFrame(rng.normal(size=(400, 3)).astype("float32"), columns=["a", "b", "c"])
    >>> loans["sex"] = rng.choice(["F", "M"], 400)
    >>> loans["default"] = (loans.a + loans.b > 0).astype(int)
    >>> path = tempfile.mkdtemp() + "/loans.parquet"
    >>> loans.to_parquet(path)
    >>> source = ParquetSource(path, target="default", sensitive_features="sex")
    >>> source.shape
    (400, 3)
    >>> model = DPFermiClassifier(epsilon=1.0, random_state=0).fit(source)
    >>> model.predict_proba(source).shape
    (400, 2)
    """

    def __init__(
        self,
        path,
        *,
        target: str,
        sensitive_features: str | Sequence[str] | None = None,
        features: Sequence[str] | None = None,
        sample_weight: str | None = None,
        batch_rows: int = 65536,
        scratch_dir=None,
        prefetch: bool = True,
    ):
        self.path = path
        self.dataset = _open(path)
        self._files = _plain_files(self.dataset)
        schema = self.dataset.schema
        self.target = _column(schema, target, "target")
        self.sensitive_features = _columns(schema, sensitive_features, "sensitive_features")
        self.sample_weight = (
            None if sample_weight is None else _column(schema, sample_weight, "sample_weight")
        )
        if self.sample_weight is not None and not _numeric(schema.field(sample_weight).type):
            raise TypeError(
                f"sample_weight: column {sample_weight!r} has type "
                f"{schema.field(sample_weight).type}; expected numbers"
            )
        for name in self.sensitive_features:
            type_ = schema.field(name).type
            if pa.types.is_nested(type_) or pa.types.is_dictionary(type_):
                raise TypeError(
                    f"sensitive_features: column {name!r} has type {type_}; expected scalar "
                    "labels (strings, integers or booleans)"
                )
        self.features = self._resolve_features(schema, features)
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer)):
            raise TypeError(f"batch_rows must be an int >= 1, got {batch_rows!r}")
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be an int >= 1, got {batch_rows}")
        self.batch_rows = int(batch_rows)
        self.scratch_dir = scratch_dir
        self.prefetch = bool(prefetch)
        self._float_schema = pa.schema([(name, pa.float32()) for name in self.features])
        self._cast = any(schema.field(name).type != pa.float32() for name in self.features)
        self.shape = (int(self.dataset.count_rows()), len(self.features))
        if self.shape[0] == 0:
            raise ValueError(f"path: the Parquet table {path!r} has no rows")

    def _resolve_features(self, schema: pa.Schema, features) -> tuple[str, ...]:
        reserved = {self.target, *self.sensitive_features, self.sample_weight}
        if features is None:
            names = tuple(n for n in schema.names if n not in reserved)
            if not names:
                raise ValueError(
                    "features: the table has no column besides target, sensitive_features "
                    f"and sample_weight ({schema.names})"
                )
        else:
            names = _columns(schema, features, "features")
            if not names:
                raise ValueError("features must name at least one column")
            if len(set(names)) != len(names):
                raise ValueError(f"features names a column twice: {list(names)}")
            clash = [n for n in names if n in (self.target, self.sample_weight)]
            if clash:
                raise ValueError(
                    f"features must not include the target or sample_weight column: {clash}"
                )
        bad = [(n, schema.field(n).type) for n in names if not _numeric(schema.field(n).type)]
        if bad:
            listed = ", ".join(f"{n!r} ({t})" for n, t in bad[:10])
            raise TypeError(
                f"features must be numeric columns (integer, float or boolean); got {listed}. "
                "Encode categorical columns first, or leave them out with features=[...]."
            )
        return names

    # -- what the fit template reads ----------------------------------------------------
    @property
    def feature_names(self) -> np.ndarray:
        """The feature columns as an object array (``feature_names_in_`` of a fit)."""
        return np.asarray(self.features, dtype=object)

    def scan(self, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """The table's ``columns`` in row order, ``batch_rows`` rows at most per batch.

        Plain Parquet files are read file by file, row group by row group: the
        dataset scanner would read ahead of a slow consumer (hundreds of MB for a
        wide table); other datasets (partitioned, other formats) go through it.
        """
        if self._files is None:
            yield from self.dataset.to_batches(
                columns=list(columns), batch_size=self.batch_rows, batch_readahead=1
            )
            return
        filesystem = self.dataset.filesystem
        for path in self._files:
            file = pq.ParquetFile(path, filesystem=filesystem, pre_buffer=False)
            yield from file.iter_batches(batch_size=self.batch_rows, columns=list(columns))

    def iter_features(self) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, features)`` per chunk: C-contiguous float32, finite.

        Raises
        ------
        ValueError
            At the first NaN, null or infinite value, naming its column and row.
        """
        start = 0
        for batch in self.scan(self.features):
            if batch.num_rows == 0:
                continue
            if self._cast:
                batch = batch.cast(self._float_schema, safe=False)
            chunk = batch.to_tensor(null_to_nan=True, row_major=True).to_numpy()
            finite = np.isfinite(chunk)
            if not finite.all():
                column = int(np.argmin(finite.all(axis=0)))
                row = start + int(np.argmin(finite[:, column]))
                raise ValueError(
                    f"features: column {self.features[column]!r} holds a NaN, null or infinite "
                    f"value (first at row {row} of {self.path!r}); features must be finite "
                    "numbers: impute (e.g. DPSimpleImputer on a sample) or drop those rows."
                )
            yield start, chunk
            start += len(chunk)
        if start != self.shape[0]:
            raise RuntimeError(
                f"{self.path!r}: the pass read {start} rows but the metadata says "
                f"{self.shape[0]}; did the table change during the fit?"
            )

    def read_columns(self, *, classification: bool) -> SourceColumns:
        """The target, group columns and weights, in one streaming pass (see :mod:`.columns`)."""
        return read_columns(self, classification=classification)

    def sampler(self, batch_size: int, random, *, private: bool, verbose: int = 0):
        """The out-of-core batches of one fit: Poisson at ``batch_size / n`` when private.

        The passes draw from a child of ``random`` (:meth:`RandomSource.spawn`), so
        that a pass may run beside the training steps, which draw from ``random``.
        """
        from .buckets import BucketedSampler

        sampler = BucketedSampler(
            self,
            batch_size,
            random.spawn(),
            poisson=private,
            scratch_dir=self.scratch_dir or os.environ.get(SCRATCH_ENV) or None,
            verbose=verbose,
            prefetch=self.prefetch,
        )
        # the first pass runs when training starts, not beside the fit's set-up: DP-FERMI's
        # per-row tensors peak there, and both at once would double the memory's peak
        return sampler

    def __repr__(self) -> str:
        return (
            f"ParquetSource({str(self.path)!r}, target={self.target!r}, "
            f"sensitive_features={list(self.sensitive_features)!r}, "
            f"n_rows={self.shape[0]}, n_features={self.shape[1]})"
        )


def _open(path) -> ds.Dataset:
    if isinstance(path, ds.Dataset):
        return path
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            f"path must be a file or directory path or a pyarrow.dataset.Dataset, got {path!r}"
        )
    if not Path(path).exists():
        raise FileNotFoundError(f"path: no such Parquet file or directory: {str(path)!r}")
    # pre-buffering reads whole row groups ahead: hundreds of MB more for a wide table
    options = ds.ParquetFragmentScanOptions(pre_buffer=False)
    dataset = ds.dataset(
        str(path), format=ds.ParquetFileFormat(default_fragment_scan_options=options)
    )
    if not dataset.files:
        raise ValueError(f"path: the directory {str(path)!r} holds no Parquet files")
    return dataset


def _plain_files(dataset: ds.Dataset) -> list[str] | None:
    """The files of an unpartitioned Parquet dataset, in its order; None for any other."""
    if not isinstance(dataset, ds.FileSystemDataset):
        return None
    if not isinstance(dataset.format, ds.ParquetFileFormat):
        return None
    fragments = list(dataset.get_fragments())
    paths = [fragment.path for fragment in fragments]
    if len(set(paths)) != len(paths):  # fragments split by row group
        return None
    if any(str(fragment.partition_expression) != "true" for fragment in fragments):
        return None
    return paths


def _column(schema: pa.Schema, name, argument: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{argument} must be a column name (str), got {name!r}")
    if name not in schema.names:
        shown = schema.names[:20] + (["..."] if len(schema.names) > 20 else [])
        raise ValueError(f"{argument}: no column {name!r} in the table; its columns are {shown}")
    return name


def _columns(schema: pa.Schema, names, argument: str) -> tuple[str, ...]:
    if names is None:
        return ()
    if isinstance(names, str):
        names = [names]
    return tuple(_column(schema, name, argument) for name in names)
