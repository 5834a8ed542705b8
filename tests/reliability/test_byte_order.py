"""Data in the other byte order is refused alike for every kind of parameter (P2.4 item 8): a
big-endian value for a `constant float&` or `constant int&` (a 0-d or 1-element NumPy array, a
memoryview), a structured value or array with big-endian fields, a Buffer made from a
big-endian array: each is an ArgumentError naming the argument, as a big-endian array for a
pointer has been (2.5 used to arrive as 1.16e-41). Native data, and NumPy scalars (which are
always native), still run with exact values; the device stays usable."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
struct Pair { float a; int b; };
kernel void scalars(device float* out [[buffer(0)]], constant float& s [[buffer(1)]], constant int& n [[buffer(2)]],
                    uint i [[thread_position_in_grid]]) { out[i] = s + float(n); }
kernel void by_value(device float* out [[buffer(0)]], constant Pair& p [[buffer(1)]], float f [[buffer(2)]],
                     uint i [[thread_position_in_grid]]) { out[i] = p.a + float(p.b) + f; }
kernel void pairs(device float* out [[buffer(0)]], const device Pair* p [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) { out[i] = p[i].a + float(p[i].b); }
kernel void copy(device float* out [[buffer(0)]], const device float* x [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) { out[i] = x[i]; }
"""

BIG_PAIR = np.dtype([("a", ">f4"), ("b", ">i4")])
NATIVE_PAIR = np.dtype([("a", "<f4"), ("b", "<i4")])


class BigEndianPair(ctypes.BigEndianStructure):
    _fields_ = [("a", ctypes.c_float), ("b", ctypes.c_int32)]


def big_cases(dev):
    out = dev.empty(4, np.float32)
    pair = np.zeros((), BIG_PAIR)
    pair["a"], pair["b"] = 1.5, 2
    return {
        "0-d float": lambda k: k.scalars(1, out, np.array(2.5, ">f4"), 3),
        "1-element float": lambda k: k.scalars(1, out, np.array([2.5], ">f4"), 3),
        "0-d int": lambda k: k.scalars(1, out, 2.5, np.array(3, ">i4")),
        "memoryview": lambda k: k.scalars(1, out, memoryview(np.array([2.5], ">f4")), 3),
        "by-value float": lambda k: k.by_value(1, out, np.zeros((), NATIVE_PAIR), np.array(2.5, ">f4")),
        "structured 0-d": lambda k: k.by_value(1, out, pair, 1.0),
        "structured scalar": lambda k: k.by_value(1, out, pair[()], 1.0),
        "ctypes big-endian struct": lambda k: k.by_value(1, out, BigEndianPair(1.5, 2), 1.0),
        "structured array": lambda k: k.pairs(1, out, np.zeros(1, BIG_PAIR)),
        "Buffer of a big-endian array": lambda k: k.copy(1, out, dev.asarray(np.array([2.5], ">f4"))),
        "big-endian array": lambda k: k.copy(1, out, np.array([2.5], ">f4")),
    }


CASES = ["0-d float", "1-element float", "0-d int", "memoryview", "by-value float", "structured 0-d",
         "structured scalar", "ctypes big-endian struct", "structured array", "Buffer of a big-endian array",
         "big-endian array"]


@pytest.mark.parametrize("case", CASES)
def test_other_byte_order_is_refused_for_every_parameter_kind(device, case):
    lib = device.compile(SRC)
    with pytest.raises(mc.ArgumentError, match="big-endian") as info:
        big_cases(device)[case](lib)
    assert "kernel '" in str(info.value) and "argument " in str(info.value)
    check_native_values(device, lib)


def check_native_values(device, lib):
    out = np.zeros(1, np.float32)
    lib.scalars(1, out, np.array(2.5, "<f4"), np.array([3], np.int32))
    assert out[0] == 5.5
    lib.scalars(1, out, np.array([2.5], ">f4")[0], 3)
    assert out[0] == 5.5  # an element of a big-endian array is a native NumPy scalar
    pair = np.zeros((), NATIVE_PAIR)
    pair["a"], pair["b"] = 1.5, 2
    lib.by_value(1, out, pair, np.array(0.25, np.float32))
    assert out[0] == 3.75
    pairs = np.zeros(3, NATIVE_PAIR)
    pairs["a"], pairs["b"] = [0.5, 1.5, 2.5], [1, 2, 3]
    many = np.zeros(3, np.float32)
    lib.pairs(3, many, pairs)
    np.testing.assert_array_equal(many, [1.5, 3.5, 5.5])
    swapped = np.array([2.5, -1.0], ">f4").astype(np.dtype(">f4").newbyteorder("="))
    lib.copy(2, many, device.asarray(swapped))
    np.testing.assert_array_equal(many[:2], [2.5, -1.0])
