// The names of the Metal standard library that a kernel may use: what our prelude
// (cpp/src/msl/prelude, the `metal_stdlib` of the translating backends) declares,
// read from its own text at build time (prelude_scan.hpp), plus the few MSL names it does not
// implement yet.
#pragma once

#include <set>
#include <string>

namespace metalcall::msl {

/** The standard library's names (made once per process from the build's table). */
const std::set<std::string>& stdlib_names();

/** Every identifier the prelude's text spells, declared or used (log1pf, __half2float, log1p). */
const std::set<std::string>& prelude_identifiers();

/** What the prelude declares itself: its functions (transpose, abs, as_type ...), types and macros. */
const std::set<std::string>& prelude_functions();

/** The macros the prelude defines (public ones like INFINITY, and its own machinery). */
const std::set<std::string>& prelude_macro_names();

/** The reserved names (`__x`, `_X`) the prelude declares itself: Apple's public-internal
    names that MSL code uses (`__metal_fabs`, `__HAVE_BFLOAT__`). */
const std::set<std::string>& prelude_reserved_names();

}  // namespace metalcall::msl
