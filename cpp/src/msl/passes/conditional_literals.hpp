// Conditionals the CUDA target rewrites, since CUDA's __half converts both ways with int and
// float: `c ? h : 0` (an integer literal branch) and `c ? h : f` (branches of mixed types).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * The indices of unsuffixed integer literal tokens that are the whole second or third
 * operand of a `?:` whose other operand is not a number. The CUDA translator writes them
 * as `metal::mtl_rt::int_literal{N}` (metal_half_cuda.h), which takes the other
 * operand's type: `c ? h : 0` is half, as MSL's usual arithmetic conversions make it.
 */
std::set<std::size_t> conditional_int_literals(const std::vector<Token>& t);

/** Where the CUDA translator rewrites a conditional's branches (conditional_arms). */
struct ConditionalArms {
  std::map<std::size_t, std::string> before;  // text to write before token i
  std::set<std::size_t> colons;               // the `:` tokens written as `), (`
};

/**
 * `c ? X : Y` written `c ? METALCALL_COND_ARMS((X), (Y))` (metal_half_cuda.h): the macro
 * casts each branch to `decltype((branch))` (itself, nothing changes) unless one is half or
 * bfloat and the other float, double, an integer or the other 16-bit type, where MSL's usual
 * arithmetic conversions pick the type (float; double; the 16-bit type) and CUDA finds the
 * conditional ambiguous. Left as written: a GNU `c ?: y`, branches with braces other than a
 * braced temporary after a type's name (`F{a, b}(x)`: fuzz seed 9402), lambdas, attributes, `throw`, a bit-field member (no reference binds it), preprocessor
 * lines or lines that step back (a macro
 * spread over lines), a third branch that may run into a template's closing `>`, and more
 * than 4 nested conditionals in the branches (the macro copies its arguments three times).
 */
ConditionalArms conditional_arms(const std::vector<Token>& t);

}  // namespace metalcall::msl
