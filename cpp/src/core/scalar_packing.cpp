#include "core/scalar_packing.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "metalcall/errors.hpp"

namespace metalcall {

std::uint16_t float_to_half_bits(float v) {
  std::uint32_t x;
  std::memcpy(&x, &v, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (abs < 0x38800000u) {  // subnormal half (or zero)
    const std::uint32_t shift = 113 - (abs >> 23);
    if (shift > 24) return static_cast<std::uint16_t>(sign);
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    std::uint32_t h = mant >> (shift + 13);
    const std::uint32_t rest = mant & ((1u << (shift + 13)) - 1);
    const std::uint32_t half_way = 1u << (shift + 12);
    if (rest > half_way || (rest == half_way && (h & 1))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = ((abs - 0x38000000u) >> 13);
  const std::uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

std::uint16_t float_to_bfloat_bits(float v) {
  std::uint32_t x;
  std::memcpy(&x, &v, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // NaN stays NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

namespace {

// A double as a person reads it (1e+300, not 300 digits).
std::string short_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::string describe(const ParamInfo& p) {
  if (p.binding < 0) return p.name;  // not a buffer binding: the caller describes it (function constants)
  return "argument '" + p.name + "' ([[buffer(" + std::to_string(p.binding) + ")]] " + p.type_name + ")";
}

template <typename T>
std::vector<std::uint8_t> bytes_of(T v) {
  std::vector<std::uint8_t> out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

bool is_integer(ScalarType s) {
  switch (s) {
    case ScalarType::i8: case ScalarType::u8: case ScalarType::i16: case ScalarType::u16:
    case ScalarType::i32: case ScalarType::u32: case ScalarType::i64: case ScalarType::u64: return true;
    default: return false;
  }
}

bool is_floating(ScalarType s) { return s == ScalarType::f16 || s == ScalarType::bf16 || s == ScalarType::f32; }

std::vector<std::uint8_t> pack_integer(const Argument& a, const ParamInfo& p) {
  // The value as a signed or unsigned 64-bit integer.
  const bool negative = !a.int_is_unsigned && a.int_value < 0;
  const std::uint64_t magnitude = a.int_is_unsigned ? static_cast<std::uint64_t>(a.int_value)
                                  : negative ? 0 - static_cast<std::uint64_t>(a.int_value)
                                             : static_cast<std::uint64_t>(a.int_value);
  auto out_of_range = [&](const char* range) {
    std::string v = a.int_is_unsigned ? std::to_string(static_cast<std::uint64_t>(a.int_value))
                                      : std::to_string(a.int_value);
    return ArgumentError(describe(p) + ": " + v + " does not fit in " + to_string(p.scalar) + " (" + range + ")");
  };
  auto fits_signed = [&](std::uint64_t max_positive) {
    return negative ? magnitude <= max_positive + 1 : magnitude <= max_positive;
  };
  switch (p.scalar) {
    case ScalarType::i8: if (!fits_signed(127)) throw out_of_range("-128..127"); return bytes_of<std::int8_t>(static_cast<std::int8_t>(a.int_value));
    case ScalarType::u8: if (negative || magnitude > 255) throw out_of_range("0..255"); return bytes_of<std::uint8_t>(static_cast<std::uint8_t>(magnitude));
    case ScalarType::i16: if (!fits_signed(32767)) throw out_of_range("-32768..32767"); return bytes_of<std::int16_t>(static_cast<std::int16_t>(a.int_value));
    case ScalarType::u16: if (negative || magnitude > 65535) throw out_of_range("0..65535"); return bytes_of<std::uint16_t>(static_cast<std::uint16_t>(magnitude));
    case ScalarType::i32: if (!fits_signed(2147483647ull)) throw out_of_range("-2^31..2^31-1"); return bytes_of<std::int32_t>(static_cast<std::int32_t>(a.int_value));
    case ScalarType::u32: if (negative || magnitude > 4294967295ull) throw out_of_range("0..2^32-1"); return bytes_of<std::uint32_t>(static_cast<std::uint32_t>(magnitude));
    case ScalarType::i64: if (!fits_signed(9223372036854775807ull)) throw out_of_range("-2^63..2^63-1"); return bytes_of<std::int64_t>(a.int_value);
    case ScalarType::u64: if (negative) throw out_of_range("0..2^64-1"); return bytes_of<std::uint64_t>(magnitude);
    default: break;
  }
  return {};
}

}  // namespace

double integer_rounded_to_odd(const Argument& a) {
  const bool negative = !a.int_is_unsigned && a.int_value < 0;
  std::uint64_t m = negative ? 0 - static_cast<std::uint64_t>(a.int_value) : static_cast<std::uint64_t>(a.int_value);
  // Past 2^53 a double keeps the top 53 bits: the rest truncated, the last kept bit set if any was
  // not zero (2^60 + 2^36 + 1 became the tie 2^60 + 2^36, then the float 2^60, not 2^60 + 2^37).
  int bits = 0;
  for (std::uint64_t x = m; x; x >>= 1) ++bits;
  if (bits > 53) {
    const int drop = bits - 53;
    const std::uint64_t kept = m >> drop << drop;
    if (kept != m) m = kept | (std::uint64_t{1} << drop);
  }
  const double v = static_cast<double>(m);  // exact: at most 53 significant bits
  return negative ? -v : v;
}

// `v` as a float rounded to odd: truncated, with the last bit set when that was inexact. Rounding
// this to half or bfloat (13 and 16 bits fewer) gives what rounding `v` itself would, where
// rounding to nearest twice does not: 1 + 2^-11 + 2^-40 became 1 + 2^-11, a tie, then 1.0h
// (np.float16 gives 1.0009765625).
float float_rounded_to_odd(double v) {
  float f = static_cast<float>(v);
  if (!std::isfinite(v) || static_cast<double>(f) == v) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);  // toward zero
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {

std::vector<std::uint8_t> pack_floating(double v, const ParamInfo& p) {
  // A finite value is out of range only if it rounds to infinity: FLT_MAX written
  // in decimal (3.4028235e38) rounds to FLT_MAX, as 0.1 rounds to 0.1f.
  // Each type's own limit is checked (half's and bfloat's lie below float's): 3.4e38 for a bfloat
  // is out of bfloat's range, which the message names.
  const double float_limit = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);  // halfway between FLT_MAX and 2^128
  switch (p.scalar) {
    case ScalarType::f32:
      if (std::isfinite(v) && std::fabs(v) >= float_limit)
        throw ArgumentError(describe(p) + ": " + short_number(v) + " is out of the range of float (largest 3.40282347e+38)");
      return bytes_of<float>(static_cast<float>(v));
    case ScalarType::f16:
      if (std::isfinite(v) && std::fabs(v) >= 65520.0)  // halfway between 65504 and 65536
        throw ArgumentError(describe(p) + ": " + short_number(v) + " is out of the range of half (largest 65504)");
      return bytes_of<std::uint16_t>(float_to_half_bits(float_rounded_to_odd(v)));
    case ScalarType::bf16:
      // bfloat's range is float's less its top 2^120: a finite value that rounds past it is refused, as for half.
      if (std::isfinite(v) && std::fabs(v) >= std::ldexp(1.0, 128) - std::ldexp(1.0, 119))
        throw ArgumentError(describe(p) + ": " + short_number(v) + " is out of the range of bfloat (largest 3.38953139e+38)");
      return bytes_of<std::uint16_t>(float_to_bfloat_bits(float_rounded_to_odd(v)));
    default: break;
  }
  return {};
}

// A tuple or list for a vector parameter (`float4 v`, `constant uint3& v`): each value packed as a
// scalar of the component type is (range-checked, rounded to nearest), a 3-vector padded to its
// 4-vector size (packed_float3 is not: its element_size is 12). Before 2026-12-05 a tuple was
// refused with advice to pass "a number", which a vector does not take either.
std::vector<std::uint8_t> pack_components(const Argument& a, const ParamInfo& p) {
  const std::size_t n = a.components.size();
  if (p.scalar == ScalarType::unknown)
    throw ArgumentError(describe(p) + " takes " + std::to_string(p.element_size) +
                        " bytes: pass bytes, a NumPy array or structured scalar of that size, not a sequence of " +
                        std::to_string(n) + " values");
  if (p.vector_width == 1)
    throw ArgumentError(describe(p) + " is a scalar: pass one number, not a sequence of " + std::to_string(n));
  if (n != static_cast<std::size_t>(p.vector_width))
    throw ArgumentError(describe(p) + " is a vector of " + std::to_string(p.vector_width) + ": pass " +
                        std::to_string(p.vector_width) + " numbers, not " + std::to_string(n));
  ParamInfo component = p;
  component.vector_width = 1;
  component.element_size = scalar_size(p.scalar);
  component.binding = -1;  // the name below is the whole description
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i < n; ++i) {
    component.name = describe(p) + ", component " + std::to_string(i) + " (" + "xyzw"[i] + ")";
    const std::vector<std::uint8_t> b = pack_scalar(a.components[i], component);
    bytes.insert(bytes.end(), b.begin(), b.end());
  }
  const std::size_t size = p.element_size ? p.element_size : scalar_size(p.scalar) * (n == 3 ? 4 : n);
  if (bytes.size() > size)
    throw ArgumentError(describe(p) + " takes " + std::to_string(size) + " bytes, not " + std::to_string(bytes.size()));
  bytes.resize(size, 0);
  return bytes;
}

}  // namespace

std::vector<std::uint8_t> pack_scalar(const Argument& a, const ParamInfo& p) {
  if (a.kind == Argument::Kind::components) return pack_components(a, p);
  if (p.scalar == ScalarType::unknown || p.vector_width != 1) {
    throw ArgumentError(describe(p) + " takes " + std::to_string(p.element_size) +
                        " bytes: pass bytes, a NumPy structured scalar or array, or a ctypes structure of that size, "
                        "not a single number");
  }
  // The compiled type is not the one the front end read (an enum whose values need 64 bits): its bytes, not a guess.
  if (p.element_size && p.element_size != scalar_size(p.scalar))
    throw ArgumentError(describe(p) + " takes " + std::to_string(p.element_size) + " bytes, which metalcall cannot "
                        "pack a number into; pass bytes or a NumPy scalar of that size");
  switch (a.kind) {
    case Argument::Kind::boolean:
      if (p.scalar == ScalarType::boolean) return bytes_of<std::uint8_t>(a.int_value ? 1 : 0);
      if (is_integer(p.scalar)) return pack_integer(a, p);
      throw ArgumentError(describe(p) + ": a bool cannot be passed as " + to_string(p.scalar));
    case Argument::Kind::integer:
      if (is_integer(p.scalar)) return pack_integer(a, p);
      if (is_floating(p.scalar)) {
        return pack_floating(integer_rounded_to_odd(a), p);
      }
      if (p.scalar == ScalarType::boolean) {
        if (a.int_value == 0 || a.int_value == 1) return bytes_of<std::uint8_t>(static_cast<std::uint8_t>(a.int_value));
        throw ArgumentError(describe(p) + ": only 0, 1, True or False can be passed as bool");
      }
      break;
    case Argument::Kind::floating:
      if (is_floating(p.scalar)) return pack_floating(a.float_value, p);
      throw ArgumentError(describe(p) + ": a floating-point value cannot be passed as " + to_string(p.scalar) +
                          "; convert it explicitly (int(x)) if that is what you mean");
    default:
      break;
  }
  throw ArgumentError(describe(p) + ": cannot pack this value as " + to_string(p.scalar));
}

}  // namespace metalcall
