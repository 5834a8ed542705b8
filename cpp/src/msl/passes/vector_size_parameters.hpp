// Function templates that deduce a vector's size into a parameter of another integer type than
// int: `template <typename T, uint N> T total(vec<T, N> v)` (SPIRV-Cross's array copies declare
// `uint V`; others ushort or size_t). Apple's vec<T, N> is an ext_vector alias, whose size
// deduces into any integer type; the prelude's vector takes an int, and C++ refuses to deduce
// an int into a uint parameter. Such a parameter is declared int in the translation: vector
// sizes are 2 to 4, so its value and every use of it stay the same.
#pragma once

#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Re-declares as `int` each non-type template parameter of a function template whose
 *  parameter list or return type names it as the size of a `vec<T, N>`, and of a class
 *  template's partial specialization whose arguments do (`struct S<vec<float, N>>`). */
void int_vector_size_parameters(std::vector<Token>& t);

}  // namespace metalcall::msl
