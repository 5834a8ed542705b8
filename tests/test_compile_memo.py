"""dev.compile(src) of a str compiled before in this process is found by the str object itself
(docs/design.md, "The in-memory library cache"): the same Library comes back, and every other
spelling of the call (another str of the same text, defines, fast_math, another device) still
gets the library its own options make."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void scale(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
#ifdef FACTOR
    a[i] = a[i] * FACTOR;
#else
    a[i] = a[i] * 2.0f;
#endif
}
"""


def run(lib, n=8):
    a = np.arange(n, dtype=np.float32)
    lib.scale(n, a)
    return a


def test_same_str_gives_the_same_library(device):
    first = device.compile(SRC)
    assert device.compile(SRC) is first
    assert device.compile(source=SRC) is first and device.compile(SRC, fast_math=True) is first
    with pytest.raises(TypeError):
        device.compile(SRC, no_such_option=1)
    np.testing.assert_array_equal(run(first), np.arange(8, dtype=np.float32) * 2)
    copy = "".join(list(SRC))  # another str object of the same text: the content cache finds it
    assert copy is not SRC
    np.testing.assert_array_equal(run(device.compile(copy)), np.arange(8, dtype=np.float32) * 2)


def test_options_are_part_of_the_key(device):
    plain = device.compile(SRC)
    tripled = device.compile(SRC, defines={"FACTOR": 3.0})
    assert tripled is not plain
    np.testing.assert_array_equal(run(tripled), np.arange(8, dtype=np.float32) * 3)
    np.testing.assert_array_equal(run(device.compile(SRC)), np.arange(8, dtype=np.float32) * 2)
    precise = device.compile(SRC, fast_math=False)
    assert precise is not plain and device.compile(SRC, fast_math=False) is precise
    np.testing.assert_array_equal(run(precise), np.arange(8, dtype=np.float32) * 2)


def test_devices_do_not_share_entries(device):
    lib = device.compile(SRC)
    other = mc.Device("cpu", checked=True)
    checked_lib = other.compile(SRC)
    assert checked_lib is not lib
    np.testing.assert_array_equal(run(checked_lib), np.arange(8, dtype=np.float32) * 2)


def test_errors_are_not_remembered(device):
    bad = "kernel void k(device float* a [[buffer(0)]]) { a[0] = undefined_name; }"
    for _ in range(2):
        with pytest.raises(mc.CompileError):
            device.compile(bad)
    with pytest.raises(mc.ArgumentError):
        device.compile(SRC, fast_math="yes")


def test_many_sources_evict_old_entries(device):
    # More str objects than the table holds (two texts, 70 objects): after eviction and slot
    # reuse each object still compiles to the kernel of its own text.
    texts = {2.0: SRC, 5.0: SRC.replace("2.0f", "5.0f")}
    objects = [("".join(list(texts[f])), f) for _ in range(35) for f in texts]
    for _ in range(2):
        for src, factor in objects:
            assert device.compile(src).function_names == ["scale"]
        for src, factor in objects[::17] + objects[-3:]:
            np.testing.assert_array_equal(run(device.compile(src)), np.arange(8, dtype=np.float32) * factor)


def test_another_str_of_the_same_text_is_found_and_an_edit_is_not(device):
    # Equal text in a new str object: the same Library, found by comparing the text; the entry
    # then holds the new object. An edit of the same length (or in a wider character kind) is
    # another source with its own kernel.
    first = device.compile(SRC)
    copy = "".join(list(SRC))
    assert copy is not SRC and device.compile(copy) is first and device.compile(copy) is first
    assert device.compile(SRC) is first
    edited = SRC.replace("2.0f", "7.0f")
    assert len(edited) == len(SRC)
    np.testing.assert_array_equal(run(device.compile(edited)), np.arange(8, dtype=np.float32) * 7)
    wide = SRC.replace("using namespace metal;", "using namespace metal; // \u00e9\u4e2d")
    np.testing.assert_array_equal(run(device.compile(wide)), np.arange(8, dtype=np.float32) * 2)
    assert device.compile("".join(list(wide))) is device.compile(wide)
    np.testing.assert_array_equal(run(device.compile(SRC, fast_math=False)), np.arange(8, dtype=np.float32) * 2)
    assert device.compile(copy, fast_math=False) is device.compile(SRC, fast_math=False)
    assert device.compile(copy, fast_math=False) is not first
