// MSL's rule that a pointer type names its address space (`device float*`, `thread half4*`):
// `float* p`, `(float*)out` and `using P = int*` are not MSL (Metal's compiler refuses them), and
// on the CPU they were host pointers that checked mode left raw, so a kernel could write through
// one past every bound (docs/security.md). Part of the MSL rules (msl_rules.hpp, docs/msl-rules.md).
#pragma once

#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Throws a rule CompileError at the first `*` of a pointer type whose pointee is a builtin scalar,
 * vector or matrix type (or `void`), a struct, class, union or enum the source declares, or an
 * alias of one made with `typedef`/`using` (`using P = S*;` too: a pointer to P needs a space),
 * with no address space among its qualifiers. A template parameter's pointer is not read here (it
 * may carry its space: `T*` with T = `device float`; checked mode makes it a checked pointer).
 */
void check_pointer_spaces(const std::vector<Token>& t, const std::string& source);

}  // namespace metalcall::msl
