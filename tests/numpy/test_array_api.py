"""Array API details that the data-apis array-api-tests suite checks (docs/array-api-tests.md), each
against NumPy: Python types from finfo/iinfo, the inspection dtypes, signatures, 0-d and empty
edge cases, result dtypes."""

import inspect

import numpy as np
import pytest

import metalcall.numpy as mnp
from mnp_check import check, supported


def test_finfo_iinfo_python_types(device):
    for name in supported(device, ("float16", "float32", "float64")):
        for arg in (getattr(mnp, name), mnp.asarray(1, dtype=name, device=device)):
            f, e = mnp.finfo(arg), np.finfo(name)
            assert type(f.bits) is int and f.bits == e.bits
            for field in ("eps", "max", "min", "smallest_normal"):
                assert type(getattr(f, field)) is float and getattr(f, field) == float(getattr(e, field))
            assert f.dtype == np.dtype(name) and f.tiny == e.tiny  # NumPy's other fields too
    for name in ("int8", "uint16", "int64", "uint64"):
        i, e = mnp.iinfo(mnp.asarray(1, dtype=name, device=device)), np.iinfo(name)
        assert (type(i.bits), type(i.min), type(i.max)) == (int, int, int)
        assert (i.bits, i.min, i.max, i.dtype) == (e.bits, e.min, e.max, np.dtype(name))


def test_info_dtypes_are_array_api_dtypes(device):
    names = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
             "float64", "complex64", "complex128"}
    got = mnp.__array_namespace_info__().dtypes(device=device)
    assert set(got) <= names and "float16" not in got and "float32" in got
    assert mnp.asarray([1], dtype=mnp.float16, device=device).dtype == np.float16  # still supported


def test_expand_dims_axis_positional(device):
    assert inspect.signature(mnp.expand_dims).parameters["axis"].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    x = mnp.asarray(a, device=device)
    check(mnp.expand_dims(x, 1), np.expand_dims(a, 1))
    check(mnp.expand_dims(x, axis=-1), np.expand_dims(a, -1))


@pytest.mark.parametrize("value", [False, 2.5])
def test_unique_of_0d(device, value):
    a = np.array(value)
    x = mnp.asarray(a, device=device)
    ev, ei, einv, ec = np.unique_all(a)
    v, i, inv, c = mnp.unique_all(x)
    check(v, ev)
    check(inv, einv.astype(np.int64))  # shape () as x's, not (1,)
    check(c, ec.astype(np.int64))
    check(mnp.unique_inverse(x).inverse_indices, np.unique_inverse(a).inverse_indices.astype(np.int64))


@pytest.mark.parametrize("dt", ["uint8", "int8", "int16", "float32"])
def test_vecdot_keeps_dtype(device, dt):
    a = np.arange(12).reshape(3, 4).astype(dt)
    b = (np.arange(4) % 3).astype(dt)
    check(mnp.vecdot(mnp.asarray(a, device=device), mnp.asarray(b, device=device)), np.vecdot(a, b))


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_sign_of_signed_zero(device, dt):
    if dt not in supported(device, [dt]):
        pytest.skip("no float64 on this device")
    a = np.array([-0.0, 0.0, -2.5, 3.0, np.nan, -np.inf], dtype=dt)
    got = mnp.sign(mnp.asarray(a, device=device)).to_numpy()
    e = np.sign(a)
    check(got, e)
    assert list(np.signbit(got)) == list(np.signbit(e))  # -0 gives +0, as NumPy


def test_empty_mask_with_zero_length_axes(device):
    a = np.zeros((0, 1), dtype=np.float32)
    x = mnp.asarray(a, device=device)
    for mshape in [(0, 0), (0,), (0, 1)]:
        m = np.zeros(mshape, dtype=bool)
        check(x[mnp.asarray(m, device=device)], a[m])
    b = np.arange(6, dtype=np.int16).reshape(2, 3)
    check(mnp.asarray(b, device=device)[mnp.asarray(np.zeros((0, 3), bool), device=device)],
          np.empty((0,), np.int16))  # NumPy's answer too: b[np.zeros((0, 3), bool)]
    with pytest.raises(IndexError):
        mnp.asarray(b, device=device)[mnp.asarray(np.zeros((1, 3), bool), device=device)]


@pytest.mark.parametrize("version", [None, (1, 0)])
def test_dlpack_view_without_copy(device, version):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = mnp.asarray(a, device=device)
    kw = {} if version is None else {"max_version": version}
    for view, ev in ((x.T, a.T), (x[1:, ::2], a[1:, ::2]), (mnp.reshape(x, (2, 6)), a.reshape(2, 6))):
        # kDLCPU asked for: a host view of the device's (host-visible) memory, without a copy
        assert view.__dlpack__(copy=False, dl_device=(1, 0), **kw) is not None
        if device.backend != "cpu":
            # NumPy takes only host memory: asked for the CPU, a (host-visible) view's export works
            check(np.from_dlpack(view, device="cpu"), ev)
            continue
        assert view.__dlpack__(copy=False, **kw) is not None
        shared = np.from_dlpack(view)
        check(shared, ev)
        assert np.shares_memory(shared, x.to_numpy())  # zero-copy: CPU buffers are host memory


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_nextafter(device, dt):
    if dt not in supported(device, [dt]):
        pytest.skip("no float64 on this device")
    tiny = float(np.finfo(dt).smallest_subnormal)
    a = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5, tiny, -tiny, np.finfo(dt).max, 0.0], dt)
    b = np.array([1.0, -1.0, 2.0, -2.0, 0.0, 0.0, 1.0, 2.5, 0.0, 0.0, np.inf, -0.0], dt)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    u = f"u{a.itemsize}"
    with np.errstate(all="ignore"):
        for p, q, ep, eq in ((x, y, a, b), (y, x, b, a), (x, -y, a, -b)):
            got, e = mnp.nextafter(p, q).to_numpy(), np.nextafter(ep, eq)
            if dt == "float16":  # x == y gives y (C99, the array API: nextafter(-0, +0) is +0);
                e = np.where(ep == eq, eq, e)  # NumPy's own float16 loop returns x there
            assert got.dtype == e.dtype
            assert np.array_equal(np.isnan(got), np.isnan(e))
            ok = ~np.isnan(e)
            assert np.array_equal(got.view(u)[ok], e.view(u)[ok])  # bit for bit, signed zeros included


def test_nextafter_dtypes(device):
    x = mnp.asarray(np.array([1, 2], np.int32), device=device)
    assert mnp.nextafter(x, 3).dtype == np.nextafter(np.array([1, 2], np.int32), 3).dtype


def test_integer_array_indices_on_several_axes(device):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    x = mnp.asarray(a, device=device)
    i = np.array([[1], [0]])
    j = np.array([0, 2, -1])
    for key, ekey in (((0, mnp.asarray(j, device=device)), (0, j)),
                      ((mnp.asarray(i, device=device), mnp.asarray(j, device=device)), (i, j)),
                      ((mnp.asarray(i, device=device),), (i,)),
                      ((1, 2, mnp.asarray(j, device=device)), (1, 2, j)),
                      ((-1, [2, 0]), (-1, [2, 0]))):
        check(x[key], a[ekey])
    with pytest.raises(IndexError):
        x[(5, mnp.asarray(j, device=device))]
    with pytest.raises(IndexError):
        x[(0, 0, 0, mnp.asarray(j, device=device))]


def test_take_along_axis(device):
    a = (np.arange(24, dtype=np.float32) * 7 % 11).reshape(2, 3, 4)
    x = mnp.asarray(a, device=device)
    for axis in (0, 1, 2, -1):
        idx = np.argsort(a, axis=axis)
        check(mnp.take_along_axis(x, mnp.asarray(idx, device=device), axis=axis), np.take_along_axis(a, idx, axis))
    idx = np.array([[[-1, 0]]])  # negative indices; the other axes broadcast
    check(mnp.take_along_axis(x, mnp.asarray(idx, device=device), axis=2),
          np.take_along_axis(a, np.broadcast_to(idx, (2, 3, 2)), 2))
    empty = np.zeros((2, 0, 4), np.int64)
    check(mnp.take_along_axis(x, mnp.asarray(empty, device=device), axis=1), np.take_along_axis(a, empty, 1))
    with pytest.raises(ValueError):
        mnp.take_along_axis(x, mnp.asarray(np.zeros((2, 3), np.int64), device=device), axis=1)


@pytest.mark.parametrize("dt", ["int8", "uint16", "int32", "int64", "uint64", "float16", "float32", "float64",
                                "bool"])
def test_cumulative_prod(device, dt):
    if dt not in supported(device, [dt]):
        pytest.skip("no float64 on this device")
    a = (np.arange(1, 25) % 7 - 2).astype(dt) if dt != "bool" else np.arange(24) % 3 > 0
    a = a.reshape(2, 3, 4)
    x = mnp.asarray(a, device=device)
    tol = 2e-3 if dt == "float16" else 1e-6
    for axis in (0, 1, -1):
        check(mnp.cumulative_prod(x, axis=axis), np.cumulative_prod(a, axis=axis), rtol=tol)
        check(mnp.cumulative_prod(x, axis=axis, include_initial=True),
              np.cumulative_prod(a, axis=axis, include_initial=True), rtol=tol)
    check(mnp.cumulative_prod(x[0, 0]), np.cumulative_prod(a[0, 0]), rtol=tol)
    with pytest.raises(ValueError):
        mnp.cumulative_prod(x)  # axis= is needed above one dimension


def test_cumulative_prod_wraps_and_dtype(device):
    a = np.array([100, 100, 100, -7], np.int8)
    x = mnp.asarray(a, device=device)
    check(mnp.cumulative_prod(x, dtype=mnp.int8), np.cumulative_prod(a, dtype=np.int8))  # wraps as NumPy
    check(mnp.cumulative_prod(x), np.cumulative_prod(a))  # int64 by default
    e = mnp.cumulative_prod(mnp.asarray(np.zeros((0, 3), np.float32), device=device), axis=0)
    assert e.shape == (0, 3) and e.dtype == np.float32


def test_inspection_api_2024_12(device):
    info = mnp.__array_namespace_info__()
    assert mnp.__array_api_version__ == "2025.12"  # 2024.12 until the 2025.12 work (test_array_api_2025.py)
    assert mnp.asarray([1], device=device).__array_namespace__(api_version="2024.12") is mnp
    with pytest.raises(ValueError):
        mnp.asarray([1], device=device).__array_namespace__(api_version="2099.12")
    caps = info.capabilities()
    assert caps["boolean indexing"] and caps["data-dependent shapes"] and caps["max dimensions"] >= 8
    assert info.default_device() in info.devices()
    d = info.default_dtypes(device=device)
    wide = device.backend != "metal"
    assert d == {"real floating": np.dtype("float64" if wide else "float32"),
                 "complex floating": np.dtype("complex128" if wide else "complex64"),
                 "integral": np.dtype("int64"), "indexing": np.dtype("int64")}
    assert set(info.dtypes(device=device, kind="real floating")) == ({"float32", "float64"} if wide else {"float32"})
    assert set(info.dtypes(device=device, kind=("bool", "unsigned integer"))) == {"bool", "uint8", "uint16", "uint32",
                                                                                  "uint64"}
    assert all(mnp.isdtype(dt, "numeric") for dt in info.dtypes(device=device, kind="numeric").values())


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_floor_divide_infinities_2024_12(device, dt):
    """The array API 2024.12: floor(x / y) where an operand is infinite (NumPy: NaN and -1.0)."""
    if dt not in supported(device, [dt]):
        pytest.skip("no float64 on this device")
    inf = np.inf
    a = np.array([inf, inf, -inf, -inf, 1.0, 1.0, -1.0, -1.0, inf, 0.0, np.nan, 5.0], dt)
    b = np.array([2.0, -2.0, 2.0, -2.0, inf, -inf, inf, -inf, -inf, inf, inf, 2.0], dt)
    want = np.array([inf, -inf, -inf, inf, 0.0, -0.0, -0.0, 0.0, np.nan, 0.0, np.nan, 2.0], dt)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    for got in (x // y, mnp.floor_divide(x, y)):
        g = np.asarray(got)
        np.testing.assert_array_equal(g, want)
        ok = ~np.isnan(want)
        assert np.array_equal(np.signbit(g[ok]), np.signbit(want[ok]))
    z = mnp.asarray(a, device=device)
    z //= y
    np.testing.assert_array_equal(np.asarray(z), want)
