// The names NVRTC declares in the global namespace of every CUDA translation (its math, half,
// atomic, texture and vector functions, vector types of other widths, built-in variables, the
// runtime's types, enumerators and macros): a user's struct, function or constant of such a name
// clashes ("overloaded function y0 is not a type name"), so the CUDA target renames the user's
// (Target::clashes_with_target).
#pragma once

#include <set>
#include <string>

namespace metalcall::msl {

/** NVRTC's (CUDA 13's) global names, MSL's own type names left out (the translator renames those). */
const std::set<std::string>& nvrtc_global_names();

}  // namespace metalcall::msl
