// Translation phases 1 and 2 as the C++ compilers do them: line ends (`\n`, `\r\n` and a
// lone `\r` all end a line, as clang and g++ take them) and line splices (a backslash, then
// optional blanks, then a line end: the two lines are one, anywhere outside a raw string).
// The tokenizer reads the spliced text and reports positions in the user's source.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace metalcall::msl {

/** The source as phase 2 leaves it: splices removed, every line end a single '\n'. */
struct SplicedSource {
  std::string text;
  std::vector<std::size_t> at;  // at[k]: the offset of text[k] in the source; at[text.size()] == source size
};

SplicedSource splice_lines(const std::string& source);

/** The length of the line end at `source[i]` (2 for "\r\n", 1 for '\n' or '\r'), or 0. */
std::size_t line_end_length(const std::string& source, std::size_t i);

/** The offsets where the source's physical lines start (line 1 at offset 0). */
std::vector<std::size_t> line_starts(const std::string& source);

/** The text of physical line `line` (1-based) without its line end; empty past the end. */
std::string physical_line(const std::string& source, int line);

}  // namespace metalcall::msl
