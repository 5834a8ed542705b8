// The names of the Metal standard library that a kernel may use: what our prelude
// (cpp/src/msl/prelude, the `metal_stdlib` of the translating backends) declares,
// read from its own text, plus the few MSL names it does not implement yet.
#pragma once

#include <set>
#include <string>

namespace metalcall::msl {

/** The standard library's names (computed once, from the embedded prelude text). */
const std::set<std::string>& stdlib_names();

}  // namespace metalcall::msl
