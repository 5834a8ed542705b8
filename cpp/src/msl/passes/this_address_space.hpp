// Member functions qualified by the address space of `this` (`T() threadgroup = default;`,
// `float get() const device { … }`, `T& operator=(const thread T&) device`): MSL overloads
// on where the object lives; the CPU and CUDA targets keep every object in one address
// space, so the qualifier is dropped and overloads that then collide are merged.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Whether token `i`, an address-space word, qualifies the `this` of a member function: it
 * follows the parameter list's ')' (const, volatile or other address-space words between),
 * and the declaration goes on to its body, initializers, `= default`, ';' or a trailing return.
 */
bool qualifies_this(const std::vector<Token>& t, std::size_t i);

/** Whether the function whose parameter list closes at token `close` is a constructor or destructor. */
bool declares_constructor(const std::vector<Token>& t, std::size_t close);

/**
 * The declarations to leave out: member functions that differ from an earlier one only by
 * the address space of `this` (`complex_t() thread`, `complex_t() threadgroup`, as MLX
 * writes; the return type's address space is ignored too), and class template
 * specializations that differ only in address spaces. Token ranges [first, last]. Two such
 * overloads with different bodies are a CompileError (merging them would change results).
 */
std::vector<std::pair<std::size_t, std::size_t>> space_qualified_duplicates(const std::vector<Token>& t,
                                                                            const std::string& source);

}  // namespace metalcall::msl
