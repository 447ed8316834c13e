"""Renamed parameters: one name per concept, the old names deprecated for one release.

``calibration`` (sound accountant vs the paper's accounting) replaces
``accounting="joint"/"composed"`` of GlobalScalingDPClassifier and DPSGDFClassifier;
``lr_dual`` and ``dual_bound`` replace DPFermiClassifier's ``lr_w`` and ``w_radius``.
The mechanism is :class:`skfairdp._parameters.Deprecated`: each old name is still an
``__init__`` parameter (keyword-only, last, default ``"deprecated"``), ``fit`` warns
(``FutureWarning``) when it is set, refuses it next to a set new name, and the fit is
the one the new name gives.
"""

import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import make_biased_data
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError, make_constraint

import skfairdp
from skfairdp import DPFermiClassifier, DPSGDFClassifier, GlobalScalingDPClassifier
from skfairdp._parameters import DEPRECATED, REMOVED_IN, Deprecated
from skfairdp.base import Param, declare_parameters

# (estimator, old name, old value, new name, new value): every deprecated name
RENAMES = [
    (DPFermiClassifier, "lr_w", 0.05, "lr_dual", 0.05),
    (DPFermiClassifier, "w_radius", 0.3, "dual_bound", 0.3),
    (GlobalScalingDPClassifier, "accounting", "composed", "calibration", "paper"),
    (GlobalScalingDPClassifier, "accounting", "joint", "calibration", "accountant"),
    (DPSGDFClassifier, "accounting", "composed", "calibration", "paper"),
    (DPSGDFClassifier, "accounting", "joint", "calibration", "accountant"),
]
RENAME_IDS = [f"{cls.__name__}-{old}={value}" for cls, old, value, _, _ in RENAMES]

# small private fits on which each parameter matters (W's ball is hit, counts are released)
SETTINGS = {
    DPFermiClassifier: {"fairness_weight": 5.0, "lr_dual": 20.0, "max_epochs": 3},
    GlobalScalingDPClassifier: {"hidden_layer_sizes": (), "count_noise_multiplier": 3.0},
    DPSGDFClassifier: {"hidden_layer_sizes": (), "count_noise_multiplier": 3.0},
}
COMMON = {"epsilon": 3.0, "batch_size": 100, "max_epochs": 2, "random_state": 0}


def _estimator(cls, **params):
    return cls(**{**COMMON, **SETTINGS[cls], **params})


def _with_old_name(cls, old, value):
    """:func:`_estimator` with ``old`` set, its new name left at the default."""
    new = cls._parameters.deprecated[old].new
    return _estimator(cls, **{old: value}).set_params(**{new: cls._parameters.defaults[new]})


def _fit(est, X, y, s):
    """Fit; returns the FutureWarnings (other warnings, e.g. the paper's accounting, pass)."""
    groups = {} if isinstance(est, GlobalScalingDPClassifier) else {"sensitive_features": s}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, **groups)
    return [w for w in caught if issubclass(w.category, FutureWarning)]


@pytest.fixture(scope="module")
def data():
    return make_biased_data(n=200)


# ---------------------------------------------------------------------------
# The old name still works: same fit as the new name, with a FutureWarning
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls, old, old_value, new, new_value", RENAMES, ids=RENAME_IDS)
def test_old_name_fits_the_same_model_as_the_new_name(data, cls, old, old_value, new, new_value):
    X, y, s = data
    via_old = _with_old_name(cls, old, old_value)
    via_new = _estimator(cls, **{new: new_value})

    old_warnings = _fit(via_old, X, y, s)
    assert _fit(via_new, X, y, s) == []  # the new name: no FutureWarning
    assert len(old_warnings) == 1
    message = str(old_warnings[0].message)
    assert f"{old}={old_value!r}" in message and f"{new}={new_value!r}" in message
    assert f"removed in {REMOVED_IN}" in message
    assert old_warnings[0].filename == __file__  # points at the caller of fit

    np.testing.assert_array_equal(via_old.predict_proba(X), via_new.predict_proba(X))
    assert via_old.privacy_spent_ == via_new.privacy_spent_
    assert via_old.dp_event_ == via_new.dp_event_
    assert via_old.noise_multiplier_ == via_new.noise_multiplier_
    # fit changes no public parameter (sklearn): the old name stays set, the new one default
    assert getattr(via_old, old) == old_value
    assert getattr(via_old, new) == cls._parameters.defaults[new]


def test_the_old_names_differ_from_the_defaults(data):
    """The cases above would be vacuous if the renamed values changed nothing."""
    X, y, s = data
    for cls, old, old_value, _, _ in RENAMES:
        if old_value == "joint":
            continue  # the default, on purpose
        default = _estimator(cls)
        renamed = _with_old_name(cls, old, old_value)
        _fit(default, X, y, s)
        _fit(renamed, X, y, s)
        assert not np.array_equal(default.predict_proba(X), renamed.predict_proba(X)), old


def test_lr_w_and_w_radius_together(data):
    X, y, s = data
    old = _estimator(DPFermiClassifier, lr_w=0.5, w_radius=0.2)
    old.set_params(lr_dual="auto")
    new = _estimator(DPFermiClassifier, lr_dual=0.5, dual_bound=0.2)
    assert len(_fit(old, X, y, s)) == 2
    _fit(new, X, y, s)
    np.testing.assert_array_equal(old.predict_proba(X), new.predict_proba(X))
    np.testing.assert_array_equal(old.W_, new.W_)
    assert old.privacy_spent_ == new.privacy_spent_


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cls, params",
    [
        (DPFermiClassifier, {"lr_w": 0.1, "lr_dual": 0.2}),
        (DPFermiClassifier, {"lr_w": 0.1, "lr_dual": 0.1}),  # even when they agree
        (DPFermiClassifier, {"w_radius": 1.0, "dual_bound": 2.0}),
        (GlobalScalingDPClassifier, {"accounting": "joint", "calibration": "paper"}),
        (GlobalScalingDPClassifier, {"accounting": "composed", "calibration": "paper"}),
        (DPSGDFClassifier, {"accounting": "joint", "calibration": "paper"}),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "-".join(map(str, v)),
)
def test_old_and_new_name_together_is_an_error(data, cls, params):
    X, y, s = data
    old, new = params
    with pytest.raises(ValueError, match=rf"{old}=.*{new}=.*set only {new}="):
        _fit(_estimator(cls, **params), X, y, s)


@pytest.mark.parametrize(
    "cls, old, bad",
    [
        (DPFermiClassifier, "lr_w", -1.0),
        (DPFermiClassifier, "lr_w", "fast"),
        (DPFermiClassifier, "w_radius", 0.0),
        (GlobalScalingDPClassifier, "accounting", "paper"),  # a new value under the old name
        (GlobalScalingDPClassifier, "accounting", None),
        (DPSGDFClassifier, "accounting", "accountant"),
    ],
)
def test_constraints_reject_a_bad_value_of_the_old_name(data, cls, old, bad):
    X, y, s = data
    with pytest.raises(InvalidParameterError, match=rf"The '{old}' parameter") as info:
        _fit(_estimator(cls, **{old: bad}), X, y, s)
    assert "deprecated" not in str(info.value)  # the marker value is hidden


# ---------------------------------------------------------------------------
# sklearn: signature, get_params, clone, set_params, GridSearchCV
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [DPFermiClassifier, GlobalScalingDPClassifier, DPSGDFClassifier])
def test_old_names_are_keyword_only_last_and_default_to_deprecated(cls):
    signature = inspect.signature(cls.__init__)
    names = list(signature.parameters)
    old_names = list(cls._parameters.deprecated)
    assert old_names and names[-1 - len(old_names) : -1] == old_names  # before **kwargs
    for name in old_names:
        parameter = signature.parameters[name]
        assert parameter.kind == parameter.KEYWORD_ONLY and parameter.default == DEPRECATED
        first, *valid = (make_constraint(c) for c in cls._parameter_constraints[name])
        assert first.hidden and first.is_satisfied_by(DEPRECATED)
        assert not any(c.is_satisfied_by(DEPRECATED) for c in valid)
        assert getattr(cls(), name) == DEPRECATED


@pytest.mark.parametrize("cls, old, old_value, new, new_value", RENAMES, ids=RENAME_IDS)
def test_get_params_clone_and_set_params_round_trip(cls, old, old_value, new, new_value):
    est = cls(**{old: old_value})
    params = est.get_params()
    assert params[old] == old_value and params[new] == cls._parameters.defaults[new]
    copy = clone(est)
    assert copy.get_params() == params
    assert copy._param(new) == new_value  # the value in effect
    assert cls()._param(new) == cls._parameters.defaults[new]
    copy.set_params(**{old: DEPRECATED, new: new_value})
    assert copy._param(new) == new_value and copy.get_params()[old] == DEPRECATED


@pytest.mark.filterwarnings("ignore::skfairdp._degenerate.DegenerateModelWarning")  # 1 epoch
def test_grid_search_over_an_old_name(data):
    X, y, _ = data
    search = GridSearchCV(
        GlobalScalingDPClassifier(epsilon=np.inf, max_epochs=1, hidden_layer_sizes=()),
        {"accounting": ["joint", "composed"]},
        cv=2,
        error_score="raise",
    )
    with pytest.warns(FutureWarning, match="'accounting' was renamed 'calibration'"):
        search.fit(X, y)
    assert search.best_estimator_.accounting in ("joint", "composed")


# ---------------------------------------------------------------------------
# The mechanism
# ---------------------------------------------------------------------------
def test_names_are_removed_in_the_next_minor_release():
    """When development of REMOVED_IN starts, delete the deprecated names (and this test)."""
    major, minor = (int(part) for part in skfairdp.__version__.split(".")[:2])
    assert REMOVED_IN == f"{major}.{minor + 1}", (
        f"skfairdp {skfairdp.__version__}: remove the parameters deprecated for {REMOVED_IN}"
    )


def test_declare_parameters_rejects_inconsistent_deprecations():
    own = {"alpha": Param(1.0, [float])}
    with pytest.raises(ValueError, match="still a parameter"):
        declare_parameters(own=own, deprecated={"alpha": Deprecated(new="lr")})
    with pytest.raises(ValueError, match="not a parameter"):
        declare_parameters(own=own, deprecated={"beta": Deprecated(new="gamma")})
    with pytest.raises(ValueError, match="invalid calibration values"):
        declare_parameters(
            "calibration", deprecated={"accounting": Deprecated("calibration", {"a": "sound"})}
        )
    declared = declare_parameters(own=own, deprecated={"beta": Deprecated(new="alpha")})
    assert list(declared.defaults)[-1] == "beta" and declared.defaults["beta"] == DEPRECATED
    assert declared.constraints["beta"][1:] == [float]  # the new name's values


def test_estimator_code_never_reads_an_old_attribute():
    """Every value in effect comes from ``_param`` (the old attribute is the user's)."""
    package = Path(skfairdp.__file__).parent
    old_names = {old for _, old, _, _, _ in RENAMES}
    pattern = re.compile(rf"self\.({'|'.join(sorted(old_names))})\b")
    offenders = [
        f"{path.relative_to(package)}:{number}"
        for path in package.rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
