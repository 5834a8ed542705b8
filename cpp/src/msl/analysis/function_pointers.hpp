// The rule "no function pointers" beyond the spelled-out declarator (msl_rules.cpp refuses
// `T (*f)(…)` variables, parameters and casts): MSL has function pointers only for [[visible]]
// functions through function tables (spec §5.1, MSL 2.3+), which metalcall does not offer,
// so no value of function pointer type may exist at run time. Compile-time uses stay: a
// function pointer template parameter and its argument (ggml's `void (*deq)(…)`, `f<twice>`),
// an alias naming such a type for template parameters (MLX's RadixFunc), `decltype(f<T>)` in
// an explicit instantiation (MLX's instantiate_kernel).
#pragma once

#include <string>
#include <vector>

#include "msl/analysis/call_graph.hpp"
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Throws a rule CompileError at the first way of making a run-time function pointer that the
 * declarator rule does not see: `&f` of a function (members included), a function used as a
 * value (`auto p = f;`, `call(f)`, template-deduced), `+[]{…}` or `*[]{…}` (a lambda converted
 * to a pointer), `decltype(f)` (a cast's function type), an alias of a function or function
 * pointer type used outside template parameters, pointers to members (`.*`, `->*`, `S::*`).
 */
void check_function_pointers(const std::vector<Token>& t, const std::string& source, const DeclaredNames& names);

}  // namespace metalcall::msl
