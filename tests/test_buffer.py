"""mc.Buffer: allocation, zero-copy views, properties (DESIGN.md §2)."""

from __future__ import annotations

import array

import numpy as np
import pytest

import metalcall as mc
from mctest import GOOD_SRC, check_usable, run_threads, with_sandbox_device


device = with_sandbox_device()  # these tests run on Device("cpu", sandbox=True) too


def test_buffer_of_size_is_zero_filled_uint8(device):
    for n in (1, 16, 4097, 3 << 20):  # small (heap) and large (mmap on the CPU backend)
        b = device.buffer(n)
        assert isinstance(b, mc.Buffer)
        assert b.nbytes == n and b.size == n and len(b) == n
        assert b.shape == (n,) and b.dtype == np.uint8
        a = np.asarray(b)
        assert a.dtype == np.uint8 and a.shape == (n,)
        assert not a.any()


def test_buffer_of_numpy_int_size(device):
    b = device.buffer(np.int64(12))
    assert b.nbytes == 12


@pytest.mark.parametrize(
    "make",
    [
        lambda: b"abcdefgh",
        lambda: bytearray(b"\x01\x02\x03"),
        lambda: array.array("f", [1.0, 2.0, 3.0]),
        lambda: np.arange(6, dtype=np.float32),
        lambda: np.arange(12, dtype=np.int16).reshape(3, 4),
        lambda: np.arange(20, dtype=np.float64)[::2],  # non-contiguous data is laid out in C order
        lambda: memoryview(b"xyz"),
    ],
    ids=["bytes", "bytearray", "array.array", "ndarray", "ndarray-2d", "strided", "memoryview"],
)
def test_buffer_of_data_copies(device, make):
    data = make()
    expected = np.ascontiguousarray(data).tobytes() if isinstance(data, np.ndarray) else bytes(data)
    b = device.buffer(data)
    assert b.nbytes == len(expected) and b.dtype == np.uint8
    assert np.asarray(b).tobytes() == expected
    # It is a copy: changing the source does not change the buffer.
    if isinstance(data, np.ndarray):
        data[...] = 0
    elif isinstance(data, (bytearray, array.array)):
        np.frombuffer(data, dtype=np.uint8)[:] = 0xAB
    assert np.asarray(b).tobytes() == expected


def test_empty_and_zeros(device):
    e = device.empty((3, 5), np.int32)
    assert e.shape == (3, 5) and e.dtype == np.int32 and e.nbytes == 60 and e.size == 15 and len(e) == 3
    assert not np.asarray(e).any()  # DESIGN: new buffers are zero-filled
    z = device.zeros(7)
    assert z.dtype == np.float32 and z.shape == (7,)  # float32 by default
    assert not np.asarray(z).any()
    z16 = device.zeros(4, "float16")
    assert z16.dtype == np.float16 and z16.nbytes == 8
    s = device.empty((), np.float64)
    assert s.shape == () and s.size == 1 and s.nbytes == 8


def test_empty_buffer_of_zero_elements(device):
    b = device.empty(0, np.float32)
    assert b.nbytes == 0 and b.size == 0 and len(b) == 0
    assert np.asarray(b).shape == (0,)


def test_asarray_keeps_dtype_and_shape(device):
    src = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    b = device.asarray(src)
    assert b.dtype == np.float64 and b.shape == (2, 3, 4)
    np.testing.assert_array_equal(np.asarray(b), src)
    src[0, 0, 0] = 99  # a copy
    assert np.asarray(b)[0, 0, 0] == 0

    b2 = device.asarray([1, 2, 3], dtype=np.float32)
    assert b2.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(b2), [1, 2, 3])

    b3 = device.asarray(np.arange(10, dtype=np.uint16)[::3])
    np.testing.assert_array_equal(np.asarray(b3), [0, 3, 6, 9])


def test_structured_dtype_buffer(device):
    dt = np.dtype([("a", "<f4"), ("b", "<i4")])
    b = device.empty(3, dt)
    a = np.asarray(b)
    assert a.dtype == dt and a.shape == (3,)
    a["a"] = [1, 2, 3]
    assert np.asarray(b)["a"].tolist() == [1.0, 2.0, 3.0]


def test_packed_structured_dtype_buffer(device):
    dt = np.dtype([("a", "<f4"), ("b", "<i2")])
    assert dt.itemsize == 6
    b = device.empty(3, dt)
    a = np.asarray(b)
    assert a.dtype == dt and a.shape == (3,)


def test_views_are_zero_copy(device):
    b = device.empty(10, np.float32)
    v1 = np.asarray(b)
    v2 = b.numpy()
    m = memoryview(b)
    assert m.format == "f" and m.shape == (10,) and not m.readonly and m.nbytes == 40
    assert np.shares_memory(v1, v2)
    assert np.shares_memory(v1, np.asarray(m))
    v1[3] = 42.0
    assert v2[3] == 42.0 and m[3] == 42.0
    m[4] = -1.5
    assert v1[4] == -1.5


def test_writes_through_views_reach_the_kernel(device):
    lib = device.compile(GOOD_SRC)
    a = device.empty(100, np.float32)
    out = device.empty(100, np.float32)
    view = np.asarray(a)
    view[:] = np.arange(100)  # write through the NumPy view
    mv = memoryview(a)
    mv[0] = 7.0  # and through a memoryview
    lib.copy(100, a, out)
    expected = np.arange(100, dtype=np.float32)
    expected[0] = 7.0
    np.testing.assert_array_equal(np.asarray(out), expected)
    # The kernel's results are visible through a view taken before the call, once waited.
    out_view = np.asarray(out)
    lib.twice_plus_one(100, out).wait()
    np.testing.assert_array_equal(out_view, expected * 2 + 1)


def test_byte_buffer_cast_views(device):
    # metalcompute style: a byte buffer seen as floats through memoryview.cast.
    lib = device.compile(GOOD_SRC)
    c = device.buffer(4 * 8)
    c_view = memoryview(c).cast("f")
    a = np.arange(8, dtype=np.float32)
    lib.mul(8, a, a, c)
    assert list(c_view) == [float(i * i) for i in range(8)]
    assert np.asarray(c).view(np.float32).tolist() == [float(i * i) for i in range(8)]


def test_buffer_properties_and_repr(device):
    b = device.empty((4, 2), np.int16)
    r = repr(b)
    assert "metalcall.Buffer" in r and "(4, 2)" in r and "int16" in r and "16" in r and device.backend in r
    assert "(5,)" in repr(device.empty(5))
    assert b.device == device


@pytest.mark.parametrize(
    "call,exc",
    [
        (lambda d: d.buffer(-1), mc.ArgumentError),
        (lambda d: d.buffer("abc"), mc.ArgumentError),
        (lambda d: d.buffer(1.5), mc.ArgumentError),
        (lambda d: d.buffer(None), mc.ArgumentError),
        (lambda d: d.buffer(True), mc.ArgumentError),
        (lambda d: d.buffer([1, 2]), mc.ArgumentError),
        (lambda d: d.buffer(2**62), mc.ArgumentError),
        (lambda d: d.buffer(10**30), mc.ArgumentError),
        (lambda d: d.empty(-1), mc.ArgumentError),
        (lambda d: d.empty((2, -3)), mc.ArgumentError),
        (lambda d: d.empty(("a", 2)), mc.ArgumentError),
        (lambda d: d.empty((10**10, 10**10)), mc.ArgumentError),
        (lambda d: d.empty(2**62, np.float32), mc.ArgumentError),
        (lambda d: d.empty(3, object), mc.ArgumentError),
        (lambda d: d.zeros(-5), mc.ArgumentError),
        (lambda d: d.empty(1.5), (mc.ArgumentError, TypeError)),
        (lambda d: d.empty(3, "not-a-dtype"), TypeError),
    ],
    ids=lambda v: "" if callable(v) else getattr(v, "__name__", "x"),
)
def test_bad_buffer_requests(device, call, exc):
    with pytest.raises(exc):
        call(device)
    check_usable(device)


def test_buffer_larger_than_device_limit(device):
    limit = device.info.max_buffer_length
    if not limit:
        pytest.skip("this device reports no buffer size limit")
    with pytest.raises(mc.ArgumentError, match="cannot allocate"):
        device.buffer(limit + 1)
    check_usable(device)


def test_buffer_wait_and_numpy_after_kernel(device):
    lib = device.compile(GOOD_SRC)
    out = device.empty(5000, np.uint32)
    lib.iota(5000, out)
    out.wait()
    np.testing.assert_array_equal(out.numpy(), np.arange(5000))


def test_buffer_outlives_its_views_and_views_outlive_it(device):
    b = device.asarray(np.arange(1000, dtype=np.float32))
    v = np.asarray(b)
    del b  # the view keeps the memory alive
    np.testing.assert_array_equal(v, np.arange(1000, dtype=np.float32))


def test_read_copies_bytes_after_pending_work(device):
    """buf.read(offset, nbytes): a copy of a byte range, taken after the kernel that writes it."""
    lib = device.compile(GOOD_SRC)
    out = device.empty(5000, np.uint32)
    lib.iota(5000, out)  # not waited: read waits for it
    assert np.frombuffer(out.read(4 * 4321, 4), np.uint32)[0] == 4321
    np.testing.assert_array_equal(np.frombuffer(out.read(), np.uint32), np.arange(5000))
    np.testing.assert_array_equal(np.frombuffer(out.read(4 * 4990), np.uint32), np.arange(4990, 5000))
    assert out.read(4 * 5000) == b"" and out.read(8, 0) == b""


_LCG_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void lcg(device uint* out [[buffer(0)]], constant uint& steps [[buffer(1)]],
                constant uint& start [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  uint x = start + i;
  for (uint k = 0; k < steps; ++k) x = x * 1664525u + 1013904223u;
  out[i] = x;
}
"""


def _lcg(start: int, steps: int) -> int:
    x = start
    for _ in range(steps):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
    return x


def test_small_read_right_behind_running_kernels(device):
    """A few bytes read while the kernels writing them still run (on CUDA the copy is queued on
    the stream behind them: BufferStorage::read_after) hold what the last of them wrote."""
    lcg = device.compile(_LCG_SRC).lcg
    out = device.empty(4, np.uint32)
    steps = 200_000  # about a millisecond of one GPU thread
    for start in (1, 2, 3):
        lcg(4, out, steps, start)  # not waited; each overwrites the last
        got = np.frombuffer(out.read(4, 4), np.uint32)[0]
        assert got == _lcg(start + 1, steps)
    lcg(4, out, 10, 7)
    keep = lcg(4, out, steps, 9)  # a kept Completion: still pending at the read
    np.testing.assert_array_equal(np.frombuffer(out.read(), np.uint32), [_lcg(9 + i, steps) for i in range(4)])
    keep.wait()


def test_small_reads_from_threads_at_once(device):
    """Threads reading small results at once, some behind running kernels, some of finished ones
    (on CUDA each read takes a pinned buffer of its own, up to eight; more copy another way)."""
    lcg = device.compile(_LCG_SRC).lcg

    def work(k):
        out = device.empty(4, np.uint32)
        for i in range(6):
            steps = 50_000 if (k + i) % 2 else 10
            lcg(4, out, steps, k * 10 + i)  # not waited
            got = np.frombuffer(out.read(), np.uint32)
            np.testing.assert_array_equal(got, [_lcg(k * 10 + i + j, steps) for j in range(4)])

    assert run_threads(work, 12) == []


def test_read_of_a_buffer_a_batch_will_write_sees_it_before_the_commit(device):
    """Calls recorded in an open batch have not run: a read gives the contents before them,
    and after the commit what they wrote."""
    lcg = device.compile(_LCG_SRC).lcg
    out = device.asarray(np.arange(4, dtype=np.uint32))
    with device.batch() as batch:
        lcg(4, out, 5, 3)
        np.testing.assert_array_equal(np.frombuffer(out.read(), np.uint32), np.arange(4))
    batch.wait()
    np.testing.assert_array_equal(np.frombuffer(out.read(4, 8), np.uint32), [_lcg(4, 5), _lcg(5, 5)])


@pytest.mark.parametrize("offset, nbytes", [(-1, 4), (0, -1), (37, 4), (40, 1), (41, None), (0, 41)])
def test_read_outside_the_buffer_is_refused(device, offset, nbytes):
    b = device.asarray(np.arange(10, dtype=np.float32))
    with pytest.raises(mc.ArgumentError, match="outside the buffer's 40 bytes"):
        b.read(offset, nbytes)
    np.testing.assert_array_equal(np.frombuffer(b.read(36), np.float32), [9.0])
    check_usable(device)
