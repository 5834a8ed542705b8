// Clang's predefined value macros in MSL spelling (see clang_macros.hpp).
#include "msl/lex/clang_macros.hpp"

#include <cctype>
#include <set>

namespace metalcall::msl {

const Macros& clang_value_macros() {
  // `clang++-16 -target arm64-apple-macos -x c++ -E -dM /dev/null`, the value macros only
  // (not __SIZEOF_INT128__: MSL has no 128-bit integer; not __BIGGEST_ALIGNMENT__, a host ABI's).
  static const auto& macros = *new Macros{
      {"__BOOL_WIDTH__", "8"},
      {"__BYTE_ORDER__", "__ORDER_LITTLE_ENDIAN__"},
      {"__CHAR_BIT__", "8"},
      {"__DBL_DECIMAL_DIG__", "17"},
      {"__DBL_DENORM_MIN__", "4.9406564584124654e-324"},
      {"__DBL_DIG__", "15"},
      {"__DBL_EPSILON__", "2.2204460492503131e-16"},
      {"__DBL_HAS_DENORM__", "1"},
      {"__DBL_HAS_INFINITY__", "1"},
      {"__DBL_HAS_QUIET_NAN__", "1"},
      {"__DBL_MANT_DIG__", "53"},
      {"__DBL_MAX_10_EXP__", "308"},
      {"__DBL_MAX_EXP__", "1024"},
      {"__DBL_MAX__", "1.7976931348623157e+308"},
      {"__DBL_MIN_10_EXP__", "(-307)"},
      {"__DBL_MIN_EXP__", "(-1021)"},
      {"__DBL_MIN__", "2.2250738585072014e-308"},
      {"__DECIMAL_DIG__", "__LDBL_DECIMAL_DIG__"},
      {"__FLT16_DECIMAL_DIG__", "5"},
      {"__FLT16_DENORM_MIN__", "5.9604644775390625e-8h"},
      {"__FLT16_DIG__", "3"},
      {"__FLT16_EPSILON__", "9.765625e-4h"},
      {"__FLT16_HAS_DENORM__", "1"},
      {"__FLT16_HAS_INFINITY__", "1"},
      {"__FLT16_HAS_QUIET_NAN__", "1"},
      {"__FLT16_MANT_DIG__", "11"},
      {"__FLT16_MAX_10_EXP__", "4"},
      {"__FLT16_MAX_EXP__", "16"},
      {"__FLT16_MAX__", "6.5504e+4h"},
      {"__FLT16_MIN_10_EXP__", "(-4)"},
      {"__FLT16_MIN_EXP__", "(-13)"},
      {"__FLT16_MIN__", "6.103515625e-5h"},
      {"__FLT_DECIMAL_DIG__", "9"},
      {"__FLT_DENORM_MIN__", "1.40129846e-45F"},
      {"__FLT_DIG__", "6"},
      {"__FLT_EPSILON__", "1.19209290e-7F"},
      {"__FLT_HAS_DENORM__", "1"},
      {"__FLT_HAS_INFINITY__", "1"},
      {"__FLT_HAS_QUIET_NAN__", "1"},
      {"__FLT_MANT_DIG__", "24"},
      {"__FLT_MAX_10_EXP__", "38"},
      {"__FLT_MAX_EXP__", "128"},
      {"__FLT_MAX__", "3.40282347e+38F"},
      {"__FLT_MIN_10_EXP__", "(-37)"},
      {"__FLT_MIN_EXP__", "(-125)"},
      {"__FLT_MIN__", "1.17549435e-38F"},
      {"__FLT_RADIX__", "2"},
      {"__INT16_MAX__", "32767"},
      {"__INT32_MAX__", "2147483647"},
      {"__INT64_MAX__", "9223372036854775807LL"},
      {"__INT8_MAX__", "127"},
      {"__INTMAX_MAX__", "9223372036854775807L"},
      {"__INTMAX_WIDTH__", "64"},
      {"__INTPTR_MAX__", "9223372036854775807L"},
      {"__INTPTR_WIDTH__", "64"},
      {"__INT_FAST16_MAX__", "32767"},
      {"__INT_FAST16_WIDTH__", "16"},
      {"__INT_FAST32_MAX__", "2147483647"},
      {"__INT_FAST32_WIDTH__", "32"},
      {"__INT_FAST64_MAX__", "9223372036854775807LL"},
      {"__INT_FAST64_WIDTH__", "64"},
      {"__INT_FAST8_MAX__", "127"},
      {"__INT_FAST8_WIDTH__", "8"},
      {"__INT_LEAST16_MAX__", "32767"},
      {"__INT_LEAST16_WIDTH__", "16"},
      {"__INT_LEAST32_MAX__", "2147483647"},
      {"__INT_LEAST32_WIDTH__", "32"},
      {"__INT_LEAST64_MAX__", "9223372036854775807LL"},
      {"__INT_LEAST64_WIDTH__", "64"},
      {"__INT_LEAST8_MAX__", "127"},
      {"__INT_LEAST8_WIDTH__", "8"},
      {"__INT_MAX__", "2147483647"},
      {"__INT_WIDTH__", "32"},
      {"__LDBL_DECIMAL_DIG__", "17"},
      {"__LDBL_DENORM_MIN__", "4.9406564584124654e-324L"},
      {"__LDBL_DIG__", "15"},
      {"__LDBL_EPSILON__", "2.2204460492503131e-16L"},
      {"__LDBL_HAS_DENORM__", "1"},
      {"__LDBL_HAS_INFINITY__", "1"},
      {"__LDBL_HAS_QUIET_NAN__", "1"},
      {"__LDBL_MANT_DIG__", "53"},
      {"__LDBL_MAX_10_EXP__", "308"},
      {"__LDBL_MAX_EXP__", "1024"},
      {"__LDBL_MAX__", "1.7976931348623157e+308L"},
      {"__LDBL_MIN_10_EXP__", "(-307)"},
      {"__LDBL_MIN_EXP__", "(-1021)"},
      {"__LDBL_MIN__", "2.2250738585072014e-308L"},
      {"__LITTLE_ENDIAN__", "1"},
      {"__LLONG_WIDTH__", "64"},
      {"__LONG_LONG_MAX__", "9223372036854775807LL"},
      {"__LONG_MAX__", "9223372036854775807L"},
      {"__LONG_WIDTH__", "64"},
      {"__LP64__", "1"},
      {"__ORDER_BIG_ENDIAN__", "4321"},
      {"__ORDER_LITTLE_ENDIAN__", "1234"},
      {"__ORDER_PDP_ENDIAN__", "3412"},
      {"__POINTER_WIDTH__", "64"},
      {"__PTRDIFF_MAX__", "9223372036854775807L"},
      {"__PTRDIFF_WIDTH__", "64"},
      {"__SCHAR_MAX__", "127"},
      {"__SHRT_MAX__", "32767"},
      {"__SHRT_WIDTH__", "16"},
      {"__SIG_ATOMIC_WIDTH__", "32"},
      {"__SIZEOF_DOUBLE__", "8"},
      {"__SIZEOF_FLOAT__", "4"},
      {"__SIZEOF_INT__", "4"},
      {"__SIZEOF_LONG_DOUBLE__", "8"},
      {"__SIZEOF_LONG_LONG__", "8"},
      {"__SIZEOF_LONG__", "8"},
      {"__SIZEOF_POINTER__", "8"},
      {"__SIZEOF_PTRDIFF_T__", "8"},
      {"__SIZEOF_SHORT__", "2"},
      {"__SIZEOF_SIZE_T__", "8"},
      {"__SIZEOF_WCHAR_T__", "4"},
      {"__SIZEOF_WINT_T__", "4"},
      {"__SIZE_MAX__", "18446744073709551615UL"},
      {"__SIZE_WIDTH__", "64"},
      {"__UINT16_MAX__", "65535"},
      {"__UINT32_MAX__", "4294967295U"},
      {"__UINT64_MAX__", "18446744073709551615ULL"},
      {"__UINT8_MAX__", "255"},
      {"__UINTMAX_MAX__", "18446744073709551615UL"},
      {"__UINTMAX_WIDTH__", "64"},
      {"__UINTPTR_MAX__", "18446744073709551615UL"},
      {"__UINTPTR_WIDTH__", "64"},
      {"__UINT_FAST16_MAX__", "65535"},
      {"__UINT_FAST32_MAX__", "4294967295U"},
      {"__UINT_FAST64_MAX__", "18446744073709551615ULL"},
      {"__UINT_FAST8_MAX__", "255"},
      {"__UINT_LEAST16_MAX__", "65535"},
      {"__UINT_LEAST32_MAX__", "4294967295U"},
      {"__UINT_LEAST64_MAX__", "18446744073709551615ULL"},
      {"__UINT_LEAST8_MAX__", "255"},
      {"__WCHAR_MAX__", "2147483647"},
      {"__WCHAR_WIDTH__", "32"},
      {"__WINT_WIDTH__", "32"},
  };
  return macros;
}

bool names_clang_value_macro(const std::string& source) {
  static const auto& names = *new std::set<std::string>([] {
    std::set<std::string> n;
    for (const auto& macro : clang_value_macros()) n.insert(macro.first);
    return n;
  }());
  // Each name is `__` + capitals, digits and `_` + `__`: look at the identifiers that start so.
  for (std::size_t p = source.find("__"); p != std::string::npos; p = source.find("__", p + 2)) {
    if (p > 0 && (std::isalnum(static_cast<unsigned char>(source[p - 1])) || source[p - 1] == '_')) continue;
    std::size_t end = p;
    while (end < source.size() && (std::isalnum(static_cast<unsigned char>(source[end])) || source[end] == '_')) ++end;
    if (names.count(source.substr(p, end - p))) return true;
    p = end > p + 2 ? end - 2 : p;
  }
  return false;
}

}  // namespace metalcall::msl
