// metalcall MSL prelude: integer functions (MSL 6.4) on scalars and vectors.
// MSL names: absdiff, addsat, subsat, madsat, madhi, mulhi (not OpenCL's
// abs_diff, add_sat, ...). abs, min, max and clamp are in metal_math.h.
#pragma once
#include "metal_math.h"

namespace metal {
namespace mtl_detail {
// Unsigned working type at least as wide as int, so shifts and masks on
// uchar/ushort do not go through signed int promotion.
template <class T> using uwork = conditional_t<sizeof(T) == 8, unsigned long long, unsigned int>;
template <class T> struct bit_width { static constexpr int value = int(sizeof(T) * 8); };

METAL_FUNC int clz32(unsigned int u) {
#if METAL_CUDA
  return __clz(int(u));
#else
  return u ? __builtin_clz(u) : 32;
#endif
}
METAL_FUNC int clz64(unsigned long long u) {
#if METAL_CUDA
  return __clzll((long long)u);
#else
  return u ? __builtin_clzll(u) : 64;
#endif
}
METAL_FUNC int ctz64(unsigned long long u) {
#if METAL_CUDA
  return __ffsll((long long)u) - 1;
#else
  return __builtin_ctzll(u);
#endif
}
METAL_FUNC int popcount64(unsigned long long u) {
#if METAL_CUDA
  return __popcll(u);
#else
  return __builtin_popcountll(u);
#endif
}
METAL_FUNC unsigned long long reverse64(unsigned long long u) {
#if METAL_CUDA
  return __brevll(u);
#else
  u = ((u >> 1) & 0x5555555555555555ull) | ((u & 0x5555555555555555ull) << 1);
  u = ((u >> 2) & 0x3333333333333333ull) | ((u & 0x3333333333333333ull) << 2);
  u = ((u >> 4) & 0x0f0f0f0f0f0f0f0full) | ((u & 0x0f0f0f0f0f0f0f0full) << 4);
  return __builtin_bswap64(u);
#endif
}
// High 64 bits of a 64 x 64-bit product.
METAL_FUNC unsigned long long umulhi64(unsigned long long a, unsigned long long b) {
#if METAL_CUDA
  return __umul64hi(a, b);
#else
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
#endif
}
METAL_FUNC long long smulhi64(long long a, long long b) {
#if METAL_CUDA
  return __mul64hi(a, b);
#else
  return (long long)(((__int128)a * b) >> 64);
#endif
}
// a + b and a * b as GPUs compute them: a signed integer wraps instead of overflowing
// (undefined in C++, which the host compiler and NVVM optimise on: madhi(x, 1, INT_MIN)
// gave -1 for INT_MAX once the addition was assumed not to overflow). Vectors go
// component by component; floats and unsigned types are unchanged.
template <class T> METAL_FUNC constexpr T wrapping_add(T a, T b) {
  if constexpr (is_integral<T>::value && is_signed<T>::value) return T(make_unsigned_t<T>(a) + make_unsigned_t<T>(b));
  else return a + b;
}
template <class T> METAL_FUNC constexpr T wrapping_mul(T a, T b) {
  // unsigned short * unsigned short promotes to int: multiply in unsigned int or wider
  if constexpr (is_integral<T>::value) return T(uwork<T>(make_unsigned_t<T>(a)) * uwork<T>(make_unsigned_t<T>(b)));
  else return a * b;
}
template <class T, int N, bool P> METAL_FUNC mtl_vector<T, N, P> wrapping_add(mtl_vector<T, N, P> a, const mtl_vector<T, N, P>& b) {
  for (int i = 0; i < N; ++i) a[i] = wrapping_add(T(a[i]), T(b[i]));
  return a;
}
template <class T, int N, bool P> METAL_FUNC mtl_vector<T, N, P> wrapping_mul(mtl_vector<T, N, P> a, const mtl_vector<T, N, P>& b) {
  for (int i = 0; i < N; ++i) a[i] = wrapping_mul(T(a[i]), T(b[i]));
  return a;
}
template <class T> METAL_FUNC constexpr T saturate_to(long long v) {
  return v < (long long)numeric_limits<T>::min() ? numeric_limits<T>::min()
         : v > (long long)numeric_limits<T>::max() ? numeric_limits<T>::max() : T(v);
}
}  // namespace mtl_detail

#define METAL_INT_VEC1(NAME)                                                           \
  template <class T, int N, bool P, mtl_detail::if_integer<T> = 0>                     \
  METAL_FUNC auto NAME(const mtl_vector<T, N, P>& x) {                                 \
    return mtl_detail::zip([](T a) { return metal::NAME(a); }, x);                     \
  }
#define METAL_INT_VEC2(NAME)                                                           \
  template <class A, class B, class V = mtl_detail::zip_result_t<A, B>,                \
            mtl_detail::if_integer<typename V::value_type> = 0>                        \
  METAL_FUNC auto NAME(const A& x, const B& y) {                                       \
    typedef typename V::value_type T;                                                  \
    return mtl_detail::zip([](T a, T b) { return metal::NAME(a, b); }, x, y);          \
  }
#define METAL_INT_VEC3(NAME)                                                           \
  template <class A, class B, class C, class V = mtl_detail::zip_result_t<A, B, C>,    \
            mtl_detail::if_integer<typename V::value_type> = 0>                        \
  METAL_FUNC auto NAME(const A& x, const B& y, const C& z) {                           \
    typedef typename V::value_type T;                                                  \
    return mtl_detail::zip([](T a, T b, T c) { return metal::NAME(a, b, c); }, x, y, z); \
  }

// |x - y| as the unsigned type, without overflow.
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC make_unsigned_t<T> absdiff(T x, T y) {
  typedef make_unsigned_t<T> U;
#if METAL_CUDA
  if constexpr (sizeof(T) < 4) return U(mtl_detail::opaque_abs32(int(x) - int(y)));  // not abs.s16 (metal_math.h)
  // nor an abs.s32 that ptxas takes as never negative (absdiff(INT_MIN, 0) is 2^31)
  if constexpr (sizeof(T) == 4 && is_signed<T>::value) {
    return U(mtl_detail::opaque_negate_masked(int(U(x) - U(y)), x > y ? 0 : -1));
  }
  if constexpr (sizeof(T) == 8 && is_signed<T>::value) {  // nor abs.s64 (absdiff(LONG_MIN, 0) is 2^63)
    return U(mtl_detail::opaque_negate_masked64((long long)(U(x) - U(y)), x > y ? 0 : -1));
  }
#endif
  return x > y ? U(U(x) - U(y)) : U(U(y) - U(x));
}
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T addsat(T x, T y) {
  if constexpr (sizeof(T) < 8) {
    return mtl_detail::saturate_to<T>((long long)x + (long long)y);
  } else if constexpr (!is_signed<T>::value) {
    const T r = T(x + y);
    return r < x ? numeric_limits<T>::max() : r;
  } else {
    typedef make_unsigned_t<T> U;
    const T r = T(U(x) + U(y));
    if ((x < 0) == (y < 0) && (r < 0) != (x < 0)) return x < 0 ? numeric_limits<T>::min() : numeric_limits<T>::max();
    return r;
  }
}
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T subsat(T x, T y) {
  if constexpr (sizeof(T) < 8) {
    return mtl_detail::saturate_to<T>((long long)x - (long long)y);
  } else if constexpr (!is_signed<T>::value) {
    return x < y ? T(0) : T(x - y);
  } else {
    typedef make_unsigned_t<T> U;
    const T r = T(U(x) - U(y));
    if ((x < 0) != (y < 0) && (r < 0) != (x < 0)) return x < 0 ? numeric_limits<T>::min() : numeric_limits<T>::max();
    return r;
  }
}
// (x + y) >> 1 and (x + y + 1) >> 1 without overflow.
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T hadd(T x, T y) {
  return T((x >> 1) + (y >> 1) + (x & y & 1));
}
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T rhadd(T x, T y) {
  return T((x >> 1) + (y >> 1) + ((x | y) & 1));
}
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T clz(T x) {
  const make_unsigned_t<T> u = make_unsigned_t<T>(x);
  if constexpr (sizeof(T) == 8) return T(mtl_detail::clz64(u));
  else return T(mtl_detail::clz32(u) - (32 - mtl_detail::bit_width<T>::value));
}
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T ctz(T x) {
  const make_unsigned_t<T> u = make_unsigned_t<T>(x);
  return T(u == 0 ? mtl_detail::bit_width<T>::value : mtl_detail::ctz64(u));
}
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T popcount(T x) {
  return T(mtl_detail::popcount64(make_unsigned_t<T>(x)));
}
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T reverse_bits(T x) {
  const unsigned long long r = mtl_detail::reverse64(make_unsigned_t<T>(x));
  return T(make_unsigned_t<T>(r >> (64 - mtl_detail::bit_width<T>::value)));
}
// High half of x * y.
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T mulhi(T x, T y) {
  if constexpr (sizeof(T) == 8) {
    if constexpr (is_signed<T>::value) return T(mtl_detail::smulhi64(x, y));
    else return T(mtl_detail::umulhi64(x, y));
  } else {
    typedef conditional_t<is_signed<T>::value, long long, unsigned long long> W;
    return T((W(x) * W(y)) >> mtl_detail::bit_width<T>::value);
  }
}
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T madhi(T a, T b, T c) {
  return mtl_detail::wrapping_add(metal::mulhi(a, b), c);
}
// 24-bit multiplies: exact for inputs in 24-bit range, like the GPU versions; the sum wraps.
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T mul24(T x, T y) { return mtl_detail::wrapping_mul(x, y); }
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T mad24(T x, T y, T z) {
  return mtl_detail::wrapping_add(mtl_detail::wrapping_mul(x, y), z);
}
// Saturated a * b + c. Types narrower than 64 bits fit in 64-bit arithmetic;
// 64-bit ones use the 128-bit product as (hi, lo).
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T madsat(T a, T b, T c) {
  if constexpr (sizeof(T) < 4) {
    return mtl_detail::saturate_to<T>((long long)a * b + c);
  } else if constexpr (sizeof(T) == 4 && is_signed<T>::value) {
    return mtl_detail::saturate_to<T>((long long)a * b + c);
  } else if constexpr (sizeof(T) == 4) {
    const unsigned long long r = (unsigned long long)a * b + c;  // < 2^64
    return r > 0xffffffffull ? numeric_limits<T>::max() : T(r);
  } else if constexpr (!is_signed<T>::value) {
    const unsigned long long hi = mtl_detail::umulhi64(a, b), lo = (unsigned long long)a * b;
    const unsigned long long sum = lo + c;
    return (hi != 0 || sum < lo) ? numeric_limits<T>::max() : T(sum);
  } else {
    const unsigned long long lo = (unsigned long long)a * (unsigned long long)b;
    long long hi = mtl_detail::smulhi64(a, b);
    const unsigned long long sum = lo + (unsigned long long)c;
    hi += (c < 0 ? -1 : 0) + (sum < lo ? 1 : 0);  // 128-bit add of sign-extended c
    const long long fits_hi = (long long)sum < 0 ? -1 : 0;
    if (hi != fits_hi) return hi < 0 ? numeric_limits<T>::min() : numeric_limits<T>::max();
    return T(sum);
  }
}
// Rotate left by i (modulo the bit width).
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T rotate(T v, T i) {
  typedef mtl_detail::uwork<T> U;
  constexpr int w = mtl_detail::bit_width<T>::value;
  const U u = U(make_unsigned_t<T>(v));
  const int s = int(U(i) & U(w - 1));
  return s == 0 ? v : T(make_unsigned_t<T>((u << s) | (u >> (w - s))));
}
// bits [offset, offset + bits) of x, sign-extended for signed T.
template <class T, mtl_detail::if_integer<T> = 0> METAL_FUNC T extract_bits(T x, unsigned int offset, unsigned int bits) {
  typedef mtl_detail::uwork<T> U;
  constexpr unsigned int w = mtl_detail::bit_width<T>::value;
  if (bits == 0) return T(0);
  const U mask = bits >= w ? U(make_unsigned_t<T>(~make_unsigned_t<T>(0))) : U((U(1) << bits) - 1u);
  U r = (U(make_unsigned_t<T>(x)) >> offset) & mask;
  if (is_signed<T>::value && bits < w && ((r >> (bits - 1)) & 1u)) r |= ~mask;
  return T(make_unsigned_t<T>(r));
}
template <class T, mtl_detail::if_integer<T> = 0>
METAL_FUNC T insert_bits(T base, T insert, unsigned int offset, unsigned int bits) {
  typedef mtl_detail::uwork<T> U;
  constexpr unsigned int w = mtl_detail::bit_width<T>::value;
  // No bits: base, also at offset == w (the specification allows offset + bits == w), where the
  // mask's shift by the full width was undefined and clang folded a constant one to 0.
  if (bits == 0) return base;
  const U field = bits >= w ? U(make_unsigned_t<T>(~make_unsigned_t<T>(0))) : U((U(1) << bits) - 1u);
  const U mask = field << offset;
  const U r = (U(make_unsigned_t<T>(base)) & ~mask) | ((U(make_unsigned_t<T>(insert)) << offset) & mask);
  return T(make_unsigned_t<T>(r));
}

METAL_INT_VEC1(clz)
METAL_INT_VEC1(ctz)
METAL_INT_VEC1(popcount)
METAL_INT_VEC1(reverse_bits)
METAL_INT_VEC2(absdiff)
METAL_INT_VEC2(addsat)
METAL_INT_VEC2(subsat)
METAL_INT_VEC2(hadd)
METAL_INT_VEC2(rhadd)
METAL_INT_VEC2(mulhi)
METAL_INT_VEC2(mul24)
METAL_INT_VEC2(rotate)
METAL_INT_VEC3(madhi)
METAL_INT_VEC3(mad24)
METAL_INT_VEC3(madsat)
#undef METAL_INT_VEC1
#undef METAL_INT_VEC2
#undef METAL_INT_VEC3

template <class T, int N, bool P, mtl_detail::if_integer<T> = 0>
METAL_FUNC vec<T, N> extract_bits(const mtl_vector<T, N, P>& x, unsigned int offset, unsigned int bits) {
  return mtl_detail::zip([=](T a) { return metal::extract_bits(a, offset, bits); }, x);
}
template <class T, int N, bool P, bool Q, mtl_detail::if_integer<T> = 0>
METAL_FUNC vec<T, N> insert_bits(const mtl_vector<T, N, P>& base, const mtl_vector<T, N, Q>& insert,
                                 unsigned int offset, unsigned int bits) {
  return mtl_detail::zip([=](T a, T b) { return metal::insert_bits(a, b, offset, bits); }, base, insert);
}

namespace mtl_detail {
#if METAL_CUDA
// max3/min3 of signed integers up to 32 bits through unsigned ones (x ^ INT_MIN keeps the
// order): CUDA 12's ptxas fuses two signed min or max into a 3-input VIMNMX3 and drops a negation
// of its first or second operand, so `min3(int(-uint(x)), y, z)` took x on the H200 (fuzz seeds
// 7100, 7103, 7112, 7113; NVRTC 12.9's SASS, 13.5 keeps it). Unsigned, it stays negated.
template <bool Max, class T> METAL_FUNC T minmax3_biased(T x, T y, T z) {
  const unsigned s = 0x80000000u, a = unsigned(int(x)) ^ s, b = unsigned(int(y)) ^ s, c = unsigned(int(z)) ^ s;
  unsigned r = Max ? (a < b ? b : a) : (b < a ? b : a);
  r = Max ? (r < c ? c : r) : (c < r ? c : r);
  return T(int(r ^ s));
}
template <class T> struct biased3 : integral_constant<bool, is_int<T>::value && is_signed<T>::value && sizeof(T) <= 4> {};
template <bool Max, class R, class A, class B, class C>
METAL_FUNC R minmax3_of(const A& x, const B& y, const C& z) {
  if constexpr (biased3<R>::value) {
    return minmax3_biased<Max>(R(x), R(y), R(z));
  } else {
    const R a(x), b(y), c(z);
    R r;
    for (int i = 0; i < vec_info<R>::size; ++i) r[i] = minmax3_biased<Max>(a[i], b[i], c[i]);
    return r;
  }
}
#endif
}  // namespace mtl_detail

// max3, min3, median3: integers and floats, scalars and vectors.
template <class A, class B, class C> METAL_FUNC auto max3(const A& x, const B& y, const C& z) {
#if METAL_CUDA
  typedef decltype(metal::max(metal::max(x, y), z)) R;
  if constexpr (mtl_detail::biased3<R>::value || mtl_detail::biased3<typename mtl_detail::vec_info<R>::elem>::value)
    return mtl_detail::minmax3_of<true, R>(x, y, z);
  else
#endif
  return metal::max(metal::max(x, y), z);
}
template <class A, class B, class C> METAL_FUNC auto min3(const A& x, const B& y, const C& z) {
#if METAL_CUDA
  typedef decltype(metal::min(metal::min(x, y), z)) R;
  if constexpr (mtl_detail::biased3<R>::value || mtl_detail::biased3<typename mtl_detail::vec_info<R>::elem>::value)
    return mtl_detail::minmax3_of<false, R>(x, y, z);
  else
#endif
  return metal::min(metal::min(x, y), z);
}
template <class A, class B, class C> METAL_FUNC auto median3(const A& x, const B& y, const C& z) {
  return metal::max(metal::min(x, y), metal::min(metal::max(x, y), z));
}

}  // namespace metal
