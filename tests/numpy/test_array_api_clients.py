"""Real array API clients on metalcall.numpy (P2.3 item 4): scikit-learn estimators with
array_api_dispatch=True fit and transform mnp arrays on every device and match their NumPy
results; array_api_compat recognises the namespace (through __array_namespace__ alone, nothing
patched); array_api_extra's functions give NumPy's values. Skipped, saying so, where a package is
not installed (the `test` extra installs them)."""

from __future__ import annotations

import os

# scikit-learn refuses array_api_dispatch unless SciPy's own array API support is on; SciPy reads
# this when it is first imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import metalcall.numpy as mnp  # noqa: E402


def _data(device):
    dt = np.float32 if device.backend == "metal" else np.float64
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((80, 6)) * np.array([1.0, 3.0, 0.5, 2.0, 1.0, 0.1]) + 2.0).astype(dt)
    y_class = ((X[:, 0] > 2.0).astype(np.int64) + (X[:, 1] > 3.0)).astype(np.int64)
    y_reg = (X @ np.arange(1.0, 7.0) + 0.1 * rng.standard_normal(80)).astype(dt)
    return X, y_class, y_reg, (2e-4 if dt == np.float32 else 1e-9)


def _estimators():
    sklearn = pytest.importorskip("sklearn", reason="scikit-learn is not installed (pip install metalcall[test])")
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    try:
        with sklearn.config_context(array_api_dispatch=True):
            pass
    except (ImportError, RuntimeError) as e:  # SciPy too old, or imported before SCIPY_ARRAY_API was set
        pytest.skip(f"scikit-learn's array API dispatch is unavailable here: {e}")
    return sklearn, {
        "PCA(svd_solver='full')": (lambda: PCA(n_components=3, svd_solver="full"), None,
                                   ("transform", "inverse_transform_of_transform"), ("components_", "explained_variance_")),
        "LinearDiscriminantAnalysis": (LinearDiscriminantAnalysis, "class", ("predict_proba", "transform"), ("coef_",)),
        "Ridge(solver='svd')": (lambda: Ridge(solver="svd", alpha=0.7), "reg", ("predict",), ("coef_", "intercept_")),
        "StandardScaler": (StandardScaler, None, ("transform",), ("mean_", "scale_")),
        "MinMaxScaler": (MinMaxScaler, None, ("transform",), ("data_min_", "scale_")),
    }


def _outputs(est, X, methods, attributes):
    out = {}
    for m in methods:
        if m == "inverse_transform_of_transform":
            out[m] = est.inverse_transform(est.transform(X))
        else:
            out[m] = getattr(est, m)(X)
    for a in attributes:
        out[a] = getattr(est, a)
    return out


@pytest.mark.parametrize("name", ["PCA(svd_solver='full')", "LinearDiscriminantAnalysis", "Ridge(solver='svd')",
                                  "StandardScaler", "MinMaxScaler"])
def test_sklearn_estimator_matches_numpy(device, name):
    sklearn, table = _estimators()
    make, target, methods, attributes = table[name]
    X, y_class, y_reg, tol = _data(device)
    y = {"class": y_class, "reg": y_reg, None: None}[target]
    want = _outputs(make().fit(X, y), X, methods, attributes)
    with sklearn.config_context(array_api_dispatch=True):
        x = mnp.asarray(X, device=device)
        est = make().fit(x, None if y is None else mnp.asarray(y, device=device))
        got = _outputs(est, x, methods, attributes)
    for key, value in want.items():
        g = got[key]
        if isinstance(value, np.ndarray) and value.ndim:
            assert isinstance(g, mnp.ndarray) and g.device == device, (key, type(g))
        g = np.asarray(g)
        if name == "LinearDiscriminantAnalysis" and key == "transform":
            # The discriminant axes are singular vectors, each defined up to its sign (scikit-learn
            # does not fix it for LDA as it does for PCA): LAPACK and our Jacobi SVD may choose apart.
            g = g * np.sign(np.sum(g * value, axis=0))
        np.testing.assert_allclose(g, value, rtol=tol * 10, atol=tol * 10, err_msg=key)


def test_array_api_compat_recognises_the_namespace(device):
    compat = pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")
    x = mnp.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3), device=device)
    assert compat.is_array_api_obj(x)
    assert compat.array_namespace(x, mnp.ones(2, device=device)) is mnp
    assert compat.device(x) == device
    assert compat.size(x) == 6
    assert np.array_equal(np.asarray(compat.to_device(x, device)), np.asarray(x))
    with pytest.raises(TypeError):  # two namespaces at once
        compat.array_namespace(x, np.ones(2))


EXTRA = {
    "atleast_nd": lambda xp, xpx, v: xpx.atleast_nd(v, ndim=3, xp=xp),
    "cov": lambda xp, xpx, v: xpx.cov(v, xp=xp),
    "create_diagonal": lambda xp, xpx, v: xpx.create_diagonal(v[0], xp=xp),
    "kron": lambda xp, xpx, v: xpx.kron(v, v[:2, :2], xp=xp),
    "nunique": lambda xp, xpx, v: xpx.nunique(v % 5, xp=xp),
    "pad": lambda xp, xpx, v: xpx.pad(v, 2, xp=xp),
    "setdiff1d": lambda xp, xpx, v: xpx.setdiff1d(v[0], v[0][1:3], xp=xp),
    "union1d": lambda xp, xpx, v: xpx.union1d(v[0], v[1], xp=xp),
    "isin": lambda xp, xpx, v: xpx.isin(v, v[0], xp=xp),
    "sinc": lambda xp, xpx, v: xpx.sinc(v, xp=xp),
    "isclose": lambda xp, xpx, v: xpx.isclose(v, v + 1e-9, xp=xp),
    "at_set": lambda xp, xpx, v: xpx.at(v)[0, 1].set(-5.0),
    "at_add": lambda xp, xpx, v: xpx.at(v)[:, 1].add(2.0),
    "apply_where": lambda xp, xpx, v: xpx.apply_where(v > 3, v, lambda t: t * 2, fill_value=0.0, xp=xp),
    "partition": lambda xp, xpx, v: xpx.partition(xp.flip(v[0]), 2, xp=xp),
    "nan_to_num": lambda xp, xpx, v: xpx.nan_to_num(xp.where(v > 9, xp.inf, xp.where(v < 2, xp.nan, v)), xp=xp),
    "nanmax": lambda xp, xpx, v: xpx.nanmax(xp.where(v > 7, xp.nan, v), axis=0, xp=xp),
    "nanmean": lambda xp, xpx, v: xpx.nanmean(xp.where(v > 9, xp.nan, v), axis=1, xp=xp),
    "nansum": lambda xp, xpx, v: xpx.nansum(xp.where(v > 7, xp.nan, v), xp=xp),
    "searchsorted": lambda xp, xpx, v: xpx.searchsorted(v[0], v[2], xp=xp),
    "tril_indices": lambda xp, xpx, v: xp.stack(xpx.tril_indices(4, xp=xp)),
    "triu_indices": lambda xp, xpx, v: xp.stack(xpx.triu_indices(4, offset=1, xp=xp)),
    "deg2rad": lambda xp, xpx, v: xpx.deg2rad(v, xp=xp),
    "lazy_apply": lambda xp, xpx, v: xpx.lazy_apply(lambda t: np.sqrt(t), v, as_numpy=True, xp=xp),
}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_array_api_extra_function(device, name):
    xpx = pytest.importorskip("array_api_extra", reason="array-api-extra is not installed")
    dt = np.float32 if device.backend == "metal" else np.float64
    a = np.arange(12.0, dtype=dt).reshape(3, 4)
    got = EXTRA[name](mnp, xpx, mnp.asarray(a, device=device))
    want = EXTRA[name](np, xpx, a.copy())
    assert isinstance(got, mnp.ndarray), type(got)
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    np.testing.assert_allclose(g, w, rtol=1e-6, equal_nan=True)
