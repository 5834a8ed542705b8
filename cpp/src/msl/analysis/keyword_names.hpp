// MSL's own keywords as names: the address spaces (`device`, `constant`, `thread`, `threadgroup`,
// `threadgroup_imageblock`, `ray_data`, `object_data`) and the function qualifiers (`kernel`,
// `vertex`, `fragment`) are keywords of Metal's compiler, so `int kernel = 3;` is refused there;
// the host compiler and NVRTC take it. Part of the MSL rules (msl_rules.hpp, docs/msl-rules.md).
#pragma once

#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Whether `id` is one of the keywords above. */
bool is_msl_keyword(const std::string& id);

/**
 * Throws a rule CompileError at the first of these keywords that `t` uses as a name: a variable,
 * parameter, function, member, type, enumerator or label (anything but a qualifier before a type,
 * after a member function's parameter list, or `coherent(device)`).
 */
void check_keyword_names(const std::vector<Token>& t, const std::string& source);

}  // namespace metalcall::msl
