// MSL's built-in type names, which the translator renames to mtl_<name> so that
// they cannot clash with a target's own (NVRTC predefines float4, uint3, …).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** True for uint, half, float4, packed_float3, float4x4, … (not for C++ keywords). */
bool is_renamed_type(const std::string& identifier);

/** The name the prelude gives an MSL type: "mtl_" + name. */
inline std::string renamed_type(const std::string& identifier) { return "mtl_" + identifier; }

/** How the translation spells a user's name that clashes with the target's (Target::clashes_with_target). */
inline std::string user_name_in_target(const std::string& identifier) { return "mtl_user_" + identifier; }

/** The user's spelling of a name the translation may have renamed (user_name_in_target). */
inline std::string user_spelling(const std::string& name) {
  return name.rfind("mtl_user_", 0) == 0 ? name.substr(9) : name;
}

/**
 * Whether the `->` at t[arrow] starts a trailing return type (`[&](int p) -> uchar {`, `auto
 * f(int p) const -> short4`), whose type names are renamed like any other, rather than a member
 * access (`p->x`, `f()->m`): the `)` before it (past const, mutable, noexcept, constexpr) closes
 * the parameters of a lambda (`]` or `>` before its `(`) or of a function declared `auto`.
 */
bool is_trailing_return_arrow(const std::vector<Token>& t, std::size_t arrow);

/** Removes the mtl_ and mtl_user_ prefixes from compiler messages so users read their own names. */
std::string restore_type_names(const std::string& message);

}  // namespace metalcall::msl
