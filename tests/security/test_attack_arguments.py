"""Attacks through call and compile arguments, on every CPU device mode (security, issue P2.4).

The threat model (docs/security.md) lets the attacker choose the arguments of calls as well as
the source: objects that describe memory they do not own, lying shapes and strides, grids and
threadgroup memory larger than anything, defines and versions that would reach the compiler's
command line, function constants of the wrong type, Buffers freed during a call. Each is an
ArgumentError (or CompileError) that says what is wrong, or works as documented, and the device
goes on; the outcome is the same in-process (plain and checked) and in the sandbox.
"""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

SRC = """
#include <metal_stdlib>
using namespace metal;
constant int fc [[function_constant(0)]];
constant bool fb [[function_constant(1)]];
kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = a[i] * 2.0f + 1.0f; }
kernel void t(device float* a [[buffer(0)]], threadgroup float* s [[threadgroup(0)]],
              uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) { s[l] = a[i]; a[i] = s[l] + 1.0f; }
kernel void c(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = float(fc) + (fb ? 0.5f : 0.0f); }
kernel void s(device float* a [[buffer(0)]], constant uint& n [[buffer(1)]], uint i [[thread_position_in_grid]]) { a[i] = float(n); }
"""

MODES = {
    "cpu": lambda: mc.Device("cpu", sandbox=False),
    "checked": lambda: mc.Device("cpu", checked=True, sandbox=False),
    "sandbox": lambda: mc.Device("cpu", sandbox=True),
}


@pytest.fixture(params=sorted(MODES))
def device(request):
    if request.param == "sandbox" and not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is built on Linux's seccomp")
    return MODES[request.param]()


class Interface:
    """Claims memory through __array_interface__ (an address and a length of its choosing)."""

    def __init__(self, address: int, n: int, strides=None):
        self.__array_interface__ = {"data": (address, False), "shape": (n,), "typestr": "<f4", "version": 3,
                                    "strides": strides}


def bad_arguments():
    x = np.zeros(4, np.float32)
    return {
        "interface-null": (lambda lib: lib.k(4, Interface(0, 4)), "cannot pass a Interface to a kernel"),
        "interface-bogus-address": (lambda lib: lib.k(4, Interface(0x1000, 4)), "cannot pass a Interface to a kernel"),
        "interface-lying-length": (lambda lib: lib.k(1 << 24, Interface(x.ctypes.data, 1 << 24)), "cannot pass a Interface"),
        "interface-huge-stride": (lambda lib: lib.k(4, Interface(x.ctypes.data, 4, (1 << 40,))), "cannot pass a Interface"),
        "negative-stride": (lambda lib: lib.k(4, x[::-1]), "the array is not C-contiguous"),
        "grid-beyond-the-array": (lambda lib: lib.k(1 << 20, x), "needs 1048576 elements of 4 bytes, but the array holds 4"),
        "grid-dimension-too-large": (lambda lib: lib.k((1 << 32, 1, 1), x), "grid dimension 0 is 4294967296"),
        "threadgroup-too-large": (lambda lib: lib.k(64, np.zeros(64, np.float32), threadgroup=1 << 31),
                                  "threadgroup of 2147483648 threads is over this kernel's limit"),
        "threadgroup-memory-huge": (lambda lib: lib.t(64, np.zeros(64, np.float32), threadgroup=64,
                                                      threadgroup_memory=[1 << 40]), "1099511627776 bytes of threadgroup memory"),
        "threadgroup-memory-negative": (lambda lib: lib.t(64, np.zeros(64, np.float32), threadgroup=64,
                                                          threadgroup_memory=[-4]), "cannot be negative"),
        "scalar-too-short": (lambda lib: lib.s(4, x, b"\x01"), "takes exactly 4 bytes, got 1 bytes"),
        "scalar-too-long": (lambda lib: lib.s(4, x, b"\x01" * 100000), "takes exactly 4 bytes, got 100000 bytes"),
        "constant-float-as-int": (lambda lib: lib.function("c", constants={"fc": 1.5}),
                                  "a floating-point value cannot be passed as int"),
        "constant-source-text": (lambda lib: lib.function("c", constants={"fc": '1); } asm("nop"); //'}),
                                 "a function constant takes a bool, int or float, not str"),
        "constant-out-of-range": (lambda lib: lib.function("c", constants={"fc": 1 << 40}), "does not fit in int"),
        "constant-name-with-code": (lambda lib: lib.function("c", constants={'fc; asm("nop")': 1}),
                                    "no function constant named"),
        "constant-bool-not-bool": (lambda lib: lib.function("c", constants={"fb": 7}), "only 0, 1, True or False"),
    }


@pytest.mark.parametrize("name", sorted(bad_arguments()))
def test_a_bad_argument_is_refused(device, name):
    lib = device.compile(SRC)
    call, message = bad_arguments()[name]
    expected = mc.ArgumentError
    if device.checked and name == "grid-beyond-the-array":
        # Checked calls check each access instead of the grid against the array.
        expected, message = mc.ExecutionError, "is out of bounds (4 elements of 4 bytes)"  # the first thread to fault
    with pytest.raises(expected) as info:
        call(lib)
    assert message in str(info.value), str(info.value)
    out = np.zeros(4, np.float32)
    lib.k(4, out)  # the device goes on
    np.testing.assert_array_equal(out, [1, 1, 1, 1])


@pytest.mark.parametrize("defines,language,message", [
    ({"X": '1\r#include "/etc/passwd"'}, None, "holds a control character"),
    ({"X=1 -include/etc/passwd": "2"}, None, "is not a valid macro name"),
    ({"-include/etc/passwd": ""}, None, "is not a valid macro name"),
    (None, "3.2 -include /etc/passwd", "unknown Metal language version"),
])
def test_compile_options_never_reach_the_command_line(device, defines, language, message):
    with pytest.raises((mc.ArgumentError, mc.CompileError)) as info:
        device.compile(SRC, defines=defines, language_version=language).k(4, np.zeros(4, np.float32))
    assert message in str(info.value) and "root:" not in str(info.value) + getattr(info.value, "log", "")
    # A value with blanks is one -D argument, never a second option: it is the macro's text.
    lib = device.compile(SRC.replace("a[i] * 2.0f", "a[i] * X"), defines={"X": "2.0f - 0 * sizeof(int) -include"})
    with pytest.raises(mc.CompileError) as info:  # `-include` is C++ text here: an undeclared name
        lib.k(4, np.ones(4, np.float32))
    assert "include" in str(info.value) and "root:" not in info.value.log


def test_a_buffer_dropped_during_a_call_stays_alive_until_it_ends(device):
    lib = device.compile(SRC)
    b = device.zeros(1 << 20, np.float32)
    done = lib.k(1 << 20, b)  # kept Completion: runs asynchronously
    del b
    gc.collect()
    done.wait()
    b = device.zeros(1 << 20, np.float32)
    view = np.asarray(b)
    del b  # the view keeps the memory
    gc.collect()
    lib.k(1 << 20, view)
    assert view[:3].tolist() == [1.0, 1.0, 1.0] and view[-1] == 1.0


def test_overlapping_views_alias_as_in_process(device):
    lib = device.compile(SRC)
    x = np.arange(8, dtype=np.float32)
    lib.k(4, x[2:6])
    assert x.tolist() == [0, 1, 5, 7, 9, 11, 6, 7]


def test_constant_values_are_typed(device):
    lib = device.compile(SRC)
    out = np.zeros(4, np.float32)
    lib.function("c", constants={"fc": np.int32(2), "fb": True})(4, out)
    np.testing.assert_array_equal(out, [2.5] * 4)
