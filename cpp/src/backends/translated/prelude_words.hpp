// The words of C++ text as the prelude-part selection reads them (prelude_parts.cpp, and the
// build's scan of the prelude, prelude_parts_scan.cpp).
#pragma once

#include <string_view>
#include <vector>

namespace metalcall::translated {

bool word_char(char c);
bool word_start(char c);
bool is_identifier(std::string_view t);

/**
 * The words of C++ text (identifiers and numbers, as runs of word characters), punctuation one
 * character a token, comments and literals left out. Preprocessor directives come whole (with
 * their continuation lines) as one token starting with '#'.
 */
std::vector<std::string_view> tokens(std::string_view s);

}  // namespace metalcall::translated
