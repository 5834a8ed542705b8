"""complex64 and complex128 in metalcall.numpy against NumPy on every device: creation and round
trips, casts, promotion, every elementwise function the array API defines for complex (random
values and a grid of special values: signed zeros, infinities, NaN, branch cuts), the standard's
special cases checked directly, reductions, scans, matmul/vecdot, indexing, and the errors."""

import cmath
import math

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp
from mnp_check import check

NP_NAME = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
           "atanh": "arctanh", "pow": "power"}
UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "conj", "cos", "cosh", "exp", "expm1", "imag",
         "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10", "negative", "positive", "real",
         "reciprocal", "round", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh", "logical_not"]
BINARY = ["add", "subtract", "multiply", "divide", "pow", "equal", "not_equal", "logical_and", "logical_or"]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, np.inf, -np.inf, np.nan]
TOL = {"complex64": 3e-6, "complex128": 1e-13}


def _dtypes(device):
    return ["complex64"] if device.backend == "metal" else ["complex64", "complex128"]


def _np(name):
    return getattr(np, NP_NAME.get(name, name))


def _close(got, want, dt):
    """Values equal to NumPy's within a tolerance relative to |want| (complex results compared as a
    whole: NumPy's kernels may fuse multiply-adds), NaN where NumPy has NaN."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    if w.dtype.kind not in "fc":
        np.testing.assert_array_equal(g, w)
        return
    gc, wc = g.astype(np.complex128), w.astype(np.complex128)
    for part in (np.real, np.imag):
        assert np.array_equal(np.isnan(part(gc)), np.isnan(part(wc))), (gc, wc)
    fin = np.isfinite(wc)
    err = np.abs(gc[fin] - wc[fin])
    assert np.all(err <= TOL[dt] * np.maximum(np.abs(wc[fin]), 1e-30)), (gc[fin][err.argmax()], wc[fin][err.argmax()])


def _random(dt, n=256, seed=0):
    rng = np.random.default_rng(seed)
    mag = np.exp(rng.uniform(-3, 3, n))
    return (mag * rng.standard_normal(n) + 1j * mag * rng.standard_normal(n)).astype(dt)


def test_dtypes_promotion_and_info(device):
    for dt in _dtypes(device):
        assert mnp.isdtype(getattr(mnp, dt), "complex floating") and mnp.isdtype(getattr(mnp, dt), "numeric")
        assert not mnp.isdtype(getattr(mnp, dt), "real floating")
        f = mnp.finfo(getattr(mnp, dt))
        assert f.eps == float(np.finfo(dt).eps) and type(f.max) is float
    info = mnp.__array_namespace_info__()
    assert set(info.dtypes(device=device, kind="complex floating")) == set(_dtypes(device))
    assert info.default_dtypes(device=device)["complex floating"] == np.dtype(_dtypes(device)[-1])
    for a, b in [("complex64", "float64"), ("complex64", "complex128"), ("float32", "complex64"),
                 ("int8", "complex64"), ("bool", "complex128")]:
        assert mnp.result_type(getattr(mnp, a), getattr(mnp, b)) == np.result_type(a, b)
    x = mnp.asarray(np.ones(3, np.float32), device=device)
    assert (x + 1j).dtype == np.complex64  # a weak Python complex keeps the float's precision
    assert (mnp.asarray(np.ones(3, np.int16), device=device) * 2j).dtype == np.dtype(_dtypes(device)[-1])


@pytest.mark.parametrize("kind", ["numpy", "list", "scalar"])
def test_creation_and_round_trips(device, kind):
    for dt in _dtypes(device):
        a = np.array([1 + 2j, -0.0 - 0.0j, complex(np.inf, np.nan), complex(-3.5, np.inf), 1e-30j], dt)
        if kind == "numpy":
            x = mnp.asarray(a, device=device)
        elif kind == "list":
            x = mnp.asarray(a.tolist(), dtype=dt, device=device)
        else:
            x = mnp.stack([mnp.asarray(complex(v), dtype=dt, device=device) for v in a])
        assert x.dtype == np.dtype(dt)
        got = np.asarray(x)
        assert got.view(np.uint8).tobytes() == a.view(np.uint8).tobytes()  # bit for bit, signed zeros too
        assert x.tolist() == a.tolist() or all(
            (g == w) or (cmath.isnan(g) and cmath.isnan(w)) for g, w in zip(x.tolist(), a.tolist()))
        assert complex(x[0]) == complex(a[0])
        dl = np.from_dlpack(x) if device.backend == "cpu" else np.from_dlpack(x, device="cpu")
        assert dl.dtype == np.dtype(dt) and dl.tobytes() == a.tobytes()
        back = mnp.from_dlpack(a, device=device)
        assert back.dtype == np.dtype(dt) and np.asarray(back).tobytes() == a.tobytes()
        check(mnp.full((2, 3), 1.5 - 2j, dtype=dt, device=device), np.full((2, 3), 1.5 - 2j, dt))
        check(mnp.zeros(4, dtype=dt, device=device), np.zeros(4, dt))
        check(mnp.ones((2, 2), dtype=dt, device=device), np.ones((2, 2), dt))
        check(mnp.eye(3, k=1, dtype=dt, device=device), np.eye(3, k=1, dtype=dt))
        check(mnp.linspace(0, 1 + 2j, 5, dtype=dt, device=device), np.linspace(0, 1 + 2j, 5).astype(dt), rtol=1e-6)
        check(mnp.full_like(x, 2j), np.full_like(a, 2j))
    assert mnp.full(2, 1j, device=device).dtype == np.dtype(_dtypes(device)[-1])


def test_astype(device):
    """Casts between the complex dtypes, to bool and real (the real part), and from every real dtype
    (one kernel for all the casts of a shape)."""
    reals = ["bool", "int8", "uint16", "int32", "int64", "float16", "float32"] + (
        [] if device.backend == "metal" else ["float64"])
    cases = []
    for dt in _dtypes(device):
        a = np.array([1.5 - 2j, -0.0 + 3j, 0j, complex(np.inf, -1), 7 + 0j], dt)
        x = mnp.asarray(a, device=device)
        cases += [(x.astype(other), a.astype(other)) for other in _dtypes(device)]
        cases.append((mnp.astype(x, "bool"), a.astype(bool)))
        cases.append((mnp.astype(x.real, "float32"), a.real.astype("float32")))
        for r in reals:
            src = np.array([0, 1, 0, 1, 1] if r == "bool" else [0, 1, 2 if r[0] == "u" else -2, 100, 3], r)
            cases.append((mnp.asarray(src, device=device).astype(dt), src.astype(dt)))
    mnp.evaluate(*[got for got, _ in cases])
    for got, want in cases:
        check(got, want)


def test_unary_random_values(device):
    """Every unary function on random values of magnitudes e^-3..e^3 (one kernel per dtype)."""
    for dt in _dtypes(device):
        a = _random(dt)
        near0 = np.abs(a) <= 0.2  # NumPy's complex log1p/expm1 lose digits near 0; ours do not
        x = mnp.asarray(a, device=device)
        results = mnp.evaluate(*[getattr(mnp, fn)(x) for fn in UNARY])
        for fn, got in zip(UNARY, results):
            with np.errstate(all="ignore"):
                want = _np(fn)(a) if fn != "reciprocal" else np.divide(1, a)
            if fn in ("expm1", "log1p"):
                got, want = np.asarray(got)[~near0], want[~near0]
            _close(got, want, dt)


def test_unary_special_values(device):
    """Every unary function on every pair of special parts, as NumPy (C99 Annex G) gives them, signed
    zeros and infinities included, one kernel per dtype. Three differ from NumPy where NumPy differs from
    the standard: sign of a NaN-and-infinity input (the standard asks for NaN + NaN j; NumPy gives the
    direction of the infinity), expm1 of non-finite input or -0 (NumPy computes exp(z) - 1), and
    tanh(inf + yj) (1 + 0j; glibc: 1 + 0 sin(2y) j)."""
    for dt in _dtypes(device):
        a = np.array([complex(r, i) for r in SPECIAL for i in SPECIAL], dt)
        x = mnp.asarray(a, device=device)
        names = [f for f in UNARY if f not in ("reciprocal",)]
        res = mnp.evaluate(*[getattr(mnp, f)(x) for f in names])
        for f, r in zip(names, res):
            with np.errstate(all="ignore"):
                want = _np(f)(a)
            got = np.asarray(r)
            if f == "sign":
                nanpart = np.isnan(a.real) | np.isnan(a.imag)
                assert np.all(np.isnan(got[nanpart].real) & np.isnan(got[nanpart].imag))
                got, want = got[~nanpart], want[~nanpart]
            if f == "expm1":  # NumPy's is exp(z) - 1, against the standard (expm1(inf + 0j) is inf + NaN j
                fin = np.isfinite(a) & (a != 0)  # there); STANDARD_CASES checks the standard's values
                got, want = got[fin], want[fin]
            if f in ("tanh", "tan"):  # tanh(inf + yj) is 1 + 0j in the standard, 1 + 0 sin(2y) j in glibc
                inf_part, other = (a.real, a.imag) if f == "tanh" else (a.imag, a.real)  # tan z = -i tanh(iz)
                keep = ~(np.isinf(inf_part) & np.isfinite(other))
                got, want = got[keep], want[keep]
            if got.dtype == bool:
                check(got, want)
                continue
            for part in ((np.real, np.imag) if got.dtype.kind == "c" else (np.real,)):
                g, w = part(got), part(want)
                with np.errstate(all="ignore"):
                    same = (g == w) & (np.signbit(g) == np.signbit(w))
                    same |= np.isnan(g) & np.isnan(w)
                    same |= np.isfinite(w) & (w != 0) & (np.abs(g - w) <= TOL[dt] * np.abs(w))
                assert same.all(), (f, dt, g[~same][:4], w[~same][:4])


def _c(re, im):
    return complex(re, im)


INF, NAN, PI = math.inf, math.nan, math.pi

# A few rows of the standard's special-case tables, written out from the text (not from NumPy).
STANDARD_CASES = [
    ("acos", _c(0.0, 0.0), _c(PI / 2, -0.0)), ("acos", _c(-INF, 1.0), _c(PI, -INF)),
    ("acos", _c(INF, INF), _c(PI / 4, -INF)), ("acos", _c(NAN, INF), _c(NAN, -INF)),
    ("acosh", _c(0.0, 0.0), _c(0.0, PI / 2)), ("acosh", _c(-INF, INF), _c(INF, 3 * PI / 4)),
    ("asinh", _c(INF, 2.0), _c(INF, 0.0)), ("asinh", _c(NAN, 0.0), _c(NAN, 0.0)),
    ("atanh", _c(1.0, 0.0), _c(INF, 0.0)), ("atanh", _c(0.0, NAN), _c(0.0, NAN)),
    ("atanh", _c(INF, NAN), _c(0.0, NAN)), ("atanh", _c(2.0, INF), _c(0.0, PI / 2)),
    ("cosh", _c(INF, 0.0), _c(INF, 0.0)), ("cosh", _c(NAN, 0.0), _c(NAN, 0.0)),
    ("exp", _c(-INF, INF), _c(0.0, 0.0)), ("exp", _c(INF, 0.0), _c(INF, 0.0)), ("exp", _c(NAN, 0.0), _c(NAN, 0.0)),
    ("expm1", _c(-INF, NAN), _c(-1.0, 0.0)), ("expm1", _c(INF, 0.0), _c(INF, 0.0)),
    ("expm1", _c(-0.0, 0.0), _c(0.0, 0.0)), ("tanh", _c(INF, 3.0), _c(1.0, 0.0)), ("tanh", _c(INF, -3.0), _c(1.0, -0.0)),
    ("log", _c(-0.0, 0.0), _c(-INF, PI)), ("log", _c(-INF, INF), _c(INF, 3 * PI / 4)),
    ("log1p", _c(-1.0, 0.0), _c(-INF, 0.0)), ("log1p", _c(NAN, INF), _c(INF, NAN)),
    ("sinh", _c(0.0, 0.0), _c(0.0, 0.0)), ("sinh", _c(INF, 0.0), _c(INF, 0.0)), ("sinh", _c(NAN, 0.0), _c(NAN, 0.0)),
    ("sqrt", _c(-0.0, 0.0), _c(0.0, 0.0)), ("sqrt", _c(INF, 1.0), _c(INF, 0.0)), ("sqrt", _c(-INF, 1.0), _c(0.0, INF)),
    ("sqrt", _c(2.0, INF), _c(INF, INF)), ("sqrt", _c(NAN, INF), _c(INF, INF)), ("sqrt", _c(INF, NAN), _c(INF, NAN)),
    ("tanh", _c(0.0, 0.0), _c(0.0, 0.0)), ("tanh", _c(INF, 1.0), _c(1.0, 0.0)), ("tanh", _c(0.0, NAN), _c(0.0, NAN)),
    ("tanh", _c(NAN, 0.0), _c(NAN, 0.0)), ("sign", _c(-0.0, 0.0), _c(0.0, 0.0)), ("sign", _c(NAN, 1.0), _c(NAN, NAN)),
    ("sign", _c(3.0, -4.0), _c(0.6, -0.8)),
]


def test_standard_special_cases(device):
    for dt in _dtypes(device):
        x = mnp.asarray(np.array([z for _, z, _ in STANDARD_CASES], dt), device=device)
        results = mnp.evaluate(*[getattr(mnp, f)(x[i]) for i, (f, _, _) in enumerate(STANDARD_CASES)])
        for (f, z, want), r in zip(STANDARD_CASES, results):
            got = complex(r)
            for g, w in ((got.real, want.real), (got.imag, want.imag)):
                ok = (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w)) \
                    or (w != 0 and math.isfinite(w) and abs(g - w) <= 1e-6 * abs(w))
                assert ok, (f, z, got, want)


def test_binary(device):
    """Every binary function, broadcasting (8, 8) with (8,), with a weak Python complex, and a real
    array with a complex one (one kernel per dtype and shape)."""
    for dt in _dtypes(device):
        a, b = _random(dt, 64, 1).reshape(8, 8), _random(dt, 8, 2)
        pa, pb = a / np.abs(a).max() * 2, np.array([2, 3, -1, 0.5 + 0.5j, -2, 0, 1j, 7], dt)  # for pow
        r = np.real(a).astype({"complex64": "float32", "complex128": "float64"}[dt])
        x, y, xr = mnp.asarray(a, device=device), mnp.asarray(b, device=device), mnp.asarray(r, device=device)
        px, py = mnp.asarray(pa, device=device), mnp.asarray(pb, device=device)
        cases = []
        for fn in BINARY:
            u, v, ua, vb = (px, py, pa, pb) if fn == "pow" else (x, y, a, b)
            cases += [(fn, getattr(mnp, fn)(u, v), (ua, vb)),
                      (fn, getattr(mnp, fn)(u, 1.5 - 0.5j), (ua, np.array(1.5 - 0.5j, dt))),
                      (fn, getattr(mnp, fn)(xr, v), (r, vb))]
        mnp.evaluate(*[c[1] for c in cases])
        for fn, got, args in cases:
            with np.errstate(all="ignore"):
                _close(got, _np(fn)(*args), dt)


def test_division_and_power_edge_cases(device):
    for dt in _dtypes(device):
        a = np.array([1 + 1j, 0j, complex(np.inf, 0), 1e30 + 1e-30j, 0j, 2 - 3j, 0j, -0.0j], dt)
        b = np.array([0j, 0j, 1 + 1j, 1e30 + 1e30j, 2 + 0j, 0j, -1 + 0j, 1j], dt)
        x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
        with np.errstate(all="ignore"):
            _close(x / y, a / b, dt)
            _close(x ** y, a ** b, dt)
            _close(x ** 2, a ** 2, dt)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_reductions(device, axis):
    for dt in _dtypes(device):
        a = _random(dt, 60, 3).reshape(3, 4, 5) * 0.5
        x = mnp.asarray(a, device=device)
        for keepdims in (False, True):
            _close(mnp.sum(x, axis=axis, keepdims=keepdims), np.sum(a, axis=axis, keepdims=keepdims), dt)
            _close(mnp.prod(x, axis=axis, keepdims=keepdims), np.prod(a, axis=axis, keepdims=keepdims), dt)
            _close(mnp.mean(x, axis=axis, keepdims=keepdims), np.mean(a, axis=axis, keepdims=keepdims), dt)
        a2 = a.copy()
        a2[0, 0, :] = 0
        x2 = mnp.asarray(a2, device=device)
        check(mnp.any(x2, axis=axis), np.any(a2, axis=axis))
        check(mnp.all(x2, axis=axis), np.all(a2, axis=axis))
    f = mnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
    _close(mnp.sum(f, axis=1, dtype=mnp.complex64), np.sum(np.arange(6, dtype=np.float32).reshape(2, 3), axis=1,
                                                           dtype=np.complex64), "complex64")
    e = mnp.asarray(np.zeros((0, 3), np.complex64), device=device)
    check(mnp.prod(e, axis=0), np.prod(np.zeros((0, 3), np.complex64), axis=0))
    check(mnp.sum(e, axis=0), np.sum(np.zeros((0, 3), np.complex64), axis=0))


def test_cumulative(device):
    for dt in _dtypes(device):
        a = _random(dt, 24, 4).reshape(4, 6) * 0.7
        x = mnp.asarray(a, device=device)
        for axis in (0, 1):
            _close(mnp.cumulative_sum(x, axis=axis), np.cumsum(a, axis=axis), dt)
            _close(mnp.cumulative_prod(x, axis=axis), np.cumprod(a, axis=axis), dt)
        _close(mnp.cumulative_sum(x, axis=1, include_initial=True),
               np.concatenate([np.zeros((4, 1), dt), np.cumsum(a, axis=1)], axis=1), dt)
        _close(mnp.cumulative_prod(x, axis=0, include_initial=True),
               np.concatenate([np.ones((1, 6), dt), np.cumprod(a, axis=0)], axis=0), dt)


def test_matmul_vecdot_tensordot(device):
    for dt in _dtypes(device):
        a, b = _random(dt, 2 * 5 * 7, 5).reshape(2, 5, 7), _random(dt, 7 * 3, 6).reshape(7, 3)
        x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
        tol = {"complex64": 1e-5, "complex128": 1e-12}[dt]
        check(x @ y, a @ b, rtol=tol, atol=tol * np.abs(a @ b).max())
        check(mnp.matmul(x[0, 0], y), a[0, 0] @ b, rtol=tol, atol=tol * 100)
        v, w = _random(dt, 12, 7).reshape(3, 4), _random(dt, 4, 8)
        check(mnp.vecdot(mnp.asarray(v, device=device), mnp.asarray(w, device=device)),
              np.vecdot(v, w), rtol=tol, atol=tol * 100)  # conjugates the first operand
        check(mnp.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1), rtol=tol, atol=tol * 100)
        r = np.real(b).astype(np.float32 if dt == "complex64" else np.float64)
        check(x @ mnp.asarray(r, device=device), a @ r, rtol=tol, atol=tol * 100)


def test_indexing_where_and_manipulation(device):
    for dt in _dtypes(device):
        a = _random(dt, 12, 9).reshape(3, 4)
        x = mnp.asarray(a, device=device)
        idx = np.array([2, 0, 2])
        check(x[mnp.asarray(idx, device=device)], a[idx])
        check(mnp.take(x, mnp.asarray(np.array([3, 1]), device=device), axis=1), np.take(a, [3, 1], axis=1))
        check(x[:, ::-2].T, a[:, ::-2].T)
        check(mnp.concat([x, x[:1]], axis=0), np.concatenate([a, a[:1]]))
        check(mnp.where(mnp.real(x) > 0, x, 1j), np.where(a.real > 0, a, np.array(1j, dt)))
        y = mnp.asarray(a.copy(), device=device)
        y[1] = 2 - 1j
        y[0, :2] = mnp.asarray(np.array([5j, -0.0j], dt), device=device)
        want = a.copy()
        want[1] = 2 - 1j
        want[0, :2] = [5j, -0.0j]
        check(y, want)
        y[mnp.real(y) > 1] = 0.5j  # a boolean mask with a complex scalar
        want[want.real > 1] = 0.5j
        check(y, want)
        check(mnp.flip(x, axis=1), np.flip(a, axis=1))
        check(mnp.reshape(x, (4, 3)), a.reshape(4, 3))
        check(mnp.count_nonzero(mnp.asarray(np.array([0j, 1j, 2, 0], dt), device=device)), 2, dtype=False)


def test_refused_operations(device):
    x = mnp.asarray(np.array([1 + 1j, 2j], np.complex64), device=device)
    for call in (lambda: x < x, lambda: mnp.maximum(x, x), lambda: x // x, lambda: x % 2, lambda: mnp.floor(x),
                 lambda: mnp.max(x), lambda: mnp.argmin(x), lambda: mnp.atan2(x, x), lambda: mnp.signbit(x),
                 lambda: mnp.clip(x, 0, 1), lambda: mnp.sort(x), lambda: mnp.argsort(x), lambda: mnp.var(x),
                 lambda: mnp.searchsorted(x, x), lambda: mnp.bitwise_and(x, x), lambda: mnp.trunc(x)):
        with pytest.raises(mc.Error) as e:
            call()
        assert isinstance(e.value, TypeError) and "complex" in str(e.value)
    f = mnp.asarray(np.ones(2, np.float32), device=device)
    with pytest.raises(mc.ArgumentError, match="in place"):
        f += 1j  # a complex result does not fit a real array
    if device.backend == "metal":
        with pytest.raises(mc.Error, match="complex128"):
            mnp.zeros(3, dtype=mnp.complex128, device=device)
        assert mnp.asarray(np.ones(2, np.complex128), device=device).dtype == np.complex64
    else:
        assert mnp.zeros(3, dtype=mnp.complex128, device=device).dtype == np.complex128


@pytest.mark.parametrize("test", [test_unary_special_values, test_standard_special_cases, test_cumulative,
                                  test_matmul_vecdot_tensordot, test_indexing_where_and_manipulation])
def test_on_the_metal_simulator(test):
    """The same checks on the simulated Metal GPU (its compiler path and pipelines)."""
    if "metal-sim" not in mc.backends():
        pytest.skip("metalcall was built without the metal-sim backend")
    test(mc.Device("metal-sim", family="amd"))


def test_long_products(device):
    """A product of few long rows is taken in chunks first (then the chunks' products)."""
    for dt in _dtypes(device):
        rng = np.random.default_rng(11)
        a = np.exp(1j * rng.uniform(-np.pi, np.pi, (2, 5000))).astype(dt) * np.asarray(1.0001, dt)
        x = mnp.asarray(a, device=device)
        tol = {"complex64": 1e-3, "complex128": 1e-11}[dt]
        check(mnp.prod(x, axis=1), np.prod(a, axis=1), rtol=tol, atol=tol)
        check(mnp.prod(x), np.prod(a), rtol=tol, atol=tol)
        check(mnp.prod(x.T, axis=0, keepdims=True), np.prod(a.T, axis=0, keepdims=True), rtol=tol, atol=tol)
