// CompileErrors that point at the user's source (see source_errors.hpp).
#include "msl/errors/source_errors.hpp"

#include "msl/lex/line_splices.hpp"

namespace metalcall::msl {

std::string source_line(const std::string& source, int line) { return physical_line(source, line); }

CompileError error_at(const std::string& source, const Token& token, const std::string& message) {
  const std::string line = source_line(source, token.line);
  std::string caret(token.column > 1 ? token.column - 1 : 0, ' ');
  for (std::size_t k = 0; k < caret.size() && k < line.size(); ++k)
    if (line[k] == '\t') caret[k] = '\t';
  const std::string log = "source.metal:" + std::to_string(token.line) + ":" + std::to_string(token.column) +
                          ": error: " + message + "\n" + line + "\n" + caret + "^";
  return CompileError(log, log, token.line, token.column, line);
}

CompileError rule_error(const std::string& source, const Token& token, const std::string& message,
                        const std::string& rule) {
  return error_at(source, token, message + " [MSL rule: " + rule + "]");
}

}  // namespace metalcall::msl
