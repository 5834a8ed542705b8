// MSL's built-in type names, which the translator renames to mtl_<name> so that
// they cannot clash with a target's own (NVRTC predefines float4, uint3, …).
#pragma once

#include <string>

namespace metalcall::msl {

/** True for uint, half, float4, packed_float3, float4x4, … (not for C++ keywords). */
bool is_renamed_type(const std::string& identifier);

/** The name the prelude gives an MSL type: "mtl_" + name. */
inline std::string renamed_type(const std::string& identifier) { return "mtl_" + identifier; }

/** Removes the mtl_ prefix from compiler messages so users read their own names. */
std::string restore_type_names(const std::string& message);

}  // namespace metalcall::msl
