"""Hypothesis fuzz of the call path on every backend present (P1.5 item 8): random grids,
argument kinds, dtypes, lengths, scalars, threadgroup sizes and threadgroup memory. A call
either runs or raises an mc.Error subclass (never a plain TypeError, never a crash), and
the device computes exact values afterwards.

The kernel touches only element 0 of each buffer (thread 0), so any call the bindings
accept is memory-safe whatever the grid and lengths: binding guarantees one element."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
struct Pair { float a; int b; };
kernel void poke(const device float* x [[buffer(0)]], device int* y [[buffer(1)]],
                 constant uint& n [[buffer(2)]], constant Pair& p [[buffer(3)]],
                 threadgroup float* t [[threadgroup(0)]],
                 uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
    if (l == 0) t[0] = x[0] * p.a;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (i == 0) y[0] = int(t[0]) + p.b + int(n);
}
"""

PAIR = np.dtype([("a", np.float32), ("b", np.int32)])

DTYPES = [np.float32, np.float64, np.float16, np.int32, np.uint32, np.int64, np.uint8, np.int8, np.bool_,
          np.complex64, np.complex128, np.longdouble, "datetime64[ns]", "timedelta64[s]", "U3", "S4", "V4", PAIR]

arrays = st.builds(
    lambda dtype, n, offset: np.zeros(n + 8, dtype)[offset : offset + n],
    st.sampled_from(DTYPES),
    st.integers(0, 48),
    st.integers(0, 3),
)
scalars = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.complex_numbers(max_magnitude=10),
    st.sampled_from([lambda: np.float32(2.5), lambda: np.uint8(3), lambda: np.int64(-1), lambda: np.float64(1e300),
                     lambda: np.complex64(1j), lambda: np.str_("x"), lambda: np.datetime64("2020-01-01"),
                     lambda: np.zeros((), PAIR)[()]]).map(lambda make: make()),
)
# Factories: some of these objects are unhashable, which sampled_from dislikes.
others = st.sampled_from(
    [lambda: None, lambda: "text", lambda: b"\x00" * 8, lambda: bytearray(16), lambda: [1, 2, 3], lambda: (1.0,),
     object, lambda: memoryview(b"abcdefgh"), dict, lambda: 1j, lambda: ...,
     lambda: memoryview(bytearray(16)).cast("f"), lambda: np.zeros((2, 2), np.float32)[:, 0]]
).map(lambda make: make())
argument = st.one_of(arrays, scalars, others)
# Dimensions that are small, or invalid: a valid huge grid would only take time.
dimension = st.one_of(st.integers(0, 40), st.sampled_from([-1, 2**32, 2**40, 2**64, 1.5, "8", None, True, np.int64(3)]))
grids = st.one_of(
    dimension,
    st.lists(dimension, min_size=0, max_size=4).map(tuple),
    st.lists(dimension, min_size=1, max_size=3),
    st.sampled_from([lambda: (2**32 - 1, 2**21, 2**21), lambda: (2**32 - 1,) * 3, lambda: (2**24, 2**24, 2),
                     lambda: np.array([4])]).map(lambda make: make()),
)
threadgroups = st.one_of(st.none(), dimension, st.lists(dimension, min_size=0, max_size=4).map(tuple))
tg_memory = st.one_of(
    st.none(), st.integers(-32, 4096),
    st.sampled_from([lambda: 1.5, lambda: "16", lambda: [16, 1.5], lambda: [None], lambda: (16,), lambda: {0: 16},
                     lambda: [2**70], lambda: b"16"]).map(lambda make: make()),
    st.lists(st.integers(-16, 256), max_size=3),
)


def check_usable(kernel):
    x = np.array([3.0], np.float32)
    y = np.zeros(1, np.int32)
    pair = np.zeros((), PAIR)
    pair["a"], pair["b"] = 2.0, 5
    kernel(4, x, y, 7, pair, threadgroup=4, threadgroup_memory=16)
    assert y[0] == 6 + 5 + 7


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(grid=grids, args=st.lists(argument, min_size=0, max_size=5), threadgroup=threadgroups, memory=tg_memory)
def test_random_calls_raise_only_mc_errors(device, grid, args, threadgroup, memory):
    kernel = device.compile(SRC).poke
    options = {}
    if threadgroup is not None:
        options["threadgroup"] = threadgroup
    if memory is not None:
        options["threadgroup_memory"] = memory
    try:
        kernel(grid, *args, **options)
    except mc.Error as e:
        assert str(e)
        if isinstance(e, mc.ArgumentError):
            assert isinstance(e, TypeError) and isinstance(e, ValueError)
    check_usable(kernel)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    source=st.one_of(st.text(max_size=20), st.binary(max_size=20),
                     st.sampled_from([lambda: None, lambda: 3, lambda: b"\xff\xfe", lambda: "\udcff", list]).map(lambda make: make())),
    defines=st.sampled_from([lambda: None, lambda: {"A": 1}, lambda: {"A": object()}, lambda: {1: 2}, lambda: ["A", 3],
                             lambda: "A", lambda: 5, lambda: {"A": None}]).map(lambda make: make()),
    fast_math=st.sampled_from([True, False, "yes", None, 1, np.bool_(True)]),
    version=st.sampled_from([None, "3.0", 3.0, b"3.0"]),
)
def test_random_compile_arguments_raise_only_mc_errors(cpu_device, source, defines, fast_math, version):
    try:
        cpu_device.compile(source, defines=defines, fast_math=fast_math, language_version=version)
    except mc.Error as e:
        assert str(e)


@settings(max_examples=100, deadline=None)
@given(
    spec=st.sampled_from([None, -1, -5, 0, 1, 999, 2**70, "cpu", "cpu:0", "cpu:x", "nonsense", 3.5, b"cpu", (), True]),
    checked=st.sampled_from([False, True, "no", None, 0]),
)
def test_random_device_specs_raise_only_mc_errors(spec, checked):
    try:
        dev = mc.Device(spec, checked=checked)
    except mc.Error as e:
        assert str(e)
        return
    assert dev.name


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=st.one_of(st.integers(-2, 16),
                    st.sampled_from([lambda: (2, 3), lambda: [4], tuple, lambda: (-1, 2), lambda: 1.5, lambda: "3",
                                     lambda: None, lambda: (2**62, 4)]).map(lambda make: make())),
    dtype=st.sampled_from([np.float32, "float32", "int8", "no-such-type", 3, None, object, PAIR]),
)
def test_random_buffer_arguments_raise_only_mc_errors(cpu_device, shape, dtype):
    try:
        cpu_device.empty(shape, dtype)
    except mc.Error as e:
        assert str(e)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["poke", "nope", 3, None, b"poke"]),
    constants=st.sampled_from([lambda: None, dict, lambda: {"x": 1}, lambda: {0: 1.5}, lambda: {None: 1}, lambda: [1],
                               lambda: {"x": object()}, lambda: {"x": 2**70}]).map(lambda make: make()),
)
def test_random_lookups_raise_only_mc_errors(cpu_device, name, constants):
    lib = cpu_device.compile(SRC)
    try:
        lib.function(name, constants=constants)
    except mc.Error as e:
        assert str(e)


@pytest.mark.parametrize("timeout", ["x", -1, float("nan"), True, [1]])
def test_completion_wait_timeout_is_checked(cpu_device, timeout):
    kernel = cpu_device.compile(SRC).poke
    buf = cpu_device.empty(1, np.int32)
    h = kernel(1, np.ones(1, np.float32), buf, 1, np.zeros((), PAIR), threadgroup_memory=16)
    with pytest.raises(mc.ArgumentError, match="timeout"):
        h.wait(timeout=timeout)
    assert h.wait() is True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    grid=st.one_of(st.integers(0, 300), st.tuples(st.integers(0, 20), st.integers(0, 20)),
                   st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(0, 8))),
    x_dtype=st.sampled_from([np.float32, np.float32, np.float64, np.uint8, np.int32]),
    lengths=st.tuples(st.integers(0, 4), st.integers(0, 4)),
    as_buffer=st.tuples(st.booleans(), st.booleans()),
    n=st.one_of(st.integers(-3, 2**33), st.floats(-2, 2), st.sampled_from([np.uint32(5), np.int64(7), True])),
    threadgroup=st.one_of(st.none(), st.integers(0, 1100), st.tuples(st.integers(0, 40), st.integers(0, 40))),
    memory=st.one_of(st.none(), st.sampled_from([0, 16, 32, 4096, 40000, [16], [15]])),
)
def test_near_valid_calls_run_or_raise_mc_errors(device, grid, x_dtype, lengths, as_buffer, n, threadgroup, memory):
    """Shapes and kinds right, values random: most calls run; none raises anything but mc.Error."""
    kernel = device.compile(SRC).poke
    x = np.full(lengths[0], 2.0).astype(x_dtype)
    y = np.zeros(lengths[1], np.int32)
    if as_buffer[0]:
        x = device.asarray(x) if x.size else x
    if as_buffer[1]:
        y = device.asarray(y) if y.size else y
    pair = np.zeros((), PAIR)
    pair["a"], pair["b"] = 1.5, 2
    options = {"threadgroup_memory": memory if memory is not None else 16}
    if threadgroup is not None:
        options["threadgroup"] = threadgroup
    try:
        kernel(grid, x, y, n, pair, **options).wait()
    except mc.Error as e:
        assert str(e)
    check_usable(kernel)
