// CompileErrors that point at the user's source (see source_errors.hpp).
#include "msl/errors/source_errors.hpp"

namespace metalcall::msl {

std::string source_line(const std::string& source, int line) {
  int current = 1;
  std::size_t start = 0;
  for (std::size_t i = 0; i < source.size() && current < line; ++i) {
    if (source[i] == '\n') {
      ++current;
      start = i + 1;
    }
  }
  if (current != line) return {};
  const std::size_t end = source.find('\n', start);
  std::string text = source.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return text;
}

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
