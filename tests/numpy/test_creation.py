"""metalcall.numpy creation functions against NumPy."""

import numpy as np
import pytest

import metalcall.numpy as mnp
from mnp_check import check


def test_asarray_sources(device):
    check(mnp.asarray([[1, 2], [3, 4]], device=device), np.array([[1, 2], [3, 4]]))
    check(mnp.asarray(np.arange(5, dtype=np.uint16)[::2], device=device), np.arange(5, dtype=np.uint16)[::2])
    check(mnp.asarray(True, device=device), np.asarray(True))
    check(mnp.asarray([1, 2], dtype=mnp.int8, device=device), np.array([1, 2], np.int8))
    x = mnp.asarray([1, 2], device=device)
    assert mnp.asarray(x) is x
    assert mnp.asarray(x, copy=True) is not x
    check(mnp.asarray(x, dtype=mnp.float32), np.array([1, 2], np.float32))


def test_fill_functions(device):
    check(mnp.zeros((2, 3), dtype=mnp.int32, device=device), np.zeros((2, 3), np.int32))
    check(mnp.ones(4, dtype=mnp.uint8, device=device), np.ones(4, np.uint8))
    check(mnp.full((2,), 2.5, dtype=mnp.float32, device=device), np.full(2, 2.5, np.float32))
    check(mnp.full((2, 2), True, device=device), np.full((2, 2), True))
    check(mnp.empty((0, 3), dtype=mnp.float32, device=device), np.empty((0, 3), np.float32))
    x = mnp.zeros((2, 2), dtype=mnp.int16, device=device)
    check(mnp.ones_like(x), np.ones((2, 2), np.int16))
    check(mnp.full_like(x, 7), np.full((2, 2), 7, np.int16))
    check(mnp.zeros_like(x, dtype=mnp.float32), np.zeros((2, 2), np.float32))
    assert mnp.empty_like(x).shape == (2, 2)


def test_ranges(device):
    check(mnp.arange(10, device=device), np.arange(10))
    check(mnp.arange(1, 10, 3, dtype=mnp.int8, device=device), np.arange(1, 10, 3, dtype=np.int8))
    check(mnp.arange(0.0, 1.0, 0.25, dtype=mnp.float32, device=device), np.arange(0, 1, 0.25, dtype=np.float32))
    check(mnp.linspace(0, 1, 7, dtype=mnp.float32, device=device), np.linspace(0, 1, 7, dtype=np.float32))
    check(mnp.linspace(0, 1, 4, endpoint=False, dtype=mnp.float32, device=device),
          np.linspace(0, 1, 4, endpoint=False).astype(np.float32))
    check(mnp.eye(3, 4, k=1, dtype=mnp.int32, device=device), np.eye(3, 4, k=1, dtype=np.int32))


def test_tri_and_meshgrid(device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = mnp.asarray(a, device=device)
    check(mnp.tril(x), np.tril(a))
    check(mnp.triu(x, k=1), np.triu(a, k=1))
    u, v = mnp.meshgrid(mnp.arange(3, device=device), mnp.arange(2, device=device))
    eu, ev = np.meshgrid(np.arange(3), np.arange(2))
    check(u, eu)
    check(v, ev)


def test_default_device_scope(device):
    with mnp.device_scope(device):
        assert mnp.zeros(2).device == device


def test_asarray_copy_false(device):
    a = np.arange(4, dtype=np.float32)
    if device.backend != "cpu":
        with pytest.raises(ValueError):
            mnp.asarray(a, copy=False, device=device)
        return
    x = mnp.asarray(a, copy=False, device=device)
    a[0] = 42  # shared memory
    check(x + 0, np.array([42, 1, 2, 3], np.float32))
    with pytest.raises(ValueError):
        mnp.asarray(a[::2], copy=False, device=device)
