// Integer functions (MSL 6.4) on scalars of every width and on vectors.
#include "metal_stdlib.h"
#include "check.h"

#include <type_traits>

using namespace metal;

static void saturating() {
  CHECK(addsat(mtl_uchar(250), mtl_uchar(10)) == 255);
  CHECK(addsat((signed char)120, (signed char)10) == 127);
  CHECK(addsat((signed char)-120, (signed char)-10) == -128);
  CHECK(addsat(2147483647, 1) == 2147483647 && addsat(-2147483647 - 1, -1) == -2147483647 - 1);
  CHECK(addsat(0xffffffffu, 1u) == 0xffffffffu);
  CHECK(addsat(mtl_ulong(0xfffffffffffffff0ul), mtl_ulong(0x20)) == 0xfffffffffffffffful);
  CHECK(addsat(long(0x7ffffffffffffff0l), long(0x20)) == 0x7fffffffffffffffl);
  CHECK(addsat(long(-0x7ffffffffffffff0l), long(-0x20)) == LONG_MIN);
  CHECK(addsat(long(5), long(-7)) == -2);
  CHECK(subsat(mtl_ushort(5), mtl_ushort(10)) == 0);
  CHECK(subsat(short(-32000), short(1000)) == -32768);
  CHECK(subsat(1u, 2u) == 0u && subsat(5, 7) == -2);
  CHECK(subsat(mtl_ulong(1), mtl_ulong(2)) == 0);
  CHECK(subsat(long(LONG_MIN + 5), long(10)) == LONG_MIN);
  CHECK(subsat(long(LONG_MAX - 5), long(-10)) == LONG_MAX);
  CHECK(madsat(mtl_uchar(16), mtl_uchar(16), mtl_uchar(0)) == 255);
  CHECK(madsat(100000, 100000, 5) == 2147483647 && madsat(-100000, 100000, 5) == -2147483647 - 1);
  CHECK(madsat(3, 4, 5) == 17);
  CHECK(madsat(0x10000u, 0x10000u, 0u) == 0xffffffffu && madsat(0xffffu, 0x10001u, 0u) == 0xffffffffu);
  CHECK(madsat(mtl_ulong(1) << 32, mtl_ulong(1) << 32, mtl_ulong(0)) == 0xfffffffffffffffful);
  CHECK(madsat(mtl_ulong(3), mtl_ulong(5), mtl_ulong(7)) == 22);
  CHECK(madsat(long(1) << 32, long(1) << 31, long(-1)) == LONG_MAX);   // 2^63 - 1 exactly fits
  CHECK(madsat(long(1) << 32, long(1) << 31, long(0)) == LONG_MAX);    // 2^63 saturates
  CHECK(madsat(long(1) << 32, -(long(1) << 31), long(-1)) == LONG_MIN);
  CHECK(madsat(long(1) << 32, long(1) << 32, long(LONG_MIN)) == LONG_MAX);  // 2^64 - 2^63 = 2^63
  CHECK(madsat(long(-3), long(5), long(7)) == -8);
}

static void arithmetic() {
  CHECK(absdiff(-5, 7) == 12u && absdiff(7, -5) == 12u);
  static_assert(std::is_same<decltype(absdiff(1, 2)), unsigned int>::value, "absdiff(int) is uint");
  CHECK(absdiff((signed char)-128, (signed char)127) == 255);
  CHECK(absdiff(-2147483647 - 1, 2147483647) == 0xffffffffu);
  CHECK(hadd(0xffffffffu, 0xffffffffu) == 0xffffffffu && hadd(3, 4) == 3 && hadd(-3, -4) == -4);
  CHECK(rhadd(0xffffffffu, 0xfffffffeu) == 0xffffffffu && rhadd(3, 4) == 4 && rhadd(-3, -4) == -3);
  CHECK(mulhi(0x80000000u, 4u) == 2u && mulhi(-2147483647 - 1, 2) == -1);
  CHECK(mulhi(mtl_ushort(0x8000), mtl_ushort(4)) == 2);
  CHECK(mulhi(mtl_ulong(1) << 63, mtl_ulong(4)) == 2 && mulhi(long(-1), long(1)) == -1);
  CHECK(madhi(0x80000000u, 4u, 3u) == 5u);
  CHECK(mul24(1000, 1000) == 1000000 && mad24(1000, 1000, 7) == 1000007);
}

static void bits() {
  CHECK(clz(1u) == 31u && clz(0u) == 32u && clz(-1) == 0);
  CHECK(clz(mtl_uchar(1)) == 7 && clz(mtl_uchar(0)) == 8 && clz((signed char)-1) == 0);
  CHECK(clz(mtl_ushort(0x100)) == 7 && clz(mtl_ulong(1)) == 63 && clz(long(0)) == 64);
  CHECK(ctz(8u) == 3u && ctz(0u) == 32u && ctz(mtl_uchar(0)) == 8 && ctz((signed char)-128) == 7);
  CHECK(ctz(mtl_ulong(1) << 40) == 40 && ctz(short(0)) == 16);
  CHECK(popcount(0xffu) == 8u && popcount(-1) == 32 && popcount((signed char)-1) == 8);
  CHECK(popcount(mtl_ulong(0xffffffffffffffffull)) == 64);
  CHECK(reverse_bits(1u) == 0x80000000u && reverse_bits(mtl_uchar(1)) == 0x80 && reverse_bits(mtl_ushort(0x00f0)) == 0x0f00);
  CHECK(reverse_bits(mtl_ulong(1)) == 0x8000000000000000ul);
  CHECK(rotate(0x80000001u, 1u) == 3u && rotate(mtl_uchar(0x81), mtl_uchar(1)) == 0x03);
  CHECK(rotate(0x12345678u, 36u) == 0x23456781u && rotate(5u, 0u) == 5u);
  CHECK(rotate((signed char)-128, (signed char)1) == 1);
  CHECK(extract_bits(0xabcdu, 4, 8) == 0xbcu && extract_bits(0xabcdu, 0, 0) == 0u);
  CHECK(extract_bits(0x00f0, 4, 4) == -1 && extract_bits(0x0070, 4, 4) == 7);  // signed: sign-extends
  CHECK(extract_bits(-1, 0, 32) == -1 && extract_bits(0xffffffffu, 0, 32) == 0xffffffffu);
  CHECK(extract_bits((signed char)0x40, 6, 1) == -1 && extract_bits(mtl_uchar(0x40), 6, 1) == 1);
  CHECK(insert_bits(0xffffu, 0u, 4, 8) == 0xf00fu && insert_bits(0u, 0xffu, 28, 8) == 0xf0000000u);
  CHECK(insert_bits(0u, 0x12345678u, 0, 32) == 0x12345678u);
  CHECK(insert_bits(mtl_uchar(0), mtl_uchar(3), 6, 2) == 0xc0);
}

static void vectors() {
  mtl_uchar4 a = mtl_uchar4(250, 5, 128, 0), b = mtl_uchar4(10, 10, 128, 0);
  CHECK(same_vec(addsat(a, b), mtl_uchar4(255, 15, 255, 0), 4));
  CHECK(same_vec(subsat(a, b), mtl_uchar4(240, 0, 0, 0), 4));
  CHECK(same_vec(absdiff(mtl_int2(-5, 5), mtl_int2(5, -5)), mtl_uint2(10, 10), 2));
  static_assert(std::is_same<decltype(absdiff(mtl_int2(), mtl_int2())), mtl_uint2>::value, "absdiff(int2) is uint2");
  CHECK(same_vec(clz(mtl_uint2(1, 0)), mtl_uint2(31, 32), 2));
  CHECK(same_vec(popcount(mtl_uint3(1, 3, 7)), mtl_uint3(1, 2, 3), 3));
  CHECK(same_vec(ctz(mtl_int2(4, 0)), mtl_int2(2, 32), 2));
  CHECK(same_vec(reverse_bits(mtl_uint2(1, 2)), mtl_uint2(0x80000000u, 0x40000000u), 2));
  CHECK(same_vec(rotate(mtl_uint2(1, 0x80000000u), mtl_uint2(1)), mtl_uint2(2, 1), 2));
  CHECK(same_vec(hadd(mtl_int2(3, -3), mtl_int2(4, -4)), mtl_int2(3, -4), 2));
  CHECK(same_vec(mulhi(mtl_uint2(0x80000000u), mtl_uint2(2, 4)), mtl_uint2(1, 2), 2));
  CHECK(same_vec(madsat(mtl_int2(100000, 2), mtl_int2(100000, 3), mtl_int2(0, 1)), mtl_int2(2147483647, 7), 2));
  CHECK(same_vec(extract_bits(mtl_uint2(0xabcd, 0x1234), 4, 4), mtl_uint2(0xc, 0x3), 2));
  CHECK(same_vec(insert_bits(mtl_uint2(0), mtl_uint2(0xf, 1), 8, 4), mtl_uint2(0xf00, 0x100), 2));
  CHECK(max3(1, 7, 3) == 7 && min3(4, 2, 9) == 2 && median3(4, 9, 1) == 4 && median3(1, 2, 3) == 2);
  CHECK(max3(1.0f, 7.0f, 3.0f) == 7.0f);
  CHECK(same_vec(median3(mtl_int2(1, 9), mtl_int2(5, 2), mtl_int2(3, 4)), mtl_int2(3, 4), 2));
}

int main() {
  saturating();
  arithmetic();
  bits();
  vectors();
  return finish("test_integer");
}
