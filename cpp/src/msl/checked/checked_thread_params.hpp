// Checked mode's `thread T*` parameters of helper functions (they become checked
// pointers) and the calls that pass arguments to the ones a template deduces through.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The names of the function templates the source declares (`template <…> R name(…)`). */
std::set<std::string> function_template_names(const std::vector<Token>& t);

/** True when the `thread` pointer type at tokens [i, star] is a function's (or a lambda's)
 *  parameter that checked mode makes a checked pointer: one whose element type names the
 *  function's own template parameters only if its first token is in `deduced_checked`
 *  (DeducedArguments::thread_parameters: its calls pass checked pointers). */
bool is_checked_thread_parameter(const std::vector<Token>& t, std::size_t i, std::size_t star,
                                 const std::set<std::size_t>& deduced_checked);

/** For the calls of functions with a pointer parameter (any address space) whose element
 *  type names the function's own template parameters (`template <class T> void f(thread
 *  T* p, const device T* q)`): text to write before tokens, so that such an argument
 *  becomes `metal::mtl_rt::thread_arg(…)` (or `thread_arg_const`), a checked pointer that
 *  the parameter (then `mtl_checked<T>`) deduces T from, from an array, a checked pointer
 *  or a raw pointer (`&x`) alike. Only where every declaration of the name (overloads,
 *  specialisations) has such a parameter at that position; the `thread` parameters so
 *  served are listed (the others stay plain pointers, which deduce from `&x`). */
struct DeducedArguments {
  std::map<std::size_t, std::string> before;
  std::set<std::size_t> thread_parameters;  // first tokens
};
DeducedArguments deduced_thread_arguments(const std::vector<Token>& t);

/** `thread T (&name)[N]` parameters (a private array by reference) whose extents name none
 *  of the function's own template parameters: by first token, the last token and the text
 *  that replaces them, `metal::mtl_checked_array<T, (N), 1>& name` (what a private array is). */
std::map<std::size_t, std::pair<std::size_t, std::string>> array_reference_parameters(const std::vector<Token>& t);

/** `thread auto* p` parameters (any address space) of generic lambdas, which a checked
 *  pointer cannot spell (`mtl_checked<auto>`): by first token, the name's token and the text
 *  replacing them (`auto&& mtl_arg_p`), and text before tokens (the body's first: `auto p =
 *  metal::mtl_rt::thread_arg(mtl_arg_p);`, a checked pointer from an array, a checked or a raw pointer). */
struct AutoPointerParameters {
  std::map<std::size_t, std::pair<std::size_t, std::string>> params;
  std::map<std::size_t, std::string> before;
};
AutoPointerParameters auto_pointer_parameters(const std::vector<Token>& t);

/** `thread U dst[N]` parameters (one extent: a pointer in C++): by first token, the last token
 *  and the text replacing them, `metal::mtl_checked<U> dst` (a template's U deduces from it). */
std::map<std::size_t, std::pair<std::size_t, std::string>> array_pointer_parameters(const std::vector<Token>& t);

}  // namespace metalcall::msl
