// Compiler diagnostics in the user's terms: parsing a clang-style log line, and picking
// the error to report (see diagnostics.hpp).
#include "msl/errors/diagnostics.hpp"

#include <cstring>
#include <utility>

#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The number that ends text[0, end) right after a ':' ("...:12"): its value, and where
// that ':' is.
bool trailing_number(const std::string& text, std::size_t end, int& number, std::size_t& colon) {
  std::size_t start = end;
  while (start > 0 && is_digit(text[start - 1])) --start;
  if (start == end || end - start > 9 || start == 0 || text[start - 1] != ':') return false;
  number = std::stoi(text.substr(start, end - start));
  colon = start - 1;
  return true;
}

}  // namespace

bool parse_clang_style_line(const std::string& line, Diagnostic& d) {
  static const char* const severities[] = {"error: ", "fatal error: ", "warning: ", "note: "};
  // The first ": " that follows a position and precedes a severity: the file name may
  // itself hold ':' (C:\...), and the message may quote another diagnostic.
  for (std::size_t p = line.find(": "); p != std::string::npos; p = line.find(": ", p + 1)) {
    const char* severity = nullptr;
    for (const char* s : severities)
      if (line.compare(p + 2, std::strlen(s), s) == 0) severity = s;
    if (!severity) continue;
    int first = 0, second = 0;
    std::size_t colon = 0, colon_before = 0;
    if (!trailing_number(line, p, second, colon)) continue;
    Diagnostic parsed;
    if (trailing_number(line, colon, first, colon_before)) {
      parsed.file = line.substr(0, colon_before);
      parsed.line = first;
      parsed.column = second;
    } else {
      parsed.file = line.substr(0, colon);
      parsed.line = second;
    }
    parsed.error = severity[0] == 'e' || severity[0] == 'f';
    parsed.message = line.substr(p + 2 + std::strlen(severity));
    if (!parsed.message.empty() && parsed.message.back() == '\r') parsed.message.pop_back();
    d = std::move(parsed);
    return true;
  }
  return false;
}

namespace {
constexpr char kEntryPointPrefix[] = "metalcall-entry-point-of-";
}  // namespace

std::string entry_point_file_name(int line, int column) {
  return kEntryPointPrefix + std::to_string(line) + "-" + std::to_string(column);
}

namespace {

// The user's line and column an entry point's file name holds; false for other files.
bool entry_point_position(const std::string& file, int& line, int& column) {
  const std::size_t at = file.rfind(kEntryPointPrefix);
  if (at == std::string::npos) return false;
  const std::string rest = file.substr(at + sizeof kEntryPointPrefix - 1);
  const std::size_t dash = rest.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 >= rest.size() || rest.size() > 20) return false;
  for (std::size_t i = 0; i < rest.size(); ++i)
    if (i != dash && !is_digit(rest[i])) return false;
  line = std::stoi(rest.substr(0, dash));
  column = std::stoi(rest.substr(dash + 1));
  return line > 0 && column > 0;
}

}  // namespace

bool is_user_file(const std::string& file) {
  const std::string name = kSourceName;
  return file == name ||
         (file.size() > name.size() && file.compare(file.size() - name.size() - 1, std::string::npos, "/" + name) == 0);
}

CompileError compile_error(const std::vector<Diagnostic>& given, const SourceMap* map,
                           const std::string& source, const std::string& log, const std::string& what_failed) {
  // An error in a kernel's generated entry point is reported at the kernel's name in the
  // user's source; its column is the user's already (marked negative until then).
  std::vector<Diagnostic> diagnostics(given);
  for (auto& d : diagnostics) {
    int line = 0, column = 0;
    if (!entry_point_position(d.file, line, column)) continue;
    d.file = kSourceName;
    d.line = line;
    d.column = -column;
  }
  const Diagnostic* primary = nullptr;
  const Diagnostic* first_error = nullptr;
  Diagnostic located;
  for (const auto& d : diagnostics) {
    if (d.error && !first_error) first_error = &d;
    if (d.error && is_user_file(d.file)) {
      primary = &d;
      break;
    }
  }
  if (!primary && first_error) {
    // An error inside the prelude: report it where the user's code led to it.
    for (const auto& d : diagnostics) {
      if (!is_user_file(d.file)) continue;
      located = d;
      located.message = first_error->message;
      located.error = true;
      primary = &located;
      break;
    }
  }
  if (!primary) {
    const std::string message = what_failed + (first_error ? ": " + first_error->message : std::string());
    return CompileError(message + "\n" + log, log);
  }
  const int column = primary->column < 0 ? -primary->column
                     : !primary->column ? 1
                     : map              ? map->user_column(primary->line, primary->column)
                                        : primary->column;
  const std::string line_text = source_line(source, primary->line);
  const std::string caret(column > 1 ? column - 1 : 0, ' ');
  const std::string message = std::string(kSourceName) + ":" + std::to_string(primary->line) + ":" +
                              std::to_string(column) + ": error: " + primary->message + "\n" + line_text + "\n" +
                              caret + "^";
  return CompileError(message, log, primary->line, column, line_text);
}

}  // namespace metalcall::msl
