// Checked mode's analysis of the token stream, for the translator: the private
// arrays and struct array members to bounds-check, and `&param` of kernels'
// reference parameters (metal_checked.h has what they become).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl {

/** `T name[N]…;` or `T name[N] = {…};` in a function body or a struct, or (with `constant`,
 *  `constexpr` or `static` before the type) anywhere, program scope included. */
struct CheckedArray {
  std::size_t begin = 0, name = 0, end = 0;  // type tokens [begin, name), `;` or `=` at end
  std::vector<std::size_t> type;             // type tokens (without `thread`)
  std::vector<std::string> extents;          // an empty one (`[]`) counted from the initializer
  int kind = 1;  // mtl_checked_array's Kind: 1 private array, 2 struct member, 3 constant array
  // The initializer's braces to write twice (the checked array is a struct around the
  // elements), or, for `= "text"`, the first and last token to wrap in braces.
  std::vector<std::size_t> doubled_braces;
  std::size_t wrap_first = 0, wrap_last = 0;
  std::size_t after = 0;  // the `;` or `,` after the initializer
  // `float a[4], b[4];`: what each ',' becomes (`; ` and the type: one statement each).
  std::map<std::size_t, std::string> split_commas;
  std::string refused;  // why checked mode refuses it (a CompileError), or empty
  // `constant constexpr const float S<6>::table[8];` (a static member defined outside its
  // class): the `S<6>::` written before the name.
  std::string qualifier;
  // Constant data whose type has no `const`: written `const T` (mtl_checked_array<const T, …>).
  bool const_element = false;
  // An array of device, constant or threadgroup pointers (`const device T* xv[n]`, MLX's and
  // ggml's): the '*' (the pointer type is [begin, pointer_star)), whether the pointers are const
  // (`* const p[2]`), and the element text the translator writes, `metal::mtl_checked<const T>`.
  std::size_t pointer_star = 0;
  bool const_pointer = false;
  std::string element;
};

/** The arrays to check, by their first token. */
std::map<std::size_t, CheckedArray> find_checked_arrays(const std::vector<Token>& t);

/** For each `&s` (by the '&') of a kernel's `constant/device T& s` in its body: the checked pointer's text. */
std::map<std::size_t, std::string> find_checked_addresses(const std::vector<Token>& t,
                                                           const std::vector<ParsedKernel>& kernels);

/** True when the pointer type at tokens [i, star] is in the pattern of a class template's
 *  specialisation (`template <class T> struct elem<device T*>`): checked mode leaves it a plain
 *  pointer (pointer_specialization_twins adds the checked pointer's twin). */
bool in_specialization_pattern(const std::vector<Token>& t, std::size_t i, std::size_t star);

/** True when the pointer type at tokens [i, star] is a template's argument, not a cast's
 *  (`W<device float*>`, `f<thread float*>(t, i)`, `metal::array<const device T*, N>`): a checked
 *  pointer, `thread` ones too, unless in a specialisation's pattern. */
bool is_template_argument(const std::vector<Token>& t, std::size_t i, std::size_t star);

/** The extent texts of `[a][b]…` from token j (a '['); j moves past the last ']'. */
std::vector<std::string> array_extents(const std::vector<Token>& t, std::size_t& j);

/** In an initializer, the '>' closing the '<' at lt (`vec<int, 2>(1, 2)`: its ',' separates no
 *  declarators), before limit and the statement's end; else lt itself (a comparison). */
std::size_t initializer_template_close(const std::vector<Token>& t, std::size_t lt, std::size_t limit);

/** True when the '{' at i opens a namespace (or an extern "C" block). */
bool opens_namespace(const std::vector<Token>& t, std::size_t i);

}  // namespace metalcall::msl
