"""Malformed input gets a clear error, for every public estimator.

Each case asserts the exception type and a message that names the offending
argument (``X``, ``y``, ``sensitive_features``, ``epsilon``, ...) and says what
was expected. Deliberately accepted input (scipy.sparse X, densified) is
checked against the dense array: same fit, same predictions.

Fits are tiny (80 rows, one epoch, no hidden layer); almost every case fails
in validation, before any training.
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import InvalidParameterError

import skfairdp._fit.base
from skfairdp import (
    DPFermiClassifier,
    DPSGDFClassifier,
    FairLensClassifier,
    GlobalScalingDPClassifier,
    RaCODPClassifier,
)
from skfairdp.nn import MLPModule

pytestmark = [
    pytest.mark.filterwarnings("ignore::skfairdp.baselines.UnboundedSensitivityWarning"),
    # the fits here are tiny, on odd inputs, and check errors; the degenerate-model
    # check is test_hardening.py's subject
    pytest.mark.filterwarnings("ignore::skfairdp._fit.degenerate.DegenerateModelWarning"),
]

N = 80
ESTIMATORS = {
    "DPFermi": DPFermiClassifier,
    "RaCODP": RaCODPClassifier,
    "GlobalScaling": GlobalScalingDPClassifier,
    "DPSGDF": DPSGDFClassifier,
    "FairLens": FairLensClassifier,
}
#: The estimators whose fit takes sensitive_features (GlobalScaling's does not, by design).
GROUPED = ["DPFermi", "RaCODP", "DPSGDF", "FairLens"]
TINY = dict(epsilon=np.inf, max_epochs=1, batch_size=32, hidden_layer_sizes=(), random_state=0)


def _data(n=N, seed=0):
    rng = np.random.default_rng(seed)
    s = np.tile([0, 1], n // 2)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    X[:, 0] += s
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0.5).astype(np.int64)
    return X, y, s


X, Y, S = _data()


def make(name, **params):
    return ESTIMATORS[name](**{**TINY, **params})


def fit(est, X=X, y=Y, s=S):
    if isinstance(est, GlobalScalingDPClassifier):
        return est.fit(X, y)
    return est.fit(X, y, sensitive_features=s)


def _with(value, row=3, col=1, sparse=False, dtype=np.float32):
    bad = X.astype(dtype)
    bad[row, col] = value
    return sp.csr_matrix(bad) if sparse else bad


# ---------------------------------------------------------------------------
# Parameters (validated first, before the data): every estimator
# ---------------------------------------------------------------------------
def _param_msg(name, expected):
    return rf"The '{name}' parameter of \w+ must be {expected}\. Got .* instead"


EPSILON = _param_msg("epsilon", r"a float in the range \(0\.0, inf\) or a float among \{inf\}")
DELTA = _param_msg("delta", r"a str among \{'auto'\} or a float in the range \(0\.0, 1\.0\)")
# (estimators that resolve "auto" in fit also accept that string)
AUTO = r"(?: or a str among \{'auto'\})?"
BATCH = _param_msg("batch_size", r"an int in the range \[1, inf\)" + AUTO)
EPOCHS = _param_msg("max_epochs", r"an int in the range \[1, inf\)" + AUTO)
LR = _param_msg("lr", r"a float in the range \(0\.0, inf\)")
CLIP = _param_msg("max_grad_norm", r"a float in the range \(0\.0, inf\)" + AUTO)
HIDDEN = _param_msg(
    "hidden_layer_sizes", r"a sequence of positive ints \(the hidden layer widths.*"
)
DEVICE = _param_msg("device", r"a torch\.device or a device string such as 'cpu'.*")

PARAM_CASES = [
    ("epsilon", 0, EPSILON),
    ("epsilon", -1.0, EPSILON),
    ("epsilon", "1", EPSILON),  # FairLens used to crash in math.isinf before validation
    ("epsilon", None, EPSILON),
    ("epsilon", np.nan, EPSILON),
    ("epsilon", -np.inf, EPSILON),
    ("delta", 0, DELTA),
    ("delta", 1, DELTA),
    ("delta", 1.5, DELTA),
    ("delta", -1e-5, DELTA),
    ("delta", "x", DELTA),
    ("delta", np.nan, DELTA),
    ("batch_size", 0, BATCH),
    ("batch_size", -1, BATCH),
    ("batch_size", 2.5, BATCH),
    ("batch_size", "32", BATCH),
    ("max_epochs", 0, EPOCHS),
    ("max_epochs", 1.5, EPOCHS),
    ("lr", 0, LR),
    ("lr", -0.1, LR),
    ("lr", np.inf, LR),
    ("max_grad_norm", 0, CLIP),
    ("max_grad_norm", -1.0, CLIP),
    ("max_grad_norm", np.inf, CLIP),
    ("hidden_layer_sizes", (-3,), HIDDEN),  # used to crash in torch
    ("hidden_layer_sizes", (0,), HIDDEN),  # used to build a constant model silently
    ("hidden_layer_sizes", (2.5,), HIDDEN),  # used to be truncated to 2 silently
    ("hidden_layer_sizes", "abc", HIDDEN),
    ("hidden_layer_sizes", (True,), HIDDEN),
    ("hidden_layer_sizes", (8, -1), HIDDEN),
    ("hidden_layer_sizes", 5, HIDDEN),
    ("hidden_layer_sizes", None, HIDDEN),
    ("hidden_layer_sizes", np.array([[4]]), HIDDEN),
    ("device", "gpu", DEVICE),  # used to be torch's RuntimeError, not naming the parameter
]


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize(
    "param, value, match", PARAM_CASES, ids=[f"{p}={v!r}" for p, v, _ in PARAM_CASES]
)
def test_bad_parameter(name, param, value, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing (e.g. FairLens' privacy warning) before it
        with pytest.raises(InvalidParameterError, match=match):
            fit(make(name, **{param: value}))


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize(
    "sizes", [[4, 2], (np.int64(3),), np.array([4])], ids=["list", "numpy-int", "array"]
)
def test_hidden_layer_sizes_accepted(name, sizes):
    est = fit(make(name, hidden_layer_sizes=sizes))
    assert est.predict(X).shape == (N,)


def test_mlp_module_rejects_bad_widths_directly():
    """The module path (module__hidden_layer_sizes overrides the parameter) checks too."""
    with pytest.raises(ValueError, match=r"hidden_layer_sizes must be a sequence of positive"):
        MLPModule(3, 2, hidden_layer_sizes=(0,))
    with pytest.raises(ValueError, match=r"hidden_layer_sizes must be .*; got \(-1,\)"):
        fit(make("DPFermi", module__hidden_layer_sizes=(-1,)))


# ---------------------------------------------------------------------------
# X at fit: every estimator
# ---------------------------------------------------------------------------
INVALID_X = r"Invalid X \(expected a 2-D array-like or scipy\.sparse matrix of finite numbers"
NOT_NUMERIC = r"X must be numeric: encode categorical or string columns first"
_dict_X = X.astype(object)
_dict_X[0, 0] = {"a": 1}
_str_frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(c="text")

X_CASES = {
    "nan": (lambda: _with(np.nan), ValueError, "Input X contains NaN"),
    "inf": (lambda: _with(np.inf), ValueError, "Input X contains infinity"),
    "-inf": (lambda: _with(-np.inf), ValueError, "Input X contains infinity"),
    "too-large-for-float32": (
        lambda: _with(1e300, dtype=np.float64),  # finite, but not as float32
        ValueError,
        r"Input X contains infinity or a value too large for dtype\('float32'\)",
    ),
    "sparse-nan": (lambda: _with(np.nan, sparse=True), ValueError, "Input X contains NaN"),
    "sparse-inf": (lambda: _with(np.inf, sparse=True), ValueError, "Input X contains infinity"),
    "1-D": (lambda: X[:, 0], ValueError, INVALID_X + r".*Expected 2D array, got 1D array"),
    "scalar": (lambda: 3.0, ValueError, INVALID_X + r".*Expected 2D array, got scalar"),
    "None": (lambda: None, ValueError, INVALID_X + r".*Expected 2D array"),
    "3-D": (lambda: X[:, :, None], ValueError, INVALID_X + r".*Found array with dim 3"),
    "empty": (lambda: X[:0], ValueError, INVALID_X + r".*Found array with 0 sample\(s\)"),
    "one-row": (
        lambda: X[:1],
        ValueError,
        INVALID_X + r".*Found array with 1 sample\(s\) .* a minimum of 2 is required",
    ),
    "no-features": (
        lambda: np.empty((N, 0)),
        ValueError,
        INVALID_X + r".*0 feature\(s\) \(shape=\(80, 0\)\)",
    ),
    "strings": (
        lambda: np.full((N, 3), "a"),
        ValueError,
        INVALID_X + r".*could not convert string to float.*" + NOT_NUMERIC,
    ),
    "frame-with-text-column": (
        lambda: _str_frame,
        ValueError,
        INVALID_X + r".*could not convert string to float.*" + NOT_NUMERIC,
    ),
    "object-dict": (
        lambda: _dict_X,
        TypeError,
        INVALID_X + r".*must be a string or a real number.*" + NOT_NUMERIC,
    ),
    "complex": (lambda: X + 1j, ValueError, INVALID_X + r".*Complex data not supported"),
    "series": (
        lambda: pd.Series(X[:, 0]),
        ValueError,
        INVALID_X + r".*Expected a 2-dimensional container",
    ),
}


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("case", X_CASES)
def test_bad_X_at_fit(name, case):
    build, error, match = X_CASES[case]
    with pytest.raises(error, match=match):  # X is validated first: y and s are not at fault
        fit(make(name), X=build())


# ---------------------------------------------------------------------------
# y: every estimator
# ---------------------------------------------------------------------------
INVALID_Y = r"Invalid y \(expected a 1-D array-like of class labels, shape \(n_samples,\)\)"
_y_nan = Y.astype(float)
_y_nan[2] = np.nan
_y_none = Y.astype(object)
_y_none[3] = None
_y_mixed = np.array(["a", 1] * (N // 2), dtype=object)

Y_CASES = {
    "continuous": (
        lambda: np.linspace(0, 1, N),
        ValueError,
        INVALID_Y + r": Unknown label type: continuous",
    ),
    "single-class": (
        lambda: np.zeros(N, dtype=int),
        ValueError,
        r"needs at least 2 classes in y; got 1 class",
    ),
    "too-short": (
        lambda: Y[:-1],
        ValueError,
        r"X has 80 rows but y has 79 labels; y needs one class label per row of X",
    ),
    "too-long": (lambda: np.r_[Y, 0], ValueError, r"X has 80 rows but y has 81 labels"),
    "nan": (lambda: _y_nan, ValueError, "Input y contains NaN"),
    "multilabel-2D": (
        lambda: np.stack([Y, 1 - Y], axis=1),
        ValueError,
        r"y should be a 1d array, got an array of shape \(80, 2\)",
    ),
    "None": (
        lambda: None,
        ValueError,
        r"requires y to be passed, but the target y is None; pass one class label per row",
    ),
    "None-entries": (lambda: _y_none, ValueError, INVALID_Y + r": Unknown label type"),
    "mixed-types": (
        lambda: _y_mixed,
        TypeError,
        INVALID_Y + r".*The labels in y mix types \(e\.g\. str and int\)",
    ),
    "complex": (lambda: Y + 1j, ValueError, INVALID_Y + r": Complex data not supported"),
    "scalar": (lambda: 1, ValueError, r"y should be a 1d array, got an array of shape \(\)"),
}


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("case", Y_CASES)
def test_bad_y(name, case):
    build, error, match = Y_CASES[case]
    with pytest.raises(error, match=match):
        fit(make(name), y=build())


def test_fairlens_binary_two_groups_only():
    with pytest.raises(ValueError, match=r"Only binary classification .* \(3 classes in y\)"):
        fit(make("FairLens"), y=np.arange(N) % 3)
    with pytest.raises(ValueError, match=r"exactly 2 groups in sensitive_features; got 3"):
        fit(make("FairLens"), s=np.arange(N) % 3)


# ---------------------------------------------------------------------------
# sensitive_features (and sensitive_values): estimators whose fit takes them
# ---------------------------------------------------------------------------
def _s_with(value, row=4):
    s = S.astype(object)
    s[row] = value
    return s


MISSING = r"sensitive_features contains 1 missing value\(s\) \(NaN/None/pd\.NA\)"
ARRAY_LIKE = r"sensitive_features must be array-like of shape \(n_samples,\) or \(n_samples, n_"
S_CASES = {
    "missing": ({}, lambda: None, r"sensitive_features is required"),
    "too-short": ({}, lambda: S[:-1], r"sensitive_features has 79 rows but X has 80"),
    "too-long": ({}, lambda: np.r_[S, 0], r"sensitive_features has 81 rows but X has 80"),
    "empty": ({}, lambda: S[:0], r"sensitive_features is empty; expected one label per row"),
    "2-D-too-short": (
        {},
        lambda: np.stack([S, S], axis=1)[:-2],
        r"sensitive_features has 78 rows but X has 80",
    ),
    "frame-too-short": (
        {},
        lambda: pd.DataFrame({"sex": S, "race": S})[:-2],
        r"sensitive_features has 78 rows but X has 80",
    ),
    "nan": ({}, lambda: _s_with(np.nan), MISSING),
    "None": ({}, lambda: _s_with(None), MISSING),
    "pd.NA": ({}, lambda: pd.Series(_s_with(pd.NA), dtype="Int64"), MISSING),
    "single-group": (
        {},
        lambda: np.zeros(N, dtype=int),
        r"sensitive_features defines a single group .*fairness needs at least 2 groups",
    ),
    "declared-group-empty": (
        {"sensitive_values": [0, 1, 2]},
        lambda: S,
        r"sensitive_features has no rows for 1 of the 3 group\(s\): sensitive_feature_0=2",
    ),
    "outside-declared-domain": (
        {"sensitive_values": ["a", "b"]},
        lambda: S,
        r"sensitive_features contains value\(s\) 0, 1 .* not in the declared sensitive_values",
    ),
    "3-D": ({}, lambda: S.reshape(-1, 1, 1), r"sensitive_features must be 1-D .* or 2-D"),
    "unhashable": (
        {},
        lambda: np.array([{"g": 1}] * N, dtype=object),
        r"sensitive_features values must be hashable scalars",
    ),
    "ragged-list": (
        {},
        lambda: [[0, 1]] + [0] * (N - 1),
        r"sensitive_features given as a list must hold scalars .* or rows of equal length",
    ),
    "scalar": ({}, lambda: 1, ARRAY_LIKE + r".*got the scalar 1"),
    "column-name": ({}, lambda: "sex", ARRAY_LIKE + r".*got the scalar 'sex'"),
    "set": ({}, lambda: set(S.tolist()), ARRAY_LIKE + r".*got a set"),
    "generator": ({}, lambda: (v for v in S), ARRAY_LIKE + r".*got a generator"),
    "sparse": ({}, lambda: sp.csr_matrix(S[:, None]), ARRAY_LIKE + r".*\.toarray\(\)"),
    "ragged-dict": (
        {},
        lambda: {"sex": S, "race": S[:-1]},
        r"sensitive_features given as a dict must map attribute names to columns of equal",
    ),
    "frame-no-columns": (
        {},
        lambda: pd.DataFrame(index=range(N)),
        r"sensitive_features is a DataFrame with no columns",
    ),
    "frame-duplicate-columns": (
        {},
        lambda: pd.DataFrame(np.stack([S, S], axis=1), columns=["g", "g"]),
        r"sensitive_features has duplicate attribute names",
    ),
    "sensitive_values-duplicates": (
        {"sensitive_values": [0, 0, 1]},
        lambda: S,
        r"sensitive_values declares duplicate values for attribute 'sensitive_feature_0'",
    ),
    "sensitive_values-wrong-attributes": (
        {"sensitive_values": {"race": [0, 1]}},
        lambda: pd.DataFrame({"sex": S}),
        r"sensitive_values declares attributes \['race'\] but sensitive_features has",
    ),
}


@pytest.mark.parametrize("name", GROUPED)
@pytest.mark.parametrize("case", S_CASES)
def test_bad_sensitive_features(name, case):
    params, build, match = S_CASES[case]
    with pytest.raises(ValueError, match=match):
        fit(make(name, **params), s=build())


@pytest.mark.parametrize("name", GROUPED)
def test_bad_sensitive_values_type(name):
    match = _param_msg("sensitive_values", r"None, an array-like or an instance of 'dict'")
    with pytest.raises(InvalidParameterError, match=match):
        fit(make(name, sensitive_values="ab"))


def test_global_scaling_takes_no_sensitive_features():
    """By design (no disparate treatment): Python's own error names the argument."""
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'sensitive_features'"):
        make("GlobalScaling").fit(X, Y, sensitive_features=S)


# ---------------------------------------------------------------------------
# predict / predict_proba / decision_function: every estimator
# ---------------------------------------------------------------------------
METHODS = ["predict", "predict_proba", "decision_function"]


@pytest.fixture(scope="module")
def fitted():
    return {name: fit(make(name)) for name in ESTIMATORS}


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("method", METHODS)
def test_not_fitted(name, method):
    with pytest.raises(NotFittedError, match=r"This \w+ instance is not fitted yet\. Call 'fit'"):
        getattr(make(name), method)(X)


PREDICT_CASES = {
    "nan": (lambda: _with(np.nan), "Input X contains NaN"),
    "inf": (lambda: _with(np.inf), "Input X contains infinity"),
    "sparse-nan": (lambda: _with(np.nan, sparse=True), "Input X contains NaN"),
    "too-few-features": (
        lambda: X[:, :2],
        r"X has 2 features, but \w+ is expecting 3 features as input",
    ),
    "too-many-features-sparse": (
        lambda: sp.csr_matrix(np.hstack([X, X])),
        r"X has 6 features, but \w+ is expecting 3 features as input",
    ),
    "1-D": (lambda: X[0], INVALID_X + r".*Expected 2D array, got 1D array"),
    "empty": (lambda: X[:0], INVALID_X + r".*Found array with 0 sample\(s\)"),
    "strings": (lambda: np.full((2, 3), "a"), INVALID_X + r".*could not convert string"),
}


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", PREDICT_CASES)
def test_bad_X_at_predict(fitted, name, method, case):
    build, match = PREDICT_CASES[case]
    with pytest.raises(ValueError, match=match):
        getattr(fitted[name], method)(build())


@pytest.mark.parametrize("name", ESTIMATORS)
def test_feature_names_mismatch_at_predict(name):
    est = fit(make(name), X=pd.DataFrame(X, columns=["a", "b", "c"]))
    with pytest.raises(ValueError, match="The feature names should match those .* during fit"):
        est.predict(pd.DataFrame(X, columns=["a", "b", "d"]))


# ---------------------------------------------------------------------------
# Sparse X: accepted (densified), same model and predictions as the dense array
# ---------------------------------------------------------------------------
SPARSE_X = X.copy()
SPARSE_X[np.abs(SPARSE_X) < 0.5] = 0.0  # mostly zeros, like a one-hot encoding
FORMATS = {
    "csr": sp.csr_matrix,
    "csc": sp.csc_matrix,
    "coo": sp.coo_matrix,
    "csr_array": sp.csr_array,
    "lil": sp.lil_matrix,  # another format: converted
}


def _private(name, **params):
    # Private (noisy, Poisson-sampled) fits: the same random_state must give the same noise.
    extra = {"group_priors": [0.5, 0.5]} if name == "DPFermi" else {}
    return make(name, epsilon=4.0, max_epochs=2, hidden_layer_sizes=(4,), **extra, **params)


@pytest.fixture(scope="module")
def dense_private():
    return {name: fit(_private(name), X=SPARSE_X) for name in ESTIMATORS}


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sparse_X_accepted_and_equal_to_dense(dense_private, name, fmt):
    dense = dense_private[name]
    Xs = FORMATS[fmt](SPARSE_X)
    est = fit(_private(name), X=Xs)
    assert est.n_features_in_ == 3
    assert est.privacy_spent_ == dense.privacy_spent_
    np.testing.assert_array_equal(est.predict_proba(Xs), dense.predict_proba(SPARSE_X))
    np.testing.assert_array_equal(est.predict(Xs), dense.predict(SPARSE_X))
    np.testing.assert_array_equal(dense.decision_function(Xs), dense.decision_function(SPARSE_X))


def test_sparse_predict_is_chunked(monkeypatch, dense_private):
    """Sparse X at predict is densified chunk by chunk; chunks do not change the result."""
    est = dense_private["DPFermi"]
    expected = est.predict_proba(SPARSE_X)
    monkeypatch.setattr(skfairdp._fit.base, "_PREDICT_CHUNK", 7)
    for fmt in ("csr", "csc", "coo"):
        np.testing.assert_array_equal(est.predict_proba(FORMATS[fmt](SPARSE_X)), expected)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_one_hot_column_transformer_output_accepted(name):
    """The default (sparse) output of OneHotEncoder in a ColumnTransformer fits as dense does."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"x": X[:, 0], "city": rng.choice(["a", "b", "c"], N)})

    def transformed(sparse):
        onehot = OneHotEncoder(sparse_output=sparse)
        ct = ColumnTransformer(
            [("oh", onehot, ["city"])], remainder="passthrough", sparse_threshold=1.0
        )
        return ct.fit_transform(frame)

    Xs, Xd = transformed(True), transformed(False)
    assert sp.issparse(Xs) and not sp.issparse(Xd)
    est_s, est_d = fit(make(name), X=Xs), fit(make(name), X=Xd)
    np.testing.assert_array_equal(est_s.predict_proba(Xs), est_d.predict_proba(Xd))


def test_pipeline_with_one_hot_encoder():
    """make_pipeline(OneHotEncoder(), estimator) works end to end (sparse in between)."""
    cities = np.random.default_rng(2).choice(["a", "b", "c"], (N, 2))
    pipe = make_pipeline(OneHotEncoder(), make("GlobalScaling")).fit(cities, Y)
    assert sp.issparse(pipe[0].transform(cities))
    assert pipe.predict(cities).shape == (N,)


def test_X_prefix_added_once_and_only_where_needed():
    """The prefix is added once, and only where sklearn's message does not name X."""
    with pytest.raises(ValueError) as info:
        fit(make("DPFermi"), X=X[:, 0])
    assert len(re.findall(r"Invalid X", str(info.value))) == 1
    with pytest.raises(ValueError) as info:
        fit(make("DPFermi"), X=_with(np.nan))
    assert not str(info.value).startswith("Invalid X")


def test_missing_and_categorical_values_point_to_the_private_steps():
    """Issue 38: NaN in X names DPSimpleImputer (not scikit-learn's exact imputers); a string
    column names DPOneHotEncoder."""
    import pandas as pd

    from skfairdp import DPFermiClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y, s = np.tile([0, 1], 20), np.repeat([0, 1], 20)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN") as info:
        DPFermiClassifier().fit(X, y, sensitive_features=s)
    assert "DPSimpleImputer" in str(info.value) and "sklearn.ensemble" not in str(info.value)
    frame = pd.DataFrame({"a": rng.normal(size=40), "c": ["u", "v"] * 20})
    with pytest.raises(ValueError, match="DPOneHotEncoder"):
        DPFermiClassifier().fit(frame, y, sensitive_features=s)
