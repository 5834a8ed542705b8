"""The value macros Clang predefines (`__FLT16_MAX__`, `__INT_MAX__`, `__SIZEOF_LONG__`,
`__CHAR_BIT__` ...), which MSL code names because Apple's compiler is Clang (ik_llama.cpp's
flash attention starts its maxima at `-__FLT16_MAX__/2`). The translated backends preprocess
without the host's macros and NVRTC has none of them: metalcall defines Clang's values for a
64-bit Apple target (msl/lex/clang_macros.cpp), the same on every device. Each kernel writes
what the macros expand to; the references are NumPy's limits of the same types."""

from __future__ import annotations

import numpy as np

from mcconf import HEADER, compile_once

# No directive: the source is preprocessed because it names the macros.
FLOATS = HEADER + """
kernel void cm_float_limits(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float M = -__FLT16_MAX__/2;
    float S[4] = { [0 ... 3] = -__FLT16_MAX__/2 };
    out[0] = M;
    out[1] = S[3];
    out[2] = __FLT16_MAX__;
    out[3] = __FLT16_MIN__;
    out[4] = __FLT16_EPSILON__;
    out[5] = __FLT16_DENORM_MIN__;
    out[6] = __FLT_MAX__;
    out[7] = __FLT_MIN__;
    out[8] = __FLT_EPSILON__;
    half h = __FLT16_MAX__;
    out[9] = float(h - __FLT16_EPSILON__ * __FLT16_MAX__ / 2);
}
"""

INTEGERS = HEADER + """
constant long cm_long_max = __LONG_MAX__;
kernel void cm_integer_limits(device long* wide [[buffer(0)]], device ulong* uwide [[buffer(1)]],
                              device int* ints [[buffer(2)]], device uint* uints [[buffer(3)]],
                              uint i [[thread_position_in_grid]]) {
    wide[0] = cm_long_max;
    wide[1] = __INT64_MAX__;
    wide[2] = __INTPTR_MAX__;
    wide[3] = __PTRDIFF_MAX__;
    uwide[0] = __UINT64_MAX__;
    uwide[1] = __SIZE_MAX__;
    ints[0] = __INT_MAX__;
    ints[1] = __INT8_MAX__;
    ints[2] = __INT16_MAX__;
    ints[3] = __SCHAR_MAX__;
    ints[4] = __SHRT_MAX__;
    uints[0] = __UINT32_MAX__;
    uints[1] = __UINT16_MAX__;
    uints[2] = __UINT8_MAX__;
}
"""

# In directives: the preprocessor sees the same values, and the sizes are MSL's own.
SIZES = HEADER + """
#if __SIZEOF_LONG__ == 8 && __CHAR_BIT__ == 8 && __FLT16_MANT_DIG__ == 11 && defined(__FLT16_MAX__)
#define CM_LP64 1
#else
#define CM_LP64 0
#endif
kernel void cm_sizes(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[0] = CM_LP64;
    out[1] = __SIZEOF_LONG__ == sizeof(long);
    out[2] = __SIZEOF_INT__ == sizeof(int) && __SIZEOF_SHORT__ == sizeof(short) && __SIZEOF_FLOAT__ == sizeof(float);
    out[3] = __SIZEOF_POINTER__ == 8 && __SIZEOF_SIZE_T__ == sizeof(size_t);
    out[4] = __CHAR_BIT__;
    out[5] = __FLT16_MANT_DIG__;
    out[6] = __FLT_MANT_DIG__;
    out[7] = __FLT16_MAX_EXP__;
    out[8] = __FLT16_MIN_EXP__;
    out[9] = __FLT_MAX_EXP__;
    out[10] = __FLT_MIN_EXP__;
    out[11] = __FLT16_DIG__;
    out[12] = __FLT_DIG__;
    out[13] = __FLT_RADIX__;
    out[14] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
    out[15] = __LONG_WIDTH__;
}
"""


def test_float_limits(device):
    out = np.zeros(10, np.float32)
    compile_once(device, FLOATS).function("cm_float_limits")(1, out)
    f16, f32 = np.finfo(np.float16), np.finfo(np.float32)
    # __FLT16_EPSILON__ * __FLT16_MAX__ / 2 is 31.984375 in half: 65504 less that rounds to
    # 65472, the next half down.
    expected = [-32752.0, -32752.0, f16.max, f16.tiny, f16.eps, f16.smallest_subnormal,
                f32.max, f32.tiny, f32.eps, 65472.0]
    np.testing.assert_array_equal(out, np.array(expected, np.float32))


def test_integer_limits(device):
    wide, uwide = np.zeros(4, np.int64), np.zeros(2, np.uint64)
    ints, uints = np.zeros(5, np.int32), np.zeros(3, np.uint32)
    compile_once(device, INTEGERS).function("cm_integer_limits")(1, wide, uwide, ints, uints)
    i64, u64 = np.iinfo(np.int64), np.iinfo(np.uint64)
    assert wide.tolist() == [i64.max] * 4
    assert uwide.tolist() == [u64.max] * 2
    assert ints.tolist() == [2**31 - 1, 127, 32767, 127, 32767]
    assert uints.tolist() == [2**32 - 1, 65535, 255]


def test_sizes_and_formats(device):
    out = np.full(16, -1, np.int32)
    compile_once(device, SIZES).function("cm_sizes")(1, out)
    assert out.tolist() == [1, 1, 1, 1, 8, 11, 24, 16, -13, 128, -125, 3, 6, 2, 1, 64]
