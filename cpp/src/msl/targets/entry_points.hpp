// The part of each kernel's entry point that every target shares: the layout
// table, the statements that read the arguments from the launch struct, the
// builtins and the call. The Target wraps them in its own exported function.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"
#include "msl/targets/target.hpp"

namespace metalcall::msl {

/**
 * Writes kernel number `index`'s parameter block (CUDA only), its layout table
 * (sizeof, alignof and binding of each parameter, and on CUDA the fields' offsets,
 * read back by the runtime) and its entry point, through `target`.
 */
void emit_entry_point(std::ostream& o, const std::vector<Token>& t, const ParsedKernel& k, std::size_t index,
                      const std::string& qualified_name, bool uses_fibers, bool checked, const Target& target);

}  // namespace metalcall::msl
