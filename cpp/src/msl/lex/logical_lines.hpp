// C++'s translation phases 1 to 3 over a source, as a preprocessor sees them, so that the
// preprocessing policy reads exactly the directives the host preprocessor will run: line
// ends (\r\n, and a lone \r as clang takes it) become \n, line splices are joined (also
// inside directive names: `#inc\<newline>lude`), comments become one space. The lines
// keep their numbers: each logical line is followed by as many empty lines as it joined.
#pragma once

#include <string>

namespace metalcall::msl {

/**
 * The source after phases 1 to 3: line `L` of the result is the logical line that starts on
 * the source's line `L` (empty where an earlier line took it). String, character and raw
 * string literals are kept as written (a raw string's splices too); a literal not closed on
 * its line ends there, as preprocessors read it.
 */
std::string logical_lines(const std::string& source);

}  // namespace metalcall::msl
