// Which functions a token stream defines and calls: the names a source (or the
// prelude) declares, and the MSL rule about callees — every callee is defined in the
// source or is part of the Metal standard library (recursion: recursion.hpp).
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** A function with a body: `name ( ... ) [qualifiers] {` (or a constructor's `: init {`). */
struct FunctionDefinition {
  std::string name;
  std::size_t name_token = 0;
  std::size_t body_open = 0, body_close = 0;
  bool is_constexpr = false;
};

/** What a token stream declares, by name. */
struct DeclaredNames {
  std::vector<FunctionDefinition> definitions;
  std::set<std::string> functions;   // defined with a body
  std::set<std::string> prototypes;  // `T name(params);` seen (at any scope)
  std::set<std::string> types;       // struct/class/union/enum, typedef, using X =, template parameters
  std::set<std::string> macros;      // #define NAME
  std::set<std::string> others;      // identifiers seen not followed by '(' (variables, constants, namespaces...)
  bool declares(const std::string& name) const {
    return functions.count(name) || types.count(name) || macros.count(name) || others.count(name);
  }
};

/** True for C++ and MSL keywords (and fundamental type names), which are never callees. */
bool is_keyword(const std::string& id);

/** The index of the token matching the bracket at `open` ('(' '[' '{'), or t.size(). */
std::size_t matching(const std::vector<Token>& t, std::size_t open);

/** The `>` closing the template's `<` at `open` (a `>>` closing it and the one around), skipping
    bracketed groups; t.size() at a `;` or `{` first, or at the end. */
std::size_t angle_closing(const std::vector<Token>& t, std::size_t open);

DeclaredNames declared_names(const std::vector<Token>& t);

/**
 * The call rules: each `name(` that is not a member call must name a function, type
 * or variable of the source or of the Metal standard library (`stdlib`); a function
 * declared but never defined is refused. Throws CompileError at the offending token.
 */
void check_calls(const std::vector<Token>& t, const std::string& source, const DeclaredNames& names,
                 const std::set<std::string>& stdlib);

}  // namespace metalcall::msl
