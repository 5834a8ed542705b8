// The rule "no recursion" (MSL has no recursive calls outside [[visible]] function tables):
// a call cycle among the source's functions through any spelling of a call that names its
// callee — plain, qualified (`R::f(…)`, `::f(…)`), through `this` (`this->f(…)`,
// `(*this).f(…)`), a template of the caller's own arguments (`f<T>(…)`) — and the two
// spellings that name no function: a function object calling itself (`(*this)(…)`,
// `operator()(…)`, `R{}(…)` in R's operator()) and a lambda applied to itself
// (`self(self, n - 1)`). A call through an object whose class is not known here (`a.f()`)
// or another template instantiation (`f<N - 1>()`, which the compiler bounds) adds no edge.
#pragma once

#include <string>
#include <vector>

#include "msl/analysis/call_graph.hpp"
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Throws a rule CompileError ("no recursion") at the call that closes a cycle. */
void check_recursion(const std::vector<Token>& t, const std::string& source, const DeclaredNames& names);

}  // namespace metalcall::msl
