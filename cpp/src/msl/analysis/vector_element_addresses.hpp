// The address of a vector's component is not MSL: Apple's compiler (clang) refuses `&v.x`, `&v[1]`,
// `&v.xy`, `&p->x` ("address of vector element requested") and a non-const reference bound to one
// (`thread float& r = v.x;`: "non-const reference cannot bind to vector element"), since a
// component is a lane of a register, not an object. The translated backends' vectors are structs
// whose components are members, so these compiled here. Part of the MSL rules (msl_rules.hpp,
// docs/msl-rules.md).
#pragma once

#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Throws a rule CompileError at the first `&` (or reference declaration) of `t` that takes a
 * vector component, where the declarations show the operand to be one: a variable, parameter,
 * array element, pointee or struct member declared with a vector type (`float4`, `packed_half3`,
 * `vec<T, N>`, an alias of one), or a matrix's column (`&m[0][1]`; the column `&m[0]` is a
 * vector, an object). An operand whose type the tokens do not show is let through.
 */
void check_vector_element_addresses(const std::vector<Token>& t, const std::string& source);

}  // namespace metalcall::msl
