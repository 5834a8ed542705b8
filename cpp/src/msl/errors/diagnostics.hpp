// Compiler diagnostics in the user's terms: the backends that compile translated
// MSL (g++/clang, NVRTC) parse their compiler's log into Diagnostics, and this
// picks the error to report and builds the CompileError at the user's line and
// column (an error inside the prelude is reported where the user's code led to it).
#pragma once

#include <string>
#include <vector>

#include "metalcall/errors.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::msl {

struct Diagnostic {
  std::string file;
  int line = 0, column = 0;  // column 0: unknown
  std::string message;
  bool error = false;  // error or fatal error (not a warning, note or context line)
};

/**
 * Reads one line of a clang-style log, "file:line:column: severity: message" (severity
 * "error", "fatal error", "warning" or "note"; "file:line: severity: message" gives
 * column 0), into `d`. False, leaving `d` alone, for any other line. Without std::regex:
 * libstdc++'s recurses per character and overflows the stack on long lines.
 */
bool parse_clang_style_line(const std::string& line, Diagnostic& d);

/** The file name of the code generated for a kernel named at `line`:`column` of the user's source. */
std::string entry_point_file_name(int line, int column);

/** True for the file name the translated code gives the user's source. */
bool is_user_file(const std::string& file);

/**
 * The CompileError for `diagnostics` of a compile of translated `source`; `map` maps
 * the compiler's columns back (null: they are the user's already). `log` is the full
 * log to attach; `what_failed` starts the message when no line is known.
 */
CompileError compile_error(const std::vector<Diagnostic>& diagnostics, const SourceMap* map,
                           const std::string& source, const std::string& log, const std::string& what_failed);

}  // namespace metalcall::msl
