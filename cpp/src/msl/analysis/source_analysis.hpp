// What the translator learns from the token stream before it writes anything:
// structs with swizzle-named members, the kernels' namespace-qualified names, and facts
// about declarations. (Which kernels run as fibers: sync_reachability.hpp.)
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl {

/**
 * A user struct may have members named like swizzles (`float2 xy;`). Every `.xy`
 * is rewritten to `.template mtl_swz<101>()` all the same; such structs get member
 * templates of that name returning the member, so both work. Returns the text to
 * insert before each such struct's closing brace, by the brace's token index.
 */
std::map<std::size_t, std::string> swizzle_member_accessors(const std::vector<Token>& t);

/** Names spelled like swizzles that the source declares or calls as functions (`float bar() const`,
    `template <int N> T bar()`, `xy(p)`): a name not after `.` or `->` followed by `(`. After a `.`,
    such a name followed by `<` is that member template (`f.bar<3>()`), not a swizzle compared. */
std::set<std::string> swizzle_named_functions(const std::vector<Token>& t);

/**
 * Whether the swizzle named by token `name` (after its `.` or `->`) is written: the postfix
 * chain it belongs to (`v.zyx.xy`, `o[i].xy`, `v.zy[k]`) is followed by an assignment, `++` or
 * `--`, or preceded by `++` or `--`. Every swizzle of such a chain is a reference into the vector
 * (`v.xy++`, `++v.xz` and `v.zyx.xy = a` did not compile, or wrote a copy, before 2026-12-05).
 */
bool swizzle_is_written(const std::vector<Token>& t, std::size_t name);

/** Where a kernel is declared: the namespaces around it. */
struct KernelScope {
  std::string call_name;  // `::a::b::k`, `::k` at global scope (not `k`: a kernel named `precise` or
                          // `fast` met metal's namespaces of those names, which `using namespace
                          // metal;` makes visible): the name to call it by
  std::string opens;      // `namespace a { inline namespace b { `: reopens them (unnamed ones left out)
  std::string closes;     // `} } `
};

/**
 * Per kernel: its scope. Its entry point is written inside the same namespaces, so that the
 * parameter types, template arguments and constants it names resolve as in the kernel's own
 * declaration (a `constant Params&` of the kernel's namespace; `using namespace` in it).
 */
std::vector<KernelScope> kernel_scopes(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels);

/**
 * Whether the declaration whose specifier is token `i` (`constant`) defines a class's
 * static member: its declarator `A<…>::name` ends in `::name` (MLX's out-of-class
 * `constant constexpr const float A<6, 3, 8>::table[8][8];`).
 */
bool defines_static_member(const std::vector<Token>& t, std::size_t i);

/**
 * The tokens [first, last) of the initializer (from its `=`) of the declaration whose
 * specifier is token `i`, up to its `,` or `;`; {0, 0} when it has none.
 */
std::pair<std::size_t, std::size_t> declaration_initializer(const std::vector<Token>& t, std::size_t i);

/**
 * The names declared as bit-field members (`uint flag : 1;`, `int a : 4, b : N + 1;`): no
 * reference binds one, so a rewrite that takes its operand by reference must leave such a name out.
 */
std::set<std::string> bit_field_names(const std::vector<Token>& t);

/** The functions that have a parameter of reference-to-pointer type (`const device T*& x`). */
std::set<std::string> pointer_reference_functions(const std::vector<Token>& t);

/**
 * Whether the body [open, close] passes `name` as a whole argument to one of `functions`
 * (pointer_reference_functions; MLX's adjust_matrix_offsets): such a kernel buffer parameter
 * cannot be `__restrict__` on CUDA (a reference to a pointer does not bind a restrict one).
 */
bool passed_to(const std::vector<Token>& t, std::size_t open, std::size_t close, const std::string& name,
               const std::set<std::string>& functions);

}  // namespace metalcall::msl
