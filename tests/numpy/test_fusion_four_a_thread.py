"""Fused chains with precise sin, cos or tan run four elements a CUDA thread, their contiguous
operands read and written as 4-vectors (_fusion._four_a_thread), where n is a multiple of 4 and
every operand is a whole contiguous buffer or a broadcast scalar; otherwise one element a thread.
Every element must come out as NumPy computes it on either path, for every operand kind and
element type the vector form takes, on every device (the other devices always take the scalar
form, which these tests then check as well)."""

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp
from mnp_check import check


def _vector_form(z):
    return "4* in0" in mnp.explain(z)


def _expects_vectors(device, n):
    return device.backend == "cuda" and not device.checked and n % 4 == 0 and n > 0


@pytest.mark.parametrize("n", [4, 1000, 1001, 1002, 1003, (1 << 20) + 4])
def test_sin_chain_every_element(device, n):
    a = np.linspace(-40, 40, n, dtype=np.float32)  # large arguments: CUDA's long reduction too
    b = np.linspace(1, 2, n, dtype=np.float32)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    z = mnp.sin(x) * y + 2
    assert _vector_form(z) == _expects_vectors(device, n)
    check(z, np.sin(a) * b + 2, rtol=1e-5, atol=1e-6)


def test_half_cos_with_a_broadcast_operand(device):
    a = np.linspace(-3, 3, 4096).astype(np.float16)
    x = mnp.asarray(a, device=device)
    s = mnp.asarray(np.array([0.25], np.float32), device=device)  # broadcast: read once a thread
    z = mnp.cos(x) + s
    assert _vector_form(z) == _expects_vectors(device, a.size)
    check(z, np.cos(a).astype(np.float32) + np.float32(0.25), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int16, np.uint16])
def test_tan_of_integers(device, dtype):
    a = (np.arange(2048) % 7).astype(dtype)
    x = mnp.asarray(a, device=device)
    z = mnp.tan(x) * 2
    check(z, np.tan(a) * 2, rtol=1e-5, atol=1e-5)


def test_two_outputs_of_one_kernel(device):
    a = np.linspace(-5, 5, 4000, dtype=np.float32)
    x = mnp.asarray(a, device=device)
    with mnp.fuse():
        s = mnp.sin(x) + 1
        c = mnp.cos(x) * 3
    check(s, np.sin(a) + 1, rtol=1e-5, atol=1e-6)
    check(c, np.cos(a) * 3, rtol=1e-5, atol=1e-6)


def test_views_with_an_offset_take_the_scalar_form(device):
    a = np.linspace(-5, 5, 4005, dtype=np.float32)
    x = mnp.asarray(a, device=device)
    z = mnp.sin(x[1:4001]) * x[5:4005]  # offsets 1 and 5 elements: not 16-byte aligned
    assert not _vector_form(z)
    check(z, np.sin(a[1:4001]) * a[5:4005], rtol=1e-5, atol=1e-6)


def test_strided_operands_take_the_scalar_form(device):
    a = np.linspace(-5, 5, 8000, dtype=np.float32).reshape(80, 100)
    x = mnp.asarray(a, device=device)
    z = mnp.sin(x.T) + 1
    assert not _vector_form(z)
    check(z, np.sin(a.T) + 1, rtol=1e-5, atol=1e-6)


def test_cuda_memory_of_another_library_at_any_alignment():
    """CuPy memory used in place (`dev.asarray` of a CuPy view) may start anywhere: an operand not
    16-byte aligned falls back to one element a thread (the runtime refuses a float4 buffer argument
    it cannot align). metalcall.numpy's own arrays are always aligned; such a Buffer is wrapped
    here directly to reach the fallback."""
    cupy = pytest.importorskip("cupy")
    if not any(d.backend == "cuda" for d in mc.get_devices()):
        pytest.skip("no CUDA device")
    dev = mc.Device("cuda")
    base = cupy.arange(4101, dtype=cupy.float32) / 100
    for start in (0, 1, 2, 3, 4):
        view = base[start:start + 4096]
        x = mnp.ndarray._wrap(dev.asarray(view), (4096,), np.dtype(np.float32), dev)
        z = mnp.sin(x) * 2
        assert _vector_form(z)  # chosen by the source; the call decides by the address
        check(z, np.sin(cupy.asnumpy(view)) * 2, rtol=1e-5, atol=1e-6)
