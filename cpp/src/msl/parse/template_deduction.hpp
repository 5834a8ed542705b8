// Template arguments of a kernel instantiation written without them, deduced from
// its parameter list as C++ deduces them (MLX's `template [[host_name("x")]] [[kernel]]
// void f(const device float* in [[buffer(0)]], constant P<2>* p [[buffer(1)]]);`).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The declared types of the parameters between the '(' at `open` and its ')': each
    parameter's tokens without [[attributes]], array extents and its name. */
std::vector<std::vector<std::size_t>> parameter_types(const std::vector<Token>& t, std::size_t open);

/**
 * Matches the template's parameter types (`pattern`, in which the template parameters
 * `names` stand for any tokens) against the instantiation's (`given`), token by token.
 * Returns false when they do not match; else `deduced` has one token list per name,
 * empty for a name no parameter type mentions.
 */
bool deduce_template_arguments(const std::vector<Token>& t, const std::vector<std::vector<std::size_t>>& pattern,
                               const std::vector<std::vector<std::size_t>>& given, const std::vector<std::string>& names,
                               std::vector<std::vector<std::size_t>>& deduced);

}  // namespace metalcall::msl
