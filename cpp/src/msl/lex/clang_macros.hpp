// The macros Clang predefines for every target (__FLT16_MAX__, __INT_MAX__, __SIZEOF_LONG__,
// __CHAR_BIT__ …), which MSL code may name because Apple's compiler is Clang. The translated
// backends preprocess with -undef and compile with NVRTC or a host compiler of other values,
// so metalcall supplies them, the same on every backend.
#pragma once

#include <string>

#include "msl/lex/preprocessing.hpp"

namespace metalcall::msl {

/**
 * Clang's predefined value macros as Clang 16 defines them for a 64-bit Apple target
 * (arm64-apple-macos; Apple's GPU target air64 is LP64 and little-endian too, with IEEE half,
 * float and double), in MSL spelling: a `F16` literal (_Float16, MSL's half) is written `h`.
 * The floating-point, integer-limit, width and size macros; none that names a type or a feature.
 */
const Macros& clang_value_macros();

/** Whether `source` names one of clang_value_macros() (then it needs the preprocessor). */
bool names_clang_value_macro(const std::string& source);

}  // namespace metalcall::msl
