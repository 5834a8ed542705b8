// How the barrier-region planner (barrier_regions.cpp) reads a kernel body's tokens: token tests,
// the builtins that differ between threads, the functions a uniform expression may call, the
// statements it does not follow, declarations (`T a[N] = x, *p;`), and the source's functions
// that take a non-const reference (which may change a name passed to them).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl::regions {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

bool punct(const std::vector<Token>& t, std::size_t i, const char* s);
bool one_of(const Token& tok, std::initializer_list<const char*> texts);
/** `=` or a compound assignment. */
bool assignment(const Token& tok);
/** Builtins whose value differs between the threads of a group (recomputed in each region). */
bool per_thread(Builtin b);
/** Functions a uniform expression may call: conversions, vector constructors and pure functions. */
bool pure_callee(const std::string& name);
/** A scalar or vector type's name (`float`, `uint2`, `half4` ...): a value nothing can write but by its name. */
bool scalar_or_vector_type(const std::string& name);
/** Statements the planner does not follow: their kernels keep the fibers. */
bool refused_start(const Token& tok);
bool statement_keyword(const Token& tok);
/** The last token of `name.member[i].x` whose name is token k (k when it has none). */
std::size_t postfix_end(const std::vector<Token>& t, std::size_t k);
/** The `>` closing the template argument list that opens at `open`, or kNone. */
std::size_t angle_end(const std::vector<Token>& t, std::size_t open, std::size_t last);

struct Declarator {
  std::size_t name = 0;
  std::size_t suffix_first = 0, suffix_last = 0;  // its `[N]...` tokens
  std::size_t init_first = 0, init_last = 0;      // its initializer's tokens (after `=`, or the braces); none: equal
  bool indirect = false;                          // `*` or `&` of its own (`float a, *p;`)
};

struct Declaration {
  std::size_t type_first = 0, type_last = 0;  // specifiers and type, [first, last)
  std::vector<Declarator> declarators;
  bool is_const = false, is_constexpr = false, is_static = false, is_threadgroup = false, is_volatile = false,
       is_auto = false, indirect = false;
};

/**
 * `T name [N] = init, name2 ... ;` over [first, last] (last: the `;`), or nullopt when the
 * statement does not have that shape (an expression statement, or a declaration the planner
 * does not follow).
 */
std::optional<Declaration> parse_declaration(const std::vector<Token>& t, std::size_t first, std::size_t last);

/**
 * The functions of the source with a parameter of non-const reference type (`thread uint& x`):
 * a name passed alone to one of them may be changed by it.
 */
std::set<std::string> mutable_reference_functions(const std::vector<Token>& t);

/** `threadgroup_barrier(...);` (or metal::threadgroup_barrier) over [first, last]: its name's token, or kNone. */
std::size_t barrier_statement(const std::vector<Token>& t, std::size_t first, std::size_t last);
/** A barrier's arguments (name: its name's token) name only mem_flags and its enumerators. */
bool plain_barrier_arguments(const std::vector<Token>& t, std::size_t name);
bool holds_barrier(const std::vector<Token>& t, std::size_t first, std::size_t last);
/** break or continue in [first, last] that would leave the enclosing group loop. */
bool leaves(const std::vector<Token>& t, std::size_t first, std::size_t last, bool in_switch = false);
/** A `return` in [first, last] inside a loop nested there. */
bool return_in_loop(const std::vector<Token>& t, std::size_t first, std::size_t last);

/** Whether token k (a use of a name) has its address taken: a unary `&` before it. */
bool address_taken(const std::vector<Token>& t, std::size_t k);
/** A declaration nothing can write but by its name: a scalar or vector, else a const object or one in constant memory. */
bool unwritable_but_by_name(const std::vector<Token>& t, const Declaration& d);
/** An expression statement [first, last] that the planner can tell from a declaration. */
bool expression_statement(const std::vector<Token>& t, std::size_t first, std::size_t last);
/**
 * The use of a name at k (to e, its members and elements) in a body opening at body_open may bind
 * a non-const reference to it: `T& r = name;`, or an argument alone in a call of one of
 * `mutable_references` (or of an unknown callee).
 */
bool binds_reference(const std::vector<Token>& t, std::size_t body_open, const std::set<std::string>& mutable_references,
                     std::size_t k, std::size_t e);

}  // namespace metalcall::msl::regions
