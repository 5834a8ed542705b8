// Checked mode: unions whose members' types the tokens do not show (a template parameter, an
// alias of one) checked by the host compiler at instantiation.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** For each union body of `t` (named, template or anonymous): text written before its closing
 *  '}', one `static_assert` per data member that its type holds no pointer (a checked pointer,
 *  a plain one, or a class, array or template instance holding one; mtl_rt::holds_bounds). The
 *  front end refuses the unions whose pointer members the tokens show; `template <class T>
 *  union U { T p; ulong u[4]; }` instantiated with `device float*` (a checked pointer) wrote
 *  its base and bounds from `u` before 2026-12-03. */
std::map<std::size_t, std::string> union_member_checks(const std::vector<Token>& t);

}  // namespace metalcall::msl
