#include "msl/diagnostics.hpp"

#include "msl/signature_parser.hpp"

namespace metalcall::msl {

bool is_user_file(const std::string& file) {
  const std::string name = kSourceName;
  return file == name ||
         (file.size() > name.size() && file.compare(file.size() - name.size() - 1, std::string::npos, "/" + name) == 0);
}

CompileError compile_error(const std::vector<Diagnostic>& diagnostics, const SourceMap* map,
                           const std::string& source, const std::string& log, const std::string& what_failed) {
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
  const int column = !primary->column ? 1 : map ? map->user_column(primary->line, primary->column) : primary->column;
  const std::string line_text = source_line(source, primary->line);
  const std::string caret(column > 1 ? column - 1 : 0, ' ');
  const std::string message = std::string(kSourceName) + ":" + std::to_string(primary->line) + ":" +
                              std::to_string(column) + ": error: " + primary->message + "\n" + line_text + "\n" +
                              caret + "^";
  return CompileError(message, log, primary->line, column, line_text);
}

}  // namespace metalcall::msl
