"""Scripts written for metalcompute 0.2 run with only their import changed
(DESIGN.md §2, seeds/000: hello world, the 1-billion example, the compute-heavy kernel)."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

import metalcall as mc

# seeds/000, verbatim but for the closing lines the post's rendering lost.
HELLO_KERNEL = """
#include <metal_stdlib>;
using namespace metal;
kernel void helloABC(const device float *A [[buffer(0)]],
                       const device float *B [[buffer(1)]],
                       device float *C [[buffer(2)]],
                       uint id [[thread_position_in_grid]]) {
    C[id] = A[id] * B[id]; 
}
"""

# The compute-heavy kernel of seeds/000, built the same way; 40 repetitions instead of 400.
REPS = 40
HEAVY_KERNEL = """
#include <metal_stdlib>;
using namespace metal;
kernel void helloABC(const device float *A [[buffer(0)]],
                       const device float *B [[buffer(1)]],
                       device float *C [[buffer(2)]],
                       uint id [[thread_position_in_grid]]) {
    float Ai = A[id];
    float Bi = B[id];
    float ABi = Ai * Bi;
    float D = Ai;
    float E = Bi;
    float F = Ai+Bi;
    float G = Ai-Bi;
"""
HEAVY_KERNEL += REPS * """
    D += Ai * G;
    E += Bi * F; 
    F += Ai * E;
    G += Bi * D; 
"""
HEAVY_KERNEL += """
    C[id] = D + E + F + G;
}
"""


def heavy_expected(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The same recurrence in float32 NumPy."""
    Ai = A.astype(np.float32)
    Bi = B.astype(np.float32)
    D, E, F, G = Ai.copy(), Bi.copy(), Ai + Bi, Ai - Bi
    for _ in range(REPS):
        D = D + Ai * G
        E = E + Bi * F
        F = F + Ai * E
        G = G + Bi * D
    return D + E + F + G


@pytest.fixture
def metal_like_device(device):
    # metalcompute scripts call mc.Device() / mc.Device(index); run the same code on each device.
    return device


def test_hello_world(metal_like_device):
    dev = metal_like_device
    count = 10
    # Create a compiled kernel to run
    helloABC = dev.kernel(HELLO_KERNEL).function("helloABC")
    # Make a buffer for the result
    A = array("f", range(10))  # 0..9
    B = array("f", range(10, 20))  # 10...19
    C = dev.buffer(count * 4)  # 4 because a float32 needs 4 bytes
    C_view = memoryview(C).cast("f")
    # Run the kernel count times
    helloABC(count, A, B, C)
    # Print the second result which should be 1.0 * 11.0 = 11.0
    assert C_view[1] == 11.0
    assert list(C_view) == [float(a * b) for a, b in zip(range(10), range(10, 20))]


def test_hello_world_default_device_script(run_python):
    # The whole script in a fresh process, mc.Device() and all.
    code = (
        "import metalcall as mc\n"
        "from array import array\n"
        f"kernel = {HELLO_KERNEL!r}\n"
        "count = 10\n"
        "dev = mc.Device()\n"
        "helloABC = dev.kernel(kernel).function('helloABC')\n"
        "A = array('f',range(10))\n"
        "B = array('f',range(10,20))\n"
        "C = dev.buffer(count * 4)\n"
        "C_view = memoryview(C).cast('f')\n"
        "helloABC(count, A, B, C)\n"
        "print(C_view[1])\n"
        "print(list(C_view))\n"
    )
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "11.0"
    assert lines[1] == str([float(a * b) for a, b in zip(range(10), range(10, 20))])


def test_get_devices_and_device_by_index():
    devices = mc.get_devices()
    assert len(devices) >= 1
    for i in range(len(devices)):
        dev = mc.Device(i)
        fn = dev.kernel(HELLO_KERNEL).function("helloABC")
        A = array("f", [1.0, 2.0, 3.0])
        C = dev.buffer(12)
        fn(3, A, A, C)
        assert list(memoryview(C).cast("f")) == [1.0, 4.0, 9.0]


def test_handle_del_waits(metal_like_device):
    dev = metal_like_device
    fn = dev.kernel(HEAVY_KERNEL).function("helloABC")
    count = 1 << 17
    rng = np.random.default_rng(0)
    A_np = rng.random(count, dtype=np.float32)
    B_np = rng.random(count, dtype=np.float32)
    A = dev.buffer(A_np)  # metalcompute's dev.buffer(data): a copy
    B = dev.buffer(B_np)
    C = dev.buffer(count * 4)
    C_view = memoryview(C).cast("f")  # taken before the call: reading it does not wait
    handle = fn(count, A, B, C)
    del handle  # metalcompute: deleting the handle waits for the kernel
    got = np.frombuffer(C_view, np.float32)
    np.testing.assert_allclose(got, heavy_expected(A_np, B_np), rtol=1e-4)


def test_one_billion_example_reduced(metal_like_device):
    dev = metal_like_device
    count = 10**7
    helloABC = dev.kernel(HELLO_KERNEL).function("helloABC")
    base = np.arange(count, dtype=np.float32)
    A = array("f")
    A.frombytes(base.tobytes())
    B = array("f")
    B.frombytes((base + 10).tobytes())
    C = dev.buffer(count * 4)
    C_view = memoryview(C).cast("f")
    helloABC(count, A, B, C)
    # "[helloABC(count, A, B, C) for _ in range(100)][-1]": back to back, no gaps.
    [helloABC(count, A, B, C) for _ in range(3)][-1]
    got = np.frombuffer(C_view, np.float32)
    np.testing.assert_array_equal(got, base * (base + np.float32(10)))
    assert C_view[1] == 11.0 and C_view[count - 1] == np.float32(count - 1) * np.float32(count + 9)


def test_compute_heavy_kernel(metal_like_device):
    dev = metal_like_device
    count = 100_000
    helloABC = dev.kernel(HEAVY_KERNEL).function("helloABC")
    rng = np.random.default_rng(42)
    A_np = rng.random(count, dtype=np.float32)
    B_np = rng.random(count, dtype=np.float32)
    A = array("f")
    A.frombytes(A_np.tobytes())
    B = array("f")
    B.frombytes(B_np.tobytes())
    C = dev.buffer(count * 4)
    C_view = memoryview(C).cast("f")
    helloABC(count, A, B, C)
    got = np.frombuffer(C_view, np.float32)
    expected = heavy_expected(A_np, B_np)
    assert np.isfinite(expected).all() and expected.max() > 1e3, "the recurrence does real work"
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_mc_error_is_the_base_class(metal_like_device):
    dev = metal_like_device
    assert mc.error is mc.Error
    with pytest.raises(mc.error):
        dev.kernel("kernel void broken( {")
    with pytest.raises(mc.error):
        dev.kernel(HELLO_KERNEL).function("no_such_function")
    fn = dev.kernel(HELLO_KERNEL).function("helloABC")
    with pytest.raises(mc.error):
        fn(10, array("f", range(10)), array("f", range(10)))  # a buffer missing
    try:
        dev.kernel("kernel void broken( {")
    except mc.error as e:  # the metalcompute idiom
        assert str(e)
    C = dev.buffer(8)
    fn(2, array("f", [2.0, 3.0]), array("f", [4.0, 5.0]), C)
    assert list(memoryview(C).cast("f")) == [8.0, 15.0]
