"""ParquetSource: the columns it names, the errors it raises, fits and predictions on it.

A fit on a source reads y, the groups and the weights from its columns and records
the same event as the in-memory fit on the same n, q and steps; predict streams it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

from conftest import make_biased_data  # noqa: E402

from skfairdp import (  # noqa: E402
    CGOOReduction,
    DPFermiClassifier,
    DPSGDClassifier,
    DPSGDRegressor,
    FederatedDPFermiClassifier,
    GlobalScalingDPClassifier,
    RaCODPClassifier,
)
from skfairdp.data import ParquetSource  # noqa: E402
from skfairdp.model_selection import PrivateSearchCV  # noqa: E402
from skfairdp.postprocessing import DPThresholdOptimizer  # noqa: E402

N = 600
FEATURES = ["x0", "x1", "x2"]


def _frame(n=N, seed=0):
    X, y, s = make_biased_data(n, seed=seed)
    frame = pd.DataFrame(X, columns=FEATURES)
    frame["label"] = np.where(y == 1, "yes", "no")
    frame["sex"] = np.where(s == 1, "F", "M")
    frame["race"] = np.random.default_rng(seed + 1).integers(0, 3, n)
    frame["w"] = np.random.default_rng(seed + 2).uniform(0.5, 1.0, n)
    return frame


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    frame = _frame()
    path = tmp_path_factory.mktemp("parquet") / "table.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=128)
    return frame, path


def _source(path, **kwargs):
    kwargs.setdefault("target", "label")
    kwargs.setdefault("sensitive_features", "sex")
    kwargs.setdefault("features", FEATURES)
    kwargs.setdefault("batch_rows", 100)
    return ParquetSource(path, **kwargs)


# -- the columns and their errors ------------------------------------------------------
def test_shape_and_default_features(table):
    frame, path = table
    source = ParquetSource(path, target="label", sensitive_features=["sex", "race"])
    assert source.shape == (N, 4)  # every other column: x0..x2 and w
    assert source.features == ("x0", "x1", "x2", "w")
    chunks = list(_source(path).iter_features())
    sizes = [len(chunk) for _, chunk in chunks]
    assert max(sizes) <= 100  # batch_rows (row groups of 128 cut some chunks shorter)
    assert [start for start, _ in chunks] == list(np.cumsum([0, *sizes[:-1]]))
    got = np.concatenate([chunk for _, chunk in chunks])
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, frame[FEATURES].to_numpy(np.float32))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target": "nope"}, "target: no column 'nope'"),
        ({"sensitive_features": ["sex", "nope"]}, "sensitive_features: no column 'nope'"),
        ({"features": ["x0", "nope"]}, "features: no column 'nope'"),
        ({"sample_weight": "nope"}, "sample_weight: no column 'nope'"),
        ({"features": ["x0", "sex"]}, "features must be numeric.*'sex'"),
        ({"features": ["x0", "label"]}, "features must not include the target"),
        ({"features": ["x0", "x0"]}, "names a column twice"),
        ({"sample_weight": "sex"}, "sample_weight: column 'sex' has type"),
        ({"batch_rows": 0}, "batch_rows must be an int >= 1"),
        ({"target": 3}, "target must be a column name"),
    ],
)
def test_bad_columns_name_the_argument(table, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        _source(table[1], **kwargs)


def test_bad_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="path: no such Parquet file"):
        ParquetSource(tmp_path / "missing.parquet", target="y")
    with pytest.raises(ValueError, match="holds no Parquet files"):
        ParquetSource(tmp_path, target="y")
    with pytest.raises(TypeError, match="path must be"):
        ParquetSource(3, target="y")


def test_nan_in_features_is_found_in_the_pass_naming_the_column(tmp_path):
    frame = _frame()
    frame.loc[437, "x1"] = np.nan
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    source = _source(path)
    with pytest.raises(ValueError, match=r"features: column 'x1' holds a NaN.*row 437"):
        DPFermiClassifier(epsilon=1.0, max_epochs=1, random_state=0).fit(source)
    with pytest.raises(ValueError, match="features: column 'x1'"):
        list(source.iter_features())


def test_missing_label_or_group_names_the_column(tmp_path):
    frame = _frame()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    sex = pa.array([None if i == 321 else v for i, v in enumerate(frame["sex"])])
    table = table.set_column(table.schema.get_field_index("sex"), "sex", sex)
    path = tmp_path / "null.parquet"
    pq.write_table(table, path)
    with pytest.raises(ValueError, match=r"sensitive_features: column 'sex' has missing.*row 321"):
        DPFermiClassifier(epsilon=1.0, max_epochs=1).fit(_source(path))


def test_continuous_target_is_not_a_class_label(table):
    with pytest.raises(ValueError, match="target: column 'x0'"):
        source = _source(table[1], target="x0", features=["x1", "x2"])
        DPSGDClassifier(epsilon=1.0, max_epochs=1).fit(source)


@pytest.mark.parametrize("given", ["y", "sensitive_features", "sample_weight"])
def test_passing_what_the_source_holds_is_an_error(table, given):
    frame, path = table
    values = {"y": frame["label"], "sensitive_features": frame["sex"], "sample_weight": frame["w"]}
    kwargs = {given: values[given].to_numpy()}
    y = kwargs.pop("y", None)
    with pytest.raises(ValueError, match=f"{given} must not be passed when X is a ParquetSource"):
        DPFermiClassifier(epsilon=1.0, max_epochs=1).fit(_source(path), y, **kwargs)


@pytest.mark.parametrize(
    "make",
    [
        lambda: CGOOReduction(epsilon=1.0),
        lambda: FederatedDPFermiClassifier(epsilon=1.0),
        lambda: DPThresholdOptimizer(DPSGDClassifier(epsilon=1.0), epsilon=1.0),
        lambda: PrivateSearchCV(DPSGDClassifier(), {"lr": [0.1]}, epsilon=1.0),
    ],
    ids=["CGOOReduction", "Federated", "DPThresholdOptimizer", "PrivateSearchCV"],
)
def test_estimators_off_the_template_refuse_a_source(table, make):
    source = _source(table[1])
    with pytest.raises(TypeError, match="does not accept a ParquetSource as X"):
        make().fit(source, np.zeros(N), sensitive_features=np.zeros(N))


# -- fits on a source -----------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: DPFermiClassifier(epsilon=1.0, max_epochs=2, random_state=0),
        lambda: RaCODPClassifier(epsilon=1.0, max_epochs=2, random_state=0),
        lambda: DPSGDClassifier(epsilon=1.0, max_epochs=2, random_state=0),
        lambda: GlobalScalingDPClassifier(epsilon=1.0, max_epochs=2, random_state=0),
    ],
    ids=["DPFermi", "RaCO", "DPSGD", "GlobalScaling"],
)
def test_fit_on_a_source_records_the_in_memory_event(table, make):
    frame, path = table
    on_source = make().fit(_source(path))
    kwargs = (
        {}
        if isinstance(on_source, (DPSGDClassifier, GlobalScalingDPClassifier))
        else {"sensitive_features": frame["sex"].to_numpy()}
    )
    in_memory = make().fit(frame[FEATURES].to_numpy(np.float32), frame["label"], **kwargs)
    assert on_source.dp_event_ == in_memory.dp_event_
    assert on_source.privacy_spent_ == in_memory.privacy_spent_
    assert on_source.n_steps_ == in_memory.n_steps_
    np.testing.assert_array_equal(on_source.classes_, ["no", "yes"])
    assert list(on_source.feature_names_in_) == FEATURES
    if kwargs:
        assert list(on_source.group_encoder_.group_labels_) == ["F", "M"]
    # predict streams the source: the same as on the rows in memory
    X = frame[FEATURES]
    np.testing.assert_array_equal(on_source.predict(_source(path)), on_source.predict(X))
    np.testing.assert_allclose(
        on_source.predict_proba(_source(path)), on_source.predict_proba(X), rtol=1e-12
    )
    accuracy = np.mean(on_source.predict(_source(path)) == frame["label"])
    mixing = getattr(on_source, "tolerance_mixing_", 0.0)
    if mixing > 0:  # RaCO-DP's check mixed in a constant (600 rows at epsilon = 1)
        constant = np.mean(frame["label"] == on_source.mixing_class_)
        assert accuracy > (1 - mixing) * 0.6 + mixing * constant - 0.05
    else:
        assert accuracy > 0.6


@pytest.mark.filterwarnings("ignore::UserWarning")  # small joint groups at n=600
def test_joint_groups_and_weights_from_columns(table):
    frame, path = table
    source = _source(path, sensitive_features=["sex", "race"], sample_weight="w")
    est = DPFermiClassifier(epsilon=1.0, max_epochs=1, random_state=0).fit(source)
    reference = DPFermiClassifier(epsilon=1.0, max_epochs=1, random_state=0).fit(
        frame[FEATURES].to_numpy(np.float32),
        frame["label"],
        sensitive_features=frame[["sex", "race"]],
        sample_weight=frame["w"],
    )
    assert list(est.group_encoder_.group_labels_) == list(reference.group_encoder_.group_labels_)
    assert est.group_encoder_.names_ == ["sex", "race"]
    assert est.dp_event_ == reference.dp_event_
    # the released priors come from the same labels and groups with the same noise
    np.testing.assert_allclose(est.group_priors_, reference.group_priors_)


def test_regressor_reads_a_float_target(table):
    frame, path = table
    source = _source(path, target="x0", features=["x1", "x2"], sensitive_features=None)
    est = DPSGDRegressor(epsilon=1.0, max_epochs=1, random_state=0).fit(source)
    assert est.predict(source).shape == (N,)
    assert not hasattr(est, "classes_")


def test_directory_and_dataset_are_read_in_order(tmp_path):
    frame = _frame()
    folder = tmp_path / "parts"
    folder.mkdir()
    for k, part in enumerate(np.array_split(np.arange(N), 4)):
        table = pa.Table.from_pandas(frame.iloc[part], preserve_index=False)
        pq.write_table(table, folder / f"part-{k}.parquet", row_group_size=50)
    expected = frame[FEATURES].to_numpy(np.float32)
    for path in (folder, ds.dataset(str(folder), format="parquet")):
        got = np.concatenate([chunk for _, chunk in _source(path).iter_features()])
        np.testing.assert_array_equal(got, expected)
    est = DPSGDClassifier(epsilon=np.inf, max_epochs=2, random_state=0).fit(_source(folder))
    np.testing.assert_array_equal(est.predict(_source(folder)), est.predict(frame[FEATURES]))


def test_predict_refuses_other_features(table):
    frame, path = table
    est = DPSGDClassifier(epsilon=np.inf, max_epochs=1, random_state=0).fit(_source(path))
    with pytest.raises(ValueError, match="not the ones DPSGDClassifier was fitted on"):
        est.predict(_source(path, features=["x1", "x0", "x2"]))


class _StopAfterFirstEpoch:
    def on_epoch_end(self, net, **kwargs):
        raise KeyboardInterrupt


@pytest.mark.parametrize("callbacks", [None, [_StopAfterFirstEpoch()]], ids=["all", "stopped"])
def test_no_scratch_is_left_behind(table, tmp_path, callbacks):
    """The prefetched pass of an epoch that never runs is discarded, its files removed."""
    source = _source(table[1], scratch_dir=tmp_path)
    est = DPFermiClassifier(epsilon=1.0, max_epochs=3, random_state=0, callbacks=callbacks)
    est.fit(source)
    assert len(est.history_) == (1 if callbacks else 3)
    assert not list(tmp_path.iterdir())


class _FailAfterFirstEpoch:
    def on_epoch_end(self, net, **kwargs):
        raise RuntimeError("callback failed")


def test_a_fit_that_fails_with_a_pass_pending_leaves_no_scratch(table, tmp_path):
    import gc

    source = _source(table[1], scratch_dir=tmp_path)
    est = DPFermiClassifier(epsilon=1.0, max_epochs=3, callbacks=[_FailAfterFirstEpoch()])
    with pytest.raises(RuntimeError, match="callback failed"):
        est.fit(source)  # the second epoch's pass was running in the background
    gc.collect()
    assert not list(tmp_path.iterdir())


def test_a_partitioned_dataset_goes_through_the_scanner(tmp_path):
    """Hive partitions add a column no file holds: read through pyarrow's scanner."""
    frame = _frame()
    pq.write_to_dataset(
        pa.Table.from_pandas(frame, preserve_index=False), tmp_path, partition_cols=["sex"]
    )
    dataset = ds.dataset(str(tmp_path), format="parquet", partitioning="hive")
    source = _source(dataset)
    assert source._files is None
    table = dataset.to_table()
    np.testing.assert_array_equal(
        np.concatenate([chunk for _, chunk in source.iter_features()]),
        np.column_stack([table[name].to_numpy() for name in FEATURES]),
    )
    est = DPFermiClassifier(epsilon=1.0, max_epochs=1, random_state=0).fit(source)
    assert sorted(est.group_encoder_.group_labels_) == ["F", "M"]


def test_secure_mode_draws_the_passes_from_the_os(table):
    """secure_mode: the sampling passes' child stream is the CSPRNG too (no seed)."""
    est = DPSGDClassifier(epsilon=1.0, max_epochs=1, secure_mode=True).fit(_source(table[1]))
    assert est.n_steps_ > 0 and np.isfinite(est.privacy_spent_.epsilon)
    source = _source(table[1])
    from skfairdp.privacy import RandomSource

    sampler = source.sampler(32, RandomSource(secure_mode=True), private=True)
    assert sampler.random.secure_mode and sampler.random.seed is None
    sampler.close()


def test_private_transformers_refuse_a_source(table):
    from skfairdp.preprocessing import DPOneHotEncoder, DPSimpleImputer, DPStandardScaler

    source = _source(table[1])
    for transformer in (
        DPStandardScaler(bounds=(-3, 3), epsilon=1.0),
        DPOneHotEncoder(categories=[[0, 1]]),
        DPSimpleImputer(strategy="constant", fill_value=0.0),
    ):
        with pytest.raises(TypeError, match=f"{type(transformer).__name__} does not accept"):
            transformer.fit(source)


def test_verbose_shows_a_progress_bar_over_the_passes(table, capsys):
    DPSGDClassifier(epsilon=1.0, max_epochs=2, verbose=1, random_state=0).fit(_source(table[1]))
    assert "sampling pass 1" in capsys.readouterr().err


def test_a_data_parallel_fit_refuses_a_source(table):
    from skfairdp.distributed import data_parallel

    source = _source(table[1])
    with data_parallel(simulate=2), pytest.raises(ValueError, match="ParquetSource in a data-par"):
        DPFermiClassifier(epsilon=1.0, max_epochs=1, random_state=0).fit(source)
