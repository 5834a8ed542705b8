"""metalcall.numpy ndarray basics: attributes, host views (zero-copy), DLPack, printing,
conversions, astype/copy, the array API namespace."""

import numpy as np
import pytest

import metalcall.numpy as mnp
from mnp_check import check, supported


def test_attributes_and_views(device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = mnp.asarray(a, device=device)
    assert x.shape == (3, 4) and x.ndim == 2 and x.size == 12 and x.dtype == mnp.float32
    assert x.device == device and x.nbytes == 48 and x.strides == a.strides
    check(x.T, a.T)
    check(x.mT, a.T)
    assert len(x) == 3
    check(list(x)[1], a[1])
    assert x.__array_namespace__() is mnp
    assert mnp.__array_api_version__ == "2025.12"


def test_host_view_is_zero_copy(device):
    x = mnp.zeros(4, dtype=mnp.float32, device=device)
    v = np.asarray(x)
    v[2] = 7
    check(x + 0, np.array([0, 0, 7, 0], np.float32))
    assert x.to_numpy().base is not None or x.to_numpy().flags.owndata is False


def test_repr_and_str(device):
    x = mnp.asarray([1.5, 2.0], dtype=mnp.float32, device=device)
    assert repr(x) == "mnp.array([1.5, 2. ], dtype=float32)"
    assert str(x) == "[1.5 2. ]"
    assert repr(mnp.asarray([[1, 2], [3, 4]], device=device)) == "mnp.array([[1, 2],\n           [3, 4]])"


def test_scalar_conversions(device):
    x = mnp.asarray(3.5, device=device)
    assert x.ndim == 0 and float(x) == 3.5 and int(x) == 3 and bool(x)
    i = mnp.asarray(2, device=device)
    assert [10, 20, 30][i] == 30 and i.__index__() == 2
    with pytest.raises(TypeError):
        len(x)
    with pytest.raises(TypeError):
        bool(mnp.zeros(2, device=device))
    assert mnp.asarray([5], device=device).item() == 5


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                                   "float16", "float32", "float64"])
def test_scalar_conversions_match_numpy_for_every_dtype(device, dtype):
    """bool(), int() and float() of one element (decoded by struct, not through NumPy): the values
    NumPy's own scalars give, for extremes, signed zeros, subnormals, NaN and infinities, of a
    0-d array, one element at an offset in a view, a reduction's result and a lazy expression."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        values = [False, True]
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        values = [info.min, info.max, 0, 1, info.max // 3]
    else:
        info = np.finfo(dt)
        values = [-0.0, 0.0, float(info.smallest_subnormal), float(info.max), -float(info.max), 1.5,
                  float("inf"), float("-inf"), float("nan")]
    host = np.array(values, dtype=dt)
    if dtype not in supported(device, [dtype]):
        pytest.skip(f"no {dtype} on this device")
    stored = mnp.asarray(host, device=device)
    for i, want in enumerate(host):
        for got in (stored[i], mnp.asarray(host[i], device=device)):
            assert bool(got) == bool(want)
            if dt.kind == "f" and not np.isfinite(want):
                with pytest.raises((ValueError, OverflowError)):
                    int(got)
                assert np.isnan(float(got)) if np.isnan(want) else float(got) == float(want)
            else:
                assert int(got) == int(want) and float(got) == float(want)
                assert type(int(got)) is int and type(float(got)) is float
    lazy = stored[:1] * 1  # an expression not yet evaluated
    assert float(lazy) == float(host[0]) or np.isnan(float(host[0]))
    assert bool(mnp.any(stored)) == bool(np.any(host))
    assert bool(mnp.all(stored)) == bool(np.all(host))


def test_astype_copy_and_tolist(device):
    x = mnp.asarray([1.7, -2.2, 0.0], dtype=mnp.float32, device=device)
    check(x.astype(mnp.int32), np.array([1, -2, 0], np.int32))
    check(x.astype(mnp.bool), np.array([True, True, False]))
    assert x.astype(mnp.float32, copy=False) is x
    y = x.copy()
    y[0] = 9
    assert x.tolist()[0] == pytest.approx(1.7) and y.tolist()[0] == 9


def test_dlpack(device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = mnp.asarray(a, device=device)
    assert x.__dlpack_device__()[0] in (1, 2)
    if device.backend != "cuda":
        check(np.from_dlpack(x), a)
        check(np.from_dlpack(x.T), a.T)  # a non-contiguous view exports a contiguous copy
        check(mnp.from_dlpack(a, device=device), a)


def test_float64_rule(device):
    x = mnp.asarray([1.0, 2.0], device=device)
    if device.backend == "metal":
        assert x.dtype == mnp.float32
        with pytest.raises(TypeError):
            mnp.zeros(2, dtype=mnp.float64, device=device)
    else:
        assert x.dtype == mnp.float64


def test_unsupported_dtype(device):
    with pytest.raises(TypeError):
        mnp.asarray(np.array([1 + 2j], np.clongdouble), device=device)
    with pytest.raises(TypeError):
        mnp.asarray(["a"], device=device)


def test_info(device):
    info = mnp.__array_namespace_info__()
    assert "float32" in info.dtypes(device=device)
    assert info.default_dtypes(device=device)["integral"] == mnp.int64
    assert mnp.isdtype(mnp.float32, "real floating") and not mnp.isdtype(mnp.int8, "unsigned integer")
    assert mnp.result_type(mnp.int8, mnp.uint8) == mnp.int16
    assert mnp.finfo(mnp.float32).eps == np.finfo(np.float32).eps and mnp.iinfo(mnp.int8).max == 127
