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
 *  parameter: checked mode makes every one a checked pointer. (Before 2026-12-03 one whose
 *  element type names the function's template parameters stayed plain where another
 *  declaration of the name took something else at its position, and `p[k]` was unchecked;
 *  such a call's argument now deduces T from a checked pointer, an array passed whole, or a
 *  checked `&x`, else the host compiler refuses it.) */
bool is_checked_thread_parameter(const std::vector<Token>& t, std::size_t i, std::size_t star);

/** For the calls of functions with a pointer parameter (any address space) whose element
 *  type names the function's own template parameters (`template <class T> void f(thread
 *  T* p, const device T* q)`): text to write before tokens, so that such an argument
 *  becomes `metal::mtl_rt::thread_arg(…)` (or `thread_arg_const`), a checked pointer that
 *  the parameter (then `mtl_checked<T>`) deduces T from, from an array, a checked pointer
 *  or a raw pointer alike. Only where every declaration of the name (overloads,
 *  specialisations) has such a parameter at that position (elsewhere the argument passes as
 *  it is: a non-const parameter deduces T from a checked pointer or an array passed whole). */
struct DeducedArguments {
  std::map<std::size_t, std::string> before;
};
DeducedArguments deduced_thread_arguments(const std::vector<Token>& t);

/** `thread T (&name)[N]` parameters (a private array by reference) whose extents name none
 *  of the function's own template parameters: by first token, the last token and the text
 *  that replaces them, `metal::mtl_checked_array<T, (N), 1>& name` (what a private array is). */
std::map<std::size_t, std::pair<std::size_t, std::string>> array_reference_parameters(const std::vector<Token>& t);

/** `thread T (&dst)[N]`, `threadgroup T (&t)[R][C]` and `constant vec<T, V> (&src)[N]` parameters
 *  (any number of extents) whose extent names the
 *  function's own template parameters, or whose element type has template arguments (SPIR-V
 *  Cross's spvArrayCopy…): their extent deduces only from a C array, so the parameter stays
 *  one, renamed (`params`: by first token, the last token and the text replacing them,
 *  `T (&mtl_raw_dst)[N]`), and the body starts with `auto& dst =
 *  metal::mtl_rt::checked_view(mtl_raw_dst);`, the checked array over it (`before`, text
 *  before tokens). Calls pass such an argument as `metal::mtl_rt::raw_array(…)`, a checked
 *  array's elements (where every declaration of the name has such a parameter there). */
struct DeducedArrayReferences {
  std::map<std::size_t, std::pair<std::size_t, std::string>> params;
  std::map<std::size_t, std::string> before;  // the body's first line
  std::map<std::size_t, std::string> calls;   // around the calls' arguments
};
DeducedArrayReferences deduced_array_references(const std::vector<Token>& t);

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
 *  and the text replacing them, `metal::mtl_checked<U> dst` (a template's U deduces from it);
 *  also pointer-to-array parameters, `threadgroup float (*t)[8]` (any space, any number of
 *  extents, none naming the function's template parameters): `metal::mtl_checked<
 *  metal::mtl_checked_array<float, (8), 0>> t`, a checked pointer to checked rows. */
std::map<std::size_t, std::pair<std::size_t, std::string>> array_pointer_parameters(const std::vector<Token>& t);

/** Pointer-to-array parameters whose element type or extents name the function's own template
 *  parameters (`template <int C> void f(thread float (*t)[C])`): by first token, the last token and
 *  the text replacing them, `metal::mtl_checked_rows<float[C], 1, false> t` (a checked pointer to
 *  checked rows of kind 1 whose raw row type deduces C), and around the calls' arguments
 *  `metal::mtl_rt::rows_arg<1, false>(…)` (where every declaration of the name has one there). */
struct DeducedRowPointers {
  std::map<std::size_t, std::pair<std::size_t, std::string>> params;
  std::map<std::size_t, std::string> calls;
};
DeducedRowPointers deduced_row_pointers(const std::vector<Token>& t);

}  // namespace metalcall::msl
