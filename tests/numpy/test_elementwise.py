"""Elementwise functions against NumPy: every function on every dtype (several results share one
generated kernel through mnp.evaluate), integer semantics (wrap, division by zero, INT_MIN // -1),
NaN/inf, broadcasting with strided and offset views, weak Python scalars and the promotion table."""

import itertools

import numpy as np
import pytest

import metalcall.numpy as mnp
from mnp_check import FLOATS, INTS, check, supported

NP_NAME = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
           "atanh": "arctanh", "atan2": "arctan2", "pow": "power", "bitwise_invert": "invert",
           "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}
FLOAT_UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp", "expm1",
               "floor", "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10", "logical_not", "negative",
               "positive", "round", "sign", "signbit", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc"]
INT_UNARY = ["abs", "bitwise_invert", "ceil", "floor", "negative", "positive", "round", "sign", "square", "trunc",
             "isfinite", "isnan", "isinf", "logical_not"]
FLOAT_BINARY = ["add", "atan2", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal", "hypot",
                "less", "less_equal", "logaddexp", "logical_and", "logical_or", "logical_xor", "maximum", "minimum",
                "multiply", "not_equal", "pow", "remainder", "subtract"]
INT_BINARY = ["add", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "floor_divide", "greater", "less_equal",
              "maximum", "minimum", "multiply", "not_equal", "remainder", "subtract", "divide"]

FLOAT_DATA = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.75, 1e-3, 100.0, np.inf, -np.inf, np.nan, 0.999, 7.0, -7.0]


def floor_divide_2024(a, b):
    """NumPy's floor_divide, except floor(a / b) where an operand is infinite (the array API 2024.12)."""
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        if q.dtype.kind != "f":
            return q
        return np.where(np.isinf(a) | np.isinf(b), np.divide(a, b), q).astype(q.dtype)


def _np(name):
    if name == "floor_divide":
        return floor_divide_2024
    return getattr(np, NP_NAME.get(name, name))


def _run(results):
    mnp.evaluate(*results)  # one generated kernel for all of them
    return results


def _tol(dt):
    return {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}.get(dt, 0)


@pytest.mark.parametrize("dt", FLOATS)
def test_float_functions(device, dt):
    if dt not in supported(device, FLOATS):
        pytest.skip("no float64 on this device")
    a = np.array(FLOAT_DATA, dtype=dt)
    b = np.array(FLOAT_DATA[::-1], dtype=dt)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    un = _run([getattr(mnp, f)(x) for f in FLOAT_UNARY])
    bi = _run([getattr(mnp, f)(x, y) for f in FLOAT_BINARY])
    with np.errstate(all="ignore"):
        for f, r in zip(FLOAT_UNARY, un):
            check(r, _np(f)(a), rtol=_tol(dt), atol=_tol(dt)), f
        for f, r in zip(FLOAT_BINARY, bi):
            check(r, _np(f)(a, b), rtol=_tol(dt) * 4, atol=_tol(dt))


@pytest.mark.parametrize("dt", INTS + ("bool",))
def test_integer_functions(device, dt):
    info = np.iinfo(dt) if dt != "bool" else None
    if dt == "bool":
        a = np.array([True, False, True, False])
        b = np.array([True, True, False, False])
        un = ["logical_not", "bitwise_invert", "isnan", "positive"] if False else ["logical_not", "bitwise_invert", "isnan"]
        bi = ["add", "multiply", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "less", "logical_xor",
              "maximum", "minimum"]
    else:
        vals = [0, 1, 2, 3, 7, 100, info.max, info.max - 1, info.min, info.min + 1]
        if info.min < 0:
            vals += [-1, -2, -3, -7, -100]
        a = np.array(vals, dtype=dt)
        b = np.array([v if v != 0 else 0 for v in vals[::-1]], dtype=dt)
        b[3] = 0  # division by zero gives 0, as NumPy's values
        un, bi = INT_UNARY, INT_BINARY
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    if device.backend == "metal":  # int / int is float64 in NumPy; Metal has float32 only
        bi = [f for f in bi if f != "divide"]
    ur = _run([getattr(mnp, f)(x) for f in un])
    br = _run([getattr(mnp, f)(x, y) for f in bi])
    with np.errstate(all="ignore"):
        for f, r in zip(un, ur):
            check(r, _np(f)(a))
        for f, r in zip(bi, br):
            check(r, _np(f)(a, b), rtol=1e-12)


def test_integer_edge_cases(device):
    i32 = np.array([np.iinfo(np.int32).min, 7, -7, 7, -7, 0], np.int32)
    d = np.array([-1, 2, 2, -2, -2, 5], np.int32)
    x, y = mnp.asarray(i32, device=device), mnp.asarray(d, device=device)
    r = _run([x // y, x % y, -x, abs(x)])
    with np.errstate(all="ignore"):
        for got, want in zip(r, [i32 // d, i32 % d, -i32, np.abs(i32)]):
            check(got, want)
    u8 = mnp.asarray(np.array([250, 255, 3], np.uint8), device=device)
    check(u8 + 10, np.array([250, 255, 3], np.uint8) + 10)  # wraps
    check(u8 * u8, np.array([250, 255, 3], np.uint8) * np.array([250, 255, 3], np.uint8))
    check(mnp.asarray(np.array([2, 3, -2], np.int64), device=device) ** 3, np.array([2, 3, -2]) ** 3)
    s = mnp.asarray(np.array([1, -8, 64], np.int16), device=device)
    h = np.array([1, -8, 64], np.int16)
    for got, want in zip(_run([s << 3, s >> 2, s << 20]), [h << 3, h >> 2, h << 20]):
        check(got, want)
    check(u8 < 300, np.array([250, 255, 3], np.uint8) < 300)
    with pytest.raises(OverflowError):
        u8 + 300
    with pytest.raises(TypeError):
        mnp.asarray([True], device=device) - mnp.asarray([False], device=device)


def test_float_special_values(device):
    a = np.array([1.0, -1.0, 0.0, -0.0, 5.5, -5.5, np.inf, np.nan], np.float32)
    b = np.array([0.0, 0.0, 0.0, 2.0, -2.0, 2.0, 3.0, 1.0], np.float32)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    with np.errstate(all="ignore"):
        r = _run([x / y, x // y, x % y, mnp.maximum(x, y), mnp.minimum(y, x), mnp.sign(x), mnp.round(x * 0.5)])
        e = [a / b, floor_divide_2024(a, b), a % b, np.maximum(a, b), np.minimum(b, a), np.sign(a), np.round(a * np.float32(0.5))]
    for g, w in zip(r, e):
        check(g, w)
    assert np.signbit(np.asarray(mnp.negative(mnp.asarray([0.0], dtype=mnp.float32, device=device))))[0]


def test_broadcasting_with_views(device):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    b = np.arange(5, dtype=np.float32) - 2
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    check(x[1:, ::2, ::-1] * y[::-1] + x[0, 1], a[1:, ::2, ::-1] * b[::-1] + a[0, 1])
    check(x.T - y[:, None, None], a.T - b[:, None, None])
    check(mnp.expand_dims(y, axis=0) + x[:, 0, :], b[None] + a[:, 0, :])
    check(x[..., 2] * 2, a[..., 2] * 2)
    e = mnp.zeros((0, 5), dtype=mnp.float32, device=device)
    check(e + y, np.zeros((0, 5), np.float32) + b)
    check(mnp.asarray(2.0, dtype=mnp.float32, device=device) * y, np.float32(2.0) * b)


def test_weak_scalars_and_operators(device):
    a = np.array([1, 2, 3], np.int8)
    x = mnp.asarray(a, device=device)
    fl = (a * 1.5) if device.backend != "metal" else (a * 1.5).astype(np.float32)
    pairs = [
        (x + 1, a + 1), (2 * x, 2 * a), (x * 1.5, fl), (10 - x, 10 - a), (7 // x, 7 // a), (7 % x, 7 % a),
        (2 ** x, 2 ** a), (x == 2, a == 2), (x != 2, a != 2), (x >= 2, a >= 2), (~x, ~a), (-x, -a),
        (x & 2, a & 2), (1 | x, 1 | a), (x ^ x, a ^ a),
    ]
    _run([p[0] for p in pairs])  # one kernel for all of them (fewer compiles on a cold cache)
    for got, want in pairs:
        check(got, want)
    f = mnp.asarray(np.array([1, 2, 3], np.float16), device=device)
    check(f + 1.0, np.array([1, 2, 3], np.float16) + 1.0, rtol=1e-3)
    y = mnp.asarray(a, device=device)
    y += 1
    y *= 2
    y -= x
    y //= 2
    y <<= 1
    e = (((a + 1) * 2 - a) // 2) << 1
    check(y, e)
    with pytest.raises(TypeError):
        y += 1.5  # float result cannot go into an int array
    g = mnp.asarray(np.array([1.0, 2.0], np.float32), device=device)
    g /= 4
    g **= 2
    check(g, (np.array([1.0, 2.0], np.float32) / 4) ** 2)
    n = np.array([1, 2, 3], np.int8)
    check(n + x, n + a)  # NumPy defers to the mnp operator


def test_promotion_table(device):
    """The result dtypes of mixed operands (only resolution: nothing is evaluated)."""
    names = supported(device, ("bool",) + INTS + FLOATS)
    for p, q in itertools.product(names, names):
        x = mnp.zeros(2, dtype=p, device=device)
        y = mnp.zeros(2, dtype=q, device=device)
        if p == q == "bool":
            continue
        expected = np.result_type(p, q)
        if device.backend == "metal" and expected == np.float64:
            expected = np.dtype(np.float32)
        assert (x + y).dtype == expected, (p, q)
        assert (x < y).dtype == np.bool_


def test_where_clip_and_more(device):
    a = np.array([-2.0, -0.5, 0.0, 0.5, np.nan, 3.0], np.float32)
    x = mnp.asarray(a, device=device)
    check(mnp.where(x > 0, x, -x), np.where(a > 0, a, -a))
    check(mnp.where(x > 0, 1.0, 0.0).astype(mnp.float32), np.where(a > 0, 1.0, 0.0).astype(np.float32))
    check(mnp.clip(x, -1.0, 1.0), np.clip(a, -1, 1))
    check(mnp.clip(x, max=0.25), np.clip(a, None, 0.25))
    check(mnp.conj(x), a)
    check(mnp.real(x), a)
    check(mnp.imag(x), np.zeros_like(a))
    check(mnp.arctan2(x, 1.0), np.arctan2(a, np.float32(1.0)), rtol=1e-6)
    check(mnp.power(x, 2), np.power(a, 2))
    check(mnp.absolute(x), np.absolute(a))


def test_device_mismatch_and_bad_operands(device):
    x = mnp.zeros(3, dtype=mnp.float32, device=device)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(ValueError):
        x + mnp.zeros(4, dtype=mnp.float32, device=device)


@pytest.mark.parametrize("scale", [1.0, 1e4, 1e9, 1e38])
def test_float32_sin_cos_accuracy(device, scale):
    """sin/cos of float32 within 2 ulp of the float64 result at every magnitude (the CPU backend
    computes them with its own vectorisable reduction and polynomials)."""
    a = ((np.random.default_rng(7).random(4096) - 0.5) * 2 * scale).astype(np.float32)
    x = mnp.asarray(a, device=device)
    s, c = _run([mnp.sin(x), mnp.cos(x)])
    for got, ref in ((s, np.sin(a.astype(np.float64))), (c, np.cos(a.astype(np.float64)))):
        ulp = np.spacing(np.maximum(np.abs(ref), 1e-30).astype(np.float32)).astype(np.float64)
        bound = 2.0 if device.backend == "cpu" else 4.0  # CUDA's sinf: 2 ulp; Metal's precise sin: 4
        assert (np.abs(np.asarray(got).astype(np.float64) - ref) / ulp).max() <= bound
    z = mnp.asarray(np.array([-0.0, 0.0, np.inf, np.nan], np.float32), device=device)
    with np.errstate(invalid="ignore"):
        check(mnp.sin(z), np.sin(np.array([-0.0, 0.0, np.inf, np.nan], np.float32)))
    assert np.signbit(np.asarray(mnp.sin(z))[0])


def test_float32_exp_accuracy(device):
    """exp of float32 within 2 ulp over the whole finite range, with NumPy's overflow, underflow
    (subnormals) and special values (the CPU backend uses its own vectorisable exp)."""
    a = np.concatenate([np.linspace(-104, 89, 20001), np.linspace(-1e-6, 1e-6, 101)]).astype(np.float32)
    x = mnp.asarray(a, device=device)
    ref = np.exp(a.astype(np.float64))
    with np.errstate(over="ignore"):
        want = np.exp(a)
    got = np.asarray(mnp.exp(x)).astype(np.float64)
    fin = np.isfinite(want)
    ulp = np.spacing(np.minimum(np.maximum(ref, 1.4e-45), 3.4e38).astype(np.float32)).astype(np.float64)
    bound = 2.0 if device.backend == "cpu" else 4.0
    assert (np.abs(got - ref)[fin] / ulp[fin]).max() <= bound
    assert np.array_equal(np.isinf(got), np.isinf(want))
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    check(mnp.exp(mnp.asarray(sp, device=device)), np.exp(sp))


@pytest.mark.parametrize("name", ["log", "tanh"])
def test_float32_log_tanh_accuracy(device, name):
    """log (subnormals to 1e38) and tanh within 2 ulp of float64, specials as NumPy."""
    if name == "log":
        a = np.exp(np.linspace(np.log(1e-45), np.log(3e38), 20001)).astype(np.float32)
        a = np.concatenate([a, np.linspace(0.99, 1.01, 1001).astype(np.float32)])
    else:
        a = np.linspace(-12, 12, 20001).astype(np.float32)
    ref = getattr(np, name)(a.astype(np.float64))
    got = np.asarray(getattr(mnp, name)(mnp.asarray(a, device=device))).astype(np.float64)
    ulp = np.spacing(np.maximum(np.abs(ref), 1.4e-45).astype(np.float32)).astype(np.float64)
    bound = 2.0 if device.backend == "cpu" else 4.0
    assert (np.abs(got - ref) / ulp).max() <= bound
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1.0], np.float32)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(sp)
    g = np.asarray(getattr(mnp, name)(mnp.asarray(sp, device=device)))
    check(g, want)
    assert np.array_equal(np.signbit(g[:2]), np.signbit(want[:2]))
