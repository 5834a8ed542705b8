// Self-calls of a function template that deduce another instantiation from an expression
// (`f(v + 0.5f)` in `template <class T> float f(T v)`), placed where `if constexpr` on the
// template's parameters chooses between instantiations: the compiler bounds that chain as it
// bounds `f<N - 1>()`, so it is no run-time recursion by itself (the rule "no recursion").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Whether the call at `call` of the function template named at `name_token` (its own name,
 * without template arguments, its body's braces at body_open..body_close, its template
 * parameters `own`) passes, for a parameter whose type names one of `own`, an expression
 * other than that parameter, and lies in a branch of an `if constexpr` whose condition names
 * one of `own`. Such a call deduces its instantiation from the expression's type, which only
 * the compiler knows: where a branch chain comes back to the same instantiation, that is
 * recursion after all, refused by the translation verifier (Clang's call graph over the
 * instantiations) on the CPU.
 */
bool deduces_in_a_constexpr_branch(const std::vector<Token>& t, std::size_t name_token, std::size_t body_open,
                                   std::size_t body_close, std::size_t call, const std::vector<std::string>& own);

}  // namespace metalcall::msl
