// For CUDA: a struct temporary assigned whole (`out[i] = S{a, h, b, -h};`, or a function's struct
// result) goes through a named copy. NVVM stores such a temporary of a struct with half members byte by byte, and the byte
// store of a half computed in an f16 register lost its low byte (fuzz seed 1001 program 501:
// -0.5166015625h stored as -0.5); a named local is copied member by member.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Where `LHS = S{...};` is rewritten as `metal::mtl_rt::assign_whole(LHS, S{...});` (and so on). */
struct StructAssignments {
  std::map<std::size_t, std::string> before;  // the statement's first token: the call's opening
  std::map<std::size_t, std::string> replace;  // its `=`: the comma
  std::map<std::size_t, std::string> before_end;  // its `;`: the call's `)`
};

/**
 * The expression statements `LHS = S{...};`, `LHS = S(...);` and `LHS = make(...);` (make a
 * function of the source declared to return an S by value), with S a struct or class the source
 * defines and LHS
 * a plain designator (names, `[...]`, `.member`, `->member`), whose `=` and `;` no other rewrite
 * `touched`.
 */
StructAssignments struct_temporary_assignments(const std::vector<Token>& t,
                                               const std::function<bool(std::size_t)>& touched);

}  // namespace metalcall::msl
