// Calls of the Metal standard library's functions written `metal::NAME` where the target's
// compiler declares a global function of the same signature: NVRTC's implicit `all(bool)`
// and `any(bool)` made MSL's scalar `all(x > 0)` ambiguous beside metal::all(bool) (which
// `using namespace metal` brings in), in SPIRV-Cross's subgroup helpers among others.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Writes each unqualified call `NAME(` of `names` as `metal::NAME(` (not a member's `.NAME(`
 * or `->NAME(`, nor a qualified `X::NAME(`), unless the source declares its own NAME (a
 * `NAME(` after a type name or `>`: its overloads must stay reachable).
 */
void qualify_library_calls(std::vector<Token>& t, const std::set<std::string>& names);

}  // namespace metalcall::msl
