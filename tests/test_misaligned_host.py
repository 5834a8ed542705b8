"""Host memory not aligned as a kernel's parameter type requires (a NumPy view at an odd byte
offset, an array rebuilt from a byte stream): a call copies it into aligned memory and back after
the kernel (DESIGN.md §2), on every device; inside a batch or recording, which run the memory as
it is later, it stays an ArgumentError."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mctest import GOOD_SRC, check_usable

VEC4_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void scale4(const device float4* a [[buffer(0)]], device float4* out [[buffer(1)]],
                   constant float& s [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = a[i] * s + float4(i);
}
"""


def misaligned(values: np.ndarray, offset: int) -> np.ndarray:
    """`values` copied into a view `offset` bytes into a fresh byte array (offset % itemsize != 0)."""
    raw = np.zeros(values.nbytes + offset, np.uint8)
    view = raw[offset:offset + values.nbytes].view(values.dtype).reshape(values.shape)
    view[...] = values
    assert view.ctypes.data % values.dtype.itemsize != 0
    return view


def test_misaligned_inputs_and_outputs_are_copied(device, rng):
    lib = device.compile(GOOD_SRC)
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    x, y, out = misaligned(a, 1), misaligned(b, 3), misaligned(np.zeros(1000, np.float32), 2)
    lib.mul(1000, x, y, out)
    np.testing.assert_array_equal(out, a * b)
    np.testing.assert_array_equal(x, a)  # inputs untouched
    np.testing.assert_array_equal(y, b)
    check_usable(device)


def test_misaligned_memory_written_in_place(device, rng):
    lib = device.compile(GOOD_SRC)
    start = rng.standard_normal(257).astype(np.float32)
    x = misaligned(start, 1)
    lib.twice_plus_one(257, x)
    np.testing.assert_array_equal(x, start * 2 + 1)


def test_the_same_misaligned_memory_twice_is_one_copy(device, rng):
    """An in-place call through two parameters: the kernel's writes are seen through both."""
    lib = device.compile(GOOD_SRC)
    start = rng.standard_normal(64).astype(np.float32)
    raw = np.zeros(start.nbytes + 1, np.uint8)
    x = raw[1:].view(np.float32)
    x[:] = start
    lib.copy(64, x, raw[1:].view(np.float32))  # another view of the same bytes
    np.testing.assert_array_equal(x, start)
    lib.mul(64, x, x, raw[1:].view(np.float32))
    np.testing.assert_array_equal(x, start * start)


def test_vector_elements_are_copied_to_their_alignment(device, rng):
    """float4 wants 16 bytes: float32 data 4 bytes past a 16-byte boundary is copied too."""
    lib = device.compile(VEC4_SRC)
    a = rng.standard_normal((32, 4)).astype(np.float32)
    base = np.zeros(33 * 4, np.float32)
    x = base[1:129].reshape(32, 4)
    x[...] = a
    assert x.ctypes.data % 16 != 0
    out = np.zeros(33 * 4, np.float32)[1:129].reshape(32, 4)
    lib.scale4(32, x, out, 2.0)
    np.testing.assert_allclose(out, a * 2 + np.arange(32, dtype=np.float32)[:, None], rtol=1e-6)


def test_read_only_misaligned_memory_stays_read_only(device):
    lib = device.compile(GOOD_SRC)
    frozen = misaligned(np.ones(8, np.float32), 1)
    frozen.flags.writeable = False
    got = np.zeros(8, np.float32)
    lib.mul(8, frozen, frozen, got)  # read: fine
    np.testing.assert_array_equal(got, np.ones(8, np.float32))
    with pytest.raises(mc.ArgumentError, match="read-only"):
        lib.twice_plus_one(8, frozen)
    np.testing.assert_array_equal(frozen, np.ones(8, np.float32))


def test_overlapping_misaligned_memory_is_refused(device):
    """Copies of overlapping memory would not alias as the memory does: refused, not guessed."""
    lib = device.compile(GOOD_SRC)
    raw = np.zeros(4 * 16 + 8, np.uint8)
    a, b = raw[1:33].view(np.float32), raw[5:37].view(np.float32)  # one element apart
    with pytest.raises(mc.ArgumentError, match="overlaps"):
        lib.copy(8, a, b)
    aligned = raw[8:40].view(np.float32)  # in place, overlapping the misaligned one
    with pytest.raises(mc.ArgumentError, match="overlaps"):
        lib.copy(8, aligned, a)
    check_usable(device)


def test_batches_and_recordings_refuse_misaligned_memory(device):
    lib = device.compile(GOOD_SRC)
    x = misaligned(np.ones(8, np.float32), 1)
    with pytest.raises(mc.ArgumentError, match="aligned copy"):
        with device.batch():
            lib.twice_plus_one(8, x)
    with pytest.raises(mc.ArgumentError, match="aligned copy"):
        with device.record():
            lib.twice_plus_one(8, x)
    np.testing.assert_array_equal(x, np.ones(8, np.float32))
    check_usable(device)


SLOW_WRITE_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void fill_late(device float* x [[buffer(0)]], constant uint& spin [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    float v = 0.0f;
    for (uint k = 0; k < spin; ++k) v += 1e-30f;  // keeps the kernel busy before it writes
    x[i] = 7.0f + v * 0.0f;
}
"""


def test_copy_waits_for_work_writing_the_memory(device):
    """A misaligned view into a Buffer that queued work writes is copied after that work, as the
    view bound in place would be ordered after it."""
    lib, fill = device.compile(GOOD_SRC), device.compile(SLOW_WRITE_SRC).fill_late
    buf = device.zeros(65, np.float32)
    view = np.asarray(buf).view(np.uint8)[1:1 + 4 * 64].view(np.float32)
    assert view.ctypes.data % 4 != 0
    done = fill(65, buf, 20000)  # kept: the call does not wait
    out = np.zeros(64, np.float32)
    lib.copy(64, view, out)
    done.wait()
    want = np.frombuffer(np.full(65, 7, np.float32).tobytes()[1:1 + 4 * 64], np.float32)
    np.testing.assert_array_equal(out, want)
