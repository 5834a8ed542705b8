// Spelling helpers the translator's files share: identifier characters, swizzles
// (`.xy`, `.bgra`) and the C++ text of a declared type.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

inline bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/** True for a swizzle such as "xy" or "bgra"; `indices` gets its component numbers. */
bool is_swizzle(const std::string& s, std::vector<int>* indices);

/** The prelude's number for swizzle `name`: "1" then the components (".zyx" → 1210), "2" first for
    the rgba spelling (".bgr" → 2210), so that a struct's members `xyz` and `rgb` stay apart. */
std::string swizzle_code(const std::string& name);

/** Stands for a '>' in token lists that the lexer merged into a `>>` (the end of
    `typename C = Less<T>>`, a default argument). type_text writes it as '>'. */
constexpr std::size_t kClosingAngle = static_cast<std::size_t>(-1);

/** A template kernel instantiation's arguments: parameter name → argument tokens. */
using TemplateArguments = std::vector<std::pair<std::string, std::vector<std::size_t>>>;

/**
 * The C++ text of the type made of `tokens` (indices into `t`): address spaces
 * dropped (`constant` becomes const), MSL type names renamed, template parameters
 * replaced by `arguments`. `element_only` drops pointers, references and cv-qualifiers.
 */
std::string type_text(const std::vector<Token>& t, const std::vector<std::size_t>& tokens, bool element_only,
                      const TemplateArguments* arguments = nullptr);

}  // namespace metalcall::msl
