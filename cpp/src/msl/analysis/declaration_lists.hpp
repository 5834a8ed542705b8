// The shapes of declarations' lists the recursion rule reads (recursion.cpp): the names in
// a template's parameter list or a lambda's, and how many parameters a function takes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

// The identifiers of the comma-separated pieces of [from, to) at bracket depth 0: each
// piece's last identifier before a `=` (a template parameter's name, a lambda parameter's).
std::vector<std::string> piece_names(const std::vector<Token>& t, std::size_t from, std::size_t to);

// `template <class T, int N>` before the declaration whose name is at `name`: T, N.
std::vector<std::string> template_parameters(const std::vector<Token>& t, std::size_t name);

// The comma-separated pieces between the parentheses at `open` and its match: their number,
// and how many hold a `=` (a default) or are `...`; `()` and `(void)` have none.
struct ListShape {
  std::size_t pieces = 0, defaulted = 0;
  bool variadic = false;
};
ListShape list_shape(const std::vector<Token>& t, std::size_t open);

}  // namespace metalcall::msl
